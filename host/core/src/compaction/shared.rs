//! A summary asked with the session's own prefix: the conversation exactly as the chat's last
//! request sent it (system prompt, tools, messages), then the summary's instruction as the last
//! user message. The provider's prompt cache (Anthropic's `cache_control` breakpoints, OpenAI's
//! automatic prefix cache, llama.cpp's prompt cache) then serves everything but the instruction,
//! where a separate summary request re-reads all of it. Used when the summary model is the
//! session's model and the summariser is Seshat's model summary; anything else, or a request that
//! would not fit the window with the summary, is asked the separate way.

use super::accounting::entry_tokens;
use super::models::{ModelClient, SharedRequest};
use super::pairing;
use super::{Frame, Settings};
use crate::conversation::{Part, Role};
use crate::plugins::{Completion, StopReason};
use crate::store::{LiveView, Origin, Store, ViewEntry};

/// The summariser whose instructions a shared-prefix summary follows: Seshat's model summary.
pub(super) const SUMMARISER: &str = "summariser";

/// What Seshat's model summary tells the summary model (the same text the plugin sends).
const INSTRUCTIONS: &str = include_str!("../../../../plugins/summariser/prompt.md");

/// How long after a request its prefix is taken to be still cached: five minutes, Anthropic's
/// default lifetime and the least of OpenAI's.
const CACHE_FRESH_MS: i64 = 5 * 60 * 1_000;

/// What a shared-prefix request came to: the summary's text and the call's usage, or why it was
/// not asked this way (the separate way follows).
#[derive(Debug, Clone)]
pub(crate) enum Shared {
    /// The model wrote it.
    Written(Completion),
    /// Not asked this way, or the model's answer cannot be the summary (a refusal, an error, no
    /// text, a tool call): the separate way follows. Says why (for the log),
    /// whether the model was called and what that call used.
    Fallback(&'static str, bool, Option<crate::conversation::Usage>),
    /// The call failed (the compaction fails as a separate request's failure would).
    Failed(String),
}

/// The conversation a summary sharing the chat's prefix sends: the view's messages as
/// `before_call` builds a chat request from them (the summary with its recall hint, tool exchanges
/// paired, roles alternating), nothing stored, then the instruction. It ends where the chat's last
/// request ended (before the view's latest answer: what any cache holds), or at the cut when what
/// is summarised goes further; what lies past the last request is sent as this pass trimmed it
/// (no cache holds it). `original` is the view before this pass's trims, `trimmed` after (entry
/// for entry); `sent` the index of the view's latest answer (its length when there is none),
/// `first_kept` of the first message kept.
pub(super) fn messages(
    store: &Store,
    session: &str,
    (original, trimmed): (&LiveView, &LiveView),
    (sent, first_kept): (usize, usize),
    settings: &Settings,
    instruction: String,
) -> super::Result<Vec<pairing::Msg>> {
    let end = sent.max(first_kept).min(original.entries.len());
    let entries =
        (0..end).map(|i| if i < sent { &original.entries[i] } else { &trimmed.entries[i] }).cloned().collect();
    let (mut messages, unanswered) = super::request_messages(store, session, entries, settings.recall)?;
    if !unanswered.is_empty() {
        // Not stored: this request only reads.
        messages.push(pairing::Msg { seq: None, role: Role::Tool, parts: unanswered });
    }
    let mut messages = pairing::arrange(messages);
    messages.push(pairing::Msg { seq: None, role: Role::User, parts: vec![Part::Text { text: instruction }] });
    Ok(pairing::alternate(messages))
}

/// The instruction after the conversation: what to summarise (everything before `first_kept`,
/// which stays as it is, when the request holds it), the summary's instructions (the user's prompt
/// in place of Seshat's) and the user's instructions for this compaction.
pub(super) fn instruction(first_kept: Option<&ViewEntry>, settings: &Settings) -> String {
    let what = match first_kept.map(excerpt) {
        Some(start) => format!(
            "every message above before the one that begins {start}. That message and every one after it stay in \
             the conversation as they are: leave them out of the summary"
        ),
        None => "the whole conversation above".to_string(),
    };
    let mut out = format!(
        "[Seshat: compaction] The conversation is being compacted. Do not answer the latest request and do not call \
         any tool: reply only with the summary that will replace {what}. An earlier summary at the start is folded \
         into the new one.\n\n{}",
        settings.prompt.as_deref().unwrap_or(INSTRUCTIONS).trim()
    );
    if let Some(user) = settings.instructions.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        out.push_str("\n\nThe user's instructions for this summary (follow them): ");
        out.push_str(user);
    }
    out
}

