//! Bindings for `seshat:plugin@0.1.x`, generated from the frozen copy in `wit/v0.1.0/` (released,
//! never edited). A plugin built against any `0.1.x` links here: wasmtime matches versions
//! semver-compatibly (on `0.x`, the minor is the unit).
//!
//! The shared types (`types`, `trim-types`) generated here are also the 0.2.0 bindings' (see
//! `v0_2.rs`), so the conversions below serve both versions.

pub(crate) mod trimmer {
    wasmtime::component::bindgen!({ path: "wit/v0.1.0", world: "trimmer" });
}

pub(crate) mod summariser {
    wasmtime::component::bindgen!({
        path: "wit/v0.1.0",
        world: "summariser",
        with: { "seshat:plugin/types": super::trimmer::seshat::plugin::types },
    });
}

pub(crate) mod provider {
    wasmtime::component::bindgen!({
        path: "wit/v0.1.0",
        world: "provider",
        with: { "seshat:plugin/types": super::trimmer::seshat::plugin::types },
    });
}

/// The provider calls, in host types (the conversions shared with 0.2.0).
pub(crate) mod translate {
    use super::provider::Provider as Bindings;
    use super::provider::exports::seshat::plugin::translate as t;
    include!("translate.rs");
}

/// The WIT types shared by every world.
pub(crate) use trimmer::seshat::plugin::types as wit;

use crate::conversation::{Part, Role, Usage};

impl From<wit::Role> for Role {
    fn from(r: wit::Role) -> Self {
        match r {
            wit::Role::System => Role::System,
            wit::Role::User => Role::User,
            wit::Role::Assistant => Role::Assistant,
            wit::Role::Tool => Role::Tool,
        }
    }
}

impl From<Role> for wit::Role {
    fn from(r: Role) -> Self {
        match r {
            Role::System => wit::Role::System,
            Role::User => wit::Role::User,
            Role::Assistant => wit::Role::Assistant,
            Role::Tool => wit::Role::Tool,
        }
    }
}

impl From<&Part> for wit::Part {
    fn from(p: &Part) -> Self {
        match p {
            Part::Text { text } => wit::Part::Text(text.clone()),
            Part::ToolCall { id, name, arguments } => {
                wit::Part::ToolCall(wit::ToolCall { id: id.clone(), name: name.clone(), arguments: arguments.clone() })
            }
            Part::ToolResult { call_id, content, is_error } => wit::Part::ToolResult(wit::ToolResult {
                call_id: call_id.clone(),
                content: content.clone(),
                is_error: *is_error,
            }),
            Part::Thinking { text, signature } => {
                wit::Part::Thinking(wit::Thinking { text: text.clone(), signature: signature.clone() })
            }
            Part::RedactedThinking { data } => wit::Part::RedactedThinking(data.clone()),
        }
    }
}

impl From<wit::Part> for Part {
    fn from(p: wit::Part) -> Self {
        match p {
            wit::Part::Text(text) => Part::Text { text },
            wit::Part::ToolCall(c) => Part::ToolCall { id: c.id, name: c.name, arguments: c.arguments },
            wit::Part::ToolResult(r) => {
                Part::ToolResult { call_id: r.call_id, content: r.content, is_error: r.is_error }
            }
            wit::Part::Thinking(t) => Part::Thinking { text: t.text, signature: t.signature },
            wit::Part::RedactedThinking(data) => Part::RedactedThinking { data },
        }
    }
}

impl From<wit::Usage> for Usage {
    fn from(u: wit::Usage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_creation_tokens: u.cache_creation_tokens,
            context_tokens: Some(u.context_tokens),
        }
    }
}

impl From<Usage> for wit::Usage {
    fn from(u: Usage) -> Self {
        wit::Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_creation_tokens: u.cache_creation_tokens,
            context_tokens: u.context_tokens.unwrap_or(u.input_tokens + u.cache_read_tokens + u.cache_creation_tokens),
        }
    }
}

impl From<&crate::plugins::PluginMessage> for wit::Message {
    fn from(m: &crate::plugins::PluginMessage) -> Self {
        wit::Message { id: m.id, role: m.role.into(), parts: m.parts.iter().map(Into::into).collect() }
    }
}

impl From<wit::Message> for crate::plugins::PluginMessage {
    fn from(m: wit::Message) -> Self {
        crate::plugins::PluginMessage {
            id: m.id,
            role: m.role.into(),
            parts: m.parts.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<wit::StopReason> for crate::plugins::StopReason {
    fn from(s: wit::StopReason) -> Self {
        match s {
            wit::StopReason::EndTurn => crate::plugins::StopReason::EndTurn,
            wit::StopReason::ToolUse => crate::plugins::StopReason::ToolUse,
            wit::StopReason::MaxTokens => crate::plugins::StopReason::MaxTokens,
            wit::StopReason::StopSequence => crate::plugins::StopReason::StopSequence,
            wit::StopReason::Refusal => crate::plugins::StopReason::Refusal,
            wit::StopReason::Other(o) => crate::plugins::StopReason::Other(o),
        }
    }
}

impl From<crate::plugins::StopReason> for wit::StopReason {
    fn from(s: crate::plugins::StopReason) -> Self {
        match s {
            crate::plugins::StopReason::EndTurn => wit::StopReason::EndTurn,
            crate::plugins::StopReason::ToolUse => wit::StopReason::ToolUse,
            crate::plugins::StopReason::MaxTokens => wit::StopReason::MaxTokens,
            crate::plugins::StopReason::StopSequence => wit::StopReason::StopSequence,
            crate::plugins::StopReason::Refusal => wit::StopReason::Refusal,
            crate::plugins::StopReason::Other(o) => wit::StopReason::Other(o),
        }
    }
}
