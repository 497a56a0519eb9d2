//! How Seshat's token estimate (four characters a token) compares with real tokenizers, per kind
//! of content: prose, code, logs and tool output, JSON, identifiers and numbers. The real counts
//! come from the BPE ranks `tiktoken-rs` ships (`o200k_base`, OpenAI's current models;
//! `cl100k_base`; and GPT-2's `r50k_base`, the densest on code and logs that runs here). The
//! figures are the measured prior the per-kind estimate starts from (`window::ContentKind`), and
//! the estimate's columns show how close it comes: a ratio above 1 is an undercount.
//!
//! Every sample is the repository's own text (README, sources, the protocol schema, a fixture)
//! or generated here from fixed seeds: `cargo bench -p seshat-cli --bench tokens`.

use std::path::Path;
use std::time::Instant;

mod common;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The README's prose: every line outside a code block, headings and tables left out.
fn prose() -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in read("README.md").lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced && !line.starts_with('#') && !line.starts_with('|') {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn code() -> String {
    ["host/core/src/compaction/mod.rs", "host/core/src/store/messages.rs", "host/core/src/client/sizing.rs"]
        .iter()
        .map(|p| read(p))
        .collect()
}

/// A fixed-seed xorshift generator: the same samples on every run.
use common::Rng as XorShift;

/// A test run's and a build's output: timestamps, paths, counters, durations.
fn logs() -> String {
    let mut s = String::new();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    for i in 0..600 {
        let x = rng.next();
        s.push_str(&format!(
            "[2026-12-03T10:{:02}:{:02}.{:03}Z] INFO  worker-{}::batch processed rows={}/{} in {}ms (p99={}.{}ms, rss={}MiB)\n",
            i % 60,
            x % 60,
            x % 1000,
            x % 16,
            x % 10_000,
            10_000,
            x % 900,
            x % 50,
            x % 10,
            300 + x % 200
        ));
        if i % 7 == 0 {
            s.push_str(&format!(
                "test store::messages::append_{i} ... ok\n   Compiling seshat v0.1.{} (/work/main/host/core)\n",
                i % 9
            ));
        }
    }
    s
}

/// JSON as requests carry it (tool schemas, arguments, results): compact, one value a line.
fn json() -> String {
    ["host/protocol/protocol.schema.json", "tests/fixtures/mcp-memory-tools.json"]
        .iter()
        .map(|p| {
            let v: serde_json::Value = serde_json::from_str(&read(p)).unwrap();
            let mut out = String::new();
            for (k, item) in v.as_object().into_iter().flatten() {
                out.push_str(&serde_json::json!({ k: item }).to_string());
                out.push('\n');
            }
            out
        })
        .collect()
}

/// The same JSON pretty-printed (two-space indentation), as files and some tools' output are.
fn json_pretty() -> String {
    ["host/protocol/protocol.schema.json", "tests/fixtures/mcp-memory-tools.json"].iter().map(|p| read(p)).collect()
}

/// Hashes, ids, versions, paths and figures, as tool results list them.
fn identifiers() -> String {
    let mut s = String::new();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..800 {
        let x = rng.next();
        s.push_str(&format!(
            "{:016x} 01JFV{:021} v{}.{}.{} /srv/app/{:x}/part-{i:05}.parquet {} bytes {}.{:03}s\n",
            x,
            x % 1_000_000_000_000,
            x % 4,
            x % 30,
            x % 12,
            x % 4096,
            x % 10_000_000,
            x % 60,
            x % 1000
        ));
    }
    s
}

fn main() {
    let o200k = tiktoken_rs::o200k_base_singleton();
    let cl100k = tiktoken_rs::cl100k_base_singleton();
    let r50k = tiktoken_rs::r50k_base_singleton();
    println!(
        "| content | characters | four characters a token | Seshat's estimate | o200k_base | cl100k_base | r50k_base | o200k / four-chars | r50k / four-chars | o200k / Seshat | r50k / Seshat |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let kinds: [(&str, String); 6] = [
        ("prose", prose()),
        ("code", code()),
        ("logs", logs()),
        ("JSON, compact", json()),
        ("JSON, pretty-printed", json_pretty()),
        ("identifiers and numbers", identifiers()),
    ];
    for (name, text) in &kinds {
        let four = (text.chars().count() as u64).div_ceil(4);
        let estimate = seshat::window::estimate_text(text);
        let (a, b, c) = (o200k.count_ordinary(text), cl100k.count_ordinary(text), r50k.count_ordinary(text));
        let ratio = |real: usize, base: u64| real as f64 / base as f64;
        println!(
            "| {name} | {} | {four} | {estimate} | {a} | {b} | {c} | {:.2}× | {:.2}× | {:.2}× | {:.2}× |",
            text.chars().count(),
            ratio(a, four),
            ratio(c, four),
            ratio(a, estimate),
            ratio(c, estimate)
        );
    }
    // What counting costs: o200k over an 8k-token request (the code sample's first ~32k
    // characters) against the estimate of the same text, median of 21.
    let text: String = kinds[1].1.chars().take(32_000).collect();
    let median = |f: &dyn Fn() -> usize| {
        let mut t: Vec<f64> = (0..21)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[10]
    };
    let counted = median(&|| o200k.count_ordinary(std::hint::black_box(&text)));
    let estimated = median(&|| seshat::window::estimate_text(std::hint::black_box(&text)) as usize);
    println!();
    println!("| benchmark | seshat | baseline | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| counting a ~8k-token request with o200k_base (seshat) vs Seshat's estimate of the same text (baseline), median of 21 | {:.2} ms | {:.3} ms | {:.0}× |",
        counted * 1e3,
        estimated * 1e3,
        counted / estimated
    );
    calibration(&kinds, &[("o200k_base", o200k), ("r50k_base", r50k)]);
}

/// The estimate calibrated from real counts: a session's requests — mixes of the kinds' first
/// halves in proportions drawn from a fixed seed — are counted by the tokenizer one after
/// another and each count is learnt (`window::Calibration`, one factor per kind); then each
/// kind's second half, never counted, is estimated by the prior, by the per-kind calibration and
/// by one scale for every kind (the last request's real-to-estimate ratio, what a single factor
/// learns). A ratio of 1.00× is exact; above 1 an undercount.
fn calibration(kinds: &[(&str, String)], tokenizers: &[(&str, &tiktoken_rs::CoreBPE)]) {
    use seshat::window::{Calibration, Tally};
    let half = |t: &str, second: bool| -> String {
        let cut = t.floor_char_boundary(t.len() / 2);
        let cut = t[..cut].rfind('\n').map_or(cut, |i| i + 1);
        if second { t[cut..].to_string() } else { t[..cut].to_string() }
    };
    let firsts: Vec<String> = kinds.iter().map(|(_, t)| half(t, false)).collect();
    println!();
    println!(
        "| tokenizer | content | real tokens | prior estimate | one scale | per-kind calibration | real / prior | real / one scale | real / per-kind |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, bpe) in tokenizers {
        let mut rng = XorShift(0x5EED_CA11);
        let mut c = Calibration::default();
        let mut scale = 1.0;
        for _ in 0..40 {
            // A request: 2 to 4 pieces of 1,000 to 6,000 characters, each from a kind drawn.
            let mut request = String::new();
            for _ in 0..(2 + rng.next() % 3) {
                let k = &firsts[(rng.next() % firsts.len() as u64) as usize];
                let len = 1_000 + (rng.next() % 5_000) as usize;
                let start = k.floor_char_boundary((rng.next() as usize) % k.len().saturating_sub(len).max(1));
                let piece = &k[start..k.floor_char_boundary((start + len).min(k.len()))];
                let piece = piece.find('\n').map_or(piece, |i| &piece[i + 1..]);
                request.push_str(piece);
                request.push('\n');
            }
            let mut tally = Tally::default();
            tally.add_text(&request);
            let real = bpe.count_ordinary(&request) as u64;
            c.learn(&tally, real);
            scale = real as f64 / tally.total();
        }
        for (kind, text) in kinds {
            let held = half(text, true);
            let mut tally = Tally::default();
            tally.add_text(&held);
            let real = bpe.count_ordinary(&held) as f64;
            let (prior, one, per_kind) = (tally.total(), tally.total() * scale, c.real(&tally));
            println!(
                "| {name} | {kind} | {real:.0} | {prior:.0} | {one:.0} | {per_kind:.0} | {:.2}× | {:.2}× | {:.2}× |",
                real / prior,
                real / one,
                real / per_kind
            );
        }
    }
}
