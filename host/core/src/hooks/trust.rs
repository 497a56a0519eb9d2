//! Which projects' hook files the user trusts: each file's path and the digest of its contents
//! when it was trusted, kept in the user's data directory (`trusted-hooks.json`). A project's
//! hooks run only while its file is as it was trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file, in the data directory.
const FILE: &str = "trusted-hooks.json";

/// The trusted files.
#[derive(Debug, Default)]
pub struct Trust {
    path: PathBuf,
    files: BTreeMap<String, String>,
}

impl Trust {
    /// Reads the trusted files kept in `data_dir` (none when it has no such file).
    pub fn load(data_dir: &Path) -> std::io::Result<Trust> {
        let path = data_dir.join(FILE);
        let files = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} is not a list of trusted hook files ({e}): delete it and trust them again",
                        path.display()
                    ),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        Ok(Trust { path, files })
    }

    /// Whether `file` is trusted with its contents' digest `digest`.
    pub fn trusts(&self, file: &Path, digest: &str) -> bool {
        self.files.get(&key(file)).is_some_and(|d| d == digest)
    }

    /// Whether `file` was trusted with other contents (it changed since).
    pub fn changed(&self, file: &Path, digest: &str) -> bool {
        self.files.get(&key(file)).is_some_and(|d| d != digest)
    }

    /// Trusts `file` with its contents' digest `digest`, and keeps it.
    pub fn trust(&mut self, file: &Path, digest: &str) -> std::io::Result<()> {
        self.files.insert(key(file), digest.to_string());
        self.save()
    }

    /// No longer trusts `file`; whether it was.
    pub fn revoke(&mut self, file: &Path) -> std::io::Result<bool> {
        let was = self.files.remove(&key(file)).is_some();
        self.save()?;
        Ok(was)
    }

    fn save(&self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(&self.files).map_err(std::io::Error::other)?;
        // Written whole, then renamed over: a reader never sees half of it.
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// How a file is named in the list: its canonical path when it has one.
fn key(file: &Path) -> String {
    std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()).to_string_lossy().into_owned()
}
