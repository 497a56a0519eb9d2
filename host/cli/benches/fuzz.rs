//! Property-based fuzzing of every parser of outside input, on the stable toolchain: inputs come
//! from `proptest` strategies — raw bytes, or a valid sample with a few structure-aware mutations
//! (bytes flipped, cut, duplicated, JSON and SSE tokens spliced in) — each run under
//! `catch_unwind`, for a bounded time per target:
//!
//! * **import**: `Store::import` of a mutated export; whatever imports must show its live view,
//!   export, and re-import (with `--repair`) to the same export; a failure must be a clear
//!   `invalid_import`, never a raw database error;
//! * **sse**: the host's SSE framer, fed in random chunks, must frame exactly what it frames when
//!   fed at once;
//! * **mcp**: lines written to a real `seshat mcp` child, which must answer a `ping` after every
//!   batch and write only JSON-RPC lines;
//! * **config**: `Config::load` of a mutated `config.toml`;
//! * **provider:<id>**: each built-in provider plugin through the real wasm runtime: the SSE
//!   decoder fed a mutated stream through the framer, `parse_response`, `parse_probe` and
//!   `refusal_limit` on mutated bodies. A plugin may answer an error; a trap is a finding.
//!
//! A finding prints the input (and saves it under the temp directory named in the output); a
//! crash found is committed as a regression test. Not part of the test suite.
//!
//! Run: `cargo bench -p seshat-cli --bench fuzz` (`-- --seconds N` per target, default 20; `-- --only
//! NAME` for one target).

use std::io::{BufRead, BufReader, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use seshat::plugins::{Catalog, LimitRequest, PluginKind, ProviderPlugin, Runtime};
use seshat::providers::sse::Framer;
use seshat::store::{ImportOptions, Store};

/// Tokens worth splicing into JSON, SSE and TOML.
const TOKENS: &[&str] = &[
    "\"",
    "\\",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "data: ",
    "event: ",
    "id: ",
    ":",
    "null",
    "true",
    "-1",
    "0",
    "1e999",
    "18446744073709551616",
    "-9223372036854775809",
    "\"\\u0000\"",
    "\u{202e}",
    "\u{1b}[2J",
    "\"\\ud800\"",
    "[[",
    "]]",
    "=",
    "'''",
    "\"\"\"",
    "#",
    "\u{0}",
    "\u{fffd}",
    "{}",
    "[]",
    "\"parts\":[]",
    "\"type\":\"tool_result\"",
    "\"call_id\":\"x\"",
    "\"record\":\"message\"",
    "\"seq\":1",
];

/// One edit of a sample.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Token(usize, usize),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        3 => (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Mutation::Token(i, t)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => (any::<usize>(), 1usize..256).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(sample: &[u8], edits: &[Mutation]) -> Vec<u8> {
    let mut v = sample.to_vec();
    for edit in edits {
        let at = |i: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { i % (v.len() + 1) };
        match edit {
            Mutation::Flip(i, b) if !v.is_empty() => {
                let i = i % v.len();
                v[i] = *b;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(i, bytes) => {
                let i = at(*i, &v);
                v.splice(i..i, bytes.iter().copied());
            }
            Mutation::Token(i, t) => {
                let i = at(*i, &v);
                v.splice(i..i, TOKENS[*t].bytes());
            }
            Mutation::Delete(i, n) => {
                let i = at(*i, &v);
                let end = (i + n).min(v.len());
                v.drain(i..end);
            }
            Mutation::Duplicate(i, n) => {
                let i = at(*i, &v);
                let end = (i + n).min(v.len());
                let copy = v[i..end].to_vec();
                v.splice(end..end, copy);
            }
            Mutation::Truncate(i) => {
                let i = at(*i, &v);
                v.truncate(i);
            }
        }
    }
    v
}

/// Raw bytes now and then, else a mutated sample; with cut points for chunked feeding.
fn input(samples: Vec<Vec<u8>>) -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    let n = samples.len();
    let mutated =
        (0..n, prop::collection::vec(mutation(), 0..6)).prop_map(move |(s, edits)| apply(&samples[s], &edits));
    let bytes = prop_oneof![1 => prop::collection::vec(any::<u8>(), 0..512), 9 => mutated];
    (bytes, prop::collection::vec(1usize..64, 0..16))
}

