//! The Rust SDK's entry point: [`ClientOptions`] and [`Client`].
//!
//! A client owns the session store and the selected policy plugins, and runs the compaction
//! pipeline for the application's model calls. Automatic compaction is opt-in here (as in the Go
//! SDK's `ClientOptions.AutoCompact`); the `seshat` CLI turns it on.
//!
//! [`Agent`] runs the chat loop on top: a provider, tools (the memory tools and the
//! application's own), the system prompt, and the turn loop that stores every message.

pub mod agent;
pub mod environment;
pub mod extraction;
pub mod history;
mod hooking;
pub mod prompt;
pub(crate) mod sizing;
mod store_location;
pub mod tools;
pub mod trial;
mod typed;
pub mod warming;

pub use crate::tool::{ToolDef, ToolOutput};
pub use agent::{Agent, AgentOptions, ContextUse, Observer, Quiet, SessionChoice, TurnOutcome, tell};
pub use environment::{Environment, Overrides};
pub use extraction::{Extracted, Extraction, Remembered};
pub use store_location::{DATABASE_URL_ENV, location_from_argument, store_location};
pub use tools::{Tool, Tools};
pub use warming::Warming;

use std::sync::Arc;

use crate::compaction::{self, Compactor, Frame, ModelClient, Prepared, Report, Settings};
use crate::config::Config;
use crate::paths::Dirs;
use crate::plugins::{Catalog, PluginKind, Runtime, SummariserPlugin, TrimmerPlugin};
use crate::store::Store;

/// How a [`Client`] is set up.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Compact automatically before model calls that pass the threshold. Off by default.
    pub auto_compact: bool,
    /// The model that writes summaries; by default the session's own model.
    pub compact_summary_model: Option<String>,
    /// What every compaction is told to keep or stress; by default `[compaction] instructions`.
    pub compact_instructions: Option<String>,
    /// A summary prompt replacing the summariser's; by default the text of
    /// `[compaction] prompt_file`.
    pub compact_prompt: Option<String>,
    /// The store; by default as [`store_location`] finds it.
    pub store: Option<crate::store::Location>,
    /// Where configuration, plugins and caches live; by default from the environment.
    pub dirs: Option<Dirs>,
    /// The project key; none by default.
    pub project: Option<String>,
    /// The project's directory (its configuration and plugins); by default the project key read
    /// as a path, for a key that is one.
    pub project_dir: Option<std::path::PathBuf>,
    /// The user the store acts for (see [`Store::acting_for`]); by default the local user.
    pub user: Option<String>,
    /// The configuration, given whole; by default the user's and the project's files, read.
    pub config: Option<Arc<Config>>,
}

/// The project's directory: the one given, else the project key when it is an absolute path
/// (a key that does not travel is the directory's path).
pub(crate) fn project_dir(dir: Option<&std::path::Path>, key: Option<&str>) -> Option<std::path::PathBuf> {
    dir.map(std::path::Path::to_path_buf)
        .or_else(|| key.map(std::path::Path::new).filter(|p| p.is_absolute()).map(std::path::Path::to_path_buf))
}

/// Errors setting up a client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The provider failed (nothing of an answer arrived).
    #[error(transparent)]
    Provider(#[from] crate::providers::Error),
    /// The memory store failed.
    #[error(transparent)]
    Memory(#[from] crate::memory::Error),
    /// The server refused a request for its length even after Seshat learnt its window and
    /// compacted, or could not compact to recover.
    #[error("context_overflow: {0}")]
    ContextOverflow(String),
    /// Another holder (a process sharing the store) runs a turn or a compaction in the session.
    #[error(
        "session_busy: session {0} has a turn in flight in another process sharing the store: wait for it to end, \
         or interrupt it there"
    )]
    SessionBusy(String),
    /// A hook blocked the turn (a `user_prompt` hook, or a required one that failed): nothing was
    /// stored or sent.
    #[error("blocked_by_hook: {0}")]
    Blocked(String),
    /// The model's window or the answer's room cannot work (a window below the minimum, an
    /// output size that cannot fit).
    #[error("{message}")]
    Sizing {
        /// `window_too_small`, `invalid_config` or `message_too_large` (a message that cannot fit the
        /// window alone).
        code: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
}

