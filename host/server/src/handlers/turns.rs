//! The methods that run on a session's agent: `turn/start`, `turn/interrupt` and
//! `session/compact`.

use serde_json::Value;
use seshat_protocol::methods as m;

use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;
use crate::turns;

impl Server {
    /// `turn/start`.
    pub(crate) fn turn_start(&mut self, p: m::TurnStartParams, id: Value) -> Result<Option<Value>, RpcError> {
        let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        if p.text.trim().is_empty() {
            return Err(RpcError::invalid_params("`text` is empty: give the user's message"));
        }
        if let Some(key) = &p.idempotency_key
            && (key.is_empty() || key.len() > seshat::store::MAX_TURN_KEY_BYTES || key.chars().any(char::is_control))
        {
            return Err(RpcError::invalid_params(format!(
                "`idempotency_key` has {} bytes: give 1 to {} bytes without control characters, one key per \
                 request",
                key.len(),
                seshat::store::MAX_TURN_KEY_BYTES
            )));
        }
        let setup = self.setup.clone().unwrap_or_default();
        let (text, key) = (p.text, p.idempotency_key);
        self.with_link(&setup, |turns, link| turns.start(link, &session, text, key, id))?;
        Ok(None)
    }

    /// `turn/interrupt`.
    pub(crate) fn turn_interrupt(&mut self, p: m::SessionParams) -> Result<Option<Value>, RpcError> {
        let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        rpc::answer::<m::TurnInterrupt>(&m::TurnInterruptResult { interrupted: self.turns.interrupt(&session) })
    }

    /// `session/compact`.
    pub(crate) fn session_compact(&mut self, p: m::SessionCompactParams, id: Value) -> Result<Option<Value>, RpcError> {
        let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
        let setup = self.setup.clone().unwrap_or_default();
        let how = turns::Compacting { instructions: p.instructions, until: p.until, dry_run: p.dry_run };
        self.with_link(&setup, |turns, link| turns.compact(link, &session, how, id))?;
        Ok(None)
    }
}
