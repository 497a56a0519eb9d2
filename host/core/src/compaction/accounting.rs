//! Token accounting: what a request is made of beside the conversation ([`Frame`]) and how full
//! the window is, estimated or in the model's real tokens.

use crate::conversation::Part;
use crate::store::LiveView;
use crate::window;

/// The parts of a request that are not the conversation (all counted in the window).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// The system prompt (Seshat's, the project's instructions, the memory context).
    pub system: String,
    /// The tool schemas as text, each tool's name, description and compact schema on lines of
    /// their own (what the estimate weighs).
    pub tools: String,
    /// The tools themselves, as the request offers them (what a server's counter is given).
    pub specs: Vec<crate::plugins::ToolSpec>,
}

impl Frame {
    /// Estimated tokens.
    pub fn tokens(&self) -> u64 {
        window::estimate_text(&self.system) + window::estimate_text(&self.tools)
    }
}

/// Estimated tokens of one view entry.
pub(super) fn entry_tokens(parts: &[Part]) -> u64 {
    window::estimate_parts(parts)
}

/// Estimated tokens of the whole request: frame plus view.
pub fn estimate_request(frame: &Frame, view: &LiveView) -> u64 {
    frame.tokens() + view.entries.iter().map(|e| entry_tokens(&e.parts)).sum::<u64>()
}

/// How full the window is: the context tokens the provider last reported, plus that call's output,
/// plus estimates of the messages appended since; with no report yet, or none since the last
/// compaction, the estimate of the whole request.
pub fn current_use(frame: &Frame, view: &LiveView) -> u64 {
    current_use_calibrated(frame, view, 1.0)
}

/// An estimate in real tokens: scaled by `calibration` when the model counts more than estimated.
pub(super) fn calibrated(estimate: u64, calibration: f64) -> u64 {
    if calibration > 1.0 { (estimate as f64 * calibration).ceil() as u64 } else { estimate }
}

/// A real token count in estimate units: [`calibrated`]'s inverse.
pub(super) fn uncalibrated(real: u64, calibration: f64) -> u64 {
    if calibration > 1.0 { (real as f64 / calibration) as u64 } else { real }
}

/// [`current_use`] in the model's real tokens: estimates scaled by `calibration` (when above 1).
pub fn current_use_calibrated(frame: &Frame, view: &LiveView, calibration: f64) -> u64 {
    let real = |estimate: u64| calibrated(estimate, calibration);
    let compacted_through = view.compaction.as_ref().map_or(0, |c| c.through_seq);
    // What another agent reported of its own requests (an imported Claude Code or Codex session:
    // its system prompt, its tools) says nothing of Seshat's.
    let foreign_through =
        view.session.metadata.get(crate::store::FOREIGN_THROUGH).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let trusted_after = compacted_through.max(foreign_through);
    let report = view.entries.iter().enumerate().rev().find_map(|(i, e)| {
        let usage = e.usage?;
        let context = usage.context_tokens?;
        (e.seq? > trusted_after).then_some((i, context, usage.output_tokens))
    });
    match report {
        Some((i, context, output)) => {
            let since: u64 = view.entries[i + 1..].iter().map(|e| entry_tokens(&e.parts)).sum();
            window::Use { reported: Some(context), reported_output: output, since: real(since) }.tokens().unwrap_or(0)
        }
        None => real(estimate_request(frame, view)),
    }
}

pub(super) fn content_len(p: &Part) -> u64 {
    match p {
        Part::ToolResult { content, .. } => content.len() as u64,
        other => other.byte_size() as u64,
    }
}

/// A request's size — its fixed `texts` (a system prompt, tool schemas) and its messages, each
/// with its overhead — every text counted by `count` (a model's own tokenizer, or the floor);
/// `None` when `count` cannot count one of them.
pub(super) fn request_size<'a>(
    texts: &[&str],
    messages: impl IntoIterator<Item = &'a [Part]>,
    count: &dyn Fn(&str) -> Option<u64>,
) -> Option<u64> {
    let mut total = 0;
    for t in texts {
        total += count(t)?;
    }
    for parts in messages {
        total += window::parts_with(parts, count)?;
    }
    Some(total)
}
