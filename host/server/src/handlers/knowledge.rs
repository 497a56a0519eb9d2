//! The document methods: `knowledge/search` and `knowledge/read`.

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
}
