//! What the server tells the client unasked: one marker type per notification, naming it and
//! typing its params ([`Notification`]). Those of a turn carry the session and the turn;
//! `access/revoked` is the connection's.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::records::CompactionTrigger;
use crate::turn::{Report, StreamEvent, Summarising, TurnOutcome};

/// A notification: its name on the wire and its params.
pub trait Notification {
    /// Its name (`turn/event`).
    const NAME: &'static str;
    /// Its params.
    type Params: Serialize + DeserializeOwned + JsonSchema;
}

macro_rules! notification {
    ($(#[doc = $doc:literal])* $ty:ident = $name:literal ($params:ty)) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;
        impl Notification for $ty {
            const NAME: &'static str = $name;
            type Params = $params;
        }
    };
}

notification!(
    /// A streamed event of the answer.
    TurnEvent = "turn/event" (TurnEventParams)
);
notification!(
    /// A compaction is about to run (the summary model may take a while); `turn/compaction` follows.
    CompactionStarted = "turn/compaction_started" (CompactionStartedParams)
);
notification!(
    /// A summary is about to be written: what it will replace and the figures (sent after
    /// `turn/compaction_started`, only when trims alone did not make room).
    CompactionSummarising = "turn/compaction_summarising" (CompactionSummarisingParams)
);
notification!(
    /// What a compaction before a model call did.
    Compaction = "turn/compaction" (CompactionParams)
);
notification!(
    /// A tool is about to run.
    ToolCalled = "turn/tool_call" (ToolCalledParams)
);
notification!(
    /// A tool's result.
    ToolResult = "turn/tool_result" (ToolResultParams)
);
notification!(
    /// A warning about the turn.
    Warning = "turn/warning" (WarningParams)
);
notification!(
    /// The turn ended: what it did.
    Completed = "turn/completed" (CompletedParams)
);
notification!(
    /// The connection's access was taken away (its token revoked or expired, its user disabled or
    /// removed): the server closes it (1008) after this; turns in flight are stored as
    /// interrupted.
    AccessRevoked = "access/revoked" (AccessRevokedParams)
);

/// `turn/event`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEventParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// The event.
    pub event: StreamEvent,
}

/// `turn/compaction_started`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionStartedParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// Why it runs.
    pub trigger: CompactionTrigger,
    /// Estimated tokens in use.
    pub tokens: u64,
    /// The model's window.
    pub window: u64,
}

/// `turn/compaction_summarising`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionSummarisingParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// What is about to be summarised.
    pub summarising: Summarising,
}

/// `turn/compaction`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// What the compaction did.
    pub report: Report,
}

/// `turn/tool_call`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCalledParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// The tool.
    pub name: String,
    /// The model's arguments, as it wrote them.
    pub arguments: String,
    /// The model's id for the call (its result carries the same).
    #[serde(default)]
    pub call_id: String,
}

/// `turn/tool_result`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// The tool.
    pub name: String,
    /// What the model reads.
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
    /// The id of the call it answers.
    #[serde(default)]
    pub call_id: String,
}

/// `turn/warning`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WarningParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// What to know.
    pub message: String,
}

/// `turn/completed`'s params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CompletedParams {
    /// The session.
    pub session: String,
    /// The turn.
    pub turn: u64,
    /// What the turn did (the shape `seshat chat --json` prints).
    pub outcome: TurnOutcome,
}

/// `access/revoked`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AccessRevokedParams {
    /// Why: `token_revoked`, `token_expired`, `user_disabled` or `token_invalid` (the token or its
    /// user was removed).
    pub code: String,
    /// What happened and what to do.
    pub message: String,
}
