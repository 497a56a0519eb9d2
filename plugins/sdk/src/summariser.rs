#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "summariser",
        pub_export_macro: true,
        export_macro_name: "__export_summariser_world",
        default_bindings_module: "::seshat_plugin_sdk::summariser::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_summariser_world;

pub use bindings::exports::seshat::plugin::summarise::Guest as __Guest;
pub use bindings::exports::seshat::plugin::summarise::SummaryRequest;
pub use bindings::seshat::plugin::model::{Completion, CompletionRequest};
pub use bindings::seshat::plugin::types::{Error, Message, Part, Role, StopReason, ToolCall, ToolResult, Usage};

/// Calls the configured summary model through the host. Bounded per compaction.
pub fn complete(request: &CompletionRequest) -> Result<Completion, Error> {
    bindings::seshat::plugin::model::complete(request)
}

/// What a summary must preserve: Seshat's standard instructions to the summary model.
pub const DEFAULT_INSTRUCTIONS: &str = "You are compacting a conversation between a user and an AI agent so \
the agent can continue without the older messages. Write a concise summary in sections, each given its share of the \
space: the constraints and preferences the user stated (never, always, must, don't), verbatim; the user's active \
requests (verbatim where short); the decisions made and why (a decision replaced later, in whatever words — switched \
from, instead of, no longer, dropped, replaces — only as the newer one, naming on the same line what it replaced, \
marked replaced); the tool outcomes that still matter, from the lines that carry them (errors, failures, warnings, \
test summaries; for a run that succeeded, what it ended with: figures with their units, counts, sizes, versions, \
paths written, its last line — never its first log line; path:line locations, key: value results), quoted exactly; \
and the unresolved work and next steps, even if mentioned only in passing. Keep names, paths, numbers and identifiers \
exactly. State each thing once. Do not invent anything. If a previous summary is given, fold it in: the result \
replaces both.";

/// Bytes of one tool result a transcript keeps whole; a longer one is cut to its outcome.
pub const RESULT_BYTES: u64 = 2_000;

/// The dropped messages as a plain transcript, after the previous summary, for a model to read.
/// A tool result longer than [`RESULT_BYTES`] keeps its head, its tail and the lines that
/// carry its outcome (errors, failures, test summaries, `path:line`, …) by
/// [`crate::outcomes::shorten`], with a note where lines were left out — so the summary
/// model sees what each tool call came to, not a wall of log.
pub fn render_transcript(request: &SummaryRequest) -> String {
    use core::fmt::Write as _;
    let mut out = String::new();
    if let Some(previous) = &request.previous_summary {
        let _ = write!(out, "Previous summary:\n{previous}\n\nConversation since:\n");
    }
    for m in &request.messages {
        for p in &m.parts {
            let _ = match p {
                Part::Text(t) => writeln!(out, "[{}] {t}", m.role),
                Part::ToolCall(c) => writeln!(out, "[{} calls {}] {}", m.role, c.name, c.arguments),
                Part::ToolResult(r) => {
                    let kind = if r.is_error { "error" } else { "result" };
                    writeln!(out, "[{kind} of {}] {}", r.call_id, tool_outcome(&r.content, RESULT_BYTES).trim_end())
                }
                Part::Thinking(_) | Part::RedactedThinking(_) => Ok(()),
            };
        }
    }
    // A choice replaced later in the transcript says so on its own line, whatever the wording.
    crate::decisions::mark_replaced(&out)
}

/// `content` cut to about `budget` bytes keeping its outcome lines (see
/// [`render_transcript`]); as it is when it fits.
pub fn tool_outcome(content: &str, budget: u64) -> alloc::borrow::Cow<'_, str> {
    match crate::outcomes::shorten(content, budget) {
        None => alloc::borrow::Cow::Borrowed(content),
        Some(crate::outcomes::Shorten::Lines(ranges)) => {
            alloc::borrow::Cow::Owned(crate::outcomes::stitch(content, &ranges, |n| {
                Some(alloc::format!("[… {n} lines left out …]"))
            }))
        }
        Some(crate::outcomes::Shorten::HeadTail { head, tail }) => {
            let (h, t) = crate::outcomes::head_tail_cut(content, head, tail);
            alloc::borrow::Cow::Owned(alloc::format!(
                "{}[… {} bytes left out …]{}",
                &content[..h],
                t - h,
                &content[t..]
            ))
        }
    }
}

/// The system prompt for a summary: the user's prompt (`[compaction] prompt_file`) when the
/// request carries one, else `own`; then the user's instructions for this compaction, if any.
pub fn system_prompt(request: &SummaryRequest, own: String) -> String {
    let mut prompt = request.prompt.clone().unwrap_or(own);
    if let Some(instructions) = request.instructions.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        prompt.push_str("\n\nThe user's instructions for this summary (follow them): ");
        prompt.push_str(instructions);
    }
    prompt
}

/// The words of the user's instructions that say what to keep, lower-cased: those of three
/// letters or more but the common words of such a sentence (`keep`, `the`, `about`, …), and
/// every word with a digit (`3`, `TF123`). Words are split as [`words_of`] splits text.
pub fn instruction_words(request: &SummaryRequest) -> Vec<String> {
    const COMMON: &[&str] = &[
        "about", "all", "and", "any", "are", "but", "details", "don", "every", "for", "from", "have", "into", "keep",
        "make", "mention", "not", "only", "preserve", "please", "remember", "sure", "that", "the", "their", "them",
        "then", "this", "those", "what", "when", "with", "you", "your",
    ];
    let Some(text) = &request.instructions else { return Vec::new() };
    let mut words: Vec<String> = words_of(text)
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()) || (w.chars().count() >= 3 && !COMMON.contains(&w.as_str())))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The words of a text, lower-cased: runs of letters, digits, `_` and `-`.
pub fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-').filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// A summariser policy. Both methods have defaults: override `instructions` to change what the
/// summary model is told, or `summarise` to write the summary some other way (even without a
/// model).
pub trait Summariser {
    /// The instructions given to the summary model.
    fn instructions() -> String {
        DEFAULT_INSTRUCTIONS.into()
    }

    /// Writes the summary that replaces `request.messages`. The default sends the transcript
    /// to the summary model with [`system_prompt`]: the user's prompt or
    /// [`Summariser::instructions`], and what the user asked this compaction to keep.
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        let transcript = render_transcript(&request);
        let ask = Message { id: 0, role: Role::User, parts: alloc::vec![Part::Text(transcript)] };
        let answer = complete(&CompletionRequest {
            system: Some(system_prompt(&request, Self::instructions())),
            messages: alloc::vec![ask],
            max_tokens: request.max_tokens,
            extra: "{}".into(),
        })?;
        Ok(answer.text)
    }
}

kind_helpers!("[plugins.options.summariser]");
stop_reason_display!();

impl<T: Summariser> __Guest for T {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        __install_panic_hook();
        <T as Summariser>::summarise(request)
    }
}

/// Exports a [`Summariser`] implementation as the plugin's summariser.
#[macro_export]
macro_rules! export_summariser {
    ($t:ident) => {
        $crate::summariser::__export_summariser_world!($t with_types_in $crate::summariser::__bindings);
        $crate::__version_section!();
    };
}
