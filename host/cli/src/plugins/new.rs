//! `seshat plugins new`: a plugin that builds anywhere, in Rust (a crate with the WIT and SDK
//! written in), Python (componentize-py) or JavaScript (jco), with a recorded session to test it
//! on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use seshat::plugins::{API_VERSION_CURRENT, API_VERSION_CURRENT_UNSTABLE, PluginKind};

use crate::format;

/// The wit-bindgen version the repository's plugins use (checked against `plugins/Cargo.lock`).
pub const WIT_BINDGEN_VERSION: &str = "0.63.0";

/// The SDK's sources, one file per plugin kind beside its root.
const SDK_SOURCES: [(&str, &str); 7] = [
    ("lib.rs", include_str!("../../../../plugins/sdk/src/lib.rs")),
    ("trimmer.rs", include_str!("../../../../plugins/sdk/src/trimmer.rs")),
    ("summariser.rs", include_str!("../../../../plugins/sdk/src/summariser.rs")),
    ("provider.rs", include_str!("../../../../plugins/sdk/src/provider.rs")),
    ("embedder.rs", include_str!("../../../../plugins/sdk/src/embedder.rs")),
    ("hook.rs", include_str!("../../../../plugins/sdk/src/hook.rs")),
    ("extractor.rs", include_str!("../../../../plugins/sdk/src/extractor.rs")),
];
const OUTCOMES_SOURCE: &str = include_str!("../../../outcomes/src/lib.rs");
const OUTCOMES_TRIM: &str = include_str!("../../../outcomes/src/trim.rs");
const OUTCOMES_DECISIONS: &str = include_str!("../../../outcomes/src/decisions.rs");
const OUTCOMES_NOVELTY: &str = include_str!("../../../outcomes/src/novelty.rs");
const OUTCOMES_LASTING: &str = include_str!("../../../outcomes/src/lasting.rs");
const OUTCOMES_MANIFEST: &str = include_str!("../../../outcomes/Cargo.toml");
const WIT: &str = include_str!("../../../../wit/seshat-plugin.wit");
/// A recorded session every template is tested on (`seshat plugins test plugin.wasm session.jsonl`).
pub(super) const SESSION: &str = include_str!("templates/session.jsonl");

/// The language a new plugin is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate built for wasm32-wasip2 with the plugin SDK.
    Rust,
    /// Python, built with componentize-py.
    Python,
    /// JavaScript, built with jco (componentize-js).
    Js,
}

/// Arguments of `plugins new`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kind: trimmer, summariser, provider, embedder, hook or extractor.
    kind: PluginKind,
    /// The plugin's id (letters, digits, `-`, `_`); also the crate's directory name.
    name: String,
    /// Create the plugin here instead of `./<name>`.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The language to write it in.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    lang: Lang,
}

