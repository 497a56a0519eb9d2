//! Lifecycle hooks: the moments of a session's life a user's own code is run at, what it is told
//! (a [`HookPayload`], JSON on a command hook's standard input) and what it may answer (a
//! [`HookDecision`], JSON on its standard output).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A moment of a session's life a hook runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookEvent {
    /// A session is opened: new, resumed or forked (`source`). Its context is added to the first
    /// request.
    SessionStart,
    /// The user's message, before anything is stored or sent: a block stops the turn; context is
    /// added to the message.
    UserPrompt,
    /// A tool call, before it runs (`tool`, `arguments`): a block becomes the tool's error result.
    PreTool,
    /// A tool call's result (`tool`, `arguments`, `result`, `is_error`): context is added to the
    /// result; a block marks it an error with the reason.
    PostTool,
    /// A compaction about to run (`trigger` auto or manual, the figures): extra instructions for
    /// its summary, or `skip` (this time only).
    PreCompact,
    /// A compaction done (`report`).
    PostCompact,
    /// A session forked (`parent`, `at_seq`, `fork`).
    Fork,
    /// A session rewound (`from_seq`, `through_seq`: the messages taken out of the view).
    Rewind,
    /// A front end closes the session.
    SessionEnd,
    /// The model wrote to long-term memory (`tool`, `arguments`).
    MemoryWrite,
}

impl HookEvent {
    /// Every event, in the order a session meets them.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::SessionStart,
        HookEvent::UserPrompt,
        HookEvent::PreTool,
        HookEvent::PostTool,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Fork,
        HookEvent::Rewind,
        HookEvent::SessionEnd,
        HookEvent::MemoryWrite,
    ];

    /// Its name, as configured (`[[hooks.pre_tool]]`) and sent (`"event": "pre_tool"`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPrompt => "user_prompt",
            HookEvent::PreTool => "pre_tool",
            HookEvent::PostTool => "post_tool",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::PostCompact => "post_compact",
            HookEvent::Fork => "fork",
            HookEvent::Rewind => "rewind",
            HookEvent::SessionEnd => "session_end",
            HookEvent::MemoryWrite => "memory_write",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether a hook of this event may stop what happens (a turn, a tool call).
    pub fn can_block(self) -> bool {
        matches!(self, HookEvent::UserPrompt | HookEvent::PreTool | HookEvent::PostTool)
    }

    /// Whether a hook of this event may add context to the request.
    pub fn takes_context(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPrompt | HookEvent::PreTool | HookEvent::PostTool)
    }

    /// Whether a hook's plain text output (not a JSON decision) is context, as it is for the events
    /// that take context before the model reads anything of the turn.
    pub fn text_is_context(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPrompt)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook is told: the event, the session it happens in, and the event's own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookPayload {
    /// The event.
    pub event: HookEvent,
    /// The session's id.
    pub session: String,
    /// The session's project key.
    pub project: String,
    /// The session's last message when it happens (0 for none, and for `pre_compact`).
    pub seq: u64,
    /// The event's own fields (see [`HookEvent`]'s variants).
    #[serde(flatten)]
    pub data: serde_json::Map<String, serde_json::Value>,
}

/// Whether what the hook was told about goes on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It goes on.
    #[default]
    Continue,
    /// It stops, for the `reason` the model or the user sees.
    Block,
}

/// What a hook answers (all fields optional: `{}` continues).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookDecision {
    /// Go on or stop.
    #[serde(default)]
    pub decision: Verdict,
    /// Why it stops (shown to the model for a tool, to the user for a prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Text added to the request (counted in the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `pre_compact`: what the summary should also keep or stress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `pre_compact`: do not compact this time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip: bool,
}
