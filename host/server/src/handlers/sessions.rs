//! The session methods: create, list, read, delete, fork, rewind, append, pin, export, import
//! and bring in another agent's session.

use serde_json::Value;
use seshat_protocol::methods as m;

use crate::connection::MAX_PROJECT_KEY;
use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;

impl Server {
    /// `session/new`.
    pub(crate) fn session_new(&mut self, p: m::SessionNewParams) -> Result<Option<Value>, RpcError> {
        if let Some(window) = p.window
            && let Some(e) = seshat::window::too_small(
                p.model.as_deref().unwrap_or("the model"),
                window,
                seshat::window::WindowSource::Flag,
            )
        {
            return Err(RpcError::invalid_params(e));
        }
        let new = seshat::store::NewSession {
            project: self.ctx.project.clone(),
            title: p.title,
            provider: p.provider,
            model: p.model,
            context_window: p.window,
            metadata: None,
        };
        let session = self.store()?.create_session(new).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionNew>(&m::SessionResult { session })
    }

    /// `session/list`.
    pub(crate) fn session_list(&mut self, p: m::SessionListParams) -> Result<Option<Value>, RpcError> {
        let filter = seshat::store::ListFilter {
            project: (!p.all).then(|| self.ctx.project.clone()),
            limit: p.limit.map(|l| l as usize),
        };
        let store = self.store()?;
        let sessions = store.list_sessions(&filter).map_err(RpcError::from_store)?;
        let rewinds = if p.rewinds {
            store.live_rewinds_of(&sessions).map_err(RpcError::from_store)?
        } else {
            Default::default()
        };
        rpc::answer::<m::SessionList>(&m::SessionListResult { sessions, rewinds })
    }

    /// `session/get`.
    pub(crate) fn session_get(&mut self, p: m::SessionGetParams) -> Result<Option<Value>, RpcError> {
        let store = &*self.store()?;
        let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
        let session = store.session(&id).map_err(RpcError::from_store)?;
        let view = (&store.live_view(&id).map_err(RpcError::from_store)?).into();
        let history = if p.full { Some(store.full_history(&id).map_err(RpcError::from_store)?) } else { None };
        rpc::answer::<m::SessionGet>(&m::SessionGetResult { session, view, history })
    }

    /// `session/delete`.
    pub(crate) fn session_delete(&mut self, p: m::SessionParams) -> Result<Option<Value>, RpcError> {
        let id = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        if self.turns.busy(&id) {
            return Err(RpcError::busy(&id));
        }
        self.turns.forget(&id);
        self.store()?.delete_session(&id).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionDelete>(&m::SessionDeleteResult { deleted: id })
    }

    /// `session/fork`.
    pub(crate) fn session_fork(&mut self, p: m::SessionForkParams) -> Result<Option<Value>, RpcError> {
        let store = self.store()?;
        let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
        let forked = store.fork(&id, p.at, p.title.as_deref()).map_err(RpcError::from_store)?;
        self.tell_hooks(&id, &seshat::hooks::Data::Fork { parent: &id, at_seq: forked.at, fork: &forked.session.id });
        rpc::answer::<m::SessionFork>(&m::SessionForkResult {
            session: forked.session,
            at: forked.at,
            moved_from: forked.moved_from,
        })
    }

    /// `session/rewind`.
    pub(crate) fn session_rewind(&mut self, p: m::SessionRewindParams) -> Result<Option<Value>, RpcError> {
        let id = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        if self.turns.busy(&id) {
            return Err(RpcError::busy(&id));
        }
        let (rewound, request) = match (p.to, p.last, p.undo) {
            (None, None, true) => (self.store()?.undo_rewind(&id).map_err(RpcError::from_store)?, None),
            (Some(to), None, false) => (self.rewind(&id, to)?, None),
            (None, Some(n), false) => {
                let found = self.store()?.nth_last_request(&id, n.max(1)).map_err(RpcError::from_store)?;
                let Some((seq, text)) = found else {
                    return Err(RpcError::from_store(seshat::store::Error::NothingToRewind(id)));
                };
                (self.rewind(&id, seq)?, Some(text))
            }
            _ => {
                return Err(RpcError::invalid_params(
                    "give one of `to` (a seq), `last` (the n-th-last request) or `undo: true`",
                ));
            }
        };
        if !p.undo {
            let data = seshat::hooks::Data::Rewind { from_seq: rewound.from_seq, through_seq: rewound.through_seq };
            self.tell_hooks(&id, &data);
        }
        rpc::answer::<m::SessionRewind>(&m::SessionRewindResult {
            from_seq: rewound.from_seq,
            through_seq: rewound.through_seq,
            retracted_compactions: rewound.retracted_compactions,
            moved_from: rewound.moved_from,
            undone: p.undo,
            request,
        })
    }

