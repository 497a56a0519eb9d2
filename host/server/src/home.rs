//! Where a server works and for whom: the directories, the store, the project, and the user a
//! network connection acts for. Every environment, configuration and store a connection opens
//! starts from here.

use std::path::PathBuf;
use std::sync::Arc;

use seshat::client::{Environment, Overrides};
use seshat::config::Config;
use seshat::paths::Dirs;
use seshat::plugins::Catalog;
use seshat::store::{Location, Store};

use crate::Settings;

/// Where a server works: see the [module](self) documentation.
#[derive(Debug, Clone)]
pub struct Home {
    /// Where configuration, plugins, caches and backups live.
    pub(crate) dirs: Dirs,
    /// The store.
    pub(crate) db: Location,
    /// The project key sessions, memory and documents are filed under.
    pub(crate) project: String,
    /// The directory whose `.seshat/config.toml`, plugins and instructions apply.
    project_dir: PathBuf,
    /// The project key when inside a project (memory's "project" scope); `None` outside one.
    pub(crate) repository: Option<String>,
    /// The user a network connection acts for (`None`: the local user).
    user: Option<String>,
    /// The project's instructions as a network client sent them (`None`: read from
    /// `project_dir`).
    instructions: Option<Vec<(String, String)>>,
    /// The service's configuration, when it is read once and reloaded (a network service's)
    /// instead of from the files at each use.
    settings: Option<Arc<Settings>>,
}

impl Home {
    /// A server working in `project` (read from `project_dir`; `repository` when inside one) on
    /// the store at `db`, for the local user.
    pub fn new(dirs: Dirs, db: Location, project: String, project_dir: PathBuf, repository: Option<String>) -> Home {
        Home { dirs, db, project, project_dir, repository, user: None, instructions: None, settings: None }
    }

    /// This home reading its configuration from `settings` (read once, replaced on reload)
    /// rather than from the configuration files at each use.
    pub fn with_settings(self, settings: Arc<Settings>) -> Home {
        Home { settings: Some(settings), ..self }
    }

    /// The configuration's generation: it changes on each reload (always 0 without
    /// [`Home::with_settings`]).
    pub(crate) fn generation(&self) -> u64 {
        self.settings.as_ref().map_or(0, |s| s.current().0)
    }

    /// This home acting for `user` (a network client's), in no project of the server's and
    /// reading none of its instruction files: the client names its own ([`Home::in_project`]).
    pub(crate) fn for_user(&self, user: &str) -> Home {
        Home {
            user: Some(user.to_string()),
            project: String::new(),
            repository: None,
            instructions: Some(Vec::new()),
            ..self.clone()
        }
    }

    /// This home in the project a network client named, with the instructions it read.
    pub(crate) fn in_project(&self, project: &str, instructions: Vec<(String, String)>) -> Home {
        Home {
            project: project.to_string(),
            repository: Some(project.to_string()).filter(|p| !p.is_empty()),
            instructions: Some(instructions),
            ..self.clone()
        }
    }

    /// The user's and the project's configuration, merged.
    pub(crate) fn config(&self) -> Result<Arc<Config>, seshat::config::Error> {
        match &self.settings {
            Some(settings) => Ok(settings.config()),
            None => Ok(Arc::new(Config::load(&self.dirs.config, Some(&self.project_dir))?)),
        }
    }

    /// Every installed plugin.
    pub(crate) fn catalog(&self) -> Catalog {
        Catalog::discover(&self.dirs.config, Some(&self.project_dir))
    }

    /// The library's environment here, with `overrides` (what a client asked for).
    pub(crate) fn environment(&self, overrides: Overrides) -> Result<Environment, seshat::client::Error> {
        Environment::open(Overrides {
            dirs: Some(self.dirs.clone()),
            store: Some(self.db.clone()),
            project: Some(self.project.clone()),
            project_dir: Some(self.project_dir.clone()),
            user: self.user.clone(),
            instructions: self.instructions.clone(),
            config: self.settings.as_ref().map(|s| s.config()),
            ..overrides
        })
    }

    /// The user a network connection acts for (`None`: the local user).
    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Opens the store, acting for the connection's user.
    pub(crate) fn store(&self) -> Result<Store, seshat::store::Error> {
        let mut store = Store::connect(&self.db)?;
        // What the configuration redacts (a configuration that does not load is reported where
        // it is used; the store then redacts with the built-in rules).
        if let Ok(config) = self.config() {
            store.set_redaction(config.redaction.policy()?);
        }
        Ok(self.acting(store))
    }

    /// `store` (open, perhaps for another connection's user before) acting for this home's.
    pub(crate) fn acting(&self, store: Store) -> Store {
        store.acting_for(self.user.as_deref().unwrap_or(seshat::store::LOCAL_USER))
    }

    /// `text` with the server's own places — its directories, its database's path or address —
    /// put as words: what a network client is told never names where the server keeps things.
    pub fn hide_paths(&self, text: &str) -> String {
        let mut out = text.to_string();
        let places = [
            (self.db.to_string(), "the server's database"),
            (self.dirs.data.display().to_string(), "the server's data directory"),
            (self.dirs.config.display().to_string(), "the server's configuration directory"),
            (self.dirs.cache.display().to_string(), "the server's cache directory"),
        ];
        for (place, words) in places {
            if place.len() > 1 {
                out = out.replace(&place, words);
            }
        }
        out
    }
}

/// The longest record (line) a connection reads: `[store] max_record_mib`, else the reader's
/// default.
pub(crate) fn record_limit(config: &Config) -> usize {
    config.store.max_record_bytes().unwrap_or(seshat::input::DEFAULT_MAX_RECORD_BYTES)
}
