//! `seshat chat` against loopback servers speaking Anthropic's and OpenAI's real wire formats:
//! tool round trips through the memory tools, errors, retries, broken streams, redirects and
//! refused hosts. Each test lists the rows it expects in the database and checks them exactly.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use seshat::conversation::{MessageStatus, Part, Role};
use seshat::store::Message;

use crate::support::Home;
use crate::support::server::{Reply, Server, anthropic, openai};

/// The API key every test uses; it must never show up anywhere but the request header.
pub const KEY: &str = "sk-test-5ecret-KEY-0123456789abcdef";

/// A home configured to talk to `server` through `provider` (`anthropic` or `openai`).
pub fn home_for(provider: &str, server: &Server, extra: &str) -> Home {
    let home = Home::new();
    configure(&home, provider, server, extra);
    home
}

/// Writes `home`'s config.toml: `provider` at the loopback `server`, with `extra` lines.
pub fn configure(home: &Home, provider: &str, server: &Server, extra: &str) {
    let base = if provider == "openai" { format!("{}/v1", server.url()) } else { server.url() };
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"{provider}\"\n[chat]\nmax_output_tokens = 1000\n\
             [providers.{provider}]\nbase_url = \"{base}\"\nfirst_byte_timeout_secs = 5\nidle_timeout_secs = 1\n\
             max_retries = 2\n{extra}"
        ),
    )
    .unwrap();
}

/// Runs `seshat chat args…` with the key in the environment.
pub fn chat(home: &Home, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("OPENAI_API_KEY", KEY)
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .arg("chat")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run seshat chat")
}

/// `--json` output of a one-shot chat.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A compact, exact picture of a stored message.
#[derive(Debug, PartialEq, Eq)]
pub struct Row {
    pub role: Role,
    pub status: MessageStatus,
    pub parts: Vec<String>,
}

fn row(m: &Message) -> Row {
    let parts = m
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => format!("text:{text}"),
            Part::ToolCall { id, name, arguments } => format!("call:{id}:{name}:{arguments}"),
            Part::ToolResult { call_id, is_error, .. } => {
                format!("result:{call_id}:{}", if *is_error { "error" } else { "ok" })
            }
            Part::Thinking { text, signature } => format!("thinking:{text}:{}", signature.as_deref().unwrap_or("")),
            Part::RedactedThinking { .. } => "redacted".into(),
        })
        .collect();
    Row { role: m.role, status: m.status, parts }
}

pub fn r(role: Role, status: MessageStatus, parts: &[&str]) -> Row {
    Row { role, status, parts: parts.iter().map(|s| s.to_string()).collect() }
}

/// The rows of the home's only (or given) session.
pub fn rows(home: &Home, session: Option<&str>) -> Vec<Row> {
    let store = home.store();
    let id = match session {
        Some(s) => s.to_string(),
        None => {
            let all = store.list_sessions(&Default::default()).unwrap();
            assert_eq!(all.len(), 1, "expected one session");
            all[0].id.clone()
        }
    };
    store.full_history(&id).unwrap().iter().map(row).collect()
}

/// Asserts the key appears in no file of the home (database, `-wal`, config, caches) and not in
/// the process output.
pub fn assert_no_key(home: &Home, out: &Output) {
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY), "the key leaked to stdout");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY), "the key leaked to stderr");
    let mut files = 0;
    for entry in walk(home.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        files += 1;
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key leaked into {}", entry.display());
    }
    assert!(files >= 2, "the database and its -wal were checked");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

const USER: Role = Role::User;
const ASSISTANT: Role = Role::Assistant;
const TOOL: Role = Role::Tool;
const OK: MessageStatus = MessageStatus::Complete;
const INTERRUPTED: MessageStatus = MessageStatus::Interrupted;

fn create_ada() -> String {
    json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["prefers short answers"]}]})
        .to_string()
}

#[test]
fn anthropic_streams_a_tool_round_trip_through_the_memory_tools() {
    let args = create_ada();
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::tool_answer("toolu_1", "memory_create_entities", &args) },
        Reply::Stream { pieces: anthropic::text_answer(&["Noted", " it."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "Remember: Ada prefers short answers", "--json"], &[("RUST_LOG", "trace")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["text"], "Noted it.");
    assert_eq!(v["iterations"], 2);
    assert_eq!(v["usage"]["output_tokens"], 39);
    assert_eq!(v["error"], Value::Null);
    assert_eq!(
        rows(&home, None),
        vec![
            r(USER, OK, &["text:Remember: Ada prefers short answers"]),
            r(ASSISTANT, OK, &["text:Let me note that.", &format!("call:toolu_1:memory_create_entities:{args}")]),
            r(TOOL, OK, &["result:toolu_1:ok"]),
            r(ASSISTANT, OK, &["text:Noted it."]),
        ]
    );
    // The tool really ran: the entity is in the project's memory.
    let store = home.store();
    let history = store.full_history(v["session"].as_str().unwrap()).unwrap();
    assert!(matches!(&history[2].parts[0], Part::ToolResult { content, .. } if content.contains("Ada")));
    assert_eq!(history[1].usage.unwrap().context_tokens, Some(130), "input + cache read + cache creation");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for q in &reqs {
        assert_eq!((q.method.as_str(), q.path.as_str()), ("POST", "/v1/messages"));
        assert_eq!(q.header("x-api-key"), Some(KEY), "the host adds the key for the allowed host");
        assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
    }
    let (first, second) = (reqs[0].json(), reqs[1].json());
    assert_eq!(first["stream"], true);
    assert_eq!(first["max_tokens"], 1000);
    assert_eq!(first["system"][0]["cache_control"]["type"], "ephemeral", "system prompt cached");
    assert!(first["system"][0]["text"].as_str().unwrap().contains("# Memory"), "the memory snapshot is in the prompt");
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 12, "the nine memory tools, the two history tools and context_status");
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral", "tools cached");
    assert!(tools[..tools.len() - 1].iter().all(|t| t.get("cache_control").is_none()));
    assert_eq!(first["system"], second["system"], "the prefix is byte-stable");
    assert_eq!(first["tools"], second["tools"]);
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "memory_create_entities",
        "input": serde_json::from_str::<Value>(&args).unwrap()})
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(msgs[2]["content"][0]["cache_control"]["type"], "ephemeral", "the latest turn is the breakpoint");
    assert!(msgs[0]["content"][0].get("cache_control").is_none(), "only the latest turn carries one");
    assert_no_key(&home, &out);
}

