//! Context-window accounting: pure arithmetic, no I/O.
//!
//! The window Seshat works with is the model's window minus a reserve for the summary
//! ([`SUMMARY_RESERVE`]). Two marks matter: the **threshold** — 85% of that window, but never
//! closer than 13,000 tokens to its end — above which auto-compaction runs before the next model
//! call; and the **target** — 50% of it — where compaction aims to land.
//!
//! For small windows "never closer than 13,000 tokens to the end" would put the threshold below
//! the target or even below zero (any window under ~34.5k). There the threshold is floored at 60%
//! of the working window: a deliberate choice that keeps compaction from running on every call.

mod calibration;
mod kinds;

pub use calibration::{Calibration, Tally};
pub use kinds::{ContentKind, characters_by_kind};
pub use seshat_protocol::turn::WindowSource;

/// Tokens kept free for the summary a compaction writes.
pub(crate) const SUMMARY_RESERVE: u64 = 2_000;
/// The threshold never comes closer than this to the end of the working window…
pub(crate) const THRESHOLD_MARGIN: u64 = 13_000;
/// …unless that would put it below this share (percent) of the working window.
pub(crate) const THRESHOLD_FLOOR_PERCENT: u64 = 60;
/// The threshold's share (percent) of the working window.
pub(crate) const THRESHOLD_PERCENT: u64 = 85;
/// The target's share (percent) of the working window.
pub(crate) const TARGET_PERCENT: u64 = 50;
/// No answer is given more room than this, whatever the model allows (the rest is for context).
pub(crate) const MAX_OUTPUT_CAP: u64 = 16_384;
/// The smallest context window Seshat works with: below it the fixed parts of a request (the
/// summary reserve, the system prompt, the answer) leave no room for a conversation.
pub(crate) const MIN_WINDOW: u64 = 4_096;
/// The window assumed for a model until its real one is known (from the table, the config, the
/// server or a refusal).
pub const ASSUMED_WINDOW: u64 = 8_192;
/// The summary's share (percent) of the target, on windows small enough that it is less than
/// the summary reserve.
pub(crate) const SUMMARY_TARGET_PERCENT: u64 = 25;

/// A window too small to work with: says how to raise it.
pub fn too_small(model: &str, window: u64, source: WindowSource) -> Option<String> {
    too_small_from(model, window, source.as_str())
}

/// As [`too_small`], naming where the window came from in words (`recorded for the session`).
pub(crate) fn too_small_from(model: &str, window: u64, from: &str) -> Option<String> {
    (window < MIN_WINDOW).then(|| {
        format!(
            "the context window of `{model}` is {window} tokens ({from}), and Seshat needs at least {MIN_WINDOW}: raise the \
             server's context (Ollama: `num_ctx` in the model's parameters or OLLAMA_CONTEXT_LENGTH; llama.cpp: \
             `llama-server -c 8192`) or give a larger window if the server runs with more"
        )
    })
}

/// The marks of one model's window, in tokens (rounded down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// The model's context window.
    pub context_window: u64,
    /// The working window: the context window less the summary reserve.
    pub usable: u64,
    /// Above this, compaction runs before the next model call.
    pub threshold: u64,
    /// Compaction aims to bring the request down to this.
    pub target: u64,
}

impl Marks {
    /// The marks of a model with `context_window` tokens.
    pub fn new(context_window: u64) -> Self {
        let usable = context_window.saturating_sub(SUMMARY_RESERVE);
        let share = |percent: u64| usable * percent / 100;
        let threshold =
            share(THRESHOLD_PERCENT).min(usable.saturating_sub(THRESHOLD_MARGIN)).max(share(THRESHOLD_FLOOR_PERCENT));
        Self { context_window, usable, threshold, target: share(TARGET_PERCENT) }
    }

    /// The largest request that can be sent with `max_output_tokens` of room for the answer.
    pub(crate) fn hard_limit(&self, max_output_tokens: u64) -> u64 {
        self.context_window.saturating_sub(max_output_tokens)
    }

    /// The most room an answer may have: what lies above the threshold (so every request under
    /// the threshold fits with its answer), at most [`MAX_OUTPUT_CAP`] and `model_limit`.
    pub fn max_output(&self, model_limit: u64) -> u64 {
        self.usable.saturating_sub(self.threshold).min(MAX_OUTPUT_CAP).min(model_limit)
    }

