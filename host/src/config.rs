//! `config.toml`: the user's settings, overridable per project by `<project>/.seshat/config.toml`.
//!
//! Swapping a policy is one line here, e.g. `trimmer = "my-trimmer"` under `[plugins]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::plugins::{LimitRequest, PluginKind};

/// File name of the configuration.
pub const FILE: &str = "config.toml";

/// An invalid configuration file.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration {}: {message}", path.display())]
pub struct Error {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// The merged configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Plugin selection and limits.
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// Long-term memory.
    #[serde(default)]
    pub memory: MemoryConfig,
}

/// `[memory]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Token budget of the memory context given to a session at its start (default 2,000).
    pub context_tokens: Option<usize>,
}

/// `[plugins]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// The trimmer's id (default `trimmer`).
    pub trimmer: Option<String>,
    /// The summariser's id (default `summariser`).
    pub summariser: Option<String>,
    /// The provider's id.
    pub provider: Option<String>,
    /// Limit overrides per kind: `[plugins.limits.trimmer]`.
    #[serde(default)]
    pub limits: BTreeMap<PluginKind, LimitRequest>,
    /// Options handed to the selected plugin of a kind as a JSON object: `[plugins.options.trimmer]`.
    #[serde(default)]
    pub options: BTreeMap<PluginKind, toml::Table>,
}

impl Config {
    /// Reads the user's file (in `config_dir`) and the project's, the project's values winning.
    /// Missing files are empty configurations.
    pub fn load(config_dir: &Path, project: Option<&Path>) -> Result<Self, Error> {
        let mut config = read(&config_dir.join(FILE))?;
        if let Some(project) = project {
            let local = read(&project.join(".seshat").join(FILE))?;
            config.merge(local);
        }
        Ok(config)
    }

    fn merge(&mut self, over: Config) {
        self.memory.context_tokens = over.memory.context_tokens.or(self.memory.context_tokens);
        let p = over.plugins;
        self.plugins.trimmer = p.trimmer.or(self.plugins.trimmer.take());
        self.plugins.summariser = p.summariser.or(self.plugins.summariser.take());
        self.plugins.provider = p.provider.or(self.plugins.provider.take());
        for (kind, table) in p.options {
            self.plugins.options.entry(kind).or_default().extend(table);
        }
        for (kind, l) in p.limits {
            let base = self.plugins.limits.entry(kind).or_default();
            *base = LimitRequest {
                memory_mib: l.memory_mib.or(base.memory_mib),
                time_ms: l.time_ms.or(base.time_ms),
                complete_calls: l.complete_calls.or(base.complete_calls),
                complete_max_tokens: l.complete_max_tokens.or(base.complete_max_tokens),
            };
        }
    }

    /// The id of the plugin selected for `kind`, if any.
    pub fn selected(&self, kind: PluginKind) -> Option<&str> {
        match kind {
            PluginKind::Trimmer => Some(self.plugins.trimmer.as_deref().unwrap_or("trimmer")),
            PluginKind::Summariser => Some(self.plugins.summariser.as_deref().unwrap_or("summariser")),
            PluginKind::Provider => self.plugins.provider.as_deref(),
        }
    }

    /// The options for plugins of `kind`, as the JSON object plugins receive (`{}` when none).
    pub fn options_json(&self, kind: PluginKind) -> String {
        self.plugins.options.get(&kind).and_then(|t| serde_json::to_string(t).ok()).unwrap_or_else(|| "{}".to_string())
    }

    /// The token budget of the memory context.
    pub fn memory_context_tokens(&self) -> usize {
        self.memory.context_tokens.unwrap_or(crate::memory::DEFAULT_CONTEXT_TOKENS)
    }

    /// The user's limit overrides for `kind`.
    pub fn limits(&self, kind: PluginKind) -> LimitRequest {
        self.plugins.limits.get(&kind).copied().unwrap_or_default()
    }
}

fn read(path: &Path) -> Result<Config, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).map_err(|e| Error { path: path.to_path_buf(), message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(Error { path: path.to_path_buf(), message: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_overrides_user_key_by_key() {
        let user = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            user.path().join(FILE),
            "[plugins]\ntrimmer = \"mine\"\nprovider = \"openai\"\n[plugins.limits.trimmer]\nmemory_mib = 32\ntime_ms = 100\n",
        )
        .unwrap();
        std::fs::create_dir_all(project.path().join(".seshat")).unwrap();
        std::fs::write(
            project.path().join(".seshat").join(FILE),
            "[plugins]\ntrimmer = \"ours\"\n[plugins.limits.trimmer]\ntime_ms = 50\n",
        )
        .unwrap();
        let c = Config::load(user.path(), Some(project.path())).unwrap();
        assert_eq!(c.selected(PluginKind::Trimmer), Some("ours"));
        assert_eq!(c.selected(PluginKind::Provider), Some("openai"));
        assert_eq!(c.selected(PluginKind::Summariser), Some("summariser"));
        assert_eq!(
            c.limits(PluginKind::Trimmer),
            LimitRequest { memory_mib: Some(32), time_ms: Some(50), ..Default::default() }
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join(FILE), "[plugins]\ntrimer = \"typo\"\n").unwrap();
        let err = Config::load(user.path(), None).unwrap_err();
        assert!(err.to_string().contains("config.toml") && err.to_string().contains("trimer"), "{err}");
    }
}
