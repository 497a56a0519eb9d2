//! An error answer: JSON-RPC's code, the message, and Seshat's stable code (`session_busy`, …).

use serde_json::Value;

use seshat_protocol::wire::{ErrorData, ErrorObject, code};

/// An error answer.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    /// Seshat's stable code (`session_busy`, `compact_full`, `session_not_found`, …).
    pub(crate) seshat: &'static str,
    seshat_owned: Option<String>,
}

impl RpcError {
    fn new(code: i64, seshat: &'static str, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), seshat, seshat_owned: None }
    }
    /// A line that is not JSON (or not UTF-8).
    pub fn parse(m: String) -> Self {
        Self::new(code::PARSE, "parse_error", m)
    }
    pub(crate) fn invalid_request(m: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, "invalid_request", m)
    }
    pub(crate) fn invalid_params(m: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, "invalid_params", m)
    }
    pub(crate) fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            "method_not_found",
            format!("there is no method `{method}`: host/protocol/protocol.md lists them"),
        )
    }
    /// A message longer than the server reads: nothing of it was applied.
    pub fn too_large(m: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, "message_too_large", m)
    }
    /// A write through a read-only token.
    pub(crate) fn read_only(method: &str) -> Self {
        Self::new(
            code::SESHAT,
            "read_only_token",
            format!(
                "`{method}` writes, and this connection's token is read-only: use a token made without --read-only"
            ),
        )
    }
    pub(crate) fn not_initialized() -> Self {
        Self::new(
            code::NOT_INITIALIZED,
            "not_initialized",
            "Server not initialized: send an `initialize` request first",
        )
    }
    pub(crate) fn busy(session: &str) -> Self {
        Self::new(
            code::SESHAT,
            "session_busy",
            format!("session {session} has a turn in flight: wait for its turn/completed, or send turn/interrupt"),
        )
    }
    /// One of Seshat's own failures, with its stable code.
    pub(crate) fn seshat(stable: &str, message: impl Into<String>) -> Self {
        RpcError { code: code::SESHAT, message: message.into(), seshat: "", seshat_owned: Some(stable.to_string()) }
    }
    #[allow(clippy::needless_pass_by_value, reason = "the shape `map_err` takes")]
    pub(crate) fn from_store(e: seshat::store::Error) -> Self {
        Self::seshat(e.code(), e.to_string())
    }
    /// A memory error as the protocol's error.
    #[allow(clippy::needless_pass_by_value, reason = "the shape `map_err` takes")]
    pub(crate) fn from_memory(e: seshat::memory::Error) -> Self {
        Self::seshat(e.code(), e.to_string())
    }
    /// The stable code.
    pub(crate) fn stable(&self) -> &str {
        self.seshat_owned.as_deref().unwrap_or(self.seshat)
    }
    /// The whole error answer to no request in particular (`id` null), as one line of JSON.
    pub fn line(&self) -> String {
        serde_json::json!({"jsonrpc": "2.0", "id": Value::Null, "error": self.clone().into_json()}).to_string()
    }
    pub(crate) fn into_json(self) -> Value {
        let data = ErrorData { code: self.stable().to_string() };
        serde_json::to_value(ErrorObject { code: self.code, message: self.message, data })
            .expect("an error object is plain data")
    }
}
