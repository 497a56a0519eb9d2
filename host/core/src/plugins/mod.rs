//! The plugin runtime: WIT-defined WebAssembly components loaded by a small wasmtime host.
//!
//! Policies — the trimmer, the summariser, provider adapters, embedders, hooks, extractors — are plugins, so users swap them by
//! dropping in a `.wasm` and changing one config line. Every call runs sandboxed (see
//! [`sandbox`]): no files, environment, sockets or stdio; a memory cap; a guest-time budget. A
//! trap drops only that instance. Compiled components are cached on disk.

mod bindings;
pub mod cache;
mod catalog;
mod contract;
mod embedded;
mod embedder;
mod engine;
mod error;
mod extractor;
mod handle;
mod hook;
mod imports;
mod limits;
mod manifest;
mod provider;
mod sandbox;
mod stderr;
mod summariser;
mod trimmer;

use std::path::PathBuf;

use wasmtime::component::Component;

pub use catalog::{Catalog, CatalogEntry, Origin, WasmSource};
pub use contract::{wit, wit_versions};
pub use embedder::{EmbedPurpose, EmbedRequest, EmbedderInfo, EmbedderPlugin, EmbeddingModel};
pub use engine::{Tier, engine_started, tier as compile_tier, use_quick_tier};
pub use error::{Error, Result};
pub use extractor::{
    ExtractMoment, ExtractProposal, ExtractRequest, ExtractScope, ExtractorPlugin, KnownFact,
    MAX_PROPOSALS as MAX_EXTRACT_PROPOSALS, Proposed,
};
pub use hook::HookPlugin;
pub use limits::{LimitRequest, Limits, MAXIMUM as MAXIMUM_LIMITS};
pub use manifest::Manifest;
pub use provider::{
    AuthScheme, ChatRequest, Discovery, EncodeOptions, HttpRequest, Limit, ModelInfo, Probe, ProviderInfo,
    ProviderPlugin, Response, Splice, StreamDecoder, StreamEvent, ToolSpec,
};
pub use sandbox::Usage;
pub use summariser::{Completion, CompletionRequest, ModelCall, ModelError, SummariserPlugin, SummaryRequest};
pub use trimmer::{
    TrimBudget, TrimEdit, TrimMessage, TrimPart, TrimmerPlugin, placeholder, validate as validate_edits,
};

use crate::conversation::{Part, Role};

/// The contract versions this host speaks: the frozen `0.1.x`, `0.2.x` and `0.3.x`, and `0.4.x`.
pub(crate) const API_VERSIONS: &str = "0.1.x, 0.2.x, 0.3.x or 0.4.x";
/// The contract version the SDK, `seshat plugins new` and the default plugins build against.
pub const API_VERSION_CURRENT: &str = "0.4.0";
/// Whether [`API_VERSION_CURRENT`] may still change: 0.4.0 (the hook and extractor kinds) is open until this
/// round's last addition freezes it.
pub const API_VERSION_CURRENT_UNSTABLE: bool = true;

pub use crate::config::PluginKind;
pub use seshat_protocol::turn::StopReason;

impl PluginKind {
    /// The interface a plugin of this kind exports.
    pub(crate) fn export_interface(self) -> &'static str {
        match self {
            PluginKind::Trimmer => "trim",
            PluginKind::Summariser => "summarise",
            PluginKind::Provider => "translate",
            PluginKind::Embedder => "embed",
            PluginKind::Hook => "on-event",
            PluginKind::Extractor => "extract",
        }
    }

    fn from_export_interface(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.export_interface() == name)
    }
}

impl std::str::FromStr for PluginKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            format!("unknown plugin kind `{s}`: expected trimmer, summariser, provider, embedder, hook or extractor")
        })
    }
}

/// A message as plugins see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginMessage {
    /// Its seq, or 0 when not stored.
    pub id: u64,
    /// Who wrote it.
    pub role: Role,
    /// Its content.
    pub parts: Vec<Part>,
}