/// How a message starts, quoted, for the model to find it by (its reasoning, which the request
/// may not carry, left aside).
fn excerpt(e: &ViewEntry) -> String {
    const CHARS: usize = 80;
    match e.parts.iter().find(|p| !matches!(p, Part::Thinking { .. } | Part::RedactedThinking { .. })) {
        Some(Part::Text { text }) => {
            let start: String = text.trim_start().chars().take(CHARS).collect();
            format!("«{}{}» ({})", start, if text.chars().count() > CHARS { "…" } else { "" }, e.role.as_str())
        }
        Some(Part::ToolCall { name, .. }) => format!("with your call to the tool `{name}`"),
        Some(Part::ToolResult { call_id, .. }) => format!("with the result of tool call `{call_id}`"),
        _ => format!("as message {} ({})", e.seq.unwrap_or_default(), e.role.as_str()),
    }
}

/// A request sharing the chat's prefix, ready to send (owned, so it can be sent from another
/// thread).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The chat's system prompt.
    system: String,
    /// The chat's tools.
    specs: Vec<crate::plugins::ToolSpec>,
    /// The conversation, the instruction last.
    messages: Vec<pairing::Msg>,
    /// The summary's cap.
    max_tokens: u32,
    /// How the chat's requests are shaped.
    shape: super::RequestShape,
}

/// Plans the summary with the chat's prefix: `Err` with [`Shared::Fallback`] when it cannot be
/// asked this way (no request shape, no answer yet or none in the cache's lifetime, a request that
/// would not fit `window` with `summary_tokens` of answer), [`Shared::Failed`] when the store
/// cannot be read. `views` are the view before this pass's trims and after; `first_kept` indexes
/// the first message kept in them.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    store: &Store,
    session: &str,
    frame: &Frame,
    settings: &Settings,
    views: (&LiveView, &LiveView),
    first_kept: usize,
    summary_tokens: u64,
    window: u64,
) -> Result<Plan, Shared> {
    let Some(shape) = settings.shape.as_ref() else { return Err(Shared::Fallback("no request shape", false, None)) };
    // Where the chat's last request ended: before the view's latest answer.
    let Some(sent) = views.0.entries.iter().rposition(|e| e.role == Role::Assistant && e.origin != Origin::Summary)
    else {
        return Err(Shared::Fallback("no request was answered yet", false, None));
    };
    // A cache that has expired serves nothing: the separate request, which condenses what it
    // summarises, then costs less than the whole conversation.
    let answered_at = match views.0.entries[sent].seq.map(|seq| store.message(session, seq)).transpose() {
        Ok(m) => m.flatten().map(|m| m.created_at),
        Err(e) => return Err(Shared::Failed(e.to_string())),
    };
    if answered_at.is_none_or(|at| crate::store::now_ms().saturating_sub(at) > CACHE_FRESH_MS) {
        return Err(Shared::Fallback("no request was answered in the last five minutes", false, None));
    }
    // The kept message the request holds, named for the model to stop at.
    let named = (first_kept < sent).then(|| views.1.entries.get(first_kept)).flatten();
    let instruction = instruction(named, settings);
    let messages = match messages(store, session, views, (sent, first_kept), settings, instruction) {
        Ok(m) => m,
        Err(e) => return Err(Shared::Failed(e.to_string())),
    };
    let estimate = frame.tokens() + messages.iter().map(|m| entry_tokens(&m.parts)).sum::<u64>();
    if window > 0 && settings.real(estimate) + summary_tokens > window {
        return Err(Shared::Fallback("the conversation and the summary would not fit the window", false, None));
    }
    Ok(Plan {
        system: frame.system.clone(),
        specs: frame.specs.clone(),
        messages,
        max_tokens: u32::try_from(summary_tokens).unwrap_or(u32::MAX),
        shape: shape.clone(),
    })
}

/// Asks the session's model for the summary `plan` holds: [`Shared::Fallback`] when the client
/// cannot send it or its answer cannot be the summary (a refusal for length, an answer with no
/// text, a tool call).
pub(super) fn send(models: &dyn ModelClient, plan: &Plan, settings: &Settings) -> Shared {
    let request = SharedRequest {
        system: &plan.system,
        specs: &plan.specs,
        messages: &plan.messages,
        max_tokens: plan.max_tokens,
        shape: &plan.shape,
    };
    match models.complete_shared(&settings.model, &request) {
        None => Shared::Fallback("the model client cannot send it", false, None),
        Some(Ok(c)) if c.text.trim().is_empty() => Shared::Fallback("the answer had no text", true, c.usage),
        // A model that called a tool (the chat's tools are in the request) did not write the
        // summary, whatever text came with the call.
        Some(Ok(c)) if c.stop_reason == StopReason::ToolUse => {
            Shared::Fallback("the answer called a tool", true, c.usage)
        }
        Some(Ok(c)) => Shared::Written(c),
        // Stopped by the user: no other request.
        Some(Err(e)) if settings.cancel.is_cancelled() => Shared::Failed(format!("{}: {}", e.code, e.message)),
        // Any other failure (a refusal for its length, an option the chat sends that this request
        // cannot take): the separate request, which carries neither the tools nor the options.
        Some(Err(_)) => Shared::Fallback("the request failed", true, None),
    }
}