    /// `session/export`.
    pub(crate) fn session_export(&mut self, p: m::SessionParams) -> Result<Option<Value>, RpcError> {
        let store = self.store()?;
        let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
        let mut out = Vec::new();
        store.export(&id, &mut out).map_err(RpcError::from_store)?;
        let jsonl = String::from_utf8(out)
            .map_err(|e| RpcError::seshat("internal_error", format!("an export that is not UTF-8: {e}")))?;
        rpc::answer::<m::SessionExport>(&m::SessionExportResult { session: id, jsonl })
    }

    /// `session/append`.
    pub(crate) fn session_append(&mut self, p: m::SessionAppendParams) -> Result<Option<Value>, RpcError> {
        let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        if self.turns.busy(&session) {
            return Err(RpcError::busy(&session));
        }
        let seqs = self.store()?.append(&session, &p.messages).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionAppend>(&m::SessionAppendResult { session, seqs })
    }

    /// `session/pins`.
    pub(crate) fn session_pins(&mut self, p: m::SessionParams) -> Result<Option<Value>, RpcError> {
        let store = self.store()?;
        let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
        let pins = store.pins(&session).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionPins>(&m::SessionPinsResult { session, pins })
    }

    /// `session/pin`.
    pub(crate) fn session_pin(&mut self, p: m::SessionSeqParams) -> Result<Option<Value>, RpcError> {
        let store = self.store()?;
        let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
        // Pins may take a share of the session's window (the assumed one when unknown).
        let info = store.session(&session).map_err(RpcError::from_store)?;
        let window = info.context_window.unwrap_or(seshat::window::ASSUMED_WINDOW);
        let pinned = seshat::compaction::pin(store, &session, p.seq, window)
            .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
        let pins = store.pins(&session).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionPin>(&m::SessionPinResult { session, pinned, pins })
    }

    /// `session/unpin`.
    pub(crate) fn session_unpin(&mut self, p: m::SessionSeqParams) -> Result<Option<Value>, RpcError> {
        let store = self.store()?;
        let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
        let unpinned = store.unpin(&session, p.seq).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionUnpin>(&m::SessionUnpinResult { session, unpinned })
    }

    /// `session/import`.
    pub(crate) fn session_import(&mut self, p: m::SessionImportParams) -> Result<Option<Value>, RpcError> {
        let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
        let options = seshat::store::ImportOptions {
            new_id: p.new_id,
            repair: p.repair,
            max_record_bytes: crate::home::record_limit(&config),
        };
        let imported = self.store()?.import(&mut p.jsonl.as_bytes(), options).map_err(RpcError::from_store)?;
        rpc::answer::<m::SessionImport>(&imported)
    }

    /// `session/bring_in`.
    pub(crate) fn session_bring_in(&mut self, p: m::SessionBringInParams) -> Result<Option<Value>, RpcError> {
        if p.project.len() > MAX_PROJECT_KEY {
            return Err(RpcError::invalid_params(format!(
                "`project` is longer than {MAX_PROJECT_KEY} bytes: send the project's key, not its files"
            )));
        }
        let (converted, project) = seshat::foreign::Converted::from_params(p).map_err(RpcError::invalid_params)?;
        let report = seshat::foreign::bring_in(self.store()?, &converted, |_| project.clone())
            .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
        rpc::answer::<m::SessionBringIn>(&report.into())
    }
}

impl Server {
    /// Tells the client's own hooks of `data` in `session` (they are not waited for).
    fn tell_hooks(&self, session: &str, data: &seshat::hooks::Data<'_>) {
        if let Some(setup) = &self.setup {
            crate::client_hooks::tell(&setup.hooks, &self.ctx, &self.outbox, &self.pending, session, data);
        }
    }
}
