//! The compaction fidelity benchmark's fixed-seed run (the full run is `benches/fidelity.rs`): a
//! held-out seed's transcript compacted once at each window, with the targets the benchmark
//! reports — every category of live facts at least 95% retained by the extractive summariser and
//! the default trimmer (and reaching the model summariser's requests), no replaced decision left
//! looking current, and 95% of all facts found by `history_search` in its top 5.

#[path = "../fidelity/mod.rs"]
mod harness;

use harness::generate::{Category, transcript};
use harness::score::{Plugins, Summariser, percent, run};

use crate::support::shared_cache;

/// A held-out seed (never looked at by the tuning) of a transcript long enough to be compacted
/// at every window.
const SEED: u64 = 108;

#[test]
fn a_compaction_keeps_the_planted_facts_at_every_window() {
    let t = transcript(SEED);
    assert!((20_000..=250_000).contains(&t.tokens), "the transcript is {} tokens", t.tokens);
    assert_eq!(t.facts.iter().filter(|f| f.replaced_by.is_none()).count(), 24, "24 live facts are planted");
    let dir = tempfile::tempdir().unwrap();
    let mut store = seshat::store::Store::open(&dir.path().join("fidelity.db")).unwrap();
    let mut plugins = Plugins::load(&shared_cache());
    for summariser in [Summariser::Extractive, Summariser::ModelEcho] {
        for &window in harness::WINDOWS {
            let s = run(&mut store, &mut plugins, &t, window, summariser);
            let what = format!("{summariser:?} at {window}: lost {:?}", s.lost);
            if window == 32_000 {
                assert!(s.compacted, "a {}-token session is compacted at a 32k window", t.tokens);
            }
            for c in Category::ALL {
                let kept = s.retained.get(&c).copied().unwrap_or((0, 0));
                assert!(kept.1 > 0, "{}: facts of every category are planted", c.name());
                assert!(percent(kept) >= 95.0, "{}: {}/{} kept; {what}", c.name(), kept.0, kept.1);
            }
            assert!(s.superseded_as_current.is_empty(), "{what}; shown as current: {:?}", s.superseded_as_current);
            assert!(percent(s.recall) >= 95.0, "recall@5 {}/{}", s.recall.0, s.recall.1);
        }
    }
}
