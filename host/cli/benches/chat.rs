//! Chat benchmarks against a loopback server streaming Anthropic's wire format.
//!
//! 1. Time to the first streamed token of a turn on a 10k-message session (warm plugin cache,
//!    the session's messages already encoded): `Agent::turn` from its call to the first text
//!    event, beside a plain reqwest POST of the same body to the first body chunk. The difference
//!    is what Seshat adds (store the user message, build the live view, check the window, pair,
//!    encode the new messages, build and splice the body, frame and decode the stream).
//! 2. The whole turn (answer stored) beside the plain reqwest call reading the whole stream.
//!
//! Run: `cargo bench -p seshat-cli --bench chat`.

mod common;
use common::*;

use std::sync::Arc;
use std::time::Instant;

use seshat::client::{Agent, AgentOptions, Observer, Tools};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::plugins::StreamEvent;
use seshat::providers::{Cancel, SharedProvider};
use seshat::store::{NewSession, Store};

const MESSAGES: usize = 10_000;
const RUNS: usize = 51;

/// Records when the first text arrived.
struct FirstToken(Option<Instant>);

impl Observer for FirstToken {
    fn event(&mut self, event: &StreamEvent) {
        if matches!(event, StreamEvent::TextDelta { .. }) && self.0.is_none() {
            self.0 = Some(Instant::now());
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (url, last_body) = provider::anthropic();
    std::fs::write(dir.path().join("config.toml"), format!("[providers.anthropic]\nbase_url = \"{url}\"\n")).unwrap();
    let db = dir.path().join("seshat.db");
    let project = dir.path().display().to_string();

    // A 10k-message session: user questions and assistant answers of a few sentences.
    let mut store = Store::open(&db).unwrap();
    let session = store
        .create_session(NewSession {
            project: project.clone(),
            provider: Some("anthropic".into()),
            model: Some("claude-sonnet-4-5".into()),
            context_window: Some(10_000_000),
            metadata: None,
            title: None,
        })
        .unwrap();
    let batch: Vec<NewMessage> = (0..MESSAGES)
        .map(|i| NewMessage {
            role: if i % 2 == 0 { Role::User } else { Role::Assistant },
            parts: vec![Part::Text { text: format!("message {i}: {}", "some words of a chat turn ".repeat(8)) }],
            usage: None,
            status: MessageStatus::Complete,
        })
        .collect();
    store.append(&session.id, &batch).unwrap();
    drop(store);

    let config = seshat::ClientOptions {
        auto_compact: true,
        store: Some(seshat::store::Location::File(db)),
        dirs: Some(seshat::paths::Dirs::under(dir.path())),
        project: Some(project.clone()),
        ..Default::default()
    };
    let make_agent = || {
        let mut client = seshat::Client::new(config.clone(), Arc::new(NoModel)).unwrap();
        let provider = SharedProvider::new(client.load_provider(Some("anthropic")).unwrap());
        client.set_models(Arc::new(provider.clone()));
        let options = AgentOptions {
            session: seshat::client::SessionChoice::Resume(session.id.clone()),
            project: project.clone(),
            window: Some(10_000_000),
            ..AgentOptions::default()
        };
        Agent::open(client, provider, Tools::with_memory(), options).unwrap()
    };
    let _cold = make_agent(); // compiles the plugins into the cache
    let mut agent = make_agent();
    let cancel = Cancel::default();
    agent.turn("warm up", &cancel, &mut FirstToken(None)).unwrap(); // encodes the 10k messages once

    let mut first = Vec::new();
    let mut whole = Vec::new();
    for i in 0..RUNS {
        let mut obs = FirstToken(None);
        let t = Instant::now();
        let out = agent.turn(&format!("question {i}"), &cancel, &mut obs).unwrap();
        whole.push(t.elapsed());
        first.push(obs.0.unwrap() - t);
        assert_eq!(out.text, "Hi");
    }

    // The baseline: the same body (the last request Seshat sent), posted with plain reqwest.
    let body = last_body.lock().unwrap().clone();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::new();
    let post = || {
        client
            .post(format!("{url}/v1/messages"))
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01")
            .header("x-api-key", "bench")
            .body(body.clone())
    };
    let mut base_first = Vec::new();
    let mut base_whole = Vec::new();
    rt.block_on(async {
        for _ in 0..RUNS {
            let t = Instant::now();
            let mut r = post().send().await.unwrap();
            let _ = r.chunk().await.unwrap();
            base_first.push(t.elapsed());
            while r.chunk().await.unwrap().is_some() {}
            base_whole.push(t.elapsed());
        }
    });

    let (ours, base) = (median(first), median(base_first));
    println!("Session of {MESSAGES} messages, request body {} KiB; medians of {RUNS} turns.\n", body.len() >> 10);
    println!("| measure | Seshat | plain reqwest | ratio | target |");
    println!("|---|---|---|---|---|");
    report("time to first streamed token", ours, base, "added < 5 ms");
    report("whole turn (answer stored)", median(whole), median(base_whole), "—");
    println!("\nSeshat adds {} before the first token.", fmt(ours.saturating_sub(base)));
}