    /// The summary's output cap: the summary reserve, or a quarter of the target when that is
    /// smaller (small windows).
    pub fn summary_tokens(&self) -> u64 {
        SUMMARY_RESERVE.min(self.target * SUMMARY_TARGET_PERCENT / 100)
    }

    /// The most the request's fixed parts (system prompt, instructions, memory, tool schemas) may
    /// take: half the target, so compaction can always bring the conversation under it.
    pub fn frame_budget(&self) -> u64 {
        self.target / 2
    }
}

/// The most real tokens per estimated token Seshat believes of a model (a calibration, from its
/// counts or from a refusal while summarising, is capped here): well above what real tokenizers
/// count beyond the estimate's prior.
pub const MAX_CALIBRATION: f64 = 3.0;

/// The token estimate of text: four characters a token for prose, more for code, logs, JSON and
/// identifiers, by each line's kind ([`ContentKind`]; never zero for non-empty text).
pub fn estimate_text(text: &str) -> u64 {
    kinds::estimate(text)
}

/// The least any tokenizer Seshat knows counts for text: four characters a token, whatever the
/// content (compact JSON and code on OpenAI's tokenizers come closest, at 0.88–0.95× of it).
pub fn floor_text(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// [`floor_text`] of a message, with its overhead.
pub fn floor_parts(parts: &[crate::conversation::Part]) -> u64 {
    parts_with(parts, &|t: &str| Some(floor_text(t))).unwrap_or(0)
}

/// Tokens a message costs beyond its text (role, separators).
pub(crate) const MESSAGE_OVERHEAD: u64 = 4;

/// The estimated size of a message.
pub fn estimate_parts(parts: &[crate::conversation::Part]) -> u64 {
    parts_with(parts, &|t: &str| Some(estimate_text(t))).unwrap_or(0)
}

/// A message's size with its overhead, each text counted by `count`; `None` when `count` cannot
/// count one of them (a model's own tokenizer that does not run here).
pub(crate) fn parts_with(parts: &[crate::conversation::Part], count: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
    use crate::conversation::Part;
    let mut total = MESSAGE_OVERHEAD;
    for p in parts {
        total += match p {
            Part::Text { text } => count(text)?,
            Part::ToolCall { id, name, arguments } => count(id)? + count(name)? + count(arguments)?,
            Part::ToolResult { call_id, content, .. } => count(call_id)? + count(content)?,
            Part::Thinking { text, signature } => count(text)? + signature.as_deref().map_or(Some(0), count)?,
            Part::RedactedThinking { data } => count(data)?,
        };
    }
    Some(total)
}

/// How full the window is, from what the provider last reported plus estimates of what came
/// after — a check whose cost does not grow with the session's length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Use {
    /// The request size the provider last reported (normalised context tokens), if any.
    pub reported: Option<u64>,
    /// The output tokens of that call (its answer is now part of the history).
    pub reported_output: u64,
    /// Estimated tokens of everything appended since that report.
    pub since: u64,
}

