#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "trimmer",
        pub_export_macro: true,
        export_macro_name: "__export_trimmer_world",
        default_bindings_module: "::seshat_plugin_sdk::trimmer::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_trimmer_world;

pub use bindings::exports::seshat::plugin::trim::Guest as __Guest;
pub use bindings::seshat::plugin::trim_types::{Budget, Edit, HeadTail, History, KeepLines, LineRange, Replace};
pub use bindings::seshat::plugin::types::{Error, PartKind, Role};

/// One message, without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageMeta {
    /// The message's seq.
    pub id: u64,
    /// Who wrote it.
    pub role: Role,
    /// Estimated tokens of the whole message.
    pub tokens: u64,
    /// Whether the host forbids trimming it.
    pub protected: bool,
}

/// One part of a message, without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartMeta {
    /// The seq of its message.
    pub message: u64,
    /// Its index in that message.
    pub index: u32,
    /// What kind of part it is.
    pub kind: PartKind,
    /// Size of its content in bytes (after earlier trims).
    pub bytes: u64,
    /// Estimated tokens.
    pub tokens: u64,
}

fn role(code: u8) -> Role {
    match code {
        0 => Role::System,
        1 => Role::User,
        2 => Role::Assistant,
        _ => Role::Tool,
    }
}

fn kind(code: u8) -> PartKind {
    match code {
        1 => PartKind::ToolCall,
        2 => PartKind::ToolResult,
        3 => PartKind::Thinking,
        4 => PartKind::RedactedThinking,
        _ => PartKind::Text,
    }
}

/// The history's columns as one struct per message and one per part.
pub fn rows(h: &History) -> (Vec<MessageMeta>, Vec<PartMeta>) {
    let messages = (0..h.message_ids.len())
        .map(|i| MessageMeta {
            id: h.message_ids[i],
            role: role(h.message_roles[i]),
            tokens: h.message_tokens[i],
            protected: h.message_protected[i] != 0,
        })
        .collect();
    let parts = (0..h.part_messages.len())
        .map(|j| PartMeta {
            message: h.part_messages[j],
            index: h.part_indexes[j],
            kind: kind(h.part_kinds[j]),
            bytes: h.part_bytes[j],
            tokens: h.part_tokens[j],
        })
        .collect();
    (messages, parts)
}

/// An edit keeping `content`'s head, tail and outcome lines ([`crate::outcomes::shorten`])
/// within about `budget` bytes, or a head-tail edit of the same budget when whole lines cannot
/// do it (few, long lines). `None` when the content is already within the budget.
pub fn keep_outcomes(message: u64, part: u32, content: &str, budget: u64) -> Option<Edit> {
    Some(match crate::outcomes::shorten(content, budget)? {
        crate::outcomes::Shorten::Lines(ranges) => Edit::KeepLines(KeepLines {
            message,
            part,
            lines: ranges.into_iter().map(|r| LineRange { start: r.start as u32, end: r.end as u32 }).collect(),
        }),
        crate::outcomes::Shorten::HeadTail { head, tail } => Edit::HeadTail(HeadTail { message, part, head, tail }),
    })
}

/// The current content of one part, asked of the host. Ask only for what you need.
pub fn read_part(message: u64, part: u32) -> Option<String> {
    bindings::seshat::plugin::trim_host::read_part(message, part)
}

/// A trimmer policy.
pub trait Trimmer {
    /// Proposes edits that bring the request toward `budget.target_tokens`. `parts` lists
    /// every part of every message, in history order. Only tool results of unprotected
    /// messages may be edited, and only made shorter; one invalid edit rejects the whole
    /// answer.
    fn trim(messages: Vec<MessageMeta>, parts: Vec<PartMeta>, budget: Budget) -> Result<Vec<Edit>, Error>;
}

kind_helpers!("[plugins.options.trimmer]");

impl core::fmt::Display for PartKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            PartKind::Text => "text",
            PartKind::ToolCall => "tool_call",
            PartKind::ToolResult => "tool_result",
            PartKind::Thinking => "thinking",
            PartKind::RedactedThinking => "redacted_thinking",
        })
    }
}

impl<T: Trimmer> __Guest for T {
    fn trim(history: History, budget: Budget) -> Result<Vec<Edit>, Error> {
        __install_panic_hook();
        let (messages, parts) = rows(&history);
        <T as Trimmer>::trim(messages, parts, budget)
    }
}

/// Exports a [`Trimmer`] implementation as the plugin's trimmer.
#[macro_export]
macro_rules! export_trimmer {
    ($t:ident) => {
        $crate::trimmer::__export_trimmer_world!($t with_types_in $crate::trimmer::__bindings);
        $crate::__version_section!();
    };
}