/// What one target found in its time.
struct Tally {
    name: String,
    runs: u64,
    /// Inputs the parser accepted (the rest it refused with an error, as it should).
    accepted: u64,
    findings: Vec<String>,
    elapsed: Duration,
}

/// Runs `check` on inputs from `strategy` for `budget`; a panic or an `Err` is a finding,
/// `Ok(true)` an input the parser accepted.
fn fuzz<S: Strategy>(
    name: &str,
    budget: Duration,
    strategy: S,
    save: &Path,
    mut check: impl FnMut(&S::Value) -> Result<bool, String>,
) -> Tally
where
    S::Value: std::fmt::Debug,
{
    let mut seed = [0u8; 32];
    for (i, b) in name.bytes().enumerate() {
        seed[i % 32] ^= b;
    }
    let mut runner = TestRunner::new_with_rng(RunnerConfig::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let start = Instant::now();
    let mut tally = Tally { name: name.into(), runs: 0, accepted: 0, findings: Vec::new(), elapsed: Duration::ZERO };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed() < budget && tally.findings.len() < 5 {
        let value = strategy.new_tree(&mut runner).expect("a value").current();
        tally.runs += 1;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| check(&value)));
        let finding = match outcome {
            Ok(Ok(accepted)) => {
                tally.accepted += u64::from(accepted);
                continue;
            }
            Ok(Err(what)) => what,
            Err(panic) => format!(
                "panic: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            ),
        };
        let file = save.join(format!("{}-{}.txt", name.replace(':', "-"), tally.findings.len()));
        let _ = std::fs::write(&file, format!("{finding}\n{value:?}\n"));
        tally.findings.push(format!("{finding} (input saved in {})", file.display()));
    }
    std::panic::set_hook(hook);
    tally.elapsed = start.elapsed();
    tally
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name)).expect("fixture")
}

fn import_target(budget: Duration, save: &Path) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("fuzz.db")).unwrap();
    let samples = vec![fixture("session-export.jsonl")];
    fuzz("import", budget, input(samples), save, |(bytes, cuts)| {
        let repair = cuts.len() % 2 == 1;
        let imported = match store
            .import(&mut bytes.as_slice(), ImportOptions { new_id: true, repair, ..ImportOptions::default() })
        {
            Ok(i) => i,
            Err(e) if matches!(e.code(), "invalid_import") => return Ok(false),
            Err(e) => return Err(format!("import failed with `{}` instead of naming the line: {e}", e.code())),
        };
        store.live_view(&imported.id).map_err(|e| format!("imported but no live view: {e}"))?;
        let mut first = Vec::new();
        store.export(&imported.id, &mut first).map_err(|e| format!("imported but cannot export: {e}"))?;
        let again = store
            .import(&mut first.as_slice(), ImportOptions { repair: true, ..ImportOptions::default() })
            .err()
            .map(|e| e.code())
            .unwrap_or("imported over itself");
        if again != "session_exists" {
            return Err(format!("re-importing the export: {again}"));
        }
        let copy = store
            .import(&mut first.as_slice(), ImportOptions { new_id: true, repair: true, ..ImportOptions::default() })
            .map_err(|e| format!("its own export does not import: {e}"))?;
        let mut second = Vec::new();
        store.export(&copy.id, &mut second).map_err(|e| e.to_string())?;
        let strip = |b: &[u8]| lossy(b).replacen(&imported.id, "ID", 1).replacen(&copy.id, "ID", 1);
        if strip(&first) != strip(&second) {
            return Err("export → import → export changed the session".into());
        }
        Ok(true)
    })
}

fn sse_sample() -> Vec<u8> {
    let mut s = String::from(": comment\r\nevent: message_start\ndata: {\"type\":\"message_start\"}\n\n");
    s.push_str("event: content_block_delta\r\ndata: {\"delta\":\r\ndata:  \"hi\"}\r\n\r\nretry: 10\nid: 7\ndata\n\n");
    s.push_str("data:no space\ndata: two\n\nevent: ping\n\n");
    s.into_bytes()
}

