//! One place builds an agent: the configuration files merged with a front end's explicit
//! [`Overrides`], opened into what a turn needs — the store, the plugin catalog and runtime, the
//! provider with its credentials (which also writes summaries), the tool set (memory, history,
//! knowledge and the caller's own), the recall search and the background embedding queue.
//! `seshat chat`, `compact`, `serve` and `mcp` are front ends over it, and so is a Rust program:
//!
//! ```
//! use seshat::client::{Environment, Overrides, Quiet, SessionChoice};
//! use seshat::providers::Cancel;
//! # use std::io::{BufRead, BufReader, Read, Write};
//! # // A loopback server speaking OpenAI's streamed chat API, and a Seshat home whose
//! # // config.toml points the `openai` provider at it (a local server needs no key).
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let port = listener.local_addr()?.port();
//! # std::thread::spawn(move || {
//! #     for stream in listener.incoming().flatten() {
//! #         let mut reader = BufReader::new(stream.try_clone().unwrap());
//! #         let mut length = 0;
//! #         loop {
//! #             let mut line = String::new();
//! #             reader.read_line(&mut line).unwrap();
//! #             if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
//! #                 length = v.trim().parse().unwrap();
//! #             }
//! #             if line == "\r\n" { break; }
//! #         }
//! #         reader.take(length).read_to_end(&mut Vec::new()).unwrap();
//! #         let chunk = |delta: &str, finish: &str| format!(
//! #             "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n");
//! #         let body = chunk("{\"content\":\"Hello from a loopback server.\"}", "null")
//! #             + &chunk("{}", "\"stop\"") + "data: [DONE]\n\n";
//! #         let mut stream = stream;
//! #         write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
//! #     }
//! # });
//! # let home = tempfile::tempdir()?;
//! # let dirs = seshat::paths::Dirs::under(home.path());
//! # std::fs::create_dir_all(&dirs.config)?;
//! # std::fs::write(dirs.config.join("config.toml"), format!(
//! #     "[plugins]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"))?;
//!
//! let env = Environment::open(Overrides { dirs: Some(dirs), model: Some("gpt-4o".into()), ..Overrides::default() })?;
//! let mut agent = env.agent(SessionChoice::New, Vec::new())?;
//! let outcome = agent.turn("Say hello", &Cancel::default(), &mut Quiet)?;
//! assert_eq!(outcome.text, "Hello from a loopback server.");
//! // Saved: `seshat chat --continue` (or `SessionChoice::Continue`) takes the session up again.
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use super::{Agent, AgentOptions, Client, ClientOptions, Error, Result, SessionChoice, Tool, Tools};
use crate::config::{Config, ToolChoice};
use crate::paths::Dirs;
use crate::plugins::{Catalog, Runtime};
use crate::providers::SharedProvider;
use crate::store::Location;

/// What a front end sets over the configuration files. Every field left `None` (the default)
/// means "as configured". The fields are read in one place, destructured, so a new one cannot be
/// forgotten there.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Where configuration, plugins and caches live (default: from the environment).
    pub dirs: Option<Dirs>,
    /// The store (default: as [`super::store_location`] finds it).
    pub store: Option<Location>,
    /// The project key (default: none — user-level configuration and memory only).
    pub project: Option<String>,
    /// The project's directory, whose `.seshat/config.toml`, plugins and `AGENTS.md` apply
    /// (default: the project key read as a path, for a key that is one).
    pub project_dir: Option<PathBuf>,
    /// The provider, by its `[providers.<name>]` name (default: `[plugins] provider`).
    pub provider: Option<String>,
    /// The model (default: `[chat] model`, else the session's, else the provider's first).
    pub model: Option<String>,
    /// The model that writes summaries (default: `[chat] summary_model`, else the session's).
    pub summary_model: Option<String>,
    /// The context window in tokens (default: what the provider or the session knows).
    pub window: Option<u64>,
    /// The answer's room in tokens, exactly (default: as the window allows).
    pub max_output: Option<u64>,
    /// Compact automatically before calls that pass the threshold (default: `[chat]
    /// auto_compact`, else on).
    pub auto_compact: Option<bool>,
    /// Most model calls in one turn (default: `[chat] max_iterations`, else 25).
    pub max_iterations: Option<u32>,
    /// Stream answers (default: on).
    pub stream: Option<bool>,
    /// The user every store opened here acts for (default: the local user; see
    /// [`crate::store::Store::acting_for`]).
    pub user: Option<String>,
    /// The project's instructions as (file name, text), given instead of read from the project
    /// directory (a remote client's `AGENTS.md`, read on its own machine).
    pub instructions: Option<Vec<(String, String)>>,
    /// The configuration, given whole instead of read from the user's and the project's files (a
    /// service's own file, read once and again on reload).
    pub config: Option<Arc<Config>>,
    /// The program's own hooks, run after the configured ones at every agent's events (a
    /// `seshat serve` client's; a Rust program's functions).
    pub hooks: Vec<crate::hooks::Registration>,
}

