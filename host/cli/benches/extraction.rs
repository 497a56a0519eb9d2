//! The memory extraction benchmark: labelled coding sessions from two generators written apart
//! (`tests/extraction/`), stored turn by turn with an extractor run after each turn, scored for
//! precision (what it wrote records a labelled fact), recall (labelled facts it wrote) and
//! replaced facts still shown as current.
//!
//! Run: `cargo bench -p seshat-cli --bench extraction` (the tuning seeds) or
//! `cargo bench -p seshat-cli --bench extraction -- --held-out` (the held-out seeds: run once, at
//! the end, and reported). Targets on held-out: precision ≥ 95%, recall ≥ 80%, replaced shown
//! as current 0.

#[path = "../tests/extraction/mod.rs"]
mod extraction;

use extraction::labels::Transcript;
use extraction::score::{self, Score};

fn main() {
    if let Some(pos) = std::env::args().position(|a| a == "--show") {
        // A tuning transcript's user messages (`--show b 67`): never a held-out one.
        let args: Vec<String> = std::env::args().collect();
        let seed: u64 = args[pos + 2].parse().unwrap();
        let (t, seeds) = if args[pos + 1] == "b" {
            (extraction::generate_b::transcript(seed), extraction::TUNING_SEEDS_B)
        } else {
            (extraction::generate::transcript(seed), extraction::TUNING_SEEDS)
        };
        assert!(seeds.contains(&seed), "only tuning seeds are shown");
        for (i, m) in t.messages.iter().enumerate() {
            if m.role == seshat::conversation::Role::User {
                println!("[{}] {:?}", i + 1, m.parts);
            }
        }
        println!("{:?}", t.facts);
        return;
    }
    let held_out = std::env::args().any(|a| a == "--held-out");
    let verbose = std::env::args().any(|a| a == "--verbose");
    let cache = tempfile::tempdir().unwrap();
    type Generator = fn(u64) -> Transcript;
    let sets: [(&str, Generator, &[u64]); 2] = if held_out {
        [
            ("A (held-out)", extraction::generate::transcript, extraction::HELD_OUT_SEEDS),
            ("B (held-out)", extraction::generate_b::transcript, extraction::HELD_OUT_SEEDS_B),
        ]
    } else {
        [
            ("A (tuning)", extraction::generate::transcript, extraction::TUNING_SEEDS),
            ("B (tuning)", extraction::generate_b::transcript, extraction::TUNING_SEEDS_B),
        ]
    };
    println!(
        "| generator | transcripts | facts | written | precision | recall | replaced shown as current | wrongly replaced |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut all = Score::default();
    for (name, generate, seeds) in sets {
        let mut total = Score::default();
        for &seed in seeds {
            let t = generate(seed);
            let dir = tempfile::tempdir().unwrap();
            let written = score::run(&t, score::extractor("extractor", cache.path()), dir.path());
            let s = score::score(&t, &written);
            if verbose {
                explain(seed, &t, &written);
            }
            total.add(s);
        }
        println!(
            "| {name} | {} | {} | {} | {:.1}% | {:.1}% | {} of {} | {} |",
            seeds.len(),
            total.facts,
            total.written,
            total.precision(),
            total.recall(),
            total.replaced_current,
            total.replaced_written,
            total.wrongly_replaced
        );
        all.add(total);
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!();
    println!("precision ≥ 95%: {:.1}% — {}", all.precision(), verdict(all.precision() >= 95.0));
    println!("recall ≥ 80%: {:.1}% — {}", all.recall(), verdict(all.recall() >= 80.0));
    println!("replaced shown as current = 0: {} — {}", all.replaced_current, verdict(all.replaced_current == 0));
}

/// What was written that records no fact, and the facts nothing records (`--verbose`).
fn explain(seed: u64, t: &Transcript, written: &[score::Written]) {
    let text = |seq: u64| {
        t.messages[seq as usize - 1]
            .parts
            .iter()
            .filter_map(|p| match p {
                seshat::conversation::Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for w in written.iter().filter(|w| !w.current) {
        let replaced = t.facts.iter().enumerate().any(|(i, f)| {
            w.seq == f.seq
                && f.keys.iter().all(|k| w.text.to_lowercase().contains(&k.to_lowercase()))
                && t.facts.iter().any(|g| g.replaces == Some(i))
        });
        if !replaced {
            println!("seed {seed} NOT CURRENT [{}] {:?}", w.seq, w.text);
        }
    }
    for w in written {
        let ok = t
            .facts
            .iter()
            .any(|f| w.seq == f.seq && f.keys.iter().all(|k| w.text.to_lowercase().contains(&k.to_lowercase())));
        if !ok {
            println!("seed {seed} WRONG [{}] {:?} ← {:?}", w.seq, w.text, text(w.seq));
        }
    }
    for (i, f) in t.facts.iter().enumerate() {
        let found = written
            .iter()
            .any(|w| w.seq == f.seq && f.keys.iter().all(|k| w.text.to_lowercase().contains(&k.to_lowercase())));
        if !found {
            println!("seed {seed} MISSED #{i} [{}] keys {:?} ← {:?}", f.seq, f.keys, text(f.seq));
        }
        if let Some(old) = f.replaces {
            let o = &t.facts[old];
            let current = written.iter().any(|w| {
                w.current && w.seq == o.seq && o.keys.iter().all(|k| w.text.to_lowercase().contains(&k.to_lowercase()))
            });
            if current {
                println!(
                    "seed {seed} STILL CURRENT #{old} {:?} ← {:?} (replaced by #{i} ← {:?})",
                    o.keys,
                    text(o.seq),
                    text(f.seq)
                );
            }
        }
    }
}
