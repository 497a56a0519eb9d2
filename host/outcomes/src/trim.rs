//! The default trimmer's decision, free of bindings: the trimmer plugin makes it, and the host's
//! tests and benchmark compile the very same logic natively.
//!
//! Rules: only tool results; never protected messages (the host protects the latest two user
//! turns); the oldest results first, large ones before small ones; keep a head and a tail; and do
//! nothing unless the saving matters.

use alloc::vec;
use alloc::vec::Vec;

/// A tool result that could be trimmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The message's seq.
    pub message: u64,
    /// The part's index.
    pub part: u32,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its estimated tokens.
    pub tokens: u64,
}

/// A decision: keep `head` and `tail` bytes of one tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The message's seq.
    pub message: u64,
    /// The part's index.
    pub part: u32,
    /// Bytes kept from the start.
    pub head: u64,
    /// Bytes kept from the end.
    pub tail: u64,
}

/// Bytes kept at the start of a trimmed result.
pub const HEAD_BYTES: u64 = 1_200;
/// Bytes kept at the end of a trimmed result.
pub const TAIL_BYTES: u64 = 600;
/// Results smaller than this many tokens are never worth trimming.
pub const MIN_TOKENS: u64 = 400;
/// Results at least this large are trimmed in the first pass.
pub const LARGE_TOKENS: u64 = 2_000;
/// A set of cuts saving less than this share of the window (in thousandths) is not worth making.
pub const MIN_SAVING_PER_MILLE: u64 = 10;

/// Chooses cuts to bring `current` down to `target` tokens. `candidates` are in history order
/// (oldest first).
pub fn decide(candidates: &[Candidate], current: u64, target: u64, window: u64) -> Vec<Cut> {
    let need = current.saturating_sub(target);
    if need == 0 {
        return Vec::new();
    }
    let mut cuts = Vec::new();
    let mut taken = vec![false; candidates.len()];
    let mut freed = 0u64;
    // First the large results, oldest first; then the remaining ones above the minimum.
    for floor in [LARGE_TOKENS, MIN_TOKENS] {
        for (i, c) in candidates.iter().enumerate() {
            if freed >= need {
                break;
            }
            // Keeping head and tail of a result not much larger than them saves too little.
            if taken[i] || c.tokens < floor || c.bytes <= 2 * (HEAD_BYTES + TAIL_BYTES) {
                continue;
            }
            taken[i] = true;
            let kept = HEAD_BYTES + TAIL_BYTES;
            let saved = c.tokens - c.tokens * kept / c.bytes.max(1);
            freed += saved;
            cuts.push(Cut { message: c.message, part: c.part, head: HEAD_BYTES, tail: TAIL_BYTES });
        }
    }
    if freed * 1_000 < window * MIN_SAVING_PER_MILLE {
        return Vec::new();
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(message: u64, tokens: u64) -> Candidate {
        Candidate { message, part: 0, bytes: tokens * 4, tokens }
    }

    #[test]
    fn under_target_does_nothing() {
        assert!(decide(&[c(1, 50_000)], 10_000, 20_000, 100_000).is_empty());
    }

    #[test]
    fn large_oldest_first_and_stops_when_enough() {
        let cands = [c(1, 500), c(2, 30_000), c(3, 30_000), c(4, 30_000)];
        let cuts = decide(&cands, 100_000, 60_000, 200_000);
        let ids: Vec<u64> = cuts.iter().map(|k| k.message).collect();
        assert_eq!(ids, vec![2, 3], "large results oldest first, stopping once 40k are freed");
    }

    #[test]
    fn small_savings_are_not_worth_it() {
        assert!(decide(&[c(1, 600)], 100_000, 60_000, 200_000).is_empty());
    }
}
