//! The vocabulary a turn is made of: who wrote a message, its parts, the usage a provider
//! reported, how it came to be.
//!
//! It sits below everything else in the crate and uses nothing of it: the store persists these
//! types, the window arithmetic counts them, plugins receive them, providers translate them.
//! They are also the JSON shapes of `sessions export` and `--json` output, so a field rename here
//! is a format change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or the application) talking to the agent.
    User,
    /// The model.
    Assistant,
    /// Results of tool calls, answering an assistant message.
    Tool,
}

impl Role {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

/// How a message came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// Written in full.
    #[default]
    Complete,
    /// Cut short (Ctrl-C, a dropped stream): what arrived is kept.
    Interrupted,
    /// Written by Seshat rather than the user or the model, e.g. the result of a tool call that
    /// never got one.
    Synthetic,
}

impl MessageStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Complete => "complete",
            MessageStatus::Interrupted => "interrupted",
            MessageStatus::Synthetic => "synthetic",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "complete" => MessageStatus::Complete,
            "interrupted" => MessageStatus::Interrupted,
            "synthetic" => MessageStatus::Synthetic,
            _ => return None,
        })
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call made by the model.
    ToolCall {
        /// The provider's call id, answered by a [`Part::ToolResult`] with the same `call_id`.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model wrote them (normally a JSON object).
        arguments: String,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the [`Part::ToolCall`] this answers.
        call_id: String,
        /// What the tool returned.
        content: String,
        /// Whether the tool failed.
        #[serde(default)]
        is_error: bool,
    },
    /// The model's visible reasoning, with the provider's signature when it gave one (passed
    /// back intact on later requests).
    Thinking {
        /// The reasoning text.
        text: String,
        /// The provider's signature over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider returned only in encrypted form.
    RedactedThinking {
        /// The opaque data, passed back as is.
        data: String,
    },
}

impl Part {
    /// The bytes of text the part carries (what storing it costs, give or take its JSON framing).
    pub fn text_bytes(&self) -> usize {
        match self {
            Part::Text { text } | Part::Thinking { text, .. } => text.len(),
            Part::ToolCall { id, name, arguments } => id.len() + name.len() + arguments.len(),
            Part::ToolResult { call_id, content, .. } => call_id.len() + content.len(),
            Part::RedactedThinking { data } => data.len(),
        }
    }

    /// A short name for the part's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Text { .. } => "text",
            Part::ToolCall { .. } => "tool_call",
            Part::ToolResult { .. } => "tool_result",
            Part::Thinking { .. } => "thinking",
            Part::RedactedThinking { .. } => "redacted_thinking",
        }
    }

    /// The call id, if this is a tool call.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Part::ToolCall { id, .. } => Some(id),
            _ => None,
        }
    }

    /// The id of the call it answers, if this is a tool result.
    pub fn answered_call_id(&self) -> Option<&str> {
        match self {
            Part::ToolResult { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// Size of the part's content in bytes (what a trim measures).
    pub fn byte_size(&self) -> usize {
        match self {
            Part::Text { text } => text.len(),
            Part::ToolCall { id, name, arguments } => id.len() + name.len() + arguments.len(),
            Part::ToolResult { call_id, content, .. } => call_id.len() + content.len(),
            Part::Thinking { text, signature } => text.len() + signature.as_ref().map_or(0, String::len),
            Part::RedactedThinking { data } => data.len(),
        }
    }
}

/// Token usage reported by a provider for one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Input tokens billed at the normal rate.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_creation_tokens: u64,
    /// The whole request's size as the provider counted it, normalised across providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

/// A model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens billed at the normal rate.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache (default: the input price).
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache (default: the input price).
    pub cache_write: Option<f64>,
}

impl Price {
    /// What `usage` cost, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input_tokens, self.input)
            + per(usage.output_tokens, self.output)
            + per(usage.cache_read_tokens, self.cache_read.unwrap_or(self.input))
            + per(usage.cache_creation_tokens, self.cache_write.unwrap_or(self.input))
    }
}

impl Usage {
    /// Adds a later call's usage: the counts summed, the request's size the later one's.
    pub fn add(&mut self, later: &Usage) {
        self.input_tokens += later.input_tokens;
        self.output_tokens += later.output_tokens;
        self.cache_read_tokens += later.cache_read_tokens;
        self.cache_creation_tokens += later.cache_creation_tokens;
        self.context_tokens = later.context_tokens;
    }
}

/// The text parts of `parts`, one after another (what a reader sees of an answer).
pub fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None }).collect()
}

/// A message to append.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its content.
    pub parts: Vec<Part>,
    /// Usage of the model call that produced it, for assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How it came to be.
    #[serde(default)]
    pub status: MessageStatus,
}

impl NewMessage {
    /// A complete message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self { role, parts: vec![Part::Text { text: text.into() }], usage: None, status: MessageStatus::Complete }
    }
}

/// Whether `c` must not reach a terminal as is: C0 controls but tab and newline, DEL, C1 controls
/// and the bidirectional overrides and isolates (which reorder what a reader sees).
pub fn is_hidden(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [hidden](is_hidden) character shown as its escape (`\u{1b}`); tabs and line
/// breaks stay. Stored text, model output and plugin text go through this before a person sees it.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}