/// A plugin compiled (or loaded from the cache) and checked to be of the kind its manifest says.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Its manifest.
    pub manifest: Manifest,
    /// Where it came from.
    pub origin: Origin,
    /// SHA-256 of its `.wasm`.
    pub sha256: String,
    /// The contract version it was built for.
    pub api_version: String,
    /// The version of the Seshat plugin SDK it was built with (its `seshat-plugin-sdk` custom
    /// section), when it says.
    pub sdk_version: Option<String>,
    /// The limits it runs under.
    pub limits: Limits,
    /// Asked-for limits lowered to the maxima, each said in a sentence.
    pub warnings: Vec<String>,
    version: bindings::Version,
    component: Component,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("manifest", &self.manifest)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    fn expect_kind(&self, kind: PluginKind) -> Result<()> {
        if self.manifest.kind == kind {
            Ok(())
        } else {
            Err(Error::WrongKind {
                plugin: self.manifest.id.clone(),
                expected: kind.as_str(),
                found: format!("it is a {}", self.manifest.kind),
            })
        }
    }
}

/// Loads plugins: compiles or fetches from the cache, and checks world and version.
#[derive(Debug, Clone)]
pub struct Runtime {
    cache_dir: Option<PathBuf>,
    cache_cap_bytes: u64,
}

impl Runtime {
    /// A runtime caching compiled components in `cache_dir` (`None`: no disk cache), within
    /// [`cache::DEFAULT_CAP_BYTES`].
    pub fn new(cache_dir: Option<PathBuf>) -> Self {
        Self { cache_dir, cache_cap_bytes: cache::DEFAULT_CAP_BYTES }
    }

    /// The same runtime with its cache kept within `bytes` (least recently used entries go).
    pub fn with_cache_cap(mut self, bytes: u64) -> Self {
        self.cache_cap_bytes = bytes;
        self
    }

    /// Loads one plugin with the user's limit overrides for its kind.
    pub fn load(&self, entry: &CatalogEntry, config_limits: LimitRequest) -> Result<LoadedPlugin> {
        let wasm = entry.wasm.bytes()?;
        self.load_bytes(&wasm, Some(entry.manifest.clone()), entry.origin.clone(), &entry.manifest.id, config_limits)
    }

    /// Loads a `.wasm` file that is not installed (`seshat plugins check`): its `plugin.toml` is
    /// read from beside it when present, otherwise a manifest is made from what the component
    /// exports. Returns whether a manifest was found.
    pub fn load_file(
        &self,
        wasm: &std::path::Path,
        config_limits: impl Fn(PluginKind) -> LimitRequest,
    ) -> Result<(LoadedPlugin, bool)> {
        let bytes = std::fs::read(wasm).map_err(|cause| Error::Io { path: wasm.to_path_buf(), cause })?;
        let beside = wasm.with_file_name("plugin.toml");
        let manifest = if beside.is_file() { Some(Manifest::read(&beside)?) } else { None };
        let name = manifest
            .as_ref()
            .map(|m| m.id.clone())
            .unwrap_or_else(|| wasm.file_stem().map_or("plugin".into(), |s| s.to_string_lossy().into_owned()));
        let limits = manifest.as_ref().map(|m| config_limits(m.kind)).unwrap_or_default();
        let found = manifest.is_some();
        let plugin = self.load_bytes(&bytes, manifest, Origin::File(wasm.to_path_buf()), &name, limits)?;
        Ok((plugin, found))
    }

    fn load_bytes(
        &self,
        wasm: &[u8],
        manifest: Option<Manifest>,
        origin: Origin,
        name: &str,
        config_limits: LimitRequest,
    ) -> Result<LoadedPlugin> {
        if let Some(message) = not_a_component(wasm) {
            return Err(Error::Load { plugin: name.to_string(), message });
        }
        // Kind, version and imports are read before compiling, which takes seconds for a large
        // component: what cannot load is refused at once.
        let read = match imports::names(wasm) {
            Some((imports, exports)) => {
                let (kind, api_version, version) = inspect(&exports, name)?;
                imports::check(name, kind, &api_version, &imports)?;
                Some((kind, api_version, version))
            }
            None => None,
        };
        let sha256 = cache::sha256_hex(wasm);
        let dir = self.cache_dir.as_deref().map(|path| cache::Dir { path, cap_bytes: self.cache_cap_bytes });
        let component = cache::load(dir, wasm, &sha256).map_err(|e| Error::Load {
            plugin: name.to_string(),
            message: format!("not a valid WebAssembly component for this host: {e:#}"),
        })?;
        let (kind, api_version, version) = match read {
            Some(read) => read,
            None => {
                let engine = engine::engine();
                let exports: Vec<String> =
                    component.component_type().exports(engine).map(|(name, _)| name.to_string()).collect();
                inspect(&exports, name)?
            }
        };
        let manifest = match manifest {
            Some(m) if m.kind != kind => {
                return Err(Error::WrongKind {
                    plugin: name.to_string(),
                    expected: m.kind.as_str(),
                    found: format!("its manifest says {} but the component is a {kind}", m.kind),
                });
            }
            Some(m) => m,
            None => Manifest {
                id: name.to_string(),
                kind,
                api: api_version.clone(),
                description: String::new(),
                allowed_hosts: Vec::new(),
                limits: LimitRequest::default(),
            },
        };
        let limits = Limits::resolve(kind, manifest.limits, config_limits);
        let warnings = Limits::over_the_cap(manifest.limits, config_limits);
        for w in &warnings {
            tracing::warn!(plugin = %name, "{w}");
        }
        let sdk_version = sdk_version(wasm);
        Ok(LoadedPlugin { manifest, origin, sha256, api_version, sdk_version, limits, warnings, version, component })
    }
}

