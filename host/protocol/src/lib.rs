//! The words Seshat's library, `seshat serve` and its clients share.
//!
//! * [`conversation`], [`records`], [`view`], [`turn`], [`memory`], [`knowledge`] — the records
//!   themselves: the library defines its messages, sessions, compactions, reports and outcomes
//!   here and re-exports them, so what crosses the wire is what the library holds, never a copy
//!   kept by hand.
//! * [`principals`] — users, tokens and team grants, as the admin methods carry them.
//! * [`methods`] and [`notifications`] — `seshat serve`'s JSON-RPC protocol: one typed params and
//!   result per method, one typed params per notification, and [`wire`]'s envelope and errors.
//! * [`schema`] — the protocol's JSON Schema, generated from these types (the committed
//!   `host/protocol/protocol.schema.json` is checked against it by a test).
//!
//! **One casing rule**: every field name and every enumerated value is `snake_case`, the same as
//! `sessions export` files and `--json` output; method names are `area/action` with the action in
//! `snake_case` (`turn/compaction_started`). The one exception is what belongs to someone else's
//! format: a `memory/<tool>` call's arguments and results are the MCP memory tools' own
//! (`entityType`, `relationType`), exactly as `seshat mcp` serves them.

pub mod conversation;
pub mod knowledge;
pub mod memory;
pub mod methods;
pub mod notifications;
pub mod principals;
pub mod records;
pub mod schema;
pub mod turn;
pub mod view;
pub mod wire;

/// The protocol's version, returned by `initialize`. Bumped when a method, a field or a casing
/// changes in a way an existing client would notice.
pub const PROTOCOL_VERSION: &str = "2026-12-06";
