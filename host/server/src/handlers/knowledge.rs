//! The document methods: `knowledge/search`, `knowledge/read` and `knowledge/add`.

use serde_json::{Value, json};
use seshat_protocol::methods as m;

use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;

impl Server {
    /// `knowledge/search`.
    pub(crate) fn knowledge_search(&mut self, p: m::KnowledgeSearchParams) -> Result<Option<Value>, RpcError> {
        let project = self.ctx.project.clone();
        let k = self.knowledge()?;
        let filter = seshat::store::KnowledgeFilter { project: &project, scope: None };
        let limit = p.limit.unwrap_or(10).clamp(1, 100) as usize;
        let found = k.search(filter, &p.query, limit).map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
        rpc::answer::<m::KnowledgeSearch>(&found)
    }

    /// `knowledge/read`.
    pub(crate) fn knowledge_read(&mut self, p: m::KnowledgeReadParams) -> Result<Option<Value>, RpcError> {
        let project = self.ctx.project.clone();
        let k = self.knowledge()?;
        let args = json!({"id": p.id, "offset": p.offset});
        let output = seshat::retrieval::tools::call(k, &project, seshat::retrieval::tools::READ, &args);
        if output.is_error {
            let message = output.structured["error"].as_str().unwrap_or("no such chunk").to_string();
            return Err(RpcError::seshat("chunk_not_found", message));
        }
        let chunk: m::KnowledgeChunk = serde_json::from_value(output.structured)
            .map_err(|e| RpcError::seshat("internal_error", format!("a chunk that does not fit the protocol: {e}")))?;
        rpc::answer::<m::KnowledgeRead>(&chunk)
    }

    /// `knowledge/add`: each document indexed in one transaction of its own, as a local add
    /// does; the searches this connection made see them at its next search.
    pub(crate) fn knowledge_add(&mut self, p: m::KnowledgeAddParams) -> Result<Option<Value>, RpcError> {
        let scope = p.scope.unwrap_or(seshat::memory::Scope::Project);
        let project = match scope {
            seshat::memory::Scope::Project if self.ctx.project.is_empty() => {
                return Err(RpcError::invalid_params(
                    "the project scope needs a project: name one at `initialize`, or give another `scope` (user, \
                     cross, team:NAME)",
                ));
            }
            seshat::memory::Scope::Project => self.ctx.project.clone(),
            _ => String::new(),
        };
        let target = seshat::knowledge::Target { scope, project };
        let mut result = m::KnowledgeAddResult::default();
        let store = self.store()?;
        for doc in &p.documents {
            let path = std::path::Path::new(&doc.path);
            let kind = match (seshat::knowledge::refused(path, &doc.text), seshat::knowledge::Kind::of(path)) {
                (None, Some(kind)) => kind,
                (why, _) => {
                    let why = why.unwrap_or_else(|| "not a text format Seshat indexes".into());
                    result.skipped.push(m::SkippedDocument { path: doc.path.clone(), why });
                    continue;
                }
            };
            let sizing = seshat::knowledge::Sizing::default();
            match seshat::knowledge::add_text(store, &target, &doc.path, kind, &doc.text, sizing) {
                Ok(seshat::knowledge::Added::Indexed { chunks }) => {
                    result.indexed += 1;
                    result.chunks += chunks as u64;
                }
                Ok(_) => result.unchanged += 1,
                Err(seshat::knowledge::Error::Store(e)) => return Err(RpcError::from_store(e)),
                Err(e) => return Err(RpcError::seshat("knowledge_failed", e.to_string())),
            }
        }
        // A corpus kept by this connection reads the new chunks again.
        self.knowledge = None;
        rpc::answer::<m::KnowledgeAdd>(&result)
    }
}
