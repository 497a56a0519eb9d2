//! Shaping a summary request: the dropped messages as the summariser gets them (long tool outputs
//! cut to a head, a tail and their outcome lines), cut into chunks that fit, and the summary capped.

use crate::conversation::Part;
use crate::outcomes;
use crate::plugins::PluginMessage;
use crate::window;

/// Tool outputs longer than this many characters are cut (head, tail and outcome lines) in
/// summary requests.
pub const SUMMARY_TOOL_OUTPUT_CHARS: usize = 2_000;

/// Tokens kept in a summary request for the summariser's own instructions and the transcript's
/// framing, beside the messages and the previous summary.
pub const SUMMARY_PROMPT_TOKENS: u64 = 400;

/// `text` cut to `max_chars` characters: three quarters from its start, a quarter from its end,
/// and a line saying how much went.
fn head_and_tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let head: String = text.chars().take(max_chars * 3 / 4).collect();
    let tail: String = text.chars().skip(count - max_chars / 4).collect();
    format!("{head}\n[… {} characters cut …]\n{tail}", count - max_chars)
}

/// A long tool output as a summary request carries it: its head, its tail and the lines that
/// carry its outcome ([`outcomes::keep`]) within `max_chars`, or a head and a tail when it has
/// too few lines for that.
fn outcome_cut(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let Some(ranges) = outcomes::keep(text, max_chars) else { return head_and_tail(text, max_chars) };
    let mut out = outcomes::stitch(text, &ranges, |n| Some(format!("[… {n} lines cut …]")));
    out.truncate(out.trim_end().len());
    out
}

/// A dropped message as the summariser gets it: long tool outputs cut to a head, a tail and their
/// outcome lines, and any text beyond `max_chars` in all (a message larger than a summary request
/// can hold) to a head and a tail.
pub(super) fn summary_message(e: &crate::store::ViewEntry, max_chars: usize) -> PluginMessage {
    let texts = e.parts.iter().filter(|p| matches!(p, Part::Text { .. })).count().max(1);
    let parts = e
        .parts
        .iter()
        .map(|p| match p {
            Part::ToolResult { call_id, content, is_error } => Part::ToolResult {
                call_id: call_id.clone(),
                content: outcome_cut(content, SUMMARY_TOOL_OUTPUT_CHARS.min(max_chars)),
                is_error: *is_error,
            },
            Part::Text { text } => Part::Text { text: head_and_tail(text, max_chars / texts) },
            other => other.clone(),
        })
        .collect();
    PluginMessage { id: e.seq.unwrap_or(0), role: e.role, parts }
}

/// The longest run of messages from the start of `messages` within `room` estimated tokens (at
/// least one: a single larger message is its own chunk, its tool outputs already cut).
pub(super) fn first_chunk(messages: &[PluginMessage], room: u64) -> &[PluginMessage] {
    let mut used = 0;
    for (i, m) in messages.iter().enumerate() {
        used += window::estimate_parts(&m.parts);
        if i > 0 && used > room {
            return &messages[..i];
        }
    }
    messages
}

/// A summary longer than its cap (in tokens) is cut to it.
pub(super) fn cap_summary(s: &str, max_tokens: u64) -> String {
    let max_chars = (max_tokens * 4) as usize;
    if s.chars().count() <= max_chars {
        s.trim().to_string()
    } else {
        let cut: String = s.chars().take(max_chars.saturating_sub(48)).collect();
        format!("{}\n[summary cut to its {max_tokens}-token cap]", cut.trim_end())
    }
}