/// Which kind of plugin a component is and which contract version it was built for, from its
/// exports' names; refuses anything this host cannot run, saying what was expected and found.
fn inspect(exports: &[String], plugin: &str) -> Result<(PluginKind, String, bindings::Version)> {
    let ours: Vec<(&str, &str)> = exports
        .iter()
        .filter_map(|e| e.strip_prefix("seshat:plugin/"))
        .map(|rest| rest.split_once('@').unwrap_or((rest, "")))
        .collect();
    let Some(&(interface, version)) = ours.first() else {
        return Err(Error::WrongKind {
            plugin: plugin.to_string(),
            expected: "Seshat plugin",
            found: format!(
                "it exports no seshat:plugin interface (exports: {})",
                if exports.is_empty() { "none".to_string() } else { exports.join(", ") }
            ),
        });
    };
    let Some(served) = bindings::Version::parse(version) else {
        return Err(Error::Incompatible {
            plugin: plugin.to_string(),
            expected: API_VERSIONS,
            found: version.to_string(),
        });
    };
    let kind = PluginKind::from_export_interface(interface).ok_or_else(|| Error::WrongKind {
        plugin: plugin.to_string(),
        expected: "Seshat plugin",
        found: format!("it exports seshat:plugin/{interface}, which no plugin kind exports"),
    })?;
    Ok((kind, version.to_string(), served))
}

/// The SDK version a plugin was built with: the `seshat-plugin-sdk` custom section the SDK's
/// export macros write into its core module (searched through the component's nesting).
fn sdk_version(wasm: &[u8]) -> Option<String> {
    wasmparser::Parser::new(0).parse_all(wasm).find_map(|payload| match payload {
        Ok(wasmparser::Payload::CustomSection(section)) if section.name() == "seshat-plugin-sdk" => {
            std::str::from_utf8(section.data()).ok().map(str::to_string)
        }
        _ => None,
    })
}

/// One sentence for a file that is not a WebAssembly component at all (instead of the parser's
/// dump of the bytes it expected).
fn not_a_component(wasm: &[u8]) -> Option<String> {
    const MAGIC: &[u8] = b"\0asm";
    const MODULE: [u8; 4] = [1, 0, 0, 0];
    if !wasm.starts_with(MAGIC) {
        return Some(
            "the file is not WebAssembly (it does not start with the `\\0asm` bytes): pass the `.wasm` a \
             `cargo build --release --target wasm32-wasip2` wrote under target/wasm32-wasip2/release/"
                .into(),
        );
    }
    (wasm.get(4..8) == Some(&MODULE[..])).then(|| {
        "the file is a core WebAssembly module, not a component: build the plugin for the wasm32-wasip2 \
         target (`cargo build --release --target wasm32-wasip2`), which makes a component"
            .into()
    })
}

/// An error preparing an instance (imports that cannot be satisfied, exports of the wrong type).
fn link_error(plugin: &str, err: &wasmtime::Error) -> Error {
    Error::Load {
        plugin: plugin.to_string(),
        message: format!(
            "its imports or exports do not match this host's seshat:plugin@{API_VERSIONS} (a plugin may import only \
             its world's host interface and WASI): {err:#}"
        ),
    }
}

impl<H: Send> bindings::v0_1::wit::Host for sandbox::State<H> {}
