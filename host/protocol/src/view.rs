//! The live view on the wire: what the next model request is built from (`session/get`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::{MessageStatus, Part, Role, Usage};
use crate::records::{Compaction, SessionInfo, Trim};

/// Why an entry is in the live view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The summary of the compacted history, with the marker.
    Summary,
    /// The latest user request, kept verbatim although it lies before the cut.
    Pinned,
    /// A message the user pinned, kept verbatim although it lies before the cut.
    UserPin,
    /// A message kept as is (trims applied).
    Kept,
}

/// One message of the live view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ViewEntry {
    /// Why it is here.
    pub origin: Origin,
    /// The original message's seq (none for the summary).
    pub seq: Option<u64>,
    /// Role (the summary is a user message).
    pub role: Role,
    /// Content, trims applied.
    pub parts: Vec<Part>,
    /// The original's status.
    pub status: MessageStatus,
    /// Usage of the model call that produced it (assistant messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The trims applied to this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trims: Vec<Trim>,
    /// Whether the user pinned it (kept verbatim, never trimmed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// The live view as `session/get` sends it: the session, the compaction in force and the entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct View {
    /// The session.
    pub session: SessionInfo,
    /// The compaction in force, if any.
    pub compaction: Option<Compaction>,
    /// The messages, in order.
    pub entries: Vec<ViewEntry>,
}
