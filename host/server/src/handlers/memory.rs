//! The memory methods besides the memory tools: notes, the memory context, deletions and their
//! restore, and clearing a scope.

use serde_json::Value;
use seshat_protocol::methods as m;

use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;
use seshat::memory::tools;

impl Server {
    /// `notes/set`.
    pub(crate) fn notes_set(&mut self, p: m::NotesSetParams) -> Result<Option<Value>, RpcError> {
        let key = p.key.trim();
        if key.is_empty() {
            return Err(RpcError::invalid_params("`key` is empty: name the note (e.g. \"style\")"));
        }
        // Setting and listing default to the user's notes; a search covers every scope.
        let scope = p.scope.unwrap_or(seshat::memory::Scope::User);
        let ttl = p
            .ttl
            .as_deref()
            .map(|t| seshat::config::parse_age(t).map_err(|e| RpcError::invalid_params(format!("`ttl`: {e}"))))
            .transpose()?;
        let note = self.memory()?.set_note_for(scope, key, &p.value, ttl).map_err(RpcError::from_memory)?;
        rpc::answer::<m::NotesSet>(&m::NoteResult { note })
    }

    /// `notes/list`.
    pub(crate) fn notes_list(&mut self, p: m::NotesListParams) -> Result<Option<Value>, RpcError> {
        let scope = p.scope.unwrap_or(seshat::memory::Scope::User);
        let notes = self.memory()?.notes(&scope).map_err(RpcError::from_memory)?;
        rpc::answer::<m::NotesList>(&m::NotesResult { notes })
    }

    /// `notes/search`.
    pub(crate) fn notes_search(&mut self, p: m::NotesSearchParams) -> Result<Option<Value>, RpcError> {
        let notes = self.memory()?.search_notes(&p.query, p.scope.as_ref()).map_err(RpcError::from_memory)?;
        rpc::answer::<m::NotesSearch>(&m::NotesResult { notes })
    }

    /// `memory/context`.
    pub(crate) fn memory_context_get(&mut self, p: m::MemoryContextParams) -> Result<Option<Value>, RpcError> {
        // The configuration is read only for the default budget.
        let budget = match p.budget {
            Some(budget) => budget as usize,
            None => {
                let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
                config.memory_context_tokens().unwrap_or(seshat::memory::DEFAULT_CONTEXT_TOKENS)
            }
        };
        let repository = self.ctx.repository.clone();
        let context = self
            .store()?
            .memory(repository.as_deref())
            .context(budget)
            .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
        rpc::answer::<m::MemoryContextGet>(&context)
    }

    /// `memory/deletions`.
    pub(crate) fn memory_deletions(&mut self) -> Result<Option<Value>, RpcError> {
        let deletions = self.memory()?.deletions().map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryDeletions>(&m::MemoryDeletionsResult { deletions })
    }

    /// `memory/restore`.
    pub(crate) fn memory_restore(&mut self, p: m::MemoryRestoreParams) -> Result<Option<Value>, RpcError> {
        rpc::answer::<m::MemoryRestore>(&self.memory()?.restore(p.id).map_err(RpcError::from_memory)?)
    }

    /// `memory/clear`.
    pub(crate) fn memory_clear(&mut self, p: m::MemoryClearParams) -> Result<Option<Value>, RpcError> {
        // The backup stays on the server's machine; the client is not told where.
        let backups = self.ctx.dirs.data.join("backups");
        let (_, records) = self.memory()?.clear(&p.scope, &backups).map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryClear>(&m::MemoryClearResult { scope: p.scope, records: records as u64 })
    }

    /// `memory/history`.
    pub(crate) fn memory_history(&mut self, p: m::MemoryHistoryParams) -> Result<Option<Value>, RpcError> {
        let (name, scope, versions) =
            self.memory()?.history(&p.name, p.scope.as_ref()).map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryHistory>(&m::MemoryHistoryResult { name, scope, versions })
    }

    /// `memory/revert`.
    pub(crate) fn memory_revert(&mut self, p: m::MemoryRevertParams) -> Result<Option<Value>, RpcError> {
        let (version, entity) =
            self.memory()?.revert(&p.name, p.to, p.scope.as_ref()).map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryRevert>(&m::MemoryRevertResult { version, entity })
    }

    /// `memory/undo`.
    pub(crate) fn memory_undo(&mut self, p: m::MemoryUndoParams) -> Result<Option<Value>, RpcError> {
        rpc::answer::<m::MemoryUndo>(&self.memory()?.undo_session(&p.session).map_err(RpcError::from_memory)?)
    }

    /// `memory/proposals`.
    pub(crate) fn memory_proposals(&mut self, p: m::MemoryProposalsParams) -> Result<Option<Value>, RpcError> {
        let proposals = self.memory()?.proposals(p.team.as_deref(), p.all).map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryProposals>(&m::MemoryProposalsResult { proposals })
    }

    /// `memory/approve`.
    pub(crate) fn memory_approve(&mut self, p: m::MemoryDecideParams) -> Result<Option<Value>, RpcError> {
        rpc::answer::<m::MemoryApprove>(&self.memory()?.approve(p.id).map_err(RpcError::from_memory)?)
    }

    /// `memory/reject`.
    pub(crate) fn memory_reject(&mut self, p: m::MemoryDecideParams) -> Result<Option<Value>, RpcError> {
        let rejected = self.memory()?.reject(p.id, p.reason.as_deref()).map_err(RpcError::from_memory)?;
        rpc::answer::<m::MemoryReject>(&rejected)
    }

    /// `memory/create_entities`.
    pub(crate) fn memory_create_entities(&mut self, p: m::CreateEntitiesParams) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryCreateEntities>(|m, _| tools::create_entities(m, &p))
    }

    /// `memory/create_relations`.
    pub(crate) fn memory_create_relations(&mut self, p: m::RelationsParams) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryCreateRelations>(|m, _| tools::create_relations(m, &p))
    }

    /// `memory/add_observations`.
    pub(crate) fn memory_add_observations(&mut self, p: m::AddObservationsParams) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryAddObservations>(|m, _| tools::add_observations(m, &p))
    }

    /// `memory/delete_entities`.
    pub(crate) fn memory_delete_entities(&mut self, p: m::DeleteEntitiesParams) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryDeleteEntities>(|m, _| tools::delete_entities(m, &p))
    }

    /// `memory/delete_observations`.
    pub(crate) fn memory_delete_observations(
        &mut self,
        p: m::DeleteObservationsParams,
    ) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryDeleteObservations>(|m, _| tools::delete_observations(m, &p))
    }

    /// `memory/delete_relations`.
    pub(crate) fn memory_delete_relations(&mut self, p: m::RelationsParams) -> Result<Option<Value>, RpcError> {
        self.memory_tool::<m::MemoryDeleteRelations>(|m, _| tools::delete_relations(m, &p))
    }
}
