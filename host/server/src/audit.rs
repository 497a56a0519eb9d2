//! The audit trail of a network connection: what its client wrote, and what it was refused.

use serde_json::Value;

use crate::error::RpcError;
use crate::server::Server;

impl Server {
    /// The audit line of a write a network client made: who, which method, on which session or
    /// scope.
    /// Audits a network client's call: a write done (naming what it wrote), a write refused, a
    /// read denied — in the log and in the store's trail (`seshat audit`).
    pub(crate) fn audit(
        &mut self,
        method: &str,
        params: &Value,
        result: Option<&Value>,
        refused: Option<&RpcError>,
        writes: bool,
    ) {
        const DENIALS: &[&str] =
            &["read_only_token", "scope_denied", "session_not_found", "chunk_not_found", "admin_only"];
        let Some(user) = self.acting.user.clone() else { return };
        let code = refused.map(|e| e.stable().to_string());
        let event = match (code.as_deref(), writes) {
            (None, true) => "write",
            (Some(c), true) if DENIALS.contains(&c) => "refused_write",
            (Some(c), false) if DENIALS.contains(&c) => "denied_read",
            _ => return,
        };
        let field =
            |v: &Value, name: &str| v.get(name).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        // What it touched: the session or scope it names, or the session it made.
        // (An admin method's user, team or token id; never a token's secret.)
        let target = field(params, "session")
            .or_else(|| field(params, "scope"))
            .or_else(|| field(params, "team").map(|t| format!("team:{t}")))
            .or_else(|| field(params, "name"))
            .or_else(|| field(params, "user"))
            .or_else(|| result.and_then(|r| r.get("session")).and_then(|s| field(s, "id")))
            .or_else(|| result.and_then(|r| field(r, "id")));
        tracing::info!(target: "seshat::audit", %user, method, target = target.as_deref().unwrap_or(""), event, code = code.as_deref().unwrap_or(""));
        let mut record = seshat::store::AuditEvent::new(event);
        record.user = Some(user);
        record.token.clone_from(&self.acting.token);
        record.peer.clone_from(&self.acting.peer);
        record.method = Some(method.to_string());
        record.target = target;
        record.code = code;
        if let Err(e) =
            self.store().map_err(|e| e.message).and_then(|s| s.record_audit(&record).map_err(|e| e.to_string()))
        {
            tracing::warn!("cannot record an audit event: {e}");
        }
    }
}
