//! One connection's server: a line read as a JSON-RPC message, its method's access rule checked,
//! then dispatched — an exhaustive `match` on the protocol's [`Request`](seshat_protocol::methods::Request)
//! whose arms call the handlers, one file per area ([`crate::handlers`]).

use serde_json::{Value, json};

use crate::connection::{Acting, ClientSetup, MAX_INSTRUCTIONS, MAX_PROJECT_KEY};
use crate::error::RpcError;
use crate::home::Home;
use crate::outbox::{self as rpc, Outbox};
use crate::turns;
use seshat::memory::tools;

/// A process-unique id for the request being served (`r` and a number), for the log.
fn next_request_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!("r{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

pub(crate) struct Server {
    /// The command's context; a network client's acts for its user, in the project it names.
    pub(crate) ctx: Home,
    /// The store connection the request being served borrowed from the server's pool (none
    /// between requests).
    pub(crate) db: Option<seshat::store::Store>,
    /// The server's idle store connections: the request borrows one ([`Server::store`]) and
    /// gives it back when answered.
    pub(crate) stores: crate::stores::Stores,
    /// The document corpus, made on the first `knowledge/search` and kept: its embedder loaded
    /// once, its vectors held in memory between searches.
    pub(crate) knowledge: Option<seshat::retrieval::Knowledge>,
    /// The library's environment for this connection (none when the configuration cannot be read).
    pub(crate) env: Option<seshat::client::Environment>,
    /// Hybrid memory search (when memory is embedded), made on the first memory call and kept.
    pub(crate) recall: Option<Option<seshat::retrieval::Recall>>,
    /// Embeds what the memory calls write, when memory is embedded.
    pub(crate) background: Option<seshat::retrieval::queue::Background>,
    pub(crate) outbox: Outbox,
    pub(crate) pending: rpc::Pending,
    pub(crate) setup: Option<ClientSetup>,
    pub(crate) turns: turns::Turns,
    /// Who the connection acts for.
    pub(crate) acting: Acting,
    /// What the service counts.
    pub(crate) metrics: crate::metrics::Metrics,
    /// The generation of the service's configuration `env` was opened from.
    pub(crate) generation: u64,
}

impl Server {
    pub(crate) fn line(&mut self, text: &str) {
        let msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return self.outbox.error(Value::Null, RpcError::parse(format!("the line is not JSON: {e}"))),
        };
        let id = msg.get("id").cloned();
        if id.as_ref().is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null())) {
            return self
                .outbox
                .error(Value::Null, RpcError::invalid_request("`id` must be a string or a number (JSON-RPC 2.0)"));
        }
        // A response to one of the server's own requests (`tool/call`).
        if msg.get("method").is_none() && id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
            rpc::deliver(&self.pending, &msg);
            return;
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return self.outbox.error(
                id.unwrap_or(Value::Null),
                RpcError::invalid_request("a request needs a string `method` (and `jsonrpc`: \"2.0\")"),
            );
        };
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return self
                .outbox
                .error(id.unwrap_or(Value::Null), RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
        }
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        let Some(id) = id else {
            // Notifications the server understands: none change state yet.
            return;
        };
        // Every line this request causes — its audit event, a turn's on the worker that runs it —
        // carries its id.
        let span = tracing::info_span!(target: "seshat::service", "request", request_id = next_request_id(), method);
        let _request = span.enter();
        let began = std::time::Instant::now();
        // The service's configuration was reloaded since this connection last read it.
        if self.ctx.generation() != self.generation {
            self.reopen();
        }
        // Reading the configuration needs no session settings: a client may check it first.
        if method != "initialize" && method != "config/get" && self.setup.is_none() {
            let refused = RpcError::not_initialized();
            self.metrics.request(method, Some(refused.stable()), began.elapsed());
            return self.outbox.error(id, refused);
        }
        // The method's access rule, declared with it in the protocol: an unknown method is
        // answered by the dispatch below.
        let writes = seshat_protocol::methods::access(method).is_some_and(|a| a.writes());
        if writes && self.acting.read_only {
            let refused = RpcError::read_only(method);
            self.audit(method, &params, None, Some(&refused), writes);
            self.metrics.request(method, Some(refused.stable()), began.elapsed());
            return self.outbox.error(id, refused);
        }
        let answer = self.call(method, &params, id.clone());
        self.metrics.request(method, answer.as_ref().err().map(RpcError::stable), began.elapsed());
        self.audit(method, &params, answer.as_ref().ok().and_then(Option::as_ref), answer.as_ref().err(), writes);
        match answer {
            Ok(Some(result)) => self.outbox.result(id, result),
            Ok(None) => {} // answered later, by a worker
            Err(mut e) => {
                if self.acting.user.is_some() {
                    e.message = self.ctx.hide_paths(&e.message);
                }
                self.outbox.error(id, e)
            }
        }
    }

    /// Runs `f` with the connection's turns and what a turn or compaction needs of it.
    pub(crate) fn with_link<R>(
        &mut self,
        setup: &ClientSetup,
        f: impl FnOnce(&mut turns::Turns, turns::Link<'_>) -> R,
    ) -> R {
        let link = turns::Link {
            ctx: &self.ctx,
            setup,
            outbox: &self.outbox,
            pending: &self.pending,
            user: self.acting.user.as_deref(),
            max_turns: self.acting.max_turns,
            max_sessions: self.acting.max_sessions,
            max_workers: self.acting.max_workers,
        };
        f(&mut self.turns, link)
    }

    /// A network client's project: its key and the instructions it read on its machine. The
    /// connection's environment and memory search are made again for it.
    pub(crate) fn enter_project(
        &mut self,
        project: Option<&str>,
        instructions: Vec<seshat_protocol::methods::InstructionFile>,
    ) -> Result<(), RpcError> {
        let project = project.unwrap_or_default();
        if project.len() > MAX_PROJECT_KEY || project.chars().any(char::is_control) {
            return Err(RpcError::invalid_params(format!(
                "`project` must be a project key of at most {MAX_PROJECT_KEY} bytes without control characters \
                 (a normalised git remote, a `.seshat/project` id, or a path)"
            )));
        }
        let size: usize = instructions.iter().map(|f| f.name.len() + f.text.len()).sum();
        if size > MAX_INSTRUCTIONS || instructions.iter().any(|f| f.name.trim().is_empty()) {
            return Err(RpcError::invalid_params(format!(
                "`instructions` must name each file and hold at most {} KiB in all",
                MAX_INSTRUCTIONS >> 10
            )));
        }
        let given = instructions.into_iter().map(|f| (f.name, f.text)).collect();
        self.ctx = self.ctx.in_project(project, given);
        self.reopen();
        Ok(())
    }

    /// Opens the connection's environment again from its home's configuration now (a project
    /// named, or the service's configuration reloaded): the searches made from the last one and
    /// its limits go with it.
    pub(crate) fn reopen(&mut self) {
        self.generation = self.ctx.generation();
        self.env = self.ctx.environment(Default::default()).ok();
        self.recall = None;
        self.knowledge = None;
        if let Some(env) = &self.env {
            self.acting.limit(&env.config().serve);
        }
    }
    /// Runs one method: `Ok(Some)` answers now, `Ok(None)` means a worker answers later.
    pub(crate) fn call(&mut self, method: &str, params: &Value, id: Value) -> Result<Option<Value>, RpcError> {
        use seshat_protocol::methods::{self as m, Request as R};
        let request = match R::parse(method, params) {
            Some(parsed) => {
                parsed.map_err(|e| RpcError::invalid_params(format!("{e} (host/protocol/protocol.md lists them)")))?
            }
            None => return Err(RpcError::method_not_found(method)),
        };
        match request {
            R::Initialize(p) => self.initialize(p),
            R::SessionNew(p) => self.session_new(p),
            R::SessionList(p) => self.session_list(p),
            R::SessionGet(p) => self.session_get(p),
            R::SessionDelete(p) => self.session_delete(p),
            R::TurnStart(p) => self.turn_start(p, id),
            R::TurnInterrupt(p) => self.turn_interrupt(p),
            R::SessionCompact(p) => self.session_compact(p, id),
            R::SessionFork(p) => self.session_fork(p),
            R::SessionRewind(p) => self.session_rewind(p),
            R::ConfigGet(m::Empty {}) => self.config_get(),
            R::SessionExport(p) => self.session_export(p),
            R::SessionAppend(p) => self.session_append(p),
            R::SessionPins(p) => self.session_pins(p),
            R::SessionPin(p) => self.session_pin(p),
            R::SessionUnpin(p) => self.session_unpin(p),
            R::SessionImport(p) => self.session_import(p),
            R::SessionBringIn(p) => self.session_bring_in(p),
            R::HistorySearch(p) => self.history_search(p),
            R::KnowledgeSearch(p) => self.knowledge_search(p),
            R::KnowledgeRead(p) => self.knowledge_read(p),
            R::KnowledgeAdd(p) => self.knowledge_add(p),
            R::NotesSet(p) => self.notes_set(p),
            R::NotesList(p) => self.notes_list(p),
            R::NotesSearch(p) => self.notes_search(p),
            R::MemoryContextGet(p) => self.memory_context_get(p),
            R::MemoryDeletions(m::Empty {}) => self.memory_deletions(),
            R::MemoryRestore(p) => self.memory_restore(p),
            R::MemoryClear(p) => self.memory_clear(p),
            R::MemoryHistory(p) => self.memory_history(p),
            R::MemoryRevert(p) => self.memory_revert(p),
            R::MemoryUndo(p) => self.memory_undo(p),
            R::MemoryProposals(p) => self.memory_proposals(p),
            R::MemoryApprove(p) => self.memory_approve(p),
            R::MemoryReject(p) => self.memory_reject(p),
            R::MemoryCreateEntities(p) => self.memory_create_entities(p),
            R::MemoryCreateRelations(p) => self.memory_create_relations(p),
            R::MemoryAddObservations(p) => self.memory_add_observations(p),
            R::MemoryDeleteEntities(p) => self.memory_delete_entities(p),
            R::MemoryDeleteObservations(p) => self.memory_delete_observations(p),
            R::MemoryDeleteRelations(p) => self.memory_delete_relations(p),
            R::MemoryReadGraph(p) => self.memory_tool::<m::MemoryReadGraph>(|m, _| tools::read_graph(m, &p)),
            R::MemorySearchNodes(p) => self.memory_tool::<m::MemorySearchNodes>(|m, s| tools::search_nodes(m, &p, s)),
            R::MemoryOpenNodes(p) => self.memory_tool::<m::MemoryOpenNodes>(|m, _| tools::open_nodes(m, &p)),
            r @ (R::UsersList(_)
            | R::UsersAdd(_)
            | R::UsersSet(_)
            | R::UsersRename(_)
            | R::UsersRemove(_)
            | R::TokensList(_)
            | R::TokensCreate(_)
            | R::TokensRotate(_)
            | R::TokensRevoke(_)
            | R::ScopesList(_)
            | R::ScopesCreate(_)
            | R::ScopesGrant(_)
            | R::ScopesRevoke(_)
            | R::ScopesReview(_)) => crate::principals::call(self.store()?, r),
        }
    }

    /// Runs a memory tool on the connection's memory; `search_nodes` is given the hybrid search
    /// when memory is embedded.
    pub(crate) fn memory_tool<M: seshat_protocol::methods::Method>(
        &mut self,
        run: impl FnOnce(
            &mut seshat::memory::Memory<'_>,
            Option<tools::Searcher<'_>>,
        ) -> Result<M::Result, seshat::memory::Error>,
    ) -> Result<Option<Value>, RpcError> {
        let ttls = self.memory_ttls()?;
        self.store()?;
        let Server { db: Some(store), env, recall, background, ctx, .. } = self else { unreachable!("opened above") };
        let recall = recall.get_or_insert_with(|| env.as_ref().and_then(seshat::client::Environment::recall));
        // The answers say where each line came from.
        let mut memory = store.memory(ctx.repository.as_deref()).with_sources(true).with_ttls(ttls);
        let answer = match recall.as_mut().filter(|r| r.memory()) {
            Some(r) => {
                let mut search = |m: &mut seshat::memory::Memory<'_>,
                                  q: &str,
                                  s: Option<&seshat::memory::Scope>,
                                  n: usize| r.search_memory(m, q, s, n);
                run(&mut memory, Some(&mut search))
            }
            None => run(&mut memory, None),
        };
        if let Some(b) = background {
            b.poke();
        }
        let answer = answer.map_err(|e| match e {
            // Arguments that do not fit (an empty name, a control character) are the client's.
            e @ seshat::memory::Error::InvalidArguments { .. } => RpcError::invalid_params(e.to_string()),
            e => RpcError::from_memory(e),
        })?;
        rpc::answer::<M>(&answer)
    }

    /// Rewinds `session` to before message `to`, refused when the view it restores would not fit
    /// the session's window (as `seshat sessions rewind` does without a provider).
    pub(crate) fn rewind(&mut self, session: &str, to: u64) -> Result<seshat::store::Rewound, RpcError> {
        let window = self.store()?.session(session).map_err(RpcError::from_store)?.context_window;
        let mut client = self
            .ctx
            .environment(seshat::client::Overrides::default())
            .and_then(|e| e.client())
            .map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
        let settings = client.settings("unknown-model", window, 0);
        seshat::compaction::rewind(client.store(), session, to, &seshat::compaction::Frame::default(), &settings)
            .map_err(|e| RpcError::seshat(e.code(), e.to_string()))
    }

    /// The caller's memory in the connection's project (its answers saying where each line came
    /// from, what it writes kept as `[memory.ttl]` says).
    pub(crate) fn memory(&mut self) -> Result<seshat::memory::Memory<'_>, RpcError> {
        let repository = self.ctx.repository.clone();
        let ttls = self.memory_ttls()?;
        Ok(self.store()?.memory(repository.as_deref()).with_sources(true).with_ttls(ttls))
    }

    /// `[memory.ttl]` of the configuration in force.
    fn memory_ttls(&self) -> Result<seshat::memory::Ttls, RpcError> {
        let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
        seshat::memory::Ttls::parse(&config.memory.ttl).map_err(|e| RpcError::seshat("invalid_config", e))
    }

    /// The document corpus, made on first use and kept.
    pub(crate) fn knowledge(&mut self) -> Result<&mut seshat::retrieval::Knowledge, RpcError> {
        if self.knowledge.is_none() {
            let k = self
                .ctx
                .environment(Default::default())
                .and_then(|env| env.knowledge())
                .map_err(|e| RpcError::seshat("knowledge_failed", e.to_string()))?;
            self.knowledge = Some(k);
        }
        Ok(self.knowledge.as_mut().expect("just made"))
    }

    /// The request's store connection: borrowed from the server's idle ones (acting for this
    /// connection's user), else opened (opening checks and migrates).
    pub(crate) fn store(&mut self) -> Result<&mut seshat::store::Store, RpcError> {
        if self.db.is_none() {
            let store = match self.stores.take() {
                Some(idle) => self.ctx.acting(idle),
                None => {
                    let began = std::time::Instant::now();
                    let store = self.ctx.store().map_err(RpcError::from_store)?;
                    self.metrics.store_opened(began.elapsed());
                    store
                }
            };
            self.db = Some(store);
        }
        Ok(self.db.as_mut().expect("just opened"))
    }
}