pub fn run(ctx: &crate::Context, args: &Args) -> anyhow::Result<ExitCode> {
    let name = &args.name;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("`{name}` is not a valid plugin id: use letters, digits, `-` and `_`");
    }
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} already exists and is not empty: pick another name or --dir", dir.display());
    }
    let kind = args.kind;
    if args.lang != Lang::Rust {
        let files = super::interpreted::files(args.lang, name, kind, &ctx.dirs.config, &select(name, kind));
        for (path, text, executable) in &files {
            write(&dir.join(path), text)?;
            if *executable {
                make_executable(&dir.join(path))?;
            }
        }
        let mut out = format::stdout();
        writeln!(
            out,
            "Created the {kind} plugin `{name}` in {} ({}).",
            dir.display(),
            super::interpreted::label(args.lang)
        )?;
        for step in super::interpreted::steps(args.lang, &dir) {
            writeln!(out, "{step}")?;
        }
        writeln!(out, "{}", contract_note())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let template = match kind {
        PluginKind::Trimmer => include_str!("templates/trimmer.rs"),
        PluginKind::Summariser => include_str!("templates/summariser.rs"),
        PluginKind::Provider => include_str!("templates/provider.rs"),
        PluginKind::Embedder => include_str!("templates/embedder.rs"),
        PluginKind::Hook => include_str!("templates/hook.rs"),
        PluginKind::Extractor => include_str!("templates/extractor.rs"),
    };
    let provider_hosts = if matches!(kind, PluginKind::Provider | PluginKind::Embedder) {
        "allowed_hosts = [\"{base_url}\"]\n"
    } else {
        ""
    };
    let mut files: Vec<(String, String)> = vec![
        ("Cargo.toml".into(), cargo_toml(name, kind)),
        (
            "plugin.toml".into(),
            format!(
                "id = \"{name}\"\nkind = \"{kind}\"\napi = \"{API_VERSION_CURRENT}\"\ndescription = \"A {kind} plugin.\"\n\
                 {provider_hosts}"
            ),
        ),
        ("src/lib.rs".into(), template.to_string()),
        ("seshat-plugin-sdk/Cargo.toml".into(), sdk_cargo_toml()),
        ("seshat-outcomes/Cargo.toml".into(), OUTCOMES_MANIFEST.to_string()),
        ("seshat-outcomes/src/lib.rs".into(), OUTCOMES_SOURCE.to_string()),
        ("seshat-outcomes/src/trim.rs".into(), OUTCOMES_TRIM.to_string()),
        ("seshat-outcomes/src/decisions.rs".into(), OUTCOMES_DECISIONS.to_string()),
        ("seshat-outcomes/src/novelty.rs".into(), OUTCOMES_NOVELTY.to_string()),
        ("seshat-outcomes/src/lasting.rs".into(), OUTCOMES_LASTING.to_string()),
        ("seshat-plugin-sdk/wit/seshat-plugin.wit".into(), WIT.to_string()),
        ("README.md".into(), readme(name, kind, &ctx.dirs.config)),
        ("session.jsonl".into(), SESSION.to_string()),
    ];
    files.extend(SDK_SOURCES.iter().map(|(file, text)| (format!("seshat-plugin-sdk/src/{file}"), text.to_string())));
    for (path, text) in &files {
        write(&dir.join(path), text)?;
    }
    let mut out = format::stdout();
    writeln!(out, "Created the {kind} plugin `{name}` in {}.", dir.display())?;
    writeln!(out, "Build it:   cd {} && cargo build --release --target wasm32-wasip2", dir.display())?;
    writeln!(out, "Then follow {}/README.md to check, install and select it.", dir.display())?;
    writeln!(out, "{}", contract_note())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The plugin contract this seshat builds new plugins against.
pub(super) fn wit() -> &'static str {
    WIT
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

/// How the configuration selects the plugin `name` of `kind`, as TOML.
fn select(name: &str, kind: PluginKind) -> String {
    match kind {
        PluginKind::Hook => format!(
            "# Hooks are chosen per event (a matcher chooses the tools), in the order listed.\n\
             [[hooks.pre_tool]]\nplugin = \"{name}\"\nmatcher = \"bash|shell*\"\n\n\
             [[hooks.session_start]]\nplugin = \"{name}\"\n"
        ),
        PluginKind::Extractor => format!("[memory]\nextract = \"{name}\"\n"),
        _ => format!("[plugins]\n{kind} = \"{name}\"\n"),
    }
}

/// What a note on the contract's stability says, for templates in every language.
pub(super) fn stability() -> String {
    contract_note()
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn cargo_toml(name: &str, kind: PluginKind) -> String {
    // A hook reads its payload's JSON: the `options` feature brings serde_json.
    let features = if kind == PluginKind::Hook { format!("\"{kind}\", \"options\"") } else { format!("\"{kind}\"") };
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
seshat-plugin-sdk = {{ path = "seshat-plugin-sdk", features = [{features}] }}

# A workspace of its own: builds the same inside or outside any other workspace.
[workspace]

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
strip = true
panic = "abort"
"#
    )
}

fn sdk_cargo_toml() -> String {
    format!(
        r#"[package]
name = "seshat-plugin-sdk"
version = "0.1.0"
edition = "2024"
publish = false

[features]
trimmer = []
summariser = []
provider = []
embedder = []
hook = []
extractor = []
json = ["provider", "dep:serde_json"]
options = ["dep:serde", "dep:serde_json"]

[dependencies]
wit-bindgen = {{ version = "={WIT_BINDGEN_VERSION}", default-features = false, features = ["macros", "realloc"] }}
serde_json = {{ version = "1", default-features = false, features = ["std"], optional = true }}
serde = {{ version = "1", default-features = false, features = ["std"], optional = true }}
seshat-outcomes = {{ path = "../seshat-outcomes" }}
"#
    )
}

/// What the contract it builds for promises: a frozen one never needs a rebuild.
fn contract_note() -> String {
    if !API_VERSION_CURRENT_UNSTABLE {
        return format!(
            "It builds for seshat:plugin@{API_VERSION_CURRENT}, released and frozen: the plugin keeps loading in \
             every later Seshat without a rebuild."
        );
    }
    format!(
        "Note: seshat:plugin@{API_VERSION_CURRENT} is unstable: it may still change before it is frozen. Plugins \
         built for the frozen 0.1.0, 0.2.0 and 0.3.0 keep loading."
    )
}

/// The crate's README, naming the directories this Seshat really uses (`SESHAT_HOME` included).
fn readme(name: &str, kind: PluginKind, config: &Path) -> String {
    let note = format!("{}\n\n", contract_note());
    let file = name.replace('-', "_");
    format!(
        "# {name}\n\nA Seshat {kind} plugin.\n\n{note}```sh\ncargo build --release --target wasm32-wasip2\n\
         cp target/wasm32-wasip2/release/{file}.wasm plugin.wasm\nseshat plugins check plugin.wasm\n\
         seshat plugins test plugin.wasm <session id | export.jsonl | dir of exports>   # what it does to real history\n\
         seshat plugins install .    # copies plugin.wasm and plugin.toml to {plugins}/{name}/\n```\n\n\
         Then select it in `{config_file}`:\n\n```toml\n{select}```\n\n\
         `seshat plugins test` changes nothing: each history runs in a scratch copy. `session.jsonl` is a recorded \
         session to start with (`seshat plugins test plugin.wasm session.jsonl`); make your own with `seshat sessions \
         export <id> > s.jsonl`.\n\n\
         ## Diagnostics and options\n\n\
         `log(Level::Debug, \"…\")` writes to Seshat's log (stderr; shown with \
         `RUST_LOG=seshat::plugin=debug`). A panic's message and place reach the error Seshat reports. With the \
         SDK's `options` feature, `options::<YourOptions>(&extra)` reads the options the user set{options_at}.\n\n\
         ## Build times: share one target directory\n\n\
         The first build compiles the SDK's dependencies (wit-bindgen and its macros): about 40 s and 135 MB of \
         `target/` on a 2-core machine; after an edit, about 1 s. Every plugin you write needs the same \
         dependencies, so point all of them at one target directory and each new plugin's first build takes \
         about 3 s:\n\n```sh\nexport CARGO_TARGET_DIR=\"$HOME/.cache/seshat-plugins-target\"   # once, in your shell profile\n\
         cargo build --release --target wasm32-wasip2\n\
         cp \"$CARGO_TARGET_DIR/wasm32-wasip2/release/{file}.wasm\" plugin.wasm\n```\n",
        plugins = config.join("plugins").display(),
        select = select(name, kind),
        config_file = config.join("config.toml").display(),
        options_at = if matches!(kind, PluginKind::Provider | PluginKind::Hook) {
            String::new()
        } else {
            format!(" under `[plugins.options.{kind}]`")
        },
    )
}
