//! The models a compaction calls: the [`ModelClient`] the chat layer implements, the stand-ins
//! for clients without a model, and the summary model bound to its window as the summariser's
//! `complete` sees it.

use std::sync::Arc;

use super::accounting::{calibrated, request_size};
use crate::conversation::{Part, Role};
use crate::plugins::{Completion, CompletionRequest, Limit, ModelCall, ModelError};
use crate::window;

/// Calls models for the compaction (the summary). The chat layer implements it with the real
/// providers; tests script it.
pub trait ModelClient: Send + Sync {
    /// Calls `model`.
    fn complete(&self, model: &str, request: CompletionRequest) -> Result<Completion, ModelError>;
    /// The model's context window, when known.
    fn context_window(&self, model: &str) -> Option<u64>;
    /// `text`'s tokens in `model`'s own tokenizer, when it can be counted here (none by default:
    /// the estimate serves).
    fn count(&self, _model: &str, _text: &str) -> Option<u64> {
        None
    }
    /// A whole request's input tokens as `model` counts them, when that can be had (by default,
    /// each text by [`ModelClient::count`] with its overhead). Called only where precision
    /// decides; may cost a round trip.
    fn count_request(&self, model: &str, request: &CountRequest<'_>) -> Option<u64> {
        request.size_with(&|t: &str| self.count(model, t))
    }
    /// Sends a summary request whose conversation is the session's own, as its requests carry it
    /// ([`SharedRequest`]), so the provider's prompt cache can serve all of it but the
    /// instruction; `None` when this client cannot send one (the summary is then asked for the
    /// separate way).
    fn complete_shared(&self, _model: &str, _request: &SharedRequest<'_>) -> Option<Result<Completion, ModelError>> {
        None
    }
}

/// A summary request sharing the session's prefix: its system prompt and tools, its conversation
/// as the chat's requests send it, then the instruction as the last user message. Nothing in it
/// may differ from the chat's request up to the instruction, or the provider's cache misses.
#[derive(Debug, Clone)]
pub struct SharedRequest<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The tools as the chat offers them (the model is told not to call one).
    pub specs: &'a [crate::plugins::ToolSpec],
    /// The conversation, paired and alternating, the instruction last.
    pub messages: &'a [super::pairing::Msg],
    /// Largest answer.
    pub max_tokens: u32,
    /// How the chat's requests are shaped past their content.
    pub shape: &'a RequestShape,
}

/// What the chat's requests carry besides the conversation, which a request sharing their prefix
/// must carry the same way (the agent fills it in; without it no summary shares the prefix).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestShape {
    /// Stored messages after this seq were written by this provider and model (their reasoning
    /// goes back to it).
    pub same_model_after: Option<u64>,
    /// Provider options, a JSON object.
    pub extra: String,
}

/// A request whose input is to be counted: its system prompt, its tool schemas as sent, and its
/// conversation.
#[derive(Debug, Clone)]
pub struct CountRequest<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The tool schemas as text (empty when none): what the estimate and a local tokenizer count.
    pub tools: &'a str,
    /// The tools as the request offers them: what a server's counter is given.
    pub specs: &'a [crate::plugins::ToolSpec],
    /// The conversation.
    pub messages: Vec<(Role, &'a [Part])>,
}

impl CountRequest<'_> {
    /// Its size with every text counted by `count` and each message's overhead; `None` when
    /// `count` cannot count one of them.
    pub fn size_with(&self, count: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
        request_size(&[self.system, self.tools], self.messages.iter().map(|(_, p)| *p), count)
    }
}

/// A [`ModelClient`] with no models: every summary call fails, saying what to configure. For
/// clients that only compact with a summariser that needs no model.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoModels;

