//! What a server's token counter adds to a turn near the compaction threshold.
//!
//! A coding session of ~85k estimated tokens in a 128k window — past 70% of the threshold, where
//! counting starts, and under the threshold by the server's own count, so no turn compacts — is
//! continued turn after turn through the OpenAI-compatible provider against a loopback server
//! that streams a short answer and, when asked, counts like llama-cpp-python
//! (`POST /extras/tokenize/count`, `{"input": …}` → `{"count": N}`, counting with GPT-2's BPE, a
//! real tokenizer). Each turn's request is new, so each is counted once, uncached: the round
//! trip, the server's tokenizing of the whole request and Seshat's building of it. The baseline
//! is the same turns against the same server with its counter off (404: after one try each,
//! Seshat asks no more). The loopback model answers at once; a real model also reads the whole
//! prompt, so against a real server counting's share of a turn is smaller than here.
//!
//! Run: `cargo bench -p seshat-cli --bench counting`.

mod common;
use common::*;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

use seshat::client::{Agent, AgentOptions, Quiet, Tools};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::providers::{Cancel, SharedProvider};
use seshat::store::{NewSession, Store};

const RUNS: usize = 11;
const MODEL: &str = "qwen-local";

/// The loopback server: `counting` switches its counter on; `counted` counts its answers.
fn server(counting: Arc<AtomicBool>, counted: Arc<AtomicU32>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (counting, counted) = (counting.clone(), counted.clone());
            std::thread::spawn(move || serve(stream, &counting, &counted));
        }
    });
    url
}

fn serve(stream: TcpStream, counting: &AtomicBool, counted: &AtomicU32) {
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some((path, body)) = read_request(&mut reader) {
        let json = |status: &str, body: String| {
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let reply = if path == "/extras/tokenize/count" && counting.load(Ordering::SeqCst) {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let n = tiktoken_rs::r50k_base_singleton().count_ordinary(v["input"].as_str().unwrap_or_default());
            counted.fetch_add(1, Ordering::SeqCst);
            json("200 OK", format!("{{\"count\":{n}}}"))
        } else if path == "/v1/chat/completions" {
            let chunk = |data: &str| format!("data: {data}\n\n");
            let sse = [
                chunk(r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"Noted."}}]}"#),
                chunk(r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
                chunk("[DONE]"),
            ]
            .concat();
            format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}", sse.len())
        } else {
            json("404 Not Found", r#"{"error":"not found"}"#.into())
        };
        let _ = out.write_all(reply.as_bytes());
        let _ = out.flush();
    }
}

/// A coding message: a test log with figures, a function, a JSON result.
fn coding(i: usize) -> String {
    let mut s = format!("$ cargo test -p worker_{i}\n");
    for line in 0..12 {
        s.push_str(&format!(
            "[2026-12-03T10:{:02}:{:02}Z] INFO worker-{i}::batch{line} rows=48{line:02}/10000 in {}ms\n",
            line % 60,
            i % 60,
            200 + line
        ));
    }
    s.push_str(&format!("fn apply_{i}(&mut self, ev: &Event) -> Result<(), Error> {{ self.seq = ev.seq; Ok(()) }}\n"));
    s.push_str(&format!("{{\"run\":{i},\"passed\":{},\"failed\":0}}\n", 40 + i));
    s
}

fn main() {
    let counting = Arc::new(AtomicBool::new(true));
    let counted = Arc::new(AtomicU32::new(0));
    let url = server(counting.clone(), counted.clone());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[plugins]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"{url}/v1\"\n"),
    )
    .unwrap();
    let db = dir.path().join("seshat.db");
    let project = dir.path().display().to_string();
    let mut store = Store::open(&db).unwrap();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let s = store
            .create_session(NewSession {
                project: project.clone(),
                provider: Some("openai".into()),
                model: Some(MODEL.into()),
                context_window: Some(128_000),
                metadata: None,
                title: None,
            })
            .unwrap();
        // ~85k estimated tokens: past 70% of the threshold (75k), under it (107k).
        let per = seshat::window::estimate_text(&coding(7)) as usize + 4;
        let batch: Vec<NewMessage> = (0..85_000 / per)
            .map(|i| NewMessage {
                role: if i % 2 == 0 { Role::User } else { Role::Assistant },
                parts: vec![Part::Text { text: coding(i) }],
                usage: None,
                status: MessageStatus::Complete,
            })
            .collect();
        store.append(&s.id, &batch).unwrap();
        sessions.push(s.id);
    }
    let estimate = seshat::compaction::estimate_request(&Default::default(), &store.live_view(&sessions[0]).unwrap());
    drop(store);
    let config = seshat::ClientOptions {
        auto_compact: true,
        store: Some(seshat::store::Location::File(db)),
        dirs: Some(seshat::paths::Dirs::under(dir.path())),
        project: Some(project.clone()),
        ..Default::default()
    };
    let agent = |session: &str| {
        let mut client = seshat::Client::new(config.clone(), Arc::new(NoModel)).unwrap();
        let provider = SharedProvider::new(client.load_provider(Some("openai")).unwrap());
        client.set_models(Arc::new(provider.clone()));
        let options = AgentOptions {
            session: seshat::client::SessionChoice::Resume(session.to_string()),
            project: project.clone(),
            model: Some(MODEL.into()),
            window: Some(128_000),
            ..AgentOptions::default()
        };
        Agent::open(client, provider, Tools::none(), options).unwrap()
    };
    let cancel = Cancel::default();
    let turns = |agent: &mut Agent| {
        agent.turn("warm up", &cancel, &mut Quiet).unwrap();
        (0..RUNS)
            .map(|i| {
                let t = Instant::now();
                let out = agent.turn(&format!("next step {i}"), &cancel, &mut Quiet).unwrap();
                assert!(out.compactions.is_empty(), "no turn compacts: {:?}", out.compactions);
                t.elapsed()
            })
            .collect::<Vec<_>>()
    };
    let mut with = agent(&sessions[0]);
    let counted_turns = median(turns(&mut with));
    let asked = counted.load(Ordering::SeqCst);
    assert!(asked as usize > RUNS, "every turn was counted by the server: {asked}");
    counting.store(false, Ordering::SeqCst);
    let mut without = agent(&sessions[1]);
    let plain_turns = median(turns(&mut without));
    println!("Session of ~{}k estimated tokens in a 128k window; medians of {RUNS} turns.\n", estimate / 1000);
    println!("| benchmark | seshat | baseline | ratio | note |");
    println!("|---|---|---|---|---|");
    println!(
        "| a turn near the threshold counted by the server (seshat) vs the same turn with no counter (baseline), loopback model | {} | {} | {:.2}× | counting adds {} a turn; {asked} counts for {} turns |",
        fmt(counted_turns),
        fmt(plain_turns),
        counted_turns.as_secs_f64() / plain_turns.as_secs_f64(),
        fmt(counted_turns.saturating_sub(plain_turns)),
        RUNS + 1
    );
}
