//! Each event's own fields, written once for every place that tells hooks of it (the agent, the
//! compaction, `seshat hooks test`, a hook plugin's trial).

use serde_json::{Map, Value, json};

use super::HookEvent;

/// What happened, with the fields its payload carries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Data<'a> {
    /// A session opened: `new`, `resumed` or `fork`.
    SessionStart {
        /// How it was opened.
        source: &'a str,
    },
    /// The user's message.
    UserPrompt {
        /// Its text.
        prompt: &'a str,
    },
    /// A tool call, before it runs.
    PreTool {
        /// The provider's call id.
        call_id: &'a str,
        /// The tool.
        tool: &'a str,
        /// Its arguments, as the model wrote them (JSON, or text when they are not).
        arguments: &'a str,
    },
    /// A tool call's result.
    PostTool {
        /// The provider's call id.
        call_id: &'a str,
        /// The tool.
        tool: &'a str,
        /// Its arguments.
        arguments: &'a str,
        /// What it returned.
        result: &'a str,
        /// Whether it failed.
        is_error: bool,
    },
    /// A compaction about to run.
    PreCompact {
        /// `auto` or `manual`.
        trigger: &'a str,
        /// Tokens in use.
        tokens: u64,
        /// The context window.
        window: u64,
    },
    /// A compaction done: its report (or a compaction's record), as JSON.
    PostCompact {
        /// The report.
        report: Value,
    },
    /// A session forked.
    Fork {
        /// The session forked from.
        parent: &'a str,
        /// The parent's last message the fork keeps.
        at_seq: u64,
        /// The fork's id.
        fork: &'a str,
    },
    /// A session rewound: the messages taken out of the view.
    Rewind {
        /// The first.
        from_seq: u64,
        /// The last.
        through_seq: u64,
    },
    /// The front end closes the session.
    SessionEnd,
    /// The model wrote to long-term memory.
    MemoryWrite {
        /// The memory tool.
        tool: &'a str,
        /// Its arguments.
        arguments: &'a str,
    },
}

impl Data<'_> {
    /// The event it is.
    pub fn event(&self) -> HookEvent {
        match self {
            Data::SessionStart { .. } => HookEvent::SessionStart,
            Data::UserPrompt { .. } => HookEvent::UserPrompt,
            Data::PreTool { .. } => HookEvent::PreTool,
            Data::PostTool { .. } => HookEvent::PostTool,
            Data::PreCompact { .. } => HookEvent::PreCompact,
            Data::PostCompact { .. } => HookEvent::PostCompact,
            Data::Fork { .. } => HookEvent::Fork,
            Data::Rewind { .. } => HookEvent::Rewind,
            Data::SessionEnd => HookEvent::SessionEnd,
            Data::MemoryWrite { .. } => HookEvent::MemoryWrite,
        }
    }

    /// The tool a matcher chooses by, for the events about one.
    pub fn tool(&self) -> Option<&str> {
        match self {
            Data::PreTool { tool, .. } | Data::PostTool { tool, .. } | Data::MemoryWrite { tool, .. } => Some(tool),
            _ => None,
        }
    }

    /// The payload's fields beside `event`, `session`, `project` and `seq`.
    pub fn fields(&self) -> Map<String, Value> {
        let pairs: Vec<(&str, Value)> = match self {
            Data::SessionStart { source } => vec![("source", json!(source))],
            Data::UserPrompt { prompt } => vec![("prompt", json!(prompt))],
            Data::PreTool { call_id, tool, arguments } => {
                vec![("call_id", json!(call_id)), ("tool", json!(tool)), ("arguments", arguments_value(arguments))]
            }
            Data::PostTool { call_id, tool, arguments, result, is_error } => vec![
                ("call_id", json!(call_id)),
                ("tool", json!(tool)),
                ("arguments", arguments_value(arguments)),
                ("result", json!(result)),
                ("is_error", json!(is_error)),
            ],
            Data::PreCompact { trigger, tokens, window } => {
                let marks = crate::window::Marks::new(*window);
                vec![
                    ("trigger", json!(trigger)),
                    ("tokens", json!(tokens)),
                    ("window", json!(window)),
                    ("threshold", json!(marks.threshold)),
                    ("target", json!(marks.target)),
                ]
            }
            Data::PostCompact { report } => vec![("report", report.clone())],
            Data::Fork { parent, at_seq, fork } => {
                vec![("parent", json!(parent)), ("at_seq", json!(at_seq)), ("fork", json!(fork))]
            }
            Data::Rewind { from_seq, through_seq } => {
                vec![("from_seq", json!(from_seq)), ("through_seq", json!(through_seq))]
            }
            Data::SessionEnd => Vec::new(),
            Data::MemoryWrite { tool, arguments } => {
                vec![("tool", json!(tool)), ("arguments", arguments_value(arguments))]
            }
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// A tool call's arguments as JSON (as text when they are not).
fn arguments_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments))
}