impl Error {
    /// A stable code for scripts.
    pub fn code(&self) -> &str {
        match self {
            Error::Paths(_) | Error::Config(_) => "invalid_config",
            Error::Store(e) => e.code(),
            Error::Plugin(e) => e.code(),
            Error::Compaction(e) => e.code(),
            Error::Provider(e) => e.code(),
            Error::Memory(_) => "memory_failed",
            Error::ContextOverflow(_) => "context_overflow",
            Error::SessionBusy(_) => "session_busy",
            Error::Blocked(_) => "blocked_by_hook",
            Error::Sizing { code, .. } => code,
        }
    }
}

/// Result alias for the client.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The plugin [`Client::preview`] runs in place of the configured one of its kind.
#[derive(Debug)]
pub(crate) enum Substitute<'a> {
    /// A trimmer: the preview shows its edits.
    Trimmer(&'a mut TrimmerPlugin),
    /// A summariser: the preview shows its summary.
    Summariser(&'a mut SummariserPlugin),
}

/// A session store with its policies, ready to prepare model requests.
pub struct Client {
    config: ClientOptions,
    settings: Arc<Config>,
    dirs: Dirs,
    runtime: Runtime,
    catalog: Catalog,
    store: Store,
    trimmer: TrimmerPlugin,
    summariser: SummariserPlugin,
    models: Arc<dyn ModelClient>,
    /// The live view of the session last prepared, refreshed incrementally.
    view: Option<crate::store::LiveView>,
    /// Choices made on the user's behalf, for the status line.
    notes: Vec<String>,
    /// The summary prompt replacing the summariser's, if one is configured.
    prompt: Option<String>,
    /// Told what the client waits for, as it happens.
    progress: Option<Progress>,
    /// The summariser as loaded (to make another instance of it for background summaries).
    summariser_loaded: crate::plugins::LoadedPlugin,
    /// Summaries written off the turn's path (off until [`Client::enable_background`]).
    background: compaction::background::Background,
}

/// What a front end is told, as it happens, of a wait it would otherwise not see (a server asked
/// for its models).
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Client {
    /// Opens the store and loads the selected trimmer and summariser. `models` serves summary
    /// calls (the application's provider).
    pub fn new(config: ClientOptions, models: Arc<dyn ModelClient>) -> Result<Self> {
        let dirs = match &config.dirs {
            Some(d) => d.clone(),
            None => Dirs::from_env()?,
        };
        let project_dir = project_dir(config.project_dir.as_deref(), config.project.as_deref());
        let project = project_dir.as_deref();
        let settings = match &config.config {
            Some(given) => given.clone(),
            None => Arc::new(Config::load(&dirs.config, project)?),
        };
        let prompt = match (&config.compact_prompt, &settings.compaction.prompt_file) {
            (Some(prompt), _) => Some(prompt.clone()),
            (None, Some(path)) => Some(std::fs::read_to_string(path).map_err(|e| crate::config::Error {
                path: path.clone(),
                message: format!("cannot read [compaction] prompt_file: {e}"),
            })?),
            (None, None) => None,
        };
        let mut store = Store::connect(&store_location(config.store.as_ref(), &dirs)?)?;
        store.set_redaction(settings.redaction.policy().map_err(crate::store::Error::from)?);
        if let Some(user) = &config.user {
            store = store.acting_for(user);
        }
        let catalog = Catalog::discover(&dirs.config, project);
        let runtime = Runtime::new(Some(dirs.cache.join("plugins"))).with_cache_cap(settings.plugin_cache_bytes());
        let load = |kind: PluginKind| -> Result<crate::plugins::LoadedPlugin> {
            let id = settings.selected(kind).unwrap_or(kind.as_str());
            Ok(runtime.load(catalog.find(kind, id)?, settings.limits(kind))?)
        };
        let trimmer = TrimmerPlugin::new(&load(PluginKind::Trimmer)?)?;
        let summariser_loaded = load(PluginKind::Summariser)?;
        let summariser = SummariserPlugin::new(&summariser_loaded)?;
        Ok(Self {
            config,
            settings,
            dirs,
            runtime,
            catalog,
            store,
            trimmer,
            summariser,
            models,
            view: None,
            notes: Vec::new(),
            prompt,
            progress: None,
            summariser_loaded,
            background: compaction::background::Background::default(),
        })
    }

    /// The merged configuration files.
    pub fn config(&self) -> &Config {
        &self.settings
    }

    /// Where Seshat's files live.
    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// Loads the provider configured as `name` (`[providers.<name>]`, whose `plugin` defaults to
    /// the name), or the configured default provider, or — with none configured — the one the
    /// environment points at (see [`crate::providers::Credentials::provider_from_env`]; the choice
    /// is then in [`Client::notes`]).
    pub fn load_provider(&mut self, name: Option<&str>) -> Result<crate::providers::Provider> {
        let (provider, note) = load_provider(&self.settings, &self.catalog, &self.runtime, name)?;
        self.notes.extend(note);
        Ok(provider)
    }

    /// What the client chose on its own (a provider from the environment, a model the server
    /// listed), for the status line.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Has `progress` told what the client waits for, as it happens.
    pub fn set_progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
    }

    /// Tells the front end what is being waited for (nothing when none listens).
    pub(crate) fn progress(&self, what: &str) {
        if let Some(p) = &self.progress {
            p(what);
        }
    }

    /// Records a choice made on the user's behalf (see [`Client::notes`]).
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Replaces the client that serves summary calls (the chat loop's provider).
    pub fn set_models(&mut self, models: Arc<dyn ModelClient>) {
        self.models = models;
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
            calibration: 1.0,
            recall: false,
            instructions: self.config.compact_instructions.clone().or(self.settings.compaction.instructions.clone()),
            prompt: self.prompt.clone(),
            until: None,
            cancel: crate::providers::Cancel::default(),
            summary_request: self
                .settings
                .compaction
                .summary_request
                .unwrap_or(compaction::SummaryRequestKind::SharedPrefix),
            shape: None,
            summary_price: self.settings.price_of(self.config.compact_summary_model.as_deref().unwrap_or(model)),
            pre_compact: None,
        }
    }

    /// The live view of `session`, from the client's copy when it has one (only messages appended
    /// since are read).
    pub fn live_view(&mut self, session: &str) -> Result<crate::store::LiveView> {
        let view = match self.view.take() {
            Some(mut v) if v.session.id == session => {
                self.store.refresh_live_view(&mut v)?;
                v
            }
            _ => self.store.live_view(session)?,
        };
        self.view = Some(view.clone());
        Ok(view)
    }

    /// Runs the pre-call pipeline and returns the request to send.
    pub fn prepare(&mut self, session: &str, frame: &Frame, settings: &Settings) -> Result<Prepared> {
        self.prepare_with(session, frame, settings, &mut |_| {})
    }

    /// [`Client::prepare`], telling `progress` as a compaction runs (to show it).
    pub(crate) fn prepare_with(
        &mut self,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        progress: &mut dyn FnMut(compaction::Progress<'_>),
    ) -> Result<Prepared> {
        let view = self.live_view(session)?;
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        let background = Some(&mut self.background);
        Ok(c.before_call_with(&mut self.store, session, frame, settings, view, background, progress)?)
    }

    /// Writes summaries in the background: when a session passes the early mark (`marks.0`
    /// percent of the threshold), [`Client::prepare`] plans the compaction and has `models` write
    /// its summary on another thread, and a later call swaps it in (a request over the threshold
    /// that fits the window is sent meanwhile); an idle session above the idle mark (`marks.1`
    /// percent) is compacted the same way when its front end says it is idle. `models` must not be
    /// the client the chat's own requests go through when that one serves one call at a time (the
    /// summary would wait for the turn).
    pub fn enable_background(&mut self, models: Arc<dyn ModelClient>, marks: (u64, u64)) {
        self.background.enable(models, self.summariser_loaded.clone(), marks);
    }

    /// Starts a summary of `session` in the background now, when it is past the early mark and
    /// none is being written (an idle session's): planned here, written on another thread, swapped
    /// in at the next safe point. Returns whether one started.
    pub(crate) fn start_background(
        &mut self,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        reason: compaction::BackgroundReason,
        progress: &mut dyn FnMut(compaction::Progress<'_>),
    ) -> Result<bool> {
        let Some(window) = settings.context_window.filter(|_| self.background.enabled()) else { return Ok(false) };
        let view = self.live_view(session)?;
        let marks = crate::window::Marks::new(window);
        let tokens = compaction::current_use_calibrated(frame, &view, settings.calibration);
        let mark = match reason {
            compaction::BackgroundReason::EarlyMark => self.background.early_mark(&marks),
            compaction::BackgroundReason::Idle => self.background.idle_mark(&marks),
        };
        if !settings.auto_compact || tokens <= mark {
            return Ok(false);
        }
        if !self.background.may_start(session, tokens, &marks) {
            return Ok(false);
        }
        if reason == compaction::BackgroundReason::Idle && !compaction::background::room_for_idle() {
            return Ok(false);
        }
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        let mut warnings = Vec::new();
        let started = self.background.start(
            &mut c,
            &mut self.store,
            session,
            frame,
            settings,
            view,
            reason,
            progress,
            &mut warnings,
        );
        match warnings.pop() {
            Some(why) => Err(Error::Compaction(compaction::Error::SummaryFailed { failures: 0, message: why })),
            None => Ok(started),
        }
    }

    /// Swaps in `session`'s background summary if it is written (`wait`: waiting for it until it
    /// is, or until that cancel is cancelled).
    pub(crate) fn swap_background(
        &mut self,
        session: &str,
        frame: &Frame,
        wait: Option<&crate::providers::Cancel>,
    ) -> Result<Option<compaction::background::Swapped>> {
        // A live view read before the swap is not the view after it.
        self.view = None;
        Ok(self.background.swap(&mut self.store, session, frame, wait)?)
    }

    /// What to wait on for `session`'s background summary being written, if one is.
    pub fn background_waiter(&self, session: &str) -> Option<compaction::background::Waiter> {
        self.background.waiter(session)
    }

    /// Compacts a session now as an automatic compaction would (after a refusal for length):
    /// honours the breaker, and counts a failure like one.
    pub(crate) fn compact_auto(
        &mut self,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        progress: &mut dyn FnMut(compaction::Progress<'_>),
    ) -> Result<Report> {
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        Ok(c.compact_auto(&mut self.store, session, frame, settings, progress)?)
    }

    /// Runs `plugin` in place of the configured plugin of its kind, as a manual compaction of
    /// `session` would run it, recording nothing (`seshat plugins test`): a trimmer's edits, or
    /// the configured trimmer's then the cut and the summariser's summary.
    pub(crate) fn preview(
        &mut self,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        plugin: Substitute<'_>,
    ) -> Result<compaction::Preview> {
        let models = self.models.clone();
        let (mut c, stage) = match plugin {
            Substitute::Trimmer(trimmer) => {
                (Compactor { trimmer, summariser: &mut self.summariser, models }, compaction::Stage::Trims)
            }
            Substitute::Summariser(summariser) => {
                (Compactor { trimmer: &mut self.trimmer, summariser, models }, compaction::Stage::Summary)
            }
        };
        Ok(c.preview(&mut self.store, session, frame, settings, stage)?)
    }

    /// Compacts a session now, ignoring the failure breaker (a success clears it).
    pub fn compact(&mut self, session: &str, frame: &Frame, settings: &Settings, dry_run: bool) -> Result<Report> {
        self.compact_with(session, frame, settings, dry_run, &mut |_| {})
    }

    /// [`Client::compact`], telling `progress` as it runs (what a summary will replace, before
    /// it is written).
    pub fn compact_with(
        &mut self,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        dry_run: bool,
        progress: &mut dyn FnMut(compaction::Progress<'_>),
    ) -> Result<Report> {
        let mut c =
            Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: self.models.clone() };
        Ok(c.compact_with(&mut self.store, session, frame, settings, dry_run, progress)?)
    }
}

/// The providers `config` can select by name: those it configures (`[providers.<name>]`) and
/// the provider plugins installed, sorted, once each.
pub fn provider_names(config: &Config, catalog: &Catalog) -> Vec<String> {
    let mut names: Vec<String> = config.providers.keys().cloned().collect();
    names.extend(
        catalog.entries().iter().filter(|e| e.manifest.kind == PluginKind::Provider).map(|e| e.manifest.id.clone()),
    );
    names.sort();
    names.dedup();
    names
}

/// Checks that `name` selects a provider (configured, or an installed provider plugin) without
/// loading it: the error names it and what can be selected instead.
pub fn check_provider(config: &Config, catalog: &Catalog, name: &str) -> Result<()> {
    let plugin_id = provider_plugin(config, name);
    if catalog.find(PluginKind::Provider, &plugin_id).is_ok() {
        return Ok(());
    }
    let known: Vec<String> = provider_names(config, catalog).iter().map(|n| format!("`{n}`")).collect();
    let what = if plugin_id == name {
        format!("there is no provider `{name}`")
    } else {
        format!("the provider `{name}` names the plugin `{plugin_id}`, which is not installed")
    };
    Err(Error::Provider(crate::providers::Error::NotConfigured(format!(
        "{what}: the providers are {}",
        known.join(", ")
    ))))
}

/// The plugin that serves the provider `name`: its `[providers.<name>]`'s `plugin`, else the
/// name itself.
fn provider_plugin(config: &Config, name: &str) -> String {
    config.providers.get(name).and_then(|p| p.plugin.clone()).unwrap_or_else(|| name.to_string())
}

/// Loads the provider configured as `name`, or the configured default, or the one the
/// environment points at — then with a note saying so (see [`Client::load_provider`]).
pub(crate) fn load_provider(
    settings: &Config,
    catalog: &Catalog,
    runtime: &Runtime,
    name: Option<&str>,
) -> Result<(crate::providers::Provider, Option<String>)> {
    let mut note = None;
    let configured: Vec<&String> = settings.providers.keys().collect();
    let chosen = match (name.or(settings.selected(PluginKind::Provider)), configured.as_slice()) {
        (Some(n), _) => n.to_string(),
        // The one provider the configuration describes, before any guess from the environment.
        (None, [only]) => {
            note = Some(format!("using the provider `{only}`, the only one config.toml configures"));
            only.to_string()
        }
        (None, several) => match crate::providers::Credentials::provider_from_env() {
            Some((id, why)) => {
                note = Some(format!("using the {id} provider ({why})"));
                id.to_string()
            }
            None if several.is_empty() => {
                return Err(Error::Provider(crate::providers::Error::NotConfigured(
                    "no provider configured: export ANTHROPIC_API_KEY (or OPENAI_API_KEY, or OPENAI_BASE_URL for a \
                     local OpenAI-compatible server), or set `provider = \"anthropic\"` under [plugins] in \
                     config.toml, or name one"
                        .into(),
                )));
            }
            None => {
                let names: Vec<String> = several.iter().map(|n| format!("`{n}`")).collect();
                return Err(Error::Provider(crate::providers::Error::NotConfigured(format!(
                    "no provider is selected: config.toml configures {}; set `provider = \"{}\"` (or another) under \
                     [plugins] in config.toml, or name one",
                    names.join(", "),
                    several[0]
                ))));
            }
        },
    };
    let name = chosen.as_str();
    let config = settings.providers.get(name).cloned().unwrap_or_default();
    let entry = catalog.find(PluginKind::Provider, &provider_plugin(settings, name))?;
    let loaded = runtime.load(entry, settings.limits(PluginKind::Provider))?;
    Ok((crate::providers::Provider::new(name, &loaded, &config)?, note))
}