impl ModelClient for NoModels {
    fn complete(&self, model: &str, _request: CompletionRequest) -> Result<Completion, ModelError> {
        Err(ModelError::new(
            "no_provider",
            format!(
                "no provider is configured to call `{model}`: set `provider` under [plugins] in config.toml (or \
                 export ANTHROPIC_API_KEY / OPENAI_API_KEY), or select the offline summariser with \
                 `summariser = \"summariser-extractive\"`"
            ),
        ))
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// A [`ModelClient`] that answers every call with what it was asked, for trying a summariser
/// without a model (`seshat plugins test`): `[echo stub: N messages, B bytes asked]` followed
/// by the last message's text, cut to the answer's room (four bytes a token).
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoModel;

/// The model id [`EchoModel`] reports.
pub const ECHO_MODEL: &str = "echo-stub";

impl ModelClient for EchoModel {
    fn complete(&self, _model: &str, request: CompletionRequest) -> Result<Completion, ModelError> {
        let asked: usize = request.system.as_deref().map_or(0, str::len)
            + request.messages.iter().flat_map(|m| &m.parts).map(Part::byte_size).sum::<usize>();
        let last: String = request
            .messages
            .last()
            .map(|m| {
                m.parts
                    .iter()
                    .filter_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None })
                    .collect()
            })
            .unwrap_or_default();
        let end = last.floor_char_boundary((request.max_tokens as usize).saturating_mul(4));
        Ok(Completion {
            text: format!("[echo stub: {} messages, {asked} bytes asked]\n{}", request.messages.len(), &last[..end]),
            usage: None,
            stop_reason: crate::plugins::StopReason::EndTurn,
        })
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// A summary request the model refused for its length: what Seshat estimated it at and what the
/// refusal said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refusal {
    /// Seshat's estimate of the refused request's input (estimate units).
    pub(super) estimated: u64,
    /// The input in the model's real tokens, when the refusal named it.
    pub(super) real: Option<u64>,
    /// The window the refusal named, if any.
    pub(super) window: Option<u64>,
    /// Whether the model's count said so before anything was sent (no server refused it).
    pub(super) counted: bool,
}

impl Refusal {
    /// What a refusal's limits say of the request's input and the window.
    pub(super) fn from_limit(estimated: u64, limit: Limit) -> Option<Self> {
        match limit {
            // The size a refusal names is the input ("your messages resulted in N", a prompt's
            // token count).
            Limit::TooLong { window, requested } => {
                Some(Refusal { estimated, real: requested, window, counted: false })
            }
            Limit::InputAndOutput { input, window, .. } => {
                Some(Refusal { estimated, real: Some(input), window: Some(window), counted: false })
            }
            Limit::MaxOutput(_) => None,
        }
    }
}

/// A [`ModelClient`] bound to one model, as the summariser plugin's `complete` sees it. Every
/// request is checked against the model's window in real tokens (the estimate times its `calibration`):
/// one that cannot fit with its answer is refused here (nothing is sent), and the answer's room is
/// lowered to what fits. A refusal for length from the model is kept in `refused` for the
/// compaction to recover from.
pub(super) struct BoundModel {
    pub(super) client: Arc<dyn ModelClient>,
    pub(super) model: String,
    pub(super) calls: Arc<std::sync::atomic::AtomicU32>,
    /// The summary model's window (0: unknown, nothing checked).
    pub(super) window: u64,
    /// Real tokens per estimated token (at least 1).
    pub(super) calibration: f64,
    /// The last refusal for length the model sent.
    pub(super) refused: Arc<std::sync::Mutex<Option<Refusal>>>,
    /// The calls' usage summed, as the provider reported it.
    pub(super) usage: Arc<std::sync::Mutex<Option<crate::conversation::Usage>>>,
}

/// The smallest answer room worth asking a summary model for.
const MIN_SUMMARY_ANSWER: u64 = 64;

impl ModelCall for BoundModel {
    fn complete(&mut self, mut request: CompletionRequest) -> Result<Completion, ModelError> {
        let counted = CountRequest {
            system: request.system.as_deref().unwrap_or(""),
            tools: "",
            specs: &[],
            messages: request.messages.iter().map(|m| (m.role, m.parts.as_slice())).collect(),
        };
        let estimated = counted.size_with(&|t: &str| Some(window::estimate_text(t))).unwrap_or(0);
        if self.window > 0 {
            // Counted in the model's own tokens where that can be done here; else the estimate at
            // the calibration.
            let count = self.client.count_request(&self.model, &counted);
            let input = count.unwrap_or_else(|| calibrated(estimated, self.calibration));
            let room = self.window.saturating_sub(input);
            if room < MIN_SUMMARY_ANSWER {
                if let Some(real) = count {
                    // The model's own count says it cannot fit: cut again at that density, as
                    // after a refusal, with nothing sent.
                    *self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some(Refusal { estimated, real: Some(real), window: Some(self.window), counted: true });
                }
                return Err(ModelError::new(
                    "summary_too_large",
                    format!(
                        "the summary request needs ~{input} tokens, which leaves no room for an answer in the \
                         {}-token window of `{}`; nothing was sent",
                        self.window, self.model
                    ),
                ));
            }
            request.max_tokens = request.max_tokens.min(u32::try_from(room).unwrap_or(u32::MAX));
        }
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let result = self.client.complete(&self.model, request);
        if let Err(e) = &result
            && let Some(refusal) = e.limit.and_then(|l| Refusal::from_limit(estimated, l))
        {
            *self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refusal);
        }
        if let Ok(Completion { usage: Some(u), .. }) = &result {
            let mut summed = self.usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            summed.get_or_insert_with(Default::default).add(u);
        }
        result
    }
}
