//! What keeping memory's history costs its reads: the memory context and search over N entities
//! (3 current observations each) whose every entity went through 10 versions — a status replaced
//! nine times, each replaced observation kept as history — beside a store holding the same current
//! observations written once (no history), in the same run. Target: within 1.2× (#56).
//!
//! Each read checks its result (the context's size, what a search finds) so that a store that
//! returns nothing cannot look fast; the two stores must give the same context text.
//!
//! Run: `cargo bench -p seshat-cli --bench memory_history` (`-- --quick`: 10k entities instead of
//! 100k).

mod common;
use common::*;

use std::path::Path;
use std::time::{Duration, Instant};

use seshat::memory::{NewEntity, ObservationsToAdd};
use seshat::store::Store;

/// Versions each entity of the history store goes through (its creation and nine replacements).
const VERSIONS: usize = 10;
/// Entities per write call.
const BATCH: usize = 100;
/// Ranked queries: each finds something at every size.
const QUERIES: &[&str] = &["tokio", "module 7 service", "status r9", "entity 424"];

fn status(round: usize) -> String {
    format!("status r{round}")
}

fn entity(i: usize, round: usize) -> NewEntity {
    let libs = ["tokio", "serde", "rusqlite", "clap", "wasmtime", "reqwest"];
    NewEntity {
        name: format!("Entity {i}"),
        entity_type: format!("kind{}", i % 10),
        observations: vec![
            format!("works with {} and {}", libs[i % 6], libs[(i / 6) % 6]),
            format!("service component in module {}", i % 50),
            status(round),
        ],
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 10_000 } else { 100_000 };
    let dir = tempfile::tempdir().unwrap();
    let (plain, plain_build) = build(&dir.path().join("plain.db"), n, false);
    let (history, history_build) = build(&dir.path().join("history.db"), n, true);
    println!(
        "Stores of {n} entities: without history built in {}, with {VERSIONS} versions each in {}.",
        fmt(plain_build),
        fmt(history_build)
    );
    // The same edits with their history then dropped: what the indexes cost after the churn of
    // nine rewrites of every entity, apart from the history kept.
    let (churned, _) = build(&dir.path().join("churned.db"), n, true);
    let conn = rusqlite::Connection::open(&churned).unwrap();
    conn.execute_batch("DELETE FROM memory_versions; DELETE FROM memory_observations WHERE valid_until IS NOT NULL;")
        .unwrap();
    drop(conn);
    println!();
    println!("| entities | read | with history p50 | without p50 | ratio | target |");
    println!("|---|---|---|---|---|---|");
    let (mut a, mut b) = (Store::open(&history).unwrap(), Store::open(&plain).unwrap());
    let context_a = a.memory(Some("/bench")).context(2_000).unwrap();
    let context_b = b.memory(Some("/bench")).context(2_000).unwrap();
    assert_eq!(context_a.text, context_b.text, "the same current memory, the same context");
    assert!(context_a.tokens > 1_000, "a full context: {}", context_a.tokens);
    let ctx = |s: &mut Store| {
        let c = s.memory(Some("/bench")).context(2_000).unwrap();
        assert!(c.tokens > 1_000);
    };
    let (ours, base) = alternate(&mut a, &mut b, 30, ctx);
    row(n, "memory context (2,000 tokens)", &ours, &base);
    for q in QUERIES {
        let search = |s: &mut Store| {
            let (found, _) = s.memory(Some("/bench")).search(q, None, 20).unwrap();
            assert!(!found.entities.is_empty(), "{q} finds something");
        };
        let (ours, base) = alternate(&mut a, &mut b, 60, search);
        row(n, &format!("search `{q}`"), &ours, &base);
    }
    let mut c = Store::open(&churned).unwrap();
    println!();
    println!("The same reads, with history beside the same edits with their history dropped:");
    println!();
    println!("| entities | read | with history p50 | edited, no history p50 | ratio | target |");
    println!("|---|---|---|---|---|---|");
    let (ours, base) = alternate(&mut a, &mut c, 30, ctx);
    row(n, "memory context (2,000 tokens)", &ours, &base);
    for q in QUERIES {
        let search = |s: &mut Store| {
            let (found, _) = s.memory(Some("/bench")).search(q, None, 20).unwrap();
            assert!(!found.entities.is_empty(), "{q} finds something");
        };
        let (ours, base) = alternate(&mut a, &mut c, 60, search);
        row(n, &format!("search `{q}`"), &ours, &base);
    }
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!();
    println!(
        "Context size: {} tokens with history, {} without. Store files: {:.1} MB with history, {:.1} MB without.",
        context_a.tokens,
        context_b.tokens,
        size(&history) as f64 / 1e6,
        size(&plain) as f64 / 1e6
    );
}

/// A store of `n` entities in the project `/bench`: with `history`, each created with status r0
/// and then given r1…r9, each replacing the one before; without, created once with r9.
fn build(path: &Path, n: usize, history: bool) -> (std::path::PathBuf, Duration) {
    let started = Instant::now();
    let mut store = Store::open(path).unwrap();
    let last = VERSIONS - 1;
    for start in (0..n).step_by(BATCH) {
        let ids = start..(start + BATCH).min(n);
        let first = if history { 0 } else { last };
        let batch: Vec<NewEntity> = ids.clone().map(|i| entity(i, first)).collect();
        store.memory(Some("/bench")).create_entities(&batch, None).unwrap();
    }
    if history {
        for round in 1..VERSIONS {
            for start in (0..n).step_by(BATCH) {
                let adds: Vec<ObservationsToAdd> = (start..(start + BATCH).min(n))
                    .map(|i| ObservationsToAdd {
                        entity_name: format!("Entity {i}"),
                        contents: vec![status(round)],
                        replaces: vec![status(round - 1)],
                    })
                    .collect();
                store.memory(Some("/bench")).add_observations_replacing(&adds, None).unwrap();
            }
        }
        let (_, _, versions) = store.memory(Some("/bench")).history("Entity 7", None).unwrap();
        assert_eq!(versions.len(), VERSIONS, "every entity went through {VERSIONS} versions");
    }
    (path.to_path_buf(), started.elapsed())
}

/// `rounds` timings of `f` on each store, alternating between them (so that neither has the
/// machine's quieter moments to itself).
fn alternate(
    a: &mut Store,
    b: &mut Store,
    rounds: usize,
    mut f: impl FnMut(&mut Store),
) -> (Vec<Duration>, Vec<Duration>) {
    f(a);
    f(b);
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        ours.push(time(|| f(a)));
        base.push(time(|| f(b)));
    }
    (ours, base)
}

fn row(n: usize, name: &str, ours: &[Duration], base: &[Duration]) {
    let (a, b) = (median(ours.to_vec()), median(base.to_vec()));
    println!("| {n} | {name} | {} | {} | {:.3}× | ≤ 1.2× |", fmt(a), fmt(b), a.as_secs_f64() / b.as_secs_f64());
}