#[test]
fn openai_streams_a_tool_round_trip_and_falls_back_to_estimates_without_usage() {
    let args = create_ada();
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::tool_answer("call_1", "memory_create_entities", &args) },
        Reply::Stream { pieces: openai::text_answer(&["Done", "."], false) },
    ]);
    let home = home_for("openai", &server, "");
    let out = chat(&home, &["-p", "Remember Ada", "--json", "--model", "gpt-4o"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["text"], "Done.");
    assert!(v["context"]["used"].as_u64().unwrap() > 1000, "an estimate, with no usage reported: {v}");
    assert_eq!(v["context"]["window"], 128_000);
    assert_eq!(
        rows(&home, None),
        vec![
            r(USER, OK, &["text:Remember Ada"]),
            r(ASSISTANT, OK, &[&format!("call:call_1:memory_create_entities:{args}")]),
            r(TOOL, OK, &["result:call_1:ok"]),
            r(ASSISTANT, OK, &["text:Done."]),
        ]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    let second = reqs[1].json();
    assert_eq!(second["stream_options"]["include_usage"], true);
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["arguments"], args.as_str());
    assert_eq!(msgs[3], json!({"role": "tool", "tool_call_id": "call_1", "content": msgs[3]["content"]}));
    assert_no_key(&home, &out);
}

#[test]
fn openai_usage_in_the_final_chunk_is_stored_and_a_keyless_local_server_works() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Hi"], true) }]);
    let home = home_for("openai", &server, "");
    let mut cmd = home.cmd();
    let out = cmd
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .args(["chat", "-p", "hello", "--model", "llama3", "--window", "8192"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hi\n");
    assert_eq!(server.requests()[0].header("authorization"), None, "no key configured, none sent");
    let history = home.store().full_history(&home.store().list_sessions(&Default::default()).unwrap()[0].id).unwrap();
    let u = history[1].usage.unwrap();
    assert_eq!((u.input_tokens, u.cache_read_tokens, u.output_tokens, u.context_tokens), (50, 100, 12, Some(150)));
}

#[test]
fn a_401_that_echoes_the_key_is_redacted_everywhere() {
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key: {KEY}")}});
    let server = Server::start(vec![Reply::json(401, &body.to_string())]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi"], &[("RUST_LOG", "trace")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("auth_failed") && err.contains("invalid x-api-key: [redacted]"), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "says what to check: {err}");
    assert_eq!(server.count(), 1, "a 401 is not retried");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"])], "the user's message is kept, nothing else");
    assert_no_key(&home, &out);
}

/// Every retry is the first request again: path, method, credential and body.
fn assert_same_request(sent: &[crate::support::server::Recorded]) {
    assert!(sent.len() >= 2, "a retry was made");
    let first = &sent[0];
    assert_eq!((first.path.as_str(), first.header("x-api-key")), ("/v1/messages", Some(KEY)));
    for again in &sent[1..] {
        assert_eq!((&again.method, &again.path), (&first.method, &first.path));
        assert_eq!(again.header("x-api-key"), first.header("x-api-key"));
        assert_eq!(again.body, first.body, "the retried body is the same bytes");
    }
}

#[test]
fn a_429_is_retried_when_its_retry_after_is_within_the_cap_and_reported_when_not() {
    let server = Server::start(vec![
        Reply::json(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#)
            .with_header("retry-after", "1"),
        Reply::Stream { pieces: anthropic::text_answer(&["Fine."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.count(), 2);
    assert_same_request(&server.requests());
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, OK, &["text:Fine."])]);
    // The header is read: a wait longer than Seshat's cap (60 s) is not waited out but reported,
    // and nothing is retried (how long a wait lasts is the transport's unit test).
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let server = Server::start(vec![Reply::json(429, limited).with_header("retry-after", "600")]);
    let out = chat(&home_for("anthropic", &server, ""), &["-p", "hi", "--json"], &[]);
    assert_eq!(json_of(&out)["error_code"], "rate_limited", "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(server.count(), 1, "a 600 s retry-after is not waited for");
}

#[test]
fn a_500_or_a_closed_connection_before_any_answer_is_retried_and_one_answer_stored() {
    let cases = [
        ("a 500", Reply::json(500, r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#)),
        ("a connection closed without an answer", Reply::Hangup),
    ];
    for (what, first) in cases {
        let server = Server::start(vec![first, Reply::Stream { pieces: anthropic::text_answer(&["Recovered."]) }]);
        let home = home_for("anthropic", &server, "");
        let out = chat(&home, &["-p", "hi"], &[]);
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Recovered.\n", "{what}");
        assert_eq!(server.count(), 2, "{what}");
        assert_same_request(&server.requests());
        assert_eq!(
            rows(&home, None),
            vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, OK, &["text:Recovered."])],
            "{what}"
        );
    }
}

#[test]
fn persistent_5xx_gives_up_after_the_retries_with_the_providers_message() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = Server::start(vec![Reply::json(529, body), Reply::json(529, body), Reply::json(529, body)]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    assert!(!out.status.success());
    let v = json_of(&out);
    assert_eq!(v["error_code"], "overloaded", "{v}");
    assert!(v["error"].as_str().unwrap().contains("Overloaded"), "{v}");
    // One shape whether the turn failed or not: every field the README lists, unknowns null.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let documented = [
        "session",
        "text",
        "usage",
        "iterations",
        "stop_reason",
        "interrupted",
        "error",
        "error_code",
        "compactions",
        "context",
    ];
    for key in documented {
        assert!(v.get(key).is_some(), "the failed turn's JSON lacks `{key}`: {v}");
    }
    assert!(v["stop_reason"].is_null() && v["text"] == "" && v["usage"]["input_tokens"] == 0, "{v}");
    let ok = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["fine"]) }]);
    let fine = json_of(&chat(&home_for("anthropic", &ok, ""), &["-p", "hi", "--json"], &[]));
    assert_eq!(keys(&v), keys(&fine), "failed: {v}\nsucceeded: {fine}");
    assert_eq!(server.count(), 3, "one try and max_retries = 2");
    assert_same_request(&server.requests());
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"])]);
}

#[test]
fn malformed_sse_keeps_what_arrived_as_interrupted() {
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Hel"]).into_iter().take(2));
    pieces.push("event: content_block_delta\ndata: {not json\n\n".into());
    pieces.extend(anthropic::text_block(0, &["lo"]).into_iter().skip(1));
    let server = Server::start(vec![Reply::Stream { pieces }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["error_code"], "bad_stream", "{v}");
    assert_eq!(server.count(), 1);
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, INTERRUPTED, &["text:Hel"])]);
}

