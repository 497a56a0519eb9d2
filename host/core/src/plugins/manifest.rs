//! `plugin.toml`: what a plugin says about itself, beside its `.wasm`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::limits::LimitRequest;
use super::{Error, PluginKind, Result};

/// A plugin's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The plugin's id (what configuration selects), e.g. `trimmer`.
    pub id: String,
    /// Which world it implements.
    pub kind: PluginKind,
    /// The contract version it was built for, e.g. `0.1.0`.
    pub api: String,
    /// One line about what it does.
    #[serde(default)]
    pub description: String,
    /// Providers: hosts it may send requests to. `{base_url}` means exactly the scheme, host and
    /// port the user configured.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Limits it asks for (capped by the host's maxima; the user's configuration wins).
    #[serde(default)]
    pub limits: LimitRequest,
}

impl Manifest {
    /// Parses a manifest; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let m: Manifest =
            toml::from_str(text).map_err(|e| Error::Manifest { path: path.to_path_buf(), message: e.to_string() })?;
        let bad = |message: String| Err(Error::Manifest { path: path.to_path_buf(), message });
        if m.id.is_empty() || !m.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return bad(format!("`id` must be letters, digits, `-` or `_`, got `{}`", m.id));
        }
        if !m.allowed_hosts.is_empty() && !matches!(m.kind, PluginKind::Provider | PluginKind::Embedder) {
            return bad(
                "`allowed_hosts` is only for provider and embedder plugins, which the host sends requests for".into()
            );
        }
        Ok(m)
    }

    /// Reads `plugin.toml` from a file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|cause| Error::Io { path: path.to_path_buf(), cause })?;
        Self::parse(&text, path)
    }
}
