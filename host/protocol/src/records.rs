//! The records the store keeps: stored messages, sessions, compactions, trims. (What a message is
//! made of — roles, parts, usage, statuses — is [`crate::conversation`]'s.)
//!
//! These types are also the JSON shapes of `sessions export` and `--json` output, so a field
//! rename here is a format change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::{MessageStatus, Part, Role, Usage};

/// A stored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Position in its session, from 1, without gaps.
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// Its content, as appended.
    pub parts: Vec<Part>,
    /// Usage of the model call that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How it came to be.
    pub status: MessageStatus,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// What the store knows about a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    /// The session's id (a ULID: sorts by creation time).
    pub id: String,
    /// Set from the first user message.
    pub title: Option<String>,
    /// The project key the session belongs to.
    pub project: String,
    /// Provider plugin id.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds of the last change.
    pub updated_at: i64,
    /// Number of messages (also the last seq).
    pub message_count: u64,
    /// Usage totals over the session.
    #[serde(default)]
    pub totals: Usage,
    /// The last context size the provider reported.
    pub context_tokens: Option<u64>,
    /// Failed compactions in a row (reset by a success).
    #[serde(default)]
    pub compaction_failures: u32,
    /// Whether summarising was switched off for this session.
    #[serde(default)]
    pub auto_compact_disabled: bool,
    /// Free-form metadata.
    #[serde(default = "empty_object")]
    pub metadata: serde_json::Value,
    /// The session this one was forked from, when it is a fork (its history is the parent's up
    /// to [`SessionInfo::fork_seq`], then its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The parent's seq the fork's history ends at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_seq: Option<u64>,
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({})
}

/// The fields a new session starts with.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// The project key (see `seshat::paths::project_key`).
    pub project: String,
    /// A title; without one, the first user message gives it.
    pub title: Option<String>,
    /// Provider plugin id.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Free-form metadata (an object).
    pub metadata: Option<serde_json::Value>,
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The threshold was passed before a model call.
    Auto,
    /// The user asked (`seshat compact`, `/compact`).
    Manual,
}

/// Whether a compaction produced a usable summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStatus {
    /// The summary replaced the dropped messages in the live view.
    Ok,
    /// It failed; the live view is unchanged.
    Failed,
}

/// A compaction record: kept beside the originals, never replacing them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    /// What started it.
    pub trigger: CompactionTrigger,
    /// Estimated request size before.
    pub tokens_before: u64,
    /// Estimated request size after (none when it failed).
    pub tokens_after: Option<u64>,
    /// The last seq of the history it read.
    pub through_seq: u64,
    /// The live view resumes at this seq.
    pub first_kept_seq: Option<u64>,
    /// The latest user request, kept verbatim even before the cut.
    pub pinned_seq: Option<u64>,
    /// The summary text.
    pub summary: Option<String>,
    /// The model that wrote the summary.
    pub model: Option<String>,
    /// Whether it succeeded.
    pub status: CompactionStatus,
    /// Why it failed.
    pub error: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// What the user asked it to keep or stress, if anything (migration 0006).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The summariser that ran (migration 0007; unknown for older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<PluginRef>,
}

/// The plugin that made a record: its id and the SHA-256 of the `.wasm` that ran (migration
/// 0007), so records of two builds of one plugin can be told apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginRef {
    /// The plugin's id.
    pub id: String,
    /// The SHA-256 of its `.wasm`, in hex.
    pub sha256: String,
}

/// A micro-compaction trim of one part of one message: the replacement the live view shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trim {
    /// The trimmed message.
    pub seq: u64,
    /// Index of the trimmed part in the message.
    pub part: u32,
    /// Bytes before.
    pub original_size: u64,
    /// Bytes after.
    pub new_size: u64,
    /// The content the live view shows instead.
    pub replacement: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The trimmer that proposed it (migration 0007; unknown for older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<PluginRef>,
}

/// A rewind in force: messages `from_seq..=through_seq` are out of the live view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rewind {
    /// The first hidden message.
    pub from_seq: u64,
    /// The last.
    pub through_seq: u64,
    /// Unix milliseconds.
    pub created_at: i64,
}