impl Use {
    /// The estimated size of the next request, or `None` when nothing was reported yet (the
    /// caller then estimates the whole request).
    pub fn tokens(&self) -> Option<u64> {
        self.reported.map(|r| r + self.reported_output + self.since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_match_the_specification() {
        for (window, threshold, target) in [
            (8_192, 3_715, 3_096),
            (32_768, 18_460, 15_384),
            (128_000, 107_100, 63_000),
            (200_000, 168_300, 99_000),
            (1_000_000, 848_300, 499_000),
        ] {
            let m = Marks::new(window);
            assert_eq!((m.threshold, m.target), (threshold, target), "window {window}");
            assert_eq!(m.usable, window - 2_000);
        }
    }

    #[test]
    fn the_threshold_keeps_its_margin_on_large_windows_and_its_floor_on_small_ones() {
        // 85% would leave less than 13,000 tokens: the margin wins.
        let m = Marks::new(70_000);
        assert_eq!(m.threshold, 68_000 - 13_000);
        // Below ~34.5k the margin would fall under 60%: the floor wins.
        let m = Marks::new(20_000);
        assert_eq!(m.threshold, 18_000 * 60 / 100);
        assert!(m.threshold > m.target);
        // Tiny or zero windows do not underflow.
        assert_eq!(Marks::new(1_000), Marks { context_window: 1_000, usable: 0, threshold: 0, target: 0 });
    }

    #[test]
    fn the_output_reserve_follows_the_window() {
        // (window, reserve, hard limit, threshold, target)
        for (window, reserve, hard, threshold, target) in [
            (4_096, 839, 3_257, 1_257, 1_048),
            (8_192, 2_477, 5_715, 3_715, 3_096),
            (32_768, 12_308, 20_460, 18_460, 15_384),
            (200_000, 16_384, 183_616, 168_300, 99_000),
            (1_000_000, 16_384, 983_616, 848_300, 499_000),
        ] {
            let m = Marks::new(window);
            let r = m.max_output(u64::MAX);
            assert_eq!((r, m.hard_limit(r), m.threshold, m.target), (reserve, hard, threshold, target), "{window}");
            // Every request under the threshold fits with its answer.
            assert!(m.threshold + r <= window);
        }
        assert_eq!(Marks::new(200_000).max_output(8_192), 8_192, "the model's own limit is kept");
        assert_eq!(Marks::new(4_096).summary_tokens(), 262, "a quarter of the target on small windows");
        assert_eq!(Marks::new(200_000).summary_tokens(), SUMMARY_RESERVE);
    }

    #[test]
    fn windows_below_the_minimum_are_refused_with_the_way_to_raise_them() {
        assert_eq!(too_small("m", 4_096, WindowSource::Discovered), None);
        let e = too_small("qwen", 2_048, WindowSource::Discovered).unwrap();
        assert!(e.contains("`qwen` is 2048 tokens (discovered)"), "{e}");
        assert!(e.contains("num_ctx") && e.contains("OLLAMA_CONTEXT_LENGTH") && e.contains("-c 8192"), "{e}");
    }

    #[test]
    fn the_frame_gets_half_the_target() {
        assert_eq!(Marks::new(8_192).frame_budget(), 1_548);
        assert_eq!(Marks::new(200_000).frame_budget(), 49_500);
    }

    #[test]
    fn every_part_of_a_message_counts_with_its_overhead() {
        use crate::conversation::Part;
        let text = |t: &str| Part::Text { text: t.into() };
        assert_eq!(estimate_parts(&[]), MESSAGE_OVERHEAD);
        assert_eq!(estimate_parts(&[text("abcdefgh"), text("ijkl")]), 4 + 2 + 1);
        // id, name and arguments: 1 + 2 + 3 tokens.
        let call = Part::ToolCall { id: "ab".into(), name: "abcdefg".into(), arguments: "abcdefghij".into() };
        assert_eq!(estimate_parts(&[call]), 4 + 1 + 2 + 3);
        // call id and content: 1 + 3 tokens.
        let result = Part::ToolResult { call_id: "abc".into(), content: "abcdefghijkl".into(), is_error: false };
        assert_eq!(estimate_parts(&[result]), 4 + 1 + 3);
        // text and signature: 2 + 3 tokens; without a signature, the text alone.
        let signed = Part::Thinking { text: "abcdefgh".into(), signature: Some("abcdefghij".into()) };
        assert_eq!(estimate_parts(&[signed]), 4 + 2 + 3);
        assert_eq!(estimate_parts(&[Part::Thinking { text: "abcd".into(), signature: None }]), 4 + 1);
        assert_eq!(estimate_parts(&[Part::RedactedThinking { data: "abcdefghij".into() }]), 4 + 3);
    }

    #[test]
    fn hard_limit_leaves_room_for_the_answer() {
        assert_eq!(Marks::new(200_000).hard_limit(8_192), 191_808);
        assert_eq!(Marks::new(4_000).hard_limit(8_192), 0);
    }

    #[test]
    fn use_adds_the_last_report_its_answer_and_estimates_since() {
        assert_eq!(Use::default().tokens(), None);
        assert_eq!(Use { reported: Some(10_000), reported_output: 500, since: 120 }.tokens(), Some(10_620));
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("abcde"), 2);
        assert_eq!(estimate_text("ééééé"), 2, "characters, not bytes");
    }
}
