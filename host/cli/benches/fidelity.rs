//! The compaction fidelity benchmark: generated coding sessions with planted facts, compacted
//! once at each window, scored by category (see `tests/fidelity/`).
//!
//! Run: `cargo bench -p seshat-cli --bench fidelity` (the three generators' held-out seeds) or
//! `… -- --tuning` (the seeds tuning may look at, with the codes each run lost); `… -- --only N` runs one generator. `… -- --provider NAME --model MODEL` adds
//! the model summariser through that real model (the provider as configured in the user's
//! Seshat config and environment; it makes one summary call per compaction, or more in chunks).

#[path = "../tests/fidelity/mod.rs"]
mod fidelity;

use fidelity::generate::{Category, Transcript};
use fidelity::score::{Plugins, Score, Summariser, percent, run, total};

fn main() {
    let tuning = std::env::args().any(|a| a == "--tuning");
    let seeds = if tuning { fidelity::TUNING_SEEDS } else { fidelity::HELD_OUT_SEEDS };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut plugins = Plugins::load(&dir.path().join("cache"));
    let arg = |name: &str| {
        let args: Vec<String> = std::env::args().collect();
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
    };
    let real = match (arg("--provider"), arg("--model")) {
        (Some(provider), Some(model)) => {
            let config = seshat::ClientOptions {
                store: Some(seshat::store::Location::File(dir.path().join("client.db"))),
                ..seshat::ClientOptions::default()
            };
            let mut client = seshat::Client::new(config, std::sync::Arc::new(seshat::compaction::NoModels))
                .expect("a client over the user's config");
            let provider = client.load_provider(Some(&provider)).expect("the provider, as configured");
            plugins = plugins.with_model(std::sync::Arc::new(seshat::providers::SharedProvider::new(provider)), model);
            true
        }
        (None, None) => false,
        _ => panic!("--provider and --model go together"),
    };
    let mut store = seshat::store::Store::open(&dir.path().join("fidelity.db")).expect("store");
    let kinds: &[Summariser] = if real {
        &[Summariser::Extractive, Summariser::ModelEcho, Summariser::Model]
    } else {
        &[Summariser::Extractive, Summariser::ModelEcho]
    };
    let seeds_b = if tuning { fidelity::TUNING_SEEDS_B } else { fidelity::HELD_OUT_SEEDS_B };
    let seeds_c = if tuning { fidelity::TUNING_SEEDS_C } else { fidelity::HELD_OUT_SEEDS_C };
    let runs: [Generator<'_>; 3] = [
        ("first generator (generate.rs)", seeds, fidelity::generate::transcript),
        ("second generator (generate_b.rs)", seeds_b, fidelity::generate_b::transcript),
        ("third generator (generate_c.rs)", seeds_c, fidelity::generate_c::transcript),
    ];
    // `--only N`: one generator's table (1, 2 or 3).
    let only = arg("--only").map(|n| n.parse::<usize>().expect("--only takes 1, 2 or 3"));
    for (i, (label, seeds, make)) in runs.into_iter().enumerate() {
        if only.is_some_and(|n| n != i + 1) {
            continue;
        }
        let transcripts: Vec<Transcript> = seeds.iter().map(|&s| make(s)).collect();
        table(label, seeds, &transcripts, tuning, kinds, &mut store, &mut plugins);
    }
}

/// A generator: its name, its seeds and how it makes a transcript.
type Generator<'a> = (&'a str, &'a [u64], fn(u64) -> Transcript);

/// One generator's table: each summariser at each window, retention by category.
fn table(
    label: &str,
    seeds: &[u64],
    transcripts: &[Transcript],
    tuning: bool,
    kinds: &[Summariser],
    store: &mut seshat::store::Store,
    plugins: &mut Plugins,
) {
    let sizes: Vec<u64> = transcripts.iter().map(|t| t.tokens / 1000).collect();
    println!(
        "{label}: seeds {seeds:?} ({}), transcript sizes (k tokens) {sizes:?}",
        if tuning { "tuning" } else { "held out" }
    );
    println!();
    print!("| summariser | window | compacted |");
    for c in Category::ALL {
        print!(" {} |", c.name());
    }
    println!(" superseded shown as current | recall@5 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &summariser in kinds {
        for &window in fidelity::WINDOWS {
            let scores: Vec<Score> = transcripts.iter().map(|t| run(store, plugins, t, window, summariser)).collect();
            let name = match summariser {
                Summariser::Extractive => "extractive",
                Summariser::ModelEcho => "model (echo: reaches the model)",
                Summariser::Model => "model (the configured model)",
            };
            let compacted = scores.iter().filter(|s| s.compacted).count();
            print!("| {name} | {}k | {compacted}/{} |", window / 1000, scores.len());
            let sum = total(&scores);
            for c in Category::ALL {
                let t = sum.get(&c).copied().unwrap_or((0, 0));
                print!(" {:.1}% ({}/{}) |", percent(t), t.0, t.1);
            }
            let superseded: usize = scores.iter().map(|s| s.superseded_as_current.len()).sum();
            let recall = scores.iter().fold((0, 0), |a, s| (a.0 + s.recall.0, a.1 + s.recall.1));
            println!(" {superseded} | {:.1}% ({}/{}) |", percent(recall), recall.0, recall.1);
            for s in scores.iter().filter(|_| tuning || std::env::var_os("FIDELITY_VERBOSE").is_some()) {
                if !s.lost.is_empty() || !s.superseded_as_current.is_empty() {
                    eprintln!(
                        "  seed {} ({}k tokens) lost {:?}; superseded shown {:?}",
                        s.seed,
                        s.tokens / 1000,
                        s.lost,
                        s.superseded_as_current
                    );
                }
            }
        }
    }
    println!();
}