#[test]
fn a_connection_dropped_mid_stream_is_not_retried_and_keeps_the_partial_answer() {
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Partial", " answer"]).into_iter().take(3));
    let server =
        Server::start(vec![Reply::Drop { pieces }, Reply::Stream { pieces: anthropic::text_answer(&["dup"]) }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "connection_failed", "{v}");
    assert_eq!(server.count(), 1, "never retried after streamed bytes: no duplicate text");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, INTERRUPTED, &["text:Partial answer"])]);
}

#[test]
fn a_stalled_stream_times_out_and_keeps_the_partial_answer() {
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Slow"]).into_iter().take(2));
    // The server stays silent for a minute: only the 1 s idle timeout can end the wait (the error
    // says which; a server that closed would be a connection error).
    let server = Server::start(vec![Reply::Stall { pieces, pause: Duration::from_secs(60) }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "timeout", "{v}");
    assert!(v["error"].as_str().unwrap().contains("idle_timeout_secs"), "{v}");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, INTERRUPTED, &["text:Slow"])]);
}

#[test]
fn a_redirect_to_another_port_is_not_followed() {
    let other = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["stolen"]) }]);
    let server = Server::start(vec![Reply::Full {
        status: 307,
        headers: vec![("location".into(), format!("{}/v1/messages", other.url()))],
        body: vec![],
    }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "redirect_refused", "{v}");
    assert_eq!(other.count(), 0, "the other port received nothing");
    assert_eq!(server.count(), 1);
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"])]);
}

#[test]
fn a_same_origin_redirect_is_followed_and_a_loop_is_called_one() {
    // A relative redirect to the same server is followed, body and all.
    let server = Server::route(|r| match r.path.as_str() {
        "/v1/messages" => Reply::Full {
            status: 307,
            headers: vec![("location".into(), "/moved/chat/completions".into())],
            body: vec![],
        },
        _ => Reply::Stream { pieces: anthropic::text_answer(&["moved here"]) },
    });
    let home = home_for("anthropic", &server, "");
    let v = json_of(&chat(&home, &["-p", "hi", "--json"], &[]));
    assert_eq!(v["text"], "moved here", "{v}");
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/messages", "/moved/chat/completions"]);
    assert!(server.requests()[1].json()["messages"].is_array(), "the body went with the redirect");
    // A server redirecting to itself for ever: reported as a loop, not as another host.
    let server = Server::route(|r| {
        let next = format!("/hop{}/chat/completions", r.path.len());
        Reply::Full { status: 307, headers: vec![("location".into(), next)], body: vec![] }
    });
    let home = home_for("anthropic", &server, "");
    let v = json_of(&chat(&home, &["-p", "hi", "--json"], &[]));
    assert_eq!(v["error_code"], "redirect_loop", "{v}");
    let message = v["error"].as_str().unwrap();
    assert!(message.contains("redirect loop") && !message.contains("another host"), "{message}");
    assert_eq!(server.count(), 6, "the first request and five redirects");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"])]);
}

/// The Anthropic plugin installed as `pinned`, whose manifest allows only `allowed`.
fn install_pinned(home: &Home, allowed: &str) {
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/plugins/provider-anthropic.wasm");
    let dir = home.path().join("plugins/pinned");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&wasm, dir.join("plugin.wasm")).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        format!("id = \"pinned\"\nkind = \"provider\"\napi = \"0.1.0\"\nallowed_hosts = [\"{allowed}\"]\n"),
    )
    .unwrap();
}

#[test]
fn a_provider_pointed_at_a_host_its_manifest_does_not_allow_sends_nothing() {
    let allowed = Server::start(vec![]);
    let elsewhere = Server::start(vec![]);
    let home = Home::new();
    install_pinned(&home, &allowed.url());
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"pinned\"\n[providers.pinned]\nbase_url = \"{}\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
            elsewhere.url()
        ),
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "host_not_allowed", "{v}");
    let message = v["error"].as_str().unwrap();
    assert!(
        message.contains("`pinned`") && message.contains("127.0.0.1") && message.contains("nothing was sent"),
        "{message}"
    );
    assert_eq!((allowed.count(), elsewhere.count()), (0, 0));
    // Pointed at the allowed host, the same plugin works.
    let ok = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["ok"]) }]);
    install_pinned(&home, &ok.url());
    std::fs::write(
        home.path().join("config.toml"),
        format!("[plugins]\nprovider = \"pinned\"\n[providers.pinned]\nbase_url = \"{}\"\n", ok.url()),
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi", "--model", "claude-sonnet-4-5"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ok.count(), 1);
}

#[test]
fn non_streaming_answers_parse_for_both_providers() {
    let a = Server::start(vec![Reply::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig=="}, {"type": "text", "text": "Whole."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 20, "output_tokens": 5}})
        .to_string(),
    )]);
    let home = home_for("anthropic", &a, "");
    let out = chat(&home, &["-p", "hi", "--no-stream"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(a.requests()[0].json().get("stream"), None);
    assert_eq!(
        rows(&home, None),
        vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, OK, &["thinking:hmm:sig==", "text:Whole."])]
    );

    let o = Server::start(vec![Reply::json(
        200,
        &json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
            "content": "Whole too."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 3}})
        .to_string(),
    )]);
    let home = home_for("openai", &o, "");
    let out = chat(&home, &["-p", "hi", "--no-stream", "--model", "gpt-4o"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Whole too.\n");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"]), r(ASSISTANT, OK, &["text:Whole too."])]);
}

