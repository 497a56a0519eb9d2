//! What a component imports and exports, read from its outer component before anything is
//! compiled (a Python or JavaScript component takes many seconds to compile): the kind and the
//! contract version come from its exports, and an import the sandbox does not provide is refused
//! at once, naming the import and the toolchain setting that leaves it out.

use wasmparser::{Chunk, Parser, Payload};

use super::{Error, PluginKind, Result};

/// The names a component's outer level imports and exports (`wasi:cli/environment@0.2.3`,
/// `seshat:plugin/summarise@0.4.0`), nested components and modules skipped; `None` when the
/// bytes do not parse as far as that (compiling then says what is wrong).
pub(super) fn names(wasm: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut parser = Parser::new(0);
    let mut data = wasm;
    loop {
        let Chunk::Parsed { consumed, payload } = parser.parse(data, true).ok()? else { return None };
        data = data.get(consumed..)?;
        match payload {
            Payload::ComponentImportSection(reader) => {
                for import in reader {
                    imports.push(import.ok()?.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(reader) => {
                for export in reader {
                    exports.push(export.ok()?.name.name.to_string());
                }
            }
            // The interpreter's core modules are most of the bytes: skipped unread.
            Payload::ModuleSection { unchecked_range, .. } | Payload::ComponentSection { unchecked_range, .. } => {
                data = data.get(unchecked_range.len()..)?;
            }
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = data.get(usize::try_from(size).ok()?..)?;
            }
            Payload::End(_) => return Some((imports, exports)),
            _ => {}
        }
    }
}

/// The WASI 0.2 packages the sandbox links (each with an empty context: no files, environment,
/// arguments, sockets or stdio).
const WASI: [&str; 6] = ["cli", "clocks", "filesystem", "io", "random", "sockets"];

/// The host interfaces a kind's world imports, besides `types` (and 0.2.0's `log`).
fn host_interfaces(kind: PluginKind) -> &'static [&'static str] {
    match kind {
        PluginKind::Trimmer => &["trim-types", "trim-host"],
        PluginKind::Summariser | PluginKind::Extractor => &["model"],
        PluginKind::Provider | PluginKind::Embedder | PluginKind::Hook => &[],
    }
}

/// Refuses a plugin whose imports the sandbox cannot satisfy: every such import, with what to do.
pub(super) fn check(plugin: &str, kind: PluginKind, version: &str, imports: &[String]) -> Result<()> {
    // Imports refused for the same reason are named together (jco's fetch handler imports
    // several wasi:http interfaces).
    let mut refused: Vec<(Vec<&str>, String)> = Vec::new();
    for import in imports {
        let Some(why) = refusal(kind, version, import) else { continue };
        match refused.iter_mut().find(|(_, w)| *w == why) {
            Some((names, _)) => names.push(import),
            None => refused.push((vec![import], why)),
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let refused: Vec<String> = refused
        .into_iter()
        .map(|(names, why)| {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("{} ({why})", names.join(", "))
        })
        .collect();
    Err(Error::Load {
        plugin: plugin.to_string(),
        message: format!(
            "it imports what the sandbox does not provide (checked before compiling it): {}",
            refused.join("; ")
        ),
    })
}

/// Why `import` cannot be linked for a `kind` plugin of contract `version`, and what to do (the
/// import itself is named by the caller).
fn refusal(kind: PluginKind, version: &str, import: &str) -> Option<String> {
    let (path, at) = import.split_once('@').unwrap_or((import, ""));
    let (package, interface) = path.split_once('/').unwrap_or((path, ""));
    match package.split_once(':') {
        Some(("wasi", "http")) => Some(
            "HTTP from inside the plugin: plugins make no requests, a provider or embedder builds them and the \
             host sends them. With jco (componentize-js), build with `-d http fetch-event` (`--disable http \
             fetch-event`), which leaves out the fetch handler that imports it"
                .to_string(),
        ),
        Some(("wasi", name)) if WASI.contains(&name) && at.starts_with("0.2.") && at.contains('-') => Some(
            "a release candidate of WASI 0.2, which the sandbox does not link (only released 0.2.x versions); \
             rebuild with a current toolchain"
                .to_string(),
        ),
        Some(("wasi", name)) if WASI.contains(&name) && at.starts_with("0.2.") => None,
        Some(("wasi", name)) if WASI.contains(&name) => Some(
            "the sandbox speaks WASI 0.2 (as wasm32-wasip2, componentize-py 0.25 and jco 1.34 build); rebuild for \
             WASI 0.2"
                .to_string(),
        ),
        Some(("wasi", _)) => Some(format!(
            "of WASI the sandbox provides only {} (0.2, all empty: no files, environment or network); remove \
             what imports it",
            WASI.join(", ")
        )),
        Some(("seshat", "plugin")) if at != version => Some(format!(
            "the plugin exports seshat:plugin@{version} but imports @{at}; build the whole plugin against one \
             contract version"
        )),
        Some(("seshat", "plugin")) => {
            let allowed = ["types", "log"].iter().chain(host_interfaces(kind));
            if allowed.clone().any(|i| *i == interface) {
                return None;
            }
            let world: Vec<&str> = allowed.copied().collect();
            Some(format!(
                "a {kind}'s world imports only {}; build against the `{kind}` world of the WIT this host speaks",
                world.join(", ")
            ))
        }
        _ => Some("a plugin may import only its world's seshat:plugin interfaces and WASI 0.2; remove it".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_components_names_are_read_without_compiling() {
        let (imports, exports) = names(include_bytes!("../../plugins/summariser.wasm")).expect("parses");
        assert_eq!(exports, ["seshat:plugin/summarise@0.4.0"]);
        assert!(imports.iter().any(|i| i == "seshat:plugin/model@0.4.0"), "{imports:?}");
        assert!(imports.iter().any(|i| i.starts_with("wasi:cli/")), "{imports:?}");
        assert_eq!(check("summariser", PluginKind::Summariser, "0.4.0", &imports).map_err(|e| e.to_string()), Ok(()));
    }

    #[test]
    fn an_import_the_sandbox_lacks_is_refused_naming_it_and_the_fix() {
        let imports = vec![
            "wasi:io/streams@0.2.10".to_string(),
            "wasi:http/types@0.2.10".to_string(),
            "seshat:plugin/model@0.4.0".to_string(),
            "wasi:cli/environment@0.3.0".to_string(),
            "wasi:clocks/wall-clock@0.2.0-rc-2023-11-10".to_string(),
            "acme:kv/store".to_string(),
        ];
        let err = check("p", PluginKind::Trimmer, "0.4.0", &imports).unwrap_err().to_string();
        assert!(err.contains("`wasi:http/types@0.2.10`") && err.contains("-d http fetch-event"), "{err}");
        assert!(err.contains("`seshat:plugin/model@0.4.0` (a trimmer's world imports only"), "{err}");
        let http = ["wasi:http/types@0.2.10".to_string(), "wasi:http/outgoing-handler@0.2.10".to_string()];
        let both = check("p", PluginKind::Summariser, "0.4.0", &http).unwrap_err().to_string();
        assert!(both.contains("`wasi:http/types@0.2.10`, `wasi:http/outgoing-handler@0.2.10` (HTTP"), "{both}");
        assert_eq!(both.matches("-d http").count(), 1, "one reason for both: {both}");
        assert!(err.contains("`wasi:cli/environment@0.3.0`") && err.contains("WASI 0.2"), "{err}");
        assert!(err.contains("`acme:kv/store`"), "{err}");
        assert!(err.contains("`wasi:clocks/wall-clock@0.2.0-rc-2023-11-10` (a release candidate"), "{err}");
        assert!(!err.contains("`wasi:io/streams@0.2.10`"), "a WASI 0.2 import is linked: {err}");
        let summariser = check("p", PluginKind::Summariser, "0.4.0", &imports[2..3]);
        assert!(summariser.is_ok(), "a summariser imports the model");
        let mixed = check("p", PluginKind::Summariser, "0.3.0", &imports[2..3]).unwrap_err().to_string();
        assert!(mixed.contains("exports seshat:plugin@0.3.0 but imports @0.4.0"), "{mixed}");
    }
}