fn sse_target(budget: Duration, save: &Path) -> Tally {
    fuzz("sse", budget, input(vec![sse_sample()]), save, |(bytes, cuts)| {
        let mut whole = Framer::default();
        let mut at_once = whole.push(bytes);
        at_once.extend(whole.finish());
        let mut chunked = Framer::default();
        let mut events = Vec::new();
        let mut rest = bytes.as_slice();
        for &n in cuts.iter().cycle().take(if cuts.is_empty() { 0 } else { 4_096 }) {
            if rest.is_empty() {
                break;
            }
            let (head, tail) = rest.split_at(n.min(rest.len()));
            events.extend(chunked.push(head));
            rest = tail;
        }
        events.extend(chunked.push(rest));
        events.extend(chunked.finish());
        if events != at_once {
            return Err(format!("chunks {cuts:?} framed {events:?}, at once {at_once:?}"));
        }
        Ok(!at_once.is_empty())
    })
}

fn mcp_samples() -> Vec<Vec<u8>> {
    [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_entities","arguments":{"entities":[{"name":"A","entityType":"t","observations":["o"]}]}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_nodes","arguments":{"query":"a b"}}}"#,
        r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"read_graph","arguments":{"limit":5,"offset":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn mcp_target(budget: Duration, save: &Path) -> Tally {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_seshat"))
        .arg("mcp")
        .env("SESHAT_HOME", home.path())
        .env("SESHAT_CONFIG_DIR", home.path())
        .current_dir(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn seshat mcp");
    let mut stdin = child.stdin.take().unwrap();
    let (lines, answers) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let init = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
    writeln!(stdin, "{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}").unwrap();
    let mut batch = 0u64;
    let mut sent = Vec::new();
    let tally = fuzz("mcp", budget, input(mcp_samples()), save, |(bytes, _)| {
        let line = lossy(bytes).replace(['\n', '\r'], " ");
        let valid = serde_json::from_str::<serde_json::Value>(&line).is_ok_and(|v| v.get("method").is_some());
        writeln!(stdin, "{line}").map_err(|e| format!("the server stopped reading: {e}"))?;
        sent.push(line);
        if sent.len() < 50 {
            return Ok(valid);
        }
        batch += 1;
        let ping = format!("alive-{batch}");
        writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"id\":\"{ping}\",\"method\":\"ping\"}}").map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = answers.recv_timeout(left).map_err(|_| format!("no answer to {ping} after lines {sent:?}"))?;
            let v: serde_json::Value =
                serde_json::from_str(&line).map_err(|e| format!("wrote a line that is not JSON ({e}): {line}"))?;
            if v["jsonrpc"] != "2.0" {
                return Err(format!("wrote a line that is not JSON-RPC 2.0: {line}"));
            }
            if v["id"] == ping.as_str() {
                break;
            }
        }
        sent.clear();
        Ok(valid)
    });
    drop(stdin);
    let _ = child.wait();
    tally
}

fn config_samples() -> Vec<Vec<u8>> {
    [
        "[plugins]\nprovider = \"anthropic\"\ntrimmer = \"trimmer\"\n[chat]\nmax_output_tokens = 1000\ntools = [\"memory\"]\n",
        "[providers.local]\nplugin = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"qwen\"\ncontext_window = 32768\n[compaction]\ninstructions = '''keep it'''\n",
        "[memory]\ncontext_tokens = 2000\n[plugins.options.trimmer]\nkeep = 3\n[plugins.limits.trimmer]\nmemory_mib = 64\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn config_target(budget: Duration, save: &Path) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    fuzz("config", budget, input(config_samples()), save, |(bytes, _)| {
        std::fs::write(dir.path().join("config.toml"), bytes).map_err(|e| e.to_string())?;
        Ok(seshat::config::Config::load(dir.path(), None).is_ok())
    })
}

