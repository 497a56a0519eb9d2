//! JSON-RPC 2.0's envelope as `seshat serve` uses it: ids, error objects and their codes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request's id: a string or a whole number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Id {
    /// A number.
    Number(i64),
    /// A string.
    String(String),
}

/// JSON-RPC's error codes, and the one Seshat uses for its own failures (whose stable code is in
/// `data.code`).
pub mod code {
    /// The line is not JSON, or not UTF-8.
    pub const PARSE: i64 = -32700;
    /// Not a request (an `id` that is neither a string nor a number, no `method`, a line too long).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A request before `initialize`.
    pub const NOT_INITIALIZED: i64 = -32002;
    /// One of Seshat's own failures.
    pub const SESHAT: i64 = -32000;
}

/// The stable codes an error's `data.code` carries besides the library's own (`session_not_found`,
/// `compact_full`, `auth_failed`, …, the codes `seshat chat --json` reports).
pub const PROTOCOL_CODES: &[&str] = &[
    "parse_error",
    "invalid_request",
    "method_not_found",
    "invalid_params",
    "not_initialized",
    "session_busy",
    "outbox_full",
    "memory_failed",
    "review_required",
    "proposal_not_found",
    "knowledge_failed",
    "invalid_config",
    "internal_error",
    "message_too_large",
    "read_only_token",
    "too_many_turns",
    "server_stopping",
    "chunk_not_found",
];

/// An error answer's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    /// JSON-RPC's code ([`code`]).
    pub code: i64,
    /// What went wrong and what to do, in words.
    pub message: String,
    /// Seshat's stable code.
    pub data: ErrorData,
}

/// What an error carries besides JSON-RPC's code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorData {
    /// The stable code scripts match on (`session_busy`, `compact_full`, …).
    pub code: String,
}