#[test]
fn without_a_provider_or_key_chat_says_what_to_set() {
    let home = Home::new();
    let out = home.cmd().args(["chat", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("provider = \"anthropic\"") && err.contains("ANTHROPIC_API_KEY"), "{err}");
    let out = home.cmd().args(["chat", "--provider", "openai", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("set OPENAI_API_KEY"), "{err}");
    assert!(!home.db().exists() || home.store().list_sessions(&Default::default()).unwrap().is_empty());
}

/// A streamed text answer whose reported usage says the request had `input` tokens.
pub fn answer_at(input: u64, text: &str) -> Reply {
    let mut v = vec![anthropic::start(input)];
    v.extend(anthropic::text_block(0, &[text]));
    v.extend(anthropic::stop("end_turn", 20));
    Reply::Stream { pieces: v }
}

#[test]
fn a_small_window_forces_auto_compaction_in_a_tool_using_chat() {
    let big = format!("one {}", "alpha beta gamma delta ".repeat(1_700)); // ~39k characters
    let mid = format!("two {}", "epsilon zeta eta ".repeat(1_100)); // ~19k characters
    let mut tool = vec![anthropic::start(14_000)];
    tool.extend(anthropic::tool_block(0, "toolu_1", "memory_search_nodes", r#"{"query":"alpha"}"#));
    tool.extend(anthropic::stop("tool_use", 15));
    let summary = json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "SUMMARY-OF-EARLIER: the user sent a long alpha text."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 9_000, "output_tokens": 40}});
    let server = Server::start(vec![
        answer_at(12_000, "Got one."),
        Reply::Stream { pieces: tool },
        answer_at(18_500, "Got two."),
        Reply::json(200, &summary.to_string()),
        answer_at(6_000, "Got three."),
    ]);
    let home = home_for("anthropic", &server, "");
    let w = ["--window", "30000", "--json"];
    let run = |args: &[&str]| {
        let out = chat(&home, &[args, &w[..]].concat(), &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        json_of(&out)
    };
    let first = run(&["-p", &big]);
    assert_eq!(first["compactions"], json!([]));
    let second = run(&["--continue", "-p", &mid]);
    assert_eq!((second["iterations"].as_u64(), second["compactions"].as_array().map(Vec::len)), (Some(2), Some(0)));
    assert!(second["context"]["used"].as_u64().unwrap() > 16_800, "past the 30k window's threshold: {second}");

    let out =
        chat(&home, &[&["--continue", "-p", "three", "--summary-model", "claude-haiku-4-5"], &w[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let third = json_of(&out);
    assert_eq!(third["text"], "Got three.");
    let report = &third["compactions"][0];
    assert_eq!(third["compactions"].as_array().map(Vec::len), Some(1), "{third}");
    // Under --json, each notice is a line of JSON on stderr, in the order it was told: announced
    // with what was in use, then what the summary would replace (before the summary model was
    // asked), then the report the answer gives.
    let notices: Vec<Value> =
        stderr.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = notices.iter().map(|n| n["notice"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["compaction_started", "compaction_summarising", "compaction"], "{stderr}");
    assert!(notices.iter().all(|n| n["session"] == third["session"]), "{stderr}");
    let (started, summarising, done) = (&notices[0], &notices[1], &notices[2]);
    assert_eq!(
        (started["tokens"].as_u64(), started["window"].as_u64()),
        (report["tokens_before"].as_u64(), Some(30_000))
    );
    assert_eq!(summarising["tokens"], report["tokens_before"], "{summarising}");
    assert_eq!(summarising["seqs"], report["summarised_seqs"], "it named what then left the view");
    assert_eq!(
        (summarising["marks"]["window"].as_u64(), summarising["model"].as_str()),
        (Some(30_000), Some("claude-haiku-4-5"))
    );
    assert!(summarising["tokens"].as_u64() > summarising["marks"]["threshold"].as_u64(), "{summarising}");
    let mut reported = done.clone();
    reported.as_object_mut().map(|o| (o.remove("notice"), o.remove("session")));
    assert_eq!(&reported, report, "the notice is the report");
    let session = home.store().list_sessions(&Default::default()).unwrap().remove(0).id;
    let records = home.store().compactions(&session).unwrap();
    assert_eq!(records.len(), 1);
    let c = &records[0];
    assert_eq!(c.status, seshat::store::CompactionStatus::Ok);
    assert_eq!(c.model.as_deref(), Some("claude-haiku-4-5"));
    assert!(c.summary.as_deref().unwrap().contains("SUMMARY-OF-EARLIER"));
    assert!(c.tokens_after.unwrap() <= 14_000, "landed under the target: {c:?}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "three turns, one tool call, one summary call");
    // Near the threshold Seshat asked Anthropic's counter, which this server lacks (404): once
    // per process and model, then never again in that process.
    let counts: Vec<String> = server.count_requests().iter().map(|r| r.path.clone()).collect();
    assert!(!counts.is_empty() && counts.iter().all(|p| p == "/v1/messages/count_tokens"), "{counts:?}");
    let summary_req = reqs[3].json();
    assert_eq!(summary_req.get("stream"), None, "the summary call is not streamed");
    assert_eq!(summary_req["model"], "claude-haiku-4-5", "--summary-model picks the summary model");
    assert_eq!(reqs[4].json()["model"], "claude-opus-4-5", "the session's model answers");
    assert_eq!(summary_req.get("tools"), None);
    assert!(summary_req["max_tokens"].as_u64().unwrap() <= 2_000);
    assert!(reqs[3].body.contains("alpha beta gamma"), "the dropped head is summarised");
    assert!(!reqs[3].body.contains("epsilon zeta"), "kept messages are not summarised");
    let next = reqs[4].json();
    let msgs = next["messages"].as_array().unwrap();
    assert!(msgs[0]["content"][0]["text"].as_str().unwrap().contains("SUMMARY-OF-EARLIER"), "{}", msgs[0]);
    assert!(!reqs[4].body.contains("alpha beta gamma"), "the summarised head is not sent again");
    assert!(reqs[4].body.contains("epsilon zeta"), "the recent turn is kept verbatim");
    assert_eq!(msgs.last().unwrap()["content"][0]["text"], "three", "the latest request is pinned last");
    // Nothing was deleted: the full history still has every message, as it was written.
    assert_eq!(
        rows(&home, None),
        vec![
            r(USER, OK, &[&format!("text:{big}")]),
            r(ASSISTANT, OK, &["text:Got one."]),
            r(USER, OK, &[&format!("text:{mid}")]),
            r(ASSISTANT, OK, &["call:toolu_1:memory_search_nodes:{\"query\":\"alpha\"}"]),
            r(Role::Tool, OK, &["result:toolu_1:ok"]),
            r(ASSISTANT, OK, &["text:Got two."]),
            r(USER, OK, &["text:three"]),
            r(ASSISTANT, OK, &["text:Got three."]),
        ]
    );
}

/// A whole (non-streamed) Anthropic answer, as a summary call gets.
fn summary_answer() -> Reply {
    Reply::json(
        200,
        &json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "The user sent long texts."}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "output_tokens": 8}})
        .to_string(),
    )
}

#[test]
fn three_failed_summaries_then_compact_full_without_a_request() {
    let refusal = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}"#;
    let server = Server::start(vec![
        answer_at(17_000, "Long."),
        // Each failing turn: the summary request and its one retry, cut smaller, both refused.
        Reply::json(400, refusal),
        Reply::json(400, refusal),
        Reply::json(400, refusal),
        Reply::json(400, refusal),
        Reply::json(400, refusal),
        Reply::json(400, refusal),
        // `seshat compact`'s summary (two chunks of ~14k tokens each), then the next turn's answer.
        summary_answer(),
        summary_answer(),
        Reply::Stream { pieces: anthropic::text_answer(&["Back on track."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let w = ["--window", "30000", "--json"];
    // Two messages of ~14k tokens each: together with the system prompt and tools they pass the
    // 29k hard limit (30k window less 1k for the answer) once nothing can be summarised.
    let big = |word: &str| format!("{word} {}", "alpha beta gamma delta ".repeat(2_450));
    let out = chat(&home, &[&["-p", big("start").as_str()][..], &w[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (turn, failures) in [(big("more"), 1), ("b".to_string(), 2), ("c".to_string(), 3)] {
        let before = server.count();
        let out = chat(&home, &[&["--continue", "-p", turn.as_str()][..], &w[..]].concat(), &[]);
        assert!(!out.status.success());
        let v = json_of(&out);
        assert_eq!(v["error_code"], "compact_failed", "{v}");
        assert!(v["error"].as_str().unwrap().contains(&format!("({failures} in a row)")), "{v}");
        assert!(v["error"].as_str().unwrap().contains("prompt is too long"), "{v}");
        assert_eq!(server.count(), before + 2, "only the summary call and its one retry went out");
    }
    let before = server.count();
    let out = chat(&home, &[&["--continue", "-p", "d"][..], &w[..]].concat(), &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "compact_full", "{v}");
    assert!(v["error"].as_str().unwrap().contains("summarising is off"), "{v}");
    assert_eq!(server.count(), before, "the server counted zero requests for that turn");
    let user = |t: &str| r(USER, OK, &[&format!("text:{t}")]);
    assert_eq!(
        rows(&home, None),
        vec![
            user(&big("start")),
            r(ASSISTANT, OK, &["text:Long."]),
            user(&big("more")),
            user("b"),
            user("c"),
            user("d")
        ],
        "the first turn, its answer and the four user messages are all kept"
    );

    // `seshat compact` ignores the breaker; its success clears it, and the session goes on.
    let session = v["session"].as_str().unwrap().to_string();
    let out =
        home.cmd().env("ANTHROPIC_API_KEY", KEY).args(["compact", &session, "--window", "30000"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 calls to claude-opus-4-5"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(home.store().session(&session).unwrap().compaction_failures, 0, "the breaker is cleared");
    let summary = &server.requests()[server.count() - 1];
    assert_eq!(summary.json()["stream"], Value::Null, "the summary call is not streamed");
    let out = chat(&home, &[&["--continue", "-p", "e"][..], &w[..]].concat(), &[]);
    assert_eq!(json_of(&out)["text"], "Back on track.", "{}", String::from_utf8_lossy(&out.stderr));
}

/// A library-level agent (the Rust SDK) on `server`, with its own home.
pub fn sdk_agent(home: &Home, server: &Server, tools: seshat::client::Tools, options: AgentOptions) -> Agent {
    let dirs = seshat::paths::Dirs::under(home.path());
    let config = seshat::ClientOptions {
        auto_compact: true,
        store: Some(home.location()),
        dirs: Some(dirs),
        project: Some(home.path().display().to_string()),
        ..Default::default()
    };
    std::fs::write(
        home.path().join("config.toml"),
        // The key comes from a variable cargo sets for every test process (this process's
        // environment cannot be changed safely): the server requires one, as Anthropic does.
        format!("[providers.anthropic]\nbase_url = \"{}\"\napi_key_env = \"CARGO_PKG_NAME\"\n[providers.anthropic.models.tiny-model]\ncontext_window = 50000\nmax_output_tokens = 700\n", server.url()),
    )
    .unwrap();
    let mut client = seshat::Client::new(config, std::sync::Arc::new(crate::compaction::Scripted::default())).unwrap();
    let mut provider = client.load_provider(Some("anthropic")).unwrap();
    // In this process the environment's proxy variables would apply: this test sets none.
    provider.set_transport(seshat::providers::Settings { env_proxy: false, ..Default::default() }).unwrap();
    let provider = SharedProvider::new(provider);
    client.set_models(std::sync::Arc::new(provider.clone()));
    Agent::open(client, provider, tools, AgentOptions { project: home.path().display().to_string(), ..options })
        .unwrap()
}

use seshat::client::{Agent, AgentOptions, Quiet, SessionChoice};
use seshat::providers::{Cancel, SharedProvider};

struct Clock;

impl seshat::client::Tool for Clock {
    fn definition(&self) -> seshat::tool::ToolDef {
        seshat::tool::ToolDef::new(
            "clock",
            "The time in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )
        .read_only()
    }

    fn call(&mut self, arguments: &Value) -> seshat::tool::ToolOutput {
        match arguments["city"].as_str() {
            Some("Paris") => seshat::tool::ToolOutput::text("12:00"),
            Some(other) => seshat::tool::ToolOutput::error(format!("no clock for {other}")),
            None => seshat::tool::ToolOutput::error("`city` is required"),
        }
    }
}

#[test]
fn the_sdk_registers_application_tools_and_encodes_each_message_once() {
    let mut first = vec![anthropic::start(50)];
    first.extend(anthropic::tool_block(0, "toolu_a", "clock", r#"{"city":"Paris"}"#));
    first.extend(anthropic::tool_block(1, "toolu_b", "clock", r#"{"city":"Oslo"}"#));
    first.extend(anthropic::stop("tool_use", 10));
    let server = Server::start(vec![
        Reply::Stream { pieces: first },
        Reply::Stream { pieces: anthropic::text_answer(&["Noon in Paris."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["Bye."]) },
    ]);
    let home = Home::new();
    let mut tools = seshat::client::Tools::none();
    tools.register(Box::new(Clock));
    let options = AgentOptions { model: Some("tiny-model".into()), ..AgentOptions::default() };
    let mut agent = sdk_agent(&home, &server, tools, options);
    assert_eq!(agent.tool_specs().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["clock"]);
    let out = agent.turn("time in Paris and Oslo?", &Cancel::default(), &mut Quiet).unwrap();
    assert_eq!(out.text, "Noon in Paris.");
    assert_eq!(out.context.unwrap().window, 50_000, "the configured model's window");
    assert_eq!(server.requests()[0].json()["max_tokens"], 700, "the configured model's output limit");
    let results = &server.requests()[1].json()["messages"][2]["content"];
    assert_eq!(results[0]["content"], "12:00");
    assert_eq!(
        (results[1]["content"].as_str(), results[1]["is_error"].as_bool()),
        (Some("no clock for Oslo"), Some(true))
    );

    // Encoding: the first request encoded 1 message, the second 2 new ones plus the first again
    // (now without its cache breakpoint); the next turn encodes only what is new.
    let calls = |a: &mut Agent| a.provider().lock().encode_calls();
    assert_eq!(calls(&mut agent), 1 + 3);
    agent.turn("thanks", &Cancel::default(), &mut Quiet).unwrap();
    assert_eq!(calls(&mut agent), 1 + 3 + 3, "new: the answer and `thanks`; again: the tool results");
    let (second, third) = (server.requests()[1].body.clone(), server.requests()[2].body.clone());
    let head = second.find("\"messages\":[").unwrap();
    assert_eq!(second[..head], third[..head], "the request prefix is byte-stable");
}

#[test]
fn thinking_goes_back_only_to_the_model_that_wrote_it() {
    let mut first = vec![anthropic::start(50)];
    first.push(anthropic::event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    ));
    for d in [
        json!({"type": "thinking_delta", "thinking": "Let me think."}),
        json!({"type": "signature_delta", "signature": "SIG"}),
    ] {
        first.push(anthropic::event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": d}),
        ));
    }
    first.extend(anthropic::text_block(1, &["Thought."]));
    first.extend(anthropic::stop("end_turn", 10));
    let server = Server::start(vec![
        Reply::Stream { pieces: first },
        Reply::Stream { pieces: anthropic::text_answer(&["Same model."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["Other model."]) },
    ]);
    let home = Home::new();
    let mut agent = sdk_agent(&home, &server, seshat::client::Tools::none(), AgentOptions::default());
    agent.turn("think", &Cancel::default(), &mut Quiet).unwrap();
    let session = agent.session().to_string();
    agent.turn("again", &Cancel::default(), &mut Quiet).unwrap();
    let same = server.requests()[1].json();
    assert_eq!(
        same["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Let me think.", "signature": "SIG"})
    );
    drop(agent);
    // Resumed with another model: the reasoning is not passed back, the text is.
    let options = AgentOptions {
        session: SessionChoice::Resume(session[..10].to_string()),
        model: Some("claude-haiku-4-5".into()),
        ..AgentOptions::default()
    };
    let mut agent = sdk_agent(&home, &server, seshat::client::Tools::none(), options);
    assert_eq!(agent.session(), session);
    agent.turn("third", &Cancel::default(), &mut Quiet).unwrap();
    let other = server.requests()[2].json();
    assert_eq!(other["model"], "claude-haiku-4-5");
    assert_eq!(other["messages"][1]["content"], json!([{"type": "text", "text": "Thought."}]));
    assert_eq!(other["messages"][3]["content"][0]["text"], "Same model.");
}

#[test]
fn resuming_with_a_smaller_window_rechecks_it_before_the_first_call() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["ok"]) }]);
    let home = home_for("anthropic", &server, "");
    let big = format!("x {}", "lorem ipsum dolor ".repeat(3_000)); // ~13k tokens
    let out = chat(&home, &["-p", &big, "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["context"]["window"], 200_000);
    let out =
        chat(&home, &["--continue", "--model", "claude-haiku-4-5", "--window", "12000", "-p", "go", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "compact_full", "{v}");
    assert_eq!(server.count(), 1, "nothing was sent with the smaller window");
    let session = home.store().list_sessions(&Default::default()).unwrap().remove(0);
    assert_eq!((session.model.as_deref(), session.context_window), (Some("claude-haiku-4-5"), Some(12_000)));
}

#[test]
fn base_url_environment_variables_and_proxies_are_honoured() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["via env"]) }]);
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), "[plugins]\nprovider = \"anthropic\"\n").unwrap();
    let out = chat(&home, &["-p", "hi"], &[("ANTHROPIC_BASE_URL", &server.url())]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.count(), 1);

    // HTTP_PROXY routes the request through the proxy (absolute-form target); NO_PROXY exempts it.
    let target = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["direct"]) }]);
    let proxy = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["proxied"]) }]);
    let env = [("ANTHROPIC_BASE_URL", target.url()), ("HTTP_PROXY", proxy.url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = chat(&home, &["-p", "hi"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "proxied\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(proxy.requests()[0].path, format!("{}/v1/messages", target.url()));
    let mut env = env.clone();
    env.push(("NO_PROXY", "127.0.0.1"));
    let out = chat(&home, &["-p", "hi"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "direct\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((target.count(), proxy.count()), (1, 1));
}

#[test]
fn piped_stdin_is_the_prompt_or_follows_it() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["one"]) },
        Reply::Stream { pieces: anthropic::text_answer(&["two"]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let run = |args: &[&str], input: &str| {
        let mut child = home
            .cmd()
            .env("ANTHROPIC_API_KEY", KEY)
            .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
            .arg("chat")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run(&[], "from a pipe\n"), "one\n");
    assert_eq!(run(&["--continue", "-p", "review this"], "diff --git a b\n"), "two\n");
    let last = |i: usize| {
        server.requests()[i].json()["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"].clone()
    };
    assert_eq!(last(0), "from a pipe\n");
    assert_eq!(last(1), "review this\n\ndiff --git a b\n");
    let out = home.cmd().args(["chat", "-p", "  "]).env("ANTHROPIC_API_KEY", KEY).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("the prompt is empty"));
}

#[test]
fn no_auto_compact_sends_the_whole_history_while_it_fits() {
    let big = format!("one {}", "alpha beta gamma delta ".repeat(1_700));
    let server = Server::start(vec![answer_at(20_000, "Got one."), answer_at(20_100, "Got two.")]);
    let home = home_for("anthropic", &server, "");
    let w = ["--window", "30000", "--json"];
    let out = chat(&home, &[&["-p", big.as_str()][..], &w[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = chat(&home, &[&["--continue", "--no-auto-compact", "-p", "two"][..], &w[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["compactions"], json!([]), "past the threshold, but auto-compaction is off for this run");
    assert_eq!(server.count(), 2, "no summary call");
    assert!(server.requests()[1].body.contains("alpha beta gamma"), "the whole history went out");
}

#[test]
fn an_answer_past_the_size_cap_is_cut_and_kept_as_interrupted() {
    let mut pieces = vec![anthropic::start(10)];
    let chunk = "y".repeat(64 << 10);
    let deltas: Vec<&str> = std::iter::repeat_n(chunk.as_str(), 24).collect(); // 1.5 MiB of text
    pieces.extend(anthropic::text_block(0, &deltas));
    pieces.extend(anthropic::stop("end_turn", 10));
    let server = Server::start(vec![Reply::Stream { pieces }]);
    let home = home_for("anthropic", &server, "max_response_mib = 1\n");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "response_too_large", "{v}");
    assert!(v["error"].as_str().unwrap().contains("1 MiB cap (max_response_mib)"), "{v}");
    let history = home.store().full_history(v["session"].as_str().unwrap()).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].status, MessageStatus::Interrupted);
    let kept = match &history[1].parts[0] {
        Part::Text { text } => text.len(),
        other => panic!("{other:?}"),
    };
    assert!(kept > 0 && kept < 1 << 20, "what arrived under the cap is kept: {kept} bytes");
}

#[test]
fn a_server_that_never_starts_answering_hits_the_first_byte_timeout() {
    let server = Server::start(vec![Reply::Silent { pause: Duration::from_secs(5) }]);
    let home = home_for("anthropic", &server, "");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"{}\"\nfirst_byte_timeout_secs = 1\n",
            server.url()
        ),
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "timeout", "{v}");
    assert!(v["error"].as_str().unwrap().contains("waiting for the answer to start"), "{v}");
    assert_eq!(server.count(), 1, "a timeout after sending is not retried (the model may be working on it)");
    assert_eq!(rows(&home, None), vec![r(USER, OK, &["text:hi"])]);
}

#[test]
fn openai_errors_are_mapped_and_redacted() {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = Server::start(vec![Reply::json(401, &body.to_string())]);
    let home = home_for("openai", &server, "");
    let out = chat(&home, &["-p", "hi", "--json", "--model", "gpt-4o"], &[("RUST_LOG", "trace")]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "auth_failed", "{v}");
    let message = v["error"].as_str().unwrap();
    assert!(
        message.contains("Incorrect API key provided: [redacted].") && message.contains("OPENAI_API_KEY"),
        "{message}"
    );
    assert_no_key(&home, &out);
}

#[test]
fn the_iteration_cap_ends_a_tool_loop_and_resume_takes_a_prefix() {
    let search = r#"{"query":"x"}"#;
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::tool_answer("toolu_1", "memory_search_nodes", search) },
        Reply::Stream { pieces: anthropic::text_answer(&["Done searching."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "look it up", "--json", "--max-iterations", "1"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!((v["hit_iteration_cap"].as_bool(), v["iterations"].as_u64()), (Some(true), Some(1)), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped after 1 model calls"));
    assert_eq!(server.count(), 1);
    let session = v["session"].as_str().unwrap();
    assert_eq!(
        rows(&home, Some(session)),
        vec![
            r(USER, OK, &["text:look it up"]),
            r(ASSISTANT, OK, &["text:Let me note that.", &format!("call:toolu_1:memory_search_nodes:{search}")]),
            r(TOOL, OK, &["result:toolu_1:ok"]),
        ],
        "the tool ran and its result is stored before the cap stopped the loop"
    );
    let out = chat(&home, &["--resume", &session[..10].to_lowercase(), "-p", "go on", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["session"], session);
    assert_eq!(json_of(&out)["text"], "Done searching.");
    let out = chat(&home, &["--resume", "zzzzzzzz", "-p", "hi"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("zzzzzzzz"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_system_prompt_holds_the_project_instructions_or_the_configured_file() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["ok"]) },
        Reply::Stream { pieces: anthropic::text_answer(&["ok"]) },
    ]);
    let home = home_for("anthropic", &server, "");
    std::fs::write(home.path().join("AGENTS.md"), "Always answer in haiku.").unwrap();
    std::fs::write(home.path().join("CLAUDE.md"), "Prefer tabs.").unwrap();
    assert!(chat(&home, &["-p", "hi"], &[]).status.success());
    let system = server.requests()[0].json()["system"][0]["text"].as_str().unwrap().to_string();
    assert!(system.starts_with("You are an assistant running in Seshat"), "{system}");
    let (agents, claude) = (system.find("Always answer in haiku.").unwrap(), system.find("Prefer tabs.").unwrap());
    assert!(agents < claude && claude < system.find("# Memory").unwrap(), "{system}");

    std::fs::write(home.path().join("mine.md"), "You are terse.").unwrap();
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap().replace(
        "[chat]\n",
        &format!(
            "[chat]\nsystem_prompt_file = \"{}\"\nproject_instructions = false\n",
            home.path().join("mine.md").display()
        ),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    assert!(chat(&home, &["-p", "hi"], &[]).status.success());
    let system = server.requests()[1].json()["system"][0]["text"].as_str().unwrap().to_string();
    assert!(system.starts_with("You are terse.") && !system.contains("haiku"), "{system}");
}

#[test]
fn the_memory_snapshot_in_the_system_prompt_holds_the_notes_and_entities_and_says_what_it_left_out() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["ok"]) },
        Reply::Stream { pieces: anthropic::text_answer(&["ok"]) },
    ]);
    let home = home_for("anthropic", &server, "");
    home.ok(&["memory", "--action", "set", "--key", "style", "--value", "short answers, no preamble"]);
    let entity = |i: usize| {
        serde_json::from_value(json!({"name": format!("Service {i}"), "entityType": "service",
            "observations": [format!("service {i} listens on port {}", 8000 + i)]}))
        .unwrap()
    };
    let entities: Vec<seshat::memory::NewEntity> = (0..30).map(entity).collect();
    home.store().memory(None).create_entities(&entities, None).unwrap();
    assert!(chat(&home, &["-p", "hi"], &[]).status.success());
    let system = server.requests()[0].json()["system"][0]["text"].as_str().unwrap().to_string();
    let memory = &system[system.find("# Memory").expect("the memory section")..];
    assert!(memory.contains("- style: short answers, no preamble"), "{memory}");
    assert!(memory.contains("- Service 29 (service): service 29 listens on port 8029"), "{memory}");
    assert!(memory.contains("- Service 0 (service): service 0 listens on port 8000"), "{memory}");
    assert!(!memory.contains("Left out"), "everything fits the default budget: {memory}");

    // A small budget: the newest entities are given, and the rest is said to be left out.
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    std::fs::write(home.path().join("config.toml"), format!("{config}\n[memory]\ncontext_tokens = 120\n")).unwrap();
    assert!(chat(&home, &["-p", "hi again"], &[]).status.success());
    let system = server.requests()[1].json()["system"][0]["text"].as_str().unwrap().to_string();
    let memory = &system[system.find("# Memory").unwrap()..];
    assert!(memory.contains("- style: short answers, no preamble"), "{memory}");
    assert!(!memory.contains("Service 0 "), "{memory}");
    assert!(memory.contains("_Left out to stay within 120 tokens:") && memory.contains("entities"), "{memory}");
}

#[test]
fn a_provider_plugin_that_sets_a_credential_header_itself_sends_nothing() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["never"]) }]);
    let home = Home::new();
    let dir = home.path().join("plugins/sneaky");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::PROVIDER, dir.join("plugin.wasm")).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        "id = \"sneaky\"\nkind = \"provider\"\napi = \"0.1.0\"\nallowed_hosts = [\"{base_url}\"]\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[plugins]\nprovider = \"sneaky\"\n[providers.sneaky]\nbase_url = \"{}\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n", server.url()),
    )
    .unwrap();
    let out = chat(&home, &["--model", "sets-auth", "--window", "8192", "-p", "hi", "--json"], &[]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "plugin_failed", "{v}");
    let message = v["error"].as_str().unwrap();
    assert!(
        message.contains("set the credential header `Authorization` itself; only the host adds credentials"),
        "{message}"
    );
    assert_eq!(server.count(), 0, "nothing was sent");
}

