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

/// Tokens kept free for the summary a compaction writes.
pub const SUMMARY_RESERVE: u64 = 2_000;
/// The threshold never comes closer than this to the end of the working window…
pub const THRESHOLD_MARGIN: u64 = 13_000;
/// …unless that would put it below this share (percent) of the working window.
pub const THRESHOLD_FLOOR_PERCENT: u64 = 60;
/// The threshold's share (percent) of the working window.
pub const THRESHOLD_PERCENT: u64 = 85;
/// The target's share (percent) of the working window.
pub const TARGET_PERCENT: u64 = 50;

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
    pub fn hard_limit(&self, max_output_tokens: u64) -> u64 {
        self.context_window.saturating_sub(max_output_tokens)
    }
}

/// A rough token estimate of text: about four characters a token (never zero for non-empty text).
pub fn estimate_text(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Tokens a message costs beyond its text (role, separators).
pub const MESSAGE_OVERHEAD: u64 = 4;

/// The estimated size of a message.
pub fn estimate_parts(parts: &[crate::store::Part]) -> u64 {
    use crate::store::Part;
    MESSAGE_OVERHEAD
        + parts
            .iter()
            .map(|p| match p {
                Part::Text { text } => estimate_text(text),
                Part::ToolCall { id, name, arguments } => {
                    estimate_text(id) + estimate_text(name) + estimate_text(arguments)
                }
                Part::ToolResult { call_id, content, .. } => estimate_text(call_id) + estimate_text(content),
                Part::Thinking { text, signature } => {
                    estimate_text(text) + signature.as_deref().map_or(0, estimate_text)
                }
                Part::RedactedThinking { data } => estimate_text(data),
            })
            .sum::<u64>()
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
