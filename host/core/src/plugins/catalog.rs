//! Which plugins exist: the built-in defaults, the user's (`<config dir>/plugins/<name>/`) and
//! the project's (`<project>/.seshat/plugins/<name>/`). A later source overrides an earlier one
//! with the same kind and id, so a project can replace a user plugin, which can replace a default.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Error, Manifest, PluginKind, Result, embedded};

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", content = "path", rename_all = "snake_case")]
pub enum Origin {
    /// Built into the `seshat` binary.
    Builtin,
    /// The user's plugin directory.
    User(PathBuf),
    /// The project's `.seshat/plugins`.
    Project(PathBuf),
    /// A file named on the command line.
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin => f.write_str("builtin"),
            Origin::User(p) => write!(f, "user {}", p.display()),
            Origin::Project(p) => write!(f, "project {}", p.display()),
            Origin::File(p) => write!(f, "file {}", p.display()),
        }
    }
}

/// The `.wasm` of a plugin.
#[derive(Debug, Clone)]
pub enum WasmSource {
    /// Embedded in the binary.
    Embedded(&'static [u8]),
    /// A file.
    File(PathBuf),
}

impl WasmSource {
    /// The bytes.
    pub fn bytes(&self) -> Result<Cow<'static, [u8]>> {
        match self {
            WasmSource::Embedded(b) => Ok(Cow::Borrowed(b)),
            WasmSource::File(p) => {
                std::fs::read(p).map(Cow::Owned).map_err(|cause| Error::Io { path: p.clone(), cause })
            }
        }
    }
}

/// One installed plugin.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    /// Its manifest.
    pub manifest: Manifest,
    /// Where it came from.
    pub origin: Origin,
    /// Its code.
    pub wasm: WasmSource,
}

impl CatalogEntry {
    /// A plugin directory: `plugin.toml` plus `plugin.wasm` (or the only `.wasm` in it).
    pub fn from_dir(dir: &Path, origin: impl FnOnce(PathBuf) -> Origin) -> Result<Self> {
        let manifest = Manifest::read(&dir.join("plugin.toml"))?;
        let wasm = wasm_in(dir)?;
        Ok(Self { manifest, origin: origin(dir.to_path_buf()), wasm: WasmSource::File(wasm) })
    }
}

fn wasm_in(dir: &Path) -> Result<PathBuf> {
    let preferred = dir.join("plugin.wasm");
    if preferred.is_file() {
        return Ok(preferred);
    }
    let read = std::fs::read_dir(dir).map_err(|cause| Error::Io { path: dir.to_path_buf(), cause })?;
    let wasms: Vec<PathBuf> =
        read.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "wasm")).collect();
    match wasms.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::Manifest { path: dir.join("plugin.toml"), message: "no .wasm file beside it".into() }),
        _ => Err(Error::Manifest {
            path: dir.join("plugin.toml"),
            message: "several .wasm files beside it: name the plugin's `plugin.wasm`".into(),
        }),
    }
}

/// Every plugin found, plus the problems met while looking (reported, never fatal).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
    /// Plugin directories that could not be read.
    pub problems: Vec<String>,
}

impl Catalog {
    /// The built-in plugins only.
    pub fn builtin() -> Self {
        Self { entries: embedded::entries(), problems: Vec::new() }
    }

    /// The built-ins, then `<user_config>/plugins/*`, then `<project>/.seshat/plugins/*`.
    pub fn discover(user_config: &Path, project: Option<&Path>) -> Self {
        let mut catalog = Self::builtin();
        catalog.scan(&user_config.join("plugins"), Origin::User);
        if let Some(project) = project {
            catalog.scan(&project.join(".seshat").join("plugins"), Origin::Project);
        }
        catalog
    }

    fn scan(&mut self, dir: &Path, origin: fn(PathBuf) -> Origin) {
        let Ok(read) = std::fs::read_dir(dir) else { return };
        let mut dirs: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for d in dirs {
            match CatalogEntry::from_dir(&d, origin) {
                Ok(entry) => self.entries.push(entry),
                Err(e) => self.problems.push(e.to_string()),
            }
        }
    }

    /// Every plugin, overridden ones included, in discovery order.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The plugin of `kind` with `id` (the last one found wins).
    pub fn find(&self, kind: PluginKind, id: &str) -> Result<&CatalogEntry> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.manifest.kind == kind && e.manifest.id == id)
            .ok_or_else(|| Error::NotFound { kind: kind.as_str(), name: id.to_string() })
    }

    /// Whether `entry` is overridden by a later plugin of the same kind and id.
    pub fn is_overridden(&self, index: usize) -> bool {
        let e = &self.entries[index];
        self.entries[index + 1..].iter().any(|l| l.manifest.kind == e.manifest.kind && l.manifest.id == e.manifest.id)
    }
}
