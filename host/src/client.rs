//! The Rust SDK's entry point: [`ClientConfig`] and [`Client`].
//!
//! A client owns the session store and the selected policy plugins, and runs the compaction
//! pipeline for the application's model calls. Automatic compaction is opt-in here (as in the Go
//! SDK's `ClientConfig.AutoCompact`); the `seshat` CLI turns it on.

use std::path::PathBuf;
use std::sync::Arc;

use crate::compaction::{self, Compactor, Frame, ModelClient, Prepared, Report, Settings};
use crate::config::Config;
use crate::paths::Dirs;
use crate::plugins::{Catalog, PluginKind, Runtime, SummariserPlugin, TrimmerPlugin};
use crate::store::Store;

/// How a [`Client`] is set up.
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    /// Compact automatically before model calls that pass the threshold. Off by default.
    pub auto_compact: bool,
    /// The model that writes summaries; by default the session's own model.
    pub compact_summary_model: Option<String>,
    /// The session database; by default the one under [`Dirs`].
    pub db_path: Option<PathBuf>,
    /// Where configuration, plugins and caches live; by default from the environment.
    pub dirs: Option<Dirs>,
    /// The project key (for project plugins and configuration); none by default.
    pub project: Option<String>,
}

/// Errors setting up a client.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Directories could not be found.
    #[error(transparent)]
    Paths(#[from] crate::paths::Error),
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::Error),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// A plugin could not be loaded.
    #[error(transparent)]
    Plugin(#[from] crate::plugins::Error),
    /// Compaction failed.
    #[error(transparent)]
    Compaction(#[from] compaction::Error),
}

/// Result alias for the client.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A session store with its policies, ready to prepare model requests.
pub struct Client {
    config: ClientConfig,
    settings: Config,
    store: Store,
    trimmer: TrimmerPlugin,
    summariser: SummariserPlugin,
    models: Arc<dyn ModelClient>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Client {
    /// Opens the store and loads the selected trimmer and summariser. `models` serves summary
    /// calls (the application's provider).
    pub fn new(config: ClientConfig, models: Arc<dyn ModelClient>) -> Result<Self> {
        let dirs = match &config.dirs {
            Some(d) => d.clone(),
            None => Dirs::from_env()?,
        };
        let project = config.project.as_deref().map(std::path::Path::new);
        let settings = Config::load(&dirs.config, project)?;
        let store = Store::open(&config.db_path.clone().unwrap_or_else(|| dirs.db_path()))?;
        let catalog = Catalog::discover(&dirs.config, project);
        let runtime = Runtime::new(Some(dirs.cache.join("plugins")));
        let load = |kind: PluginKind| -> Result<crate::plugins::LoadedPlugin> {
            let id = settings.selected(kind).unwrap_or(kind.as_str());
            Ok(runtime.load(catalog.find(kind, id)?, settings.limits(kind))?)
        };
        let trimmer = TrimmerPlugin::new(&load(PluginKind::Trimmer)?)?;
        let summariser = SummariserPlugin::new(&load(PluginKind::Summariser)?)?;
        Ok(Self { config, settings, store, trimmer, summariser, models })
    }

    /// The session store.
    pub fn store(&mut self) -> &mut Store {
        &mut self.store
    }

    /// Compaction settings for a session's model.
    pub fn settings(&self, model: &str, context_window: Option<u64>, max_output_tokens: u64) -> Settings {
        Settings {
            auto_compact: self.config.auto_compact,
            context_window,
            max_output_tokens,
            model: model.to_string(),
            summary_model: self.config.compact_summary_model.clone(),
            trimmer_options: self.settings.options_json(PluginKind::Trimmer),
            summariser_options: self.settings.options_json(PluginKind::Summariser),
        }
    }

    /// Runs the pre-call pipeline and returns the request to send.
    pub fn prepare(&mut self, session: &str, frame: &Frame, settings: &Settings) -> Result<Prepared> {
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        Ok(c.before_call(&mut self.store, session, frame, settings)?)
    }

    /// Compacts a session now, ignoring the failure breaker (a success clears it).
    pub fn compact(&mut self, session: &str, frame: &Frame, settings: &Settings, dry_run: bool) -> Result<Report> {
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        Ok(c.compact(&mut self.store, session, frame, settings, dry_run)?)
    }
}