/// The configuration opened for front ends: see the [module](self) documentation.
pub struct Environment {
    config: Arc<Config>,
    dirs: Dirs,
    store: Location,
    project: Option<String>,
    project_dir: Option<PathBuf>,
    overrides: Overrides,
    /// The installed plugins, discovered on first use and kept.
    catalog: std::sync::OnceLock<Catalog>,
    /// Told what an agent being opened waits for (see [`Environment::on_progress`]).
    progress: Option<super::Progress>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("store", &self.store)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl Environment {
    /// Reads the configuration files (the user's, then the project's) and keeps `overrides`.
    pub fn open(overrides: Overrides) -> Result<Self> {
        let dirs = match &overrides.dirs {
            Some(d) => d.clone(),
            None => Dirs::from_env()?,
        };
        let project = overrides.project.clone();
        let project_dir = super::project_dir(overrides.project_dir.as_deref(), project.as_deref());
        let config = match &overrides.config {
            Some(given) => given.clone(),
            None => Arc::new(Config::load(&dirs.config, project_dir.as_deref())?),
        };
        let store = super::store_location(overrides.store.as_ref(), &dirs)?;
        Ok(Environment {
            config,
            dirs,
            store,
            project,
            project_dir,
            overrides,
            catalog: std::sync::OnceLock::new(),
            progress: None,
        })
    }

    /// The merged configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Where Seshat's files live.
    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// Where the store is.
    pub fn store(&self) -> &Location {
        &self.store
    }

    /// Every installed plugin the project sees (looked for once).
    pub fn catalog(&self) -> &Catalog {
        self.catalog.get_or_init(|| Catalog::discover(&self.dirs.config, self.project_dir.as_deref()))
    }

    /// The plugin runtime, caching compiled plugins under the cache directory.
    pub fn runtime(&self) -> Runtime {
        Runtime::new(Some(self.dirs.cache.join("plugins"))).with_cache_cap(self.config.plugin_cache_bytes())
    }

    /// Hybrid memory and history search, when the configuration embeds them.
    pub fn recall(&self) -> Option<crate::retrieval::Recall> {
        let recall = crate::retrieval::Recall::from_config(&self.config, self.catalog(), &self.runtime(), &self.store)?;
        Some(match &self.overrides.user {
            Some(user) => recall.acting_for(user),
            None => recall,
        })
    }

    /// The store, acting for the overrides' user.
    fn connect(&self) -> Result<crate::store::Store> {
        let mut store = crate::store::Store::connect(&self.store)?;
        store.set_redaction(self.config.redaction.policy().map_err(crate::store::Error::from)?);
        Ok(match &self.overrides.user {
            Some(user) => store.acting_for(user),
            None => store,
        })
    }

    /// The thread that embeds what is written, when the configuration embeds history or memory.
    pub fn background(&self) -> Option<crate::retrieval::queue::Background> {
        crate::retrieval::queue::Background::start(&self.config, self.catalog(), &self.runtime(), &self.store)
    }

    /// The document corpus, with the configured embedder. An embedder that cannot be loaded
    /// leaves the search lexical (with a warning), never stops the caller.
    pub fn knowledge(&self) -> Result<crate::retrieval::Knowledge> {
        Ok(self.knowledge_over(self.connect()?))
    }

    /// [`Environment::knowledge`] over a store already open.
    fn knowledge_over(&self, store: crate::store::Store) -> crate::retrieval::Knowledge {
        let embedder = match crate::retrieval::load_embedder(&self.config, self.catalog(), &self.runtime()) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("knowledge search is lexical: {e}");
                None
            }
        };
        crate::retrieval::Knowledge::new(store, embedder, crate::retrieval::weights(&self.config))
    }

    /// The document corpus for the agent's knowledge tools: only when the project sees a document.
    fn agent_knowledge(&self) -> Option<crate::retrieval::Knowledge> {
        let project = self.project.as_deref().unwrap_or_default();
        let store = self.connect().ok()?;
        let filter = crate::store::KnowledgeFilter { project, scope: None };
        if store.knowledge_document_ids(filter).ok()?.is_empty() {
            return None;
        }
        Some(self.knowledge_over(store))
    }

    /// A client (the store and the policy plugins) without a provider: summaries can then come
    /// only from a summariser that calls no model.
    pub fn client(&self) -> Result<Client> {
        Client::new(self.client_config(), Arc::new(crate::compaction::NoModels))
    }

    /// The hooks the configuration declares — the user's, and the project's when the user trusts
    /// its file as it is — then the program's own ([`Overrides::hooks`]). When the environment
    /// acts for a service's user, only the program's (a client's own): no hook of the operator's
    /// is told their sessions.
    pub fn hooks(&self) -> Result<crate::hooks::Hooks> {
        let mut hooks = self.configured_hooks()?;
        for registration in &self.overrides.hooks {
            hooks.register(registration.clone());
        }
        Ok(hooks)
    }

    /// The hooks of the configuration files.
    fn configured_hooks(&self) -> Result<crate::hooks::Hooks> {
        // A service acting for its users runs none of its operator's commands on their sessions.
        if self.overrides.user.is_some() {
            return Ok(crate::hooks::Hooks::default());
        }
        let user_file = self.dirs.config.join("config.toml");
        let trust = crate::hooks::trust::Trust::load(&self.dirs.data).map_err(|e| crate::config::Error {
            path: self.dirs.data.join("trusted-hooks.json"),
            message: e.to_string(),
        })?;
        let mut plugins = |id: &str| -> std::result::Result<crate::plugins::HookPlugin, String> {
            let kind = crate::plugins::PluginKind::Hook;
            let entry = self.catalog().find(kind, id).map_err(|e| e.to_string())?;
            let loaded = self.runtime().load(entry, self.config.limits(kind)).map_err(|e| e.to_string())?;
            crate::plugins::HookPlugin::new(&loaded).map_err(|e| e.to_string())
        };
        let hooks = crate::hooks::Hooks::from_config(
            &self.config,
            &user_file,
            &trust,
            self.project_dir.as_deref(),
            &mut plugins,
        )
        .map_err(|message| crate::config::Error { path: user_file.clone(), message })?;
        for untrusted in hooks.untrusted() {
            tracing::warn!("{untrusted}");
        }
        Ok(hooks)
    }

    /// How long memory is kept by scope (`[memory.ttl]`).
    fn memory_ttls(&self) -> Result<crate::memory::Ttls> {
        crate::memory::Ttls::parse(&self.config.memory.ttl).map_err(|message| {
            Error::Config(crate::config::Error { path: self.dirs.config.join("config.toml"), message })
        })
    }

    /// The memory extractor `[memory] extract` names (`extractor` unless `id` names another),
    /// loaded with its options and limits; `None` when extraction is off and no `id` is given.
    pub fn extraction_with(&self, id: Option<&str>) -> Result<Option<super::Extraction>> {
        let kind = crate::plugins::PluginKind::Extractor;
        let Some(id) = id.or(self.config.memory.extract.as_deref()) else { return Ok(None) };
        let loaded = self.runtime().load(self.catalog().find(kind, id)?, self.config.limits(kind))?;
        let plugin = crate::plugins::ExtractorPlugin::new(&loaded)?;
        let at = self.config.memory.extract_at.unwrap_or_default();
        Ok(Some(super::Extraction::new(plugin, at, self.config.options_json(kind), self.memory_ttls()?)))
    }

    /// The memory extractor `[memory] extract` names, when extraction is on.
    pub fn extraction(&self) -> Result<Option<super::Extraction>> {
        self.extraction_with(None)
    }

    fn client_config(&self) -> ClientOptions {
        let Overrides { summary_model, auto_compact, .. } = &self.overrides;
        ClientOptions {
            auto_compact: auto_compact.unwrap_or(self.config.chat.auto_compact.unwrap_or(true)),
            compact_summary_model: summary_model.clone().or(self.config.chat.summary_model.clone()),
            store: Some(self.store.clone()),
            dirs: Some(self.dirs.clone()),
            project: self.project.clone(),
            project_dir: self.project_dir.clone(),
            user: self.overrides.user.clone(),
            config: Some(self.config.clone()),
            ..ClientOptions::default()
        }
    }

    /// Has `progress` told, as it happens, what an agent being opened waits for (a server's list
    /// of its models), so a front end can say so before the wait rather than after.
    pub fn on_progress(&mut self, progress: super::Progress) {
        self.progress = Some(progress);
    }

    /// The agent for `session`, as `seshat chat` runs it: the provider (which also writes the
    /// summaries), the configured tools with the recall and knowledge search, and `extra_tools`
    /// (the application's own). Nothing configured to talk to is the error coded
    /// `provider_not_configured` (or `plugin_not_found` for a provider plugin not installed).
    pub fn agent(&self, session: SessionChoice, extra_tools: Vec<Box<dyn Tool>>) -> Result<Agent> {
        let Overrides {
            dirs: _,
            store: _,
            project: _,
            project_dir: _,
            summary_model: _,
            auto_compact: _,
            provider,
            model,
            window,
            max_output,
            max_iterations,
            stream,
            user: _,
            instructions,
            config: _,
            hooks: _,
        } = &self.overrides;
        let config = &self.config;
        // The provider first: it also writes the summaries, so the client is made with it.
        let (provider, note) =
            super::load_provider(&self.config, self.catalog(), &self.runtime(), provider.as_deref())?;
        let provider = SharedProvider::new(provider);
        let mut client = Client::new(self.client_config(), Arc::new(provider.clone()))?;
        if let Some(note) = note {
            client.note(note);
        }
        if let Some(progress) = &self.progress {
            client.set_progress(progress.clone());
        }
        let system_prompt = match &config.chat.system_prompt_file {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| crate::config::Error {
                path: path.clone(),
                message: format!("cannot read [chat] system_prompt_file: {e}"),
            })?),
            None => None,
        };
        let (tools, required_tools) = match &config.chat.tools {
            None | Some(ToolChoice::All(true)) => (Tools::builtin(), Default::default()),
            Some(ToolChoice::All(false)) => (Tools::none(), Default::default()),
            Some(ToolChoice::Only(names)) => {
                let all = Tools::builtin();
                let mut known: Vec<String> = all.specs().into_iter().map(|s| s.name).collect();
                known.extend(crate::retrieval::tools::definitions().into_iter().map(|d| d.name));
                if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
                    return Err(Error::Config(crate::config::Error {
                        path: self.dirs.config.join("config.toml"),
                        message: format!(
                            "[chat] tools names `{unknown}`, which is not a tool Seshat offers; the tools are: {}",
                            known.join(", ")
                        ),
                    }));
                }
                (all, names.iter().cloned().collect())
            }
        };
        let project = self.project.clone().unwrap_or_default();
        let options = AgentOptions {
            session,
            project: project.clone(),
            project_dir: self.project_dir.clone().filter(|_| config.chat.project_instructions.unwrap_or(true)),
            instructions: instructions.clone().filter(|_| config.chat.project_instructions.unwrap_or(true)),
            model: model.clone().or(config.chat.model.clone()),
            window: *window,
            max_output_tokens: config.chat.max_output_tokens,
            max_output: *max_output,
            required_tools,
            max_iterations: max_iterations.or(config.chat.max_iterations).unwrap_or(25),
            system_prompt,
            stream: stream.unwrap_or(true),
            memory_budget: config.memory_context_tokens().unwrap_or(crate::memory::DEFAULT_CONTEXT_TOKENS),
            provider_options: "{}".into(),
            hooks: self.hooks()?,
            // A service acting for its users runs no extractor of its operator's on their sessions.
            extraction: if self.overrides.user.is_some() { None } else { self.extraction()? },
        };
        let ttls = self.memory_ttls()?;
        let tools = tools.with_memory_ttls(ttls);
        let tools = match self.recall() {
            Some(recall) => tools.with_recall(recall),
            None => tools,
        };
        let tools = match self.agent_knowledge() {
            Some(k) if !matches!(config.chat.tools, Some(ToolChoice::All(false))) => tools.with_knowledge(k, project),
            _ => tools,
        };
        let mut tools = match &config.chat.tools {
            Some(ToolChoice::Only(names)) => tools.only(names),
            _ => tools,
        };
        for tool in extra_tools {
            tools.register(tool);
        }
        Agent::open(client, provider, tools, options)
    }
}