#[test]
fn plain_http_to_a_remote_host_is_sent_with_a_warning() {
    // The remote host is reached only through a loopback HTTP proxy (the name is never resolved,
    // nothing leaves this machine); the proxy answers as the server would.
    let proxy = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Over plain http."]) }]);
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"http://models.remote.invalid:8080\"\n\
         max_retries = 0\n",
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi"], &[("HTTP_PROXY", &proxy.url()), ("NO_PROXY", "")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: sending to http://models.remote.invalid:8080 over plain http (not encrypted)"),
        "{err}"
    );
    assert!(!err.contains(KEY));
    let asked = proxy.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("POST", "http://models.remote.invalid:8080/v1/messages"),
        "the request went to the proxy, for the remote host"
    );
    // A loopback base URL is not remote: no warning.
    let local = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Local."]) }]);
    let out = chat(&home_for("anthropic", &local, ""), &["-p", "hi"], &[]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("plain http"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn https_proxy_carries_the_tunnel_and_never_the_key() {
    // A loopback proxy that records what it is asked and refuses the tunnel.
    let proxy = Server::start(vec![]);
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nmax_retries = 0\n",
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi", "--json"], &[("HTTPS_PROXY", &proxy.url())]);
    assert!(!out.status.success());
    let asked = proxy.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!((asked[0].method.as_str(), asked[0].path.as_str()), ("CONNECT", "api.anthropic.com:443"));
    // The fake is a proxy here: the tunnel it refused is the one request it expected.
    assert_eq!(proxy.unexpected(), ["CONNECT api.anthropic.com:443: no endpoint api.anthropic.com:443"]);
    assert!(asked[0].headers.iter().all(|(_, v)| !v.contains(KEY)), "the key never reaches the proxy: {asked:?}");
    assert!(!asked[0].headers.is_empty());
    let v = json_of(&out);
    assert!(!v["error"].as_str().unwrap().contains(KEY));
}

#[test]
fn a_429_or_5xx_after_the_retries_is_rate_limited_or_server_error_with_the_servers_message() {
    let cases = [
        (
            "openai",
            429,
            r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#,
            "rate_limited",
            "Rate limit reached",
        ),
        (
            "openai",
            503,
            r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#,
            "server_error",
            "The server is overloaded",
        ),
        ("openai", 500, "upstream connect error", "server_error", "upstream connect error"),
        (
            "anthropic",
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#,
            "rate_limited",
            "exceeded your rate limit",
        ),
        ("anthropic", 502, "<html><body><h1>502 Bad Gateway</h1></body></html>", "server_error", "502 Bad Gateway"),
        ("openai", 429, "", "rate_limited", "HTTP 429"),
    ];
    // A 5 MB error page: the error keeps its start and the hint, not the page.
    let page =
        format!("<html><body><h1>503 Service Unavailable</h1>{}</body></html>", "<p>lorem ipsum</p>".repeat(300_000));
    let big = [("openai", 503, page.as_str(), "server_error", "503 Service Unavailable")];
    for (provider, status, body, code, message) in cases.into_iter().chain(big) {
        let server =
            Server::start(vec![Reply::json(status, body), Reply::json(status, body), Reply::json(status, body)]);
        let home = home_for(provider, &server, "");
        let out = chat(
            &home,
            &["-p", "hi", "--json", "--model", if provider == "openai" { "gpt-4o" } else { "claude-sonnet-4-5" }],
            &[],
        );
        let v = json_of(&out);
        assert_eq!(v["error_code"], code, "{provider} {status}: {v}");
        assert!(v["error"].as_str().unwrap().contains(message), "{provider} {status}: {v}");
        assert_eq!(server.count(), 3, "{provider} {status}: one try and max_retries = 2");
        let error = v["error"].as_str().unwrap();
        assert!(error.len() < 3_000, "{provider} {status}: the error is {} bytes long", error.len());
        if status >= 500 {
            assert!(error.ends_with("retry later)"), "{provider} {status}: the hint is kept: {error}");
        }
    }
}

#[test]
fn a_dated_claude_model_id_finds_its_window() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Dated."]) }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["--model", "claude-sonnet-4-5-20250929", "--json", "-p", "hi"], &[]);
    let v = json_of(&out);
    assert_eq!(
        (v["context"]["window"].as_u64(), v["context"]["source"].as_str()),
        (Some(200_000), Some("table")),
        "{v}"
    );
    assert_eq!(server.requests()[0].json()["model"], "claude-sonnet-4-5-20250929", "the id is sent as given");
}
