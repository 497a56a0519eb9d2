//! `history/search`: the caller's messages matching words (and meaning, when history is embedded).

use serde_json::Value;
use seshat_protocol::methods as m;

use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;

impl Server {
    /// `history/search`.
    pub(crate) fn history_search(&mut self, p: m::HistorySearchParams) -> Result<Option<Value>, RpcError> {
        if p.query.trim().is_empty() {
            return Err(RpcError::invalid_params("`query` is empty: give the words to look for"));
        }
        let limit = p.limit.unwrap_or(20).clamp(1, 200) as usize;
        let project = self.ctx.project.clone();
        let scope =
            if p.all { seshat::store::HistoryScope::All } else { seshat::store::HistoryScope::Project(&project) };
        self.store()?;
        let Server { db: Some(store), env, recall, .. } = self else { unreachable!("opened above") };
        // Hybrid when the server embeds history (acting for the caller), lexical otherwise.
        let recall = recall.get_or_insert_with(|| env.as_ref().and_then(seshat::client::Environment::recall));
        let hits = match recall.as_mut().filter(|r| r.history()) {
            Some(r) => r
                .search_history(scope, &p.query, limit)
                .map(|(hits, _)| hits)
                .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?,
            None => store.search_history(scope, &p.query, limit).map_err(RpcError::from_store)?,
        };
        let hits = hits.into_iter().map(Into::into).collect();
        rpc::answer::<m::HistorySearch>(&m::HistorySearchResult { hits })
    }
}
