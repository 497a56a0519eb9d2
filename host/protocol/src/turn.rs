//! What a turn produces: the streamed events, the compaction reports, the window's use and the
//! turn's outcome (the shape `seshat chat --json` prints and `turn/completed` carries).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::Usage;

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Finished.
    EndTurn,
    /// Wants tool results.
    ToolUse,
    /// Output limit.
    MaxTokens,
    /// Stop sequence.
    StopSequence,
    /// Refused.
    Refusal,
    /// Something else.
    Other(String),
}

/// One decoded streaming event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The reasoning's signature.
    ThinkingSignature {
        /// The signature.
        signature: String,
    },
    /// Encrypted reasoning.
    RedactedThinking {
        /// The data.
        data: String,
    },
    /// A tool call starts.
    ToolCallStart {
        /// Position.
        index: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Tool call arguments.
    ToolCallDelta {
        /// Position.
        index: u32,
        /// Next piece.
        arguments: String,
    },
    /// Usage so far.
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The answer ended.
    Stop {
        /// Why.
        reason: StopReason,
    },
    /// An error mid-stream.
    Error {
        /// Code.
        code: String,
        /// Message.
        message: String,
    },
}

/// What a compaction did, for the CLI to say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Report {
    /// Estimated request tokens before.
    pub tokens_before: u64,
    /// Estimated request tokens after.
    pub tokens_after: u64,
    /// Tool results trimmed.
    pub trimmed: usize,
    /// Whether a summary replaced older messages.
    pub summarised: bool,
    /// Model calls made (0: no model was called).
    pub model_calls: u32,
    /// The model that wrote the summary.
    pub summary_model: Option<String>,
    /// Messages replaced by the summary.
    pub dropped: usize,
    /// Whether this was a dry run (nothing recorded).
    pub dry_run: bool,
    /// Microseconds spent inside plugin calls (trimmer and summariser, model calls included).
    pub plugin_micros: u64,
    /// The summary freed too little (counted as a failure, but used).
    pub thrash: bool,
    /// Estimated tokens the trims freed.
    pub trims_freed: u64,
    /// Messages kept after the summary (the pinned request included).
    pub kept: usize,
    /// Summary requests the model refused for their length that were cut again and retried (a
    /// recovered refusal is not a failure).
    pub refusals_recovered: u32,
    /// Why a summary that was written was not applied (it would have made the request larger):
    /// the view stays as the trims left it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<String>,
}

/// Where a model's context window came from (shown by `/context` and in warnings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `--window` (or the SDK's option).
    Flag,
    /// `[providers.<name>.models.<id>] context_window`.
    Config,
    /// A window a server's refusal or truncation revealed.
    Learnt,
    /// The provider plugin's model table.
    Table,
    /// Asked of the server (llama.cpp `/props`, Ollama `/api/ps`, vLLM and LM Studio model lists).
    Discovered,
    /// Nothing knew it: the window assumed for a model nobody describes.
    Assumed,
}

impl WindowSource {
    /// Its name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Flag => "flag",
            WindowSource::Config => "config",
            WindowSource::Learnt => "learnt",
            WindowSource::Table => "table",
            WindowSource::Discovered => "discovered",
            WindowSource::Assumed => "assumed",
        }
    }
}

/// How the tokens Seshat acts on where precision decides (near the compaction threshold, a
/// summary request, the check before sending) are counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "by", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Counting {
    /// The server counts them with the model's own tokenizer.
    Server {
        /// The counter that answers (the provider plugin's name for it, e.g.
        /// `llama.cpp-tokenize`).
        counter: String,
    },
    /// Counted on this machine with the model's own tokenizer.
    Local {
        /// The tokenizer, e.g. `o200k_base`.
        tokenizer: String,
    },
    /// Estimated, calibrated by the counts the server reports.
    Estimate {
        /// Whether the server was asked and has no counter Seshat can use (else it was not
        /// asked yet).
        server_has_none: bool,
    },
}

/// How full the window is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextUse {
    /// Tokens in use (the provider's figure when it reported one).
    pub used: u64,
    /// The model's window.
    pub window: u64,
    /// Where the window came from.
    pub source: WindowSource,
    /// How tokens are counted where precision decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting: Option<Counting>,
}

/// What one turn did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TurnOutcome {
    /// The session.
    pub session: String,
    /// The final answer's text.
    pub text: String,
    /// Model calls made.
    pub iterations: u32,
    /// Usage summed over the turn's calls.
    pub usage: Usage,
    /// Why the last call stopped.
    pub stop_reason: Option<StopReason>,
    /// The turn was cut short (Ctrl-C, a dropped stream); what arrived is stored.
    pub interrupted: bool,
    /// The iteration cap ended the turn while the model still wanted tools.
    pub hit_iteration_cap: bool,
    /// The error that cut the turn short.
    pub error: Option<String>,
    /// Its stable code (`interrupted`, `timeout`, `connection_failed`, …).
    pub error_code: Option<String>,
    /// Compactions that ran.
    pub compactions: Vec<Report>,
    /// Window use after the turn.
    pub context: Option<ContextUse>,
    /// The turn's request had been sent before with the same idempotency key and its exchange was
    /// stored then: this is what was stored (nothing was stored or asked of the model now).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// What failed after the answer was stored (the turn succeeded): a figure not updated, a
    /// claim not given back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