/// Samples of what each kind of provider server sends.
fn provider_samples() -> Vec<Vec<u8>> {
    [
        r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"ls","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":1}}"#,
        r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}"#,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        r#"{"n_ctx":8192,"default_generation_settings":{"n_ctx":8192}}"#,
        r#"{"models":[{"name":"qwen","context_length":32768}]}"#,
        r#"{"data":[{"id":"qwen","max_model_len":32768,"loaded_context_length":8192}]}"#,
        r#"{"model_info":{"llama.context_length":131072},"parameters":"num_ctx 4096"}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn stream_samples() -> Vec<Vec<u8>> {
    [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"ls\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"he\",\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\"}}]},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn provider_target(id: &str, budget: Duration, save: &Path) -> Tally {
    let catalog = Catalog::builtin();
    let entry = catalog.find(PluginKind::Provider, id).expect("a built-in provider");
    let loaded = Runtime::new(None).load(entry, LimitRequest::default()).expect("load the provider");
    let mut provider = ProviderPlugin::new(&loaded).expect("prepare the provider");
    let probes: Vec<String> = provider
        .probes(Some("qwen"), "http://127.0.0.1:8080/v1")
        .map(|p| p.into_iter().map(|p| p.name).collect())
        .unwrap_or_default();
    let mut samples = provider_samples();
    samples.extend(stream_samples());
    let trap = |what: &str, e: seshat::plugins::Error| match e.code() {
        "plugin_trap" | "plugin_timeout" | "plugin_memory" => Err(format!("{what}: {e}")),
        _ => Ok(false),
    };
    fuzz(&format!("provider:{id}"), budget, input(samples), save, |(bytes, cuts)| {
        let status = [200u16, 400, 401, 413, 429, 500, 529][cuts.len() % 7];
        let mut accepted = false;
        match provider.parse_response(status, bytes) {
            Ok(_) => accepted = true,
            Err(e) => {
                trap("parse_response", e)?;
            }
        }
        if let Err(e) = provider.refusal_limit(status, bytes) {
            trap("refusal_limit", e)?;
        }
        for name in &probes {
            if let Err(e) = provider.parse_probe(name, Some("qwen"), status, bytes) {
                trap("parse_probe", e)?;
            }
        }
        let mut framer = Framer::default();
        let mut events = framer.push(bytes);
        events.extend(framer.finish());
        let mut decoder = match provider.decoder() {
            Ok(d) => d,
            Err(e) => return trap("decoder", e).map(|_| accepted),
        };
        for event in &events {
            match decoder.push(&event.event, &event.data) {
                Ok(out) => accepted |= !out.is_empty(),
                Err(e) => {
                    trap("decoder push", e)?;
                }
            }
        }
        if let Err(e) = decoder.finish() {
            trap("decoder finish", e)?;
        }
        Ok(accepted)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let seconds: u64 = value("--seconds").and_then(|s| s.parse().ok()).unwrap_or(20);
    let only = value("--only");
    let budget = Duration::from_secs(seconds);
    let save = std::env::temp_dir().join("seshat-fuzz-findings");
    std::fs::create_dir_all(&save).unwrap();
    let providers: Vec<String> = Catalog::builtin()
        .entries()
        .iter()
        .filter(|e| e.manifest.kind == PluginKind::Provider)
        .map(|e| e.manifest.id.clone())
        .collect();
    let mut names = vec!["import".to_string(), "sse".into(), "mcp".into(), "config".into()];
    names.extend(providers.iter().map(|p| format!("provider:{p}")));
    println!("| target | executions | accepted | per second | findings |");
    println!("|---|---|---|---|---|");
    let mut found = 0;
    for name in names.iter().filter(|n| only.as_deref().is_none_or(|o| o == n.as_str())) {
        let tally = match name.as_str() {
            "import" => import_target(budget, &save),
            "sse" => sse_target(budget, &save),
            "mcp" => mcp_target(budget, &save),
            "config" => config_target(budget, &save),
            p => provider_target(p.trim_start_matches("provider:"), budget, &save),
        };
        println!(
            "| {} | {} | {} | {:.0} | {} |",
            tally.name,
            tally.runs,
            tally.accepted,
            tally.runs as f64 / tally.elapsed.as_secs_f64(),
            tally.findings.len()
        );
        for f in &tally.findings {
            eprintln!("  {}: {f}", tally.name);
        }
        found += tally.findings.len();
    }
    if found > 0 {
        eprintln!("{found} findings; inputs in {}", save.display());
        std::process::exit(1);
    }
}
