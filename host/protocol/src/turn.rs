//! What a turn produces: the streamed events, the compaction reports, the window's use and the
//! turn's outcome (the shape `seshat chat --json` prints and `turn/completed` carries).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::Usage;
use crate::records::CompactionTrigger;

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
    /// The messages that left the live view for the summary, as seq ranges (empty when nothing
    /// was summarised; a dry run names those it would summarise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summarised_seqs: Vec<SeqRange>,
    /// The tool results trimmed, with their sizes before and after.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trims: Vec<TrimSize>,
    /// The summary's size in the model's tokens, when one was applied (or, in a dry run, its
    /// cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_tokens: Option<u64>,
    /// How the summary was asked for, when a model was called for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_request: Option<SummaryRequestKind>,
    /// The summary calls' usage summed (input, output, prompt-cache reads and writes), when the
    /// provider reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_usage: Option<Usage>,
    /// What the summary calls cost, in millionths of a US dollar, by the summary model's
    /// configured prices (`[providers.<name>.models.<id>] price`), when they are known and the
    /// provider reported the usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_cost_micro_usd: Option<u64>,
    /// The marks the pass worked to: the model's window, the threshold over which compaction runs
    /// by itself and the target it aims under (0 when unknown: a report made before these were
    /// given).
    pub marks: WindowMarks,
    /// Set when the summary was written off the turn's path, from a snapshot of the view, and
    /// swapped in at a safe point (between model calls): what started it and what it covered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundRun>,
}

/// Why a summary is written in the background, while the session goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundReason {
    /// The session passed the early mark, below the threshold: the summary is ready before a
    /// turn would have to wait for it.
    EarlyMark,
    /// The session was idle long enough (while the provider's cache still holds its prefix).
    Idle,
}

/// A summary written in the background and swapped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackgroundRun {
    /// What started it.
    pub reason: BackgroundReason,
    /// The session's last message when its snapshot was taken: the summary covers messages up to
    /// here, and nothing up to here had changed when it was swapped in.
    pub snapshot_seq: u64,
    /// Messages appended after the snapshot while it was written, kept in the view as they were.
    pub appended: u64,
}

/// How a summary was asked of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SummaryRequestKind {
    /// The conversation exactly as the session's requests send it (system prompt, tools,
    /// messages), the summary's instruction after it: the provider's prompt cache serves the
    /// conversation.
    SharedPrefix,
    /// A transcript of what the summary replaces, sent on its own (in chunks when it does not fit
    /// the summary model's window).
    Separate,
}

/// A window's marks, in the model's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct WindowMarks {
    /// The context window.
    pub window: u64,
    /// Above this, compaction runs before the next request.
    pub threshold: u64,
    /// What compaction aims under.
    pub target: u64,
}

/// Messages `from..=through` of a session (by seq).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeqRange {
    /// The first.
    pub from: u64,
    /// The last.
    pub through: u64,
}

impl SeqRange {
    /// The ranges `seqs` (ascending) make, consecutive seqs joined.
    pub fn of(seqs: impl IntoIterator<Item = u64>) -> Vec<SeqRange> {
        let mut out: Vec<SeqRange> = Vec::new();
        for s in seqs {
            match out.last_mut() {
                Some(r) if r.through + 1 == s => r.through = s,
                _ => out.push(SeqRange { from: s, through: s }),
            }
        }
        out
    }

    /// How many messages it holds.
    pub fn len(&self) -> u64 {
        self.through + 1 - self.from
    }

    /// Always false: a range holds at least its first message.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl std::fmt::Display for SeqRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.from == self.through {
            write!(f, "#{}", self.from)
        } else {
            write!(f, "#{}–#{}", self.from, self.through)
        }
    }
}

/// One tool result a compaction trimmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrimSize {
    /// Its message's seq.
    pub seq: u64,
    /// The part's index in the message.
    pub part: u32,
    /// Its size before, in bytes.
    pub bytes_before: u64,
    /// Its size in the live view after.
    pub bytes_after: u64,
}

/// A summary about to be written: told before the summariser (and the model it calls) runs, with
/// what it will replace, so a front end can say so while it is under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Summarising {
    /// Why the compaction runs.
    pub trigger: CompactionTrigger,
    /// Tokens in use before the pass (the figure the report gives as `tokens_before`).
    pub tokens: u64,
    /// Tokens in use once the pass's trims stand.
    pub after_trims: u64,
    /// The marks the pass works to.
    pub marks: WindowMarks,
    /// The messages about to leave the live view for the summary, as seq ranges.
    pub seqs: Vec<SeqRange>,
    /// How many messages that is.
    pub messages: usize,
    /// Their size in the model's tokens.
    pub messages_tokens: u64,
    /// Messages that stay in the view verbatim.
    pub kept: usize,
    /// The summariser's id.
    pub summariser: String,
    /// The model it may call.
    pub model: String,
    /// Set when the summary is written in the background (the session goes on meanwhile, and it
    /// is swapped in at a safe point): why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundReason>,
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
