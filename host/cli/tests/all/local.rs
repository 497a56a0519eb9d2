//! Seshat against the models people actually run: local OpenAI-compatible servers (llama.cpp,
//! Ollama, vLLM, LM Studio) that list no window and send no usage, and providers whose real window
//! is smaller than Seshat believes. Each loopback server speaks its own real JSON, routes by path
//! (404 for the others' endpoints), checks the headers of what it receives, and counts every chat
//! request it receives by Seshat's documented estimate (characters / 4, rounded up, per text;
//! 4 per message) to check it fits its window with its `max_tokens`.

use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::chat::{KEY, json_of};
use crate::support::Home;
use crate::support::server::{Recorded, Reply, Server, anthropic, openai};

/// Seshat's estimate of a text (four characters a token for prose, more for code, logs, JSON and
/// identifiers): what a server counting like Seshat would count.
fn est(s: &str) -> u64 {
    seshat::window::estimate_text(s)
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The estimate of an OpenAI chat request's input, as a server counting like Seshat would.
fn openai_input(body: &Value) -> u64 {
    let mut t = 0;
    for tool in body["tools"].as_array().into_iter().flatten() {
        let f = &tool["function"];
        t += est(str_of(&f["name"])) + est(str_of(&f["description"])) + est(&f["parameters"].to_string());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "system" {
            t += est(str_of(&m["content"]));
            continue;
        }
        t += 4 + est(str_of(&m["content"])) + est(str_of(&m["tool_call_id"]));
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            t += est(str_of(&c["id"])) + est(str_of(&c["function"]["name"])) + est(str_of(&c["function"]["arguments"]));
        }
    }
    t
}

/// An OpenAI chat request's input counted with a real tokenizer denser than Seshat's estimate on
/// code and logs (GPT-2's `r50k_base`, which splits runs of spaces, identifiers and digits finely):
/// every text the request carries, plus four tokens a message.
pub(crate) fn real_input(body: &Value) -> u64 {
    let bpe = tiktoken_rs::r50k_base_singleton();
    let count = |s: &str| bpe.count_ordinary(s) as u64;
    let mut t = 0;
    for tool in body["tools"].as_array().into_iter().flatten() {
        let f = &tool["function"];
        t += count(str_of(&f["name"])) + count(str_of(&f["description"])) + count(&f["parameters"].to_string());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        t += 4 + count(str_of(&m["content"])) + count(str_of(&m["tool_call_id"]));
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            t += count(str_of(&c["id"]))
                + count(str_of(&c["function"]["name"]))
                + count(str_of(&c["function"]["arguments"]));
        }
    }
    t
}

/// An OpenAI chat request's input at a token a byte, plus four tokens a message.
pub(crate) fn byte_input(body: &Value) -> u64 {
    let mut t = 0;
    for m in body["messages"].as_array().into_iter().flatten() {
        t += 4 + str_of(&m["content"]).len() as u64 + str_of(&m["tool_call_id"]).len() as u64;
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            t += c["function"].to_string().len() as u64;
        }
    }
    t + body["tools"].as_array().map_or(0, |tools| tools.iter().map(|t| t.to_string().len() as u64).sum())
}

/// The estimate of an Anthropic Messages request's input.
pub(crate) fn anthropic_input(body: &Value) -> u64 {
    let mut t = 0;
    for block in body["system"].as_array().into_iter().flatten() {
        t += est(str_of(&block["text"]));
    }
    t += est(str_of(&body["system"]));
    for tool in body["tools"].as_array().into_iter().flatten() {
        t += est(str_of(&tool["name"])) + est(str_of(&tool["description"])) + est(&tool["input_schema"].to_string());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        t += 4;
        for b in m["content"].as_array().into_iter().flatten() {
            t += est(str_of(&b["text"])) + est(str_of(&b["tool_use_id"])) + est(str_of(&b["content"]));
            if b["type"] == "tool_use" {
                t += est(str_of(&b["id"])) + est(str_of(&b["name"])) + est(&b["input"].to_string());
            }
        }
    }
    t
}

/// Which server a loopback emulates: what it answers about its models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// llama.cpp's `llama-server`: `/props` has the runtime `n_ctx`; `/v1/models` only the
    /// trained length.
    LlamaCpp,
    /// Ollama with the model loaded: `/api/ps` has its `context_length`.
    Ollama,
    /// Ollama with the model not loaded: `/api/show` parameters carry `num_ctx`.
    OllamaShow,
    /// Ollama with no `num_ctx` anywhere: it runs its default, 4,096.
    OllamaDefault,
    /// vLLM: `/v1/models` has `max_model_len`.
    Vllm,
    /// LM Studio: `/api/v0/models` has `loaded_context_length`.
    LmStudio,
    /// A server (or a proxy in front of one) that answers none of the questions.
    Bare,
}

/// How a server treats a request longer than its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// OpenAI's refusals: `context_length_exceeded`, or "you requested N tokens (a in the messages,
    /// b in the completion)".
    OpenAi,
    /// llama.cpp's `exceed_context_size_error` with `n_ctx` (the prompt alone is checked).
    LlamaCpp,
    /// vLLM's 400 "maximum context length is N tokens. However, you requested …".
    Vllm,
    /// Ollama: silently keeps the end of the prompt and reports the prompt tokens it kept.
    Truncate,
    /// Every chat request is refused as too long, whatever its size.
    Always,
    /// Refuses a request that does not fit with a body that names no number.
    Unnamed,
    /// Its tokenizer counts 1.8 tokens for each one Seshat estimates; it reports the prompt
    /// tokens it counted, and checks its window by them.
    CountsMore,
    /// llama-cpp-python's server: counts with a real tokenizer ([`real_input`]) and refuses any
    /// request, chat or summary, whose count plus `max_tokens` exceeds the window, naming both.
    RealTokenizer,
    /// The same, counting a token for every byte: denser than any tokenizer, so Seshat's
    /// estimate (and its prior) undercounts every request.
    ByteTokenizer,
}

/// A token-counting endpoint a server offers, in its real shape (answering the others' requests
/// as that server does: an empty list, a validation error, a 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// llama.cpp's `POST /tokenize`: `{"content": …}` → `{"tokens": […]}`.
    LlamaCpp,
    /// vLLM's `POST /tokenize`: `{"model", "messages"}` → `{"count", "max_model_len", "tokens"}`.
    Vllm,
    /// llama-cpp-python's `POST /extras/tokenize/count`: `{"input": …}` → `{"count": N}`.
    LlamaCppPython,
    /// Every counting endpoint fails with a 500.
    Failing,
}

/// The real-token factor of [`Over::CountsMore`], in tenths.
const COUNTS_MORE_TENTHS: u64 = 18;

/// What a server saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Chat requests that did not fit the window with their `max_tokens` (must stay empty where
    /// the server is strict and Seshat knows the window).
    pub(crate) overflows: Vec<String>,
    /// Refusals sent.
    pub(crate) refusals: u32,
    /// Chat requests answered (summaries included).
    answered: u32,
    /// Requests with a wrong path, method or headers.
    pub(crate) bad: Vec<String>,
    /// The messages of every request refused for its length ([`Over::RealTokenizer`]).
    pub(crate) refused_bodies: Vec<String>,
    /// Every count a counting endpoint answered, in order.
    pub(crate) counted: Vec<u64>,
}

pub(crate) struct Local {
    pub(crate) server: Server,
    seen: Arc<Mutex<Seen>>,
}

pub(crate) const MODEL: &str = "qwen-local";

impl Drop for Local {
    /// Every test using a `Local` fails if the server saw a request it should not have (a wrong
    /// path, a missing key or content type): collected by the server, asserted here.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let bad = self.take_bad();
        assert!(bad.is_empty(), "the local server received requests it should not have: {bad:?}");
    }
}

impl Local {
    pub(crate) fn start(kind: Kind, window: u64, over: Option<Over>) -> Self {
        Local::with_counter(kind, window, over, None)
    }

    /// A server that also counts tokens at `counter`'s endpoint, as its chat endpoint counts
    /// them (by `over`'s tokenizer).
    pub(crate) fn with_counter(kind: Kind, window: u64, over: Option<Over>, counter: Option<Counter>) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        let turn = Arc::new(Mutex::new(0u32));
        let server = Server::route(move |r| match count_answer(counter, window, over, r) {
            Some(reply) => {
                if let Reply::Full { status: 200, body, .. } = &reply
                    && let Ok(v) = serde_json::from_slice::<Value>(body)
                {
                    let n = v["count"].as_u64().or_else(|| v["tokens"].as_array().map(|t| t.len() as u64));
                    s.lock().unwrap().counted.extend(n);
                }
                reply
            }
            None => answer(kind, window, over, r, &s, &turn),
        });
        Local { server, seen }
    }

    /// The requests sent to a counting endpoint.
    pub(crate) fn counts(&self) -> Vec<Recorded> {
        self.server.requests().into_iter().filter(|r| COUNT_PATHS.contains(&r.path.as_str())).collect()
    }

    pub(crate) fn base(&self) -> String {
        format!("{}/v1", self.server.url())
    }

    /// Requests other than chat completions and counts (the probes).
    fn probes(&self) -> Vec<String> {
        self.server
            .requests()
            .iter()
            .filter(|r| r.path != "/v1/chat/completions" && !COUNT_PATHS.contains(&r.path.as_str()))
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    pub(crate) fn chats(&self) -> Vec<Recorded> {
        self.server.requests().into_iter().filter(|r| r.path == "/v1/chat/completions").collect()
    }

    /// Takes the requests the server found wrong so far (a test that sends them on purpose
    /// asserts on them; the check on drop then passes).
    fn take_bad(&self) -> Vec<String> {
        std::mem::take(&mut self.seen.lock().unwrap().bad)
    }

    pub(crate) fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }
}

/// The paths of the counting endpoints.
const COUNT_PATHS: [&str; 2] = ["/tokenize", "/extras/tokenize/count"];

/// A text's tokens as a server counting by `over`'s tokenizer counts them.
fn count_text(over: Option<Over>, text: &str) -> u64 {
    match over {
        Some(Over::RealTokenizer) => tiktoken_rs::r50k_base_singleton().count_ordinary(text) as u64,
        Some(Over::ByteTokenizer) => text.len() as u64,
        _ => est(text),
    }
}

/// The answer of `counter`'s endpoints (and the others' answers to what they do not know), or
/// `None` for a request that is not a count. The bearer key is checked with every request.
fn count_answer(counter: Option<Counter>, window: u64, over: Option<Over>, r: &Recorded) -> Option<Reply> {
    let counter = counter?;
    if r.method != "POST" || !COUNT_PATHS.contains(&r.path.as_str()) {
        return None;
    }
    let body = r.json();
    Some(match (counter, r.path.as_str()) {
        (Counter::Failing, _) => Reply::json(500, r#"{"error":{"code":500,"message":"tokenizer crashed"}}"#),
        (Counter::LlamaCpp, "/tokenize") => {
            // llama.cpp tokenizes `content` (a string); a body without one gets no tokens.
            let n = body["content"].as_str().map_or(0, |t| count_text(over, t));
            Reply::json(200, &json!({"tokens": (0..n).map(|i| i % 50_000).collect::<Vec<_>>()}).to_string())
        }
        (Counter::Vllm, "/tokenize") if body["messages"].is_array() && body["model"] == MODEL => {
            // The chat template applied: as the chat endpoint counts the same messages.
            let n = match over {
                Some(Over::RealTokenizer) => real_input(&body),
                Some(Over::ByteTokenizer) => byte_input(&body),
                _ => openai_input(&body),
            };
            Reply::json(
                200,
                &json!({"count": n, "max_model_len": window, "tokens": (0..n).collect::<Vec<_>>(), "token_strs": null})
                    .to_string(),
            )
        }
        (Counter::Vllm, "/tokenize") => Reply::json(
            400,
            &json!({"object": "error", "message": "1 validation error for TokenizeChatRequest: messages: Field required",
                "type": "BadRequestError", "param": null, "code": 400})
            .to_string(),
        ),
        (Counter::LlamaCppPython, "/extras/tokenize/count") => match body["input"].as_str() {
            Some(t) => Reply::json(200, &json!({"count": count_text(over, t)}).to_string()),
            None => Reply::json(422, r#"{"detail":[{"loc":["body","input"],"msg":"field required"}]}"#),
        },
        _ => not_found(),
    })
}

fn not_found() -> Reply {
    Reply::json(404, r#"{"error":"not found"}"#)
}

fn answer(kind: Kind, window: u64, over: Option<Over>, r: &Recorded, seen: &Mutex<Seen>, turn: &Mutex<u32>) -> Reply {
    if r.header("authorization") != Some(&format!("Bearer {KEY}")) {
        seen.lock().unwrap().bad.push(format!("{} {} without the bearer key", r.method, r.path));
    }
    let ollama = matches!(kind, Kind::Ollama | Kind::OllamaShow | Kind::OllamaDefault);
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v1/models") if kind != Kind::Bare => {
            let entry = match kind {
                Kind::LlamaCpp => json!({"id": MODEL, "object": "model", "meta": {"n_ctx_train": 32_768}}),
                Kind::Vllm => json!({"id": MODEL, "object": "model", "max_model_len": window}),
                _ => json!({"id": MODEL, "object": "model", "owned_by": "local"}),
            };
            Reply::json(
                200,
                &json!({"object": "list", "data": [entry, {"id": "other-model", "object": "model"}]}).to_string(),
            )
        }
        ("GET", "/props") if kind == Kind::LlamaCpp => Reply::json(
            200,
            &json!({"default_generation_settings": {"n_ctx": window, "n_predict": -1}, "total_slots": 1}).to_string(),
        ),
        ("GET", "/api/ps") if ollama => {
            let models = if kind == Kind::Ollama {
                json!([{"name": MODEL, "model": MODEL, "size": 5_000_000_000u64, "context_length": window}])
            } else {
                json!([])
            };
            Reply::json(200, &json!({"models": models}).to_string())
        }
        ("POST", "/api/show") if ollama => {
            if r.json()["model"] != MODEL {
                seen.lock().unwrap().bad.push(format!("/api/show for {}", r.body));
            }
            let parameters = if kind == Kind::OllamaDefault {
                "stop \"<|im_end|>\"".to_string()
            } else {
                format!("num_ctx {window}\nstop \"<|im_end|>\"")
            };
            Reply::json(
                200,
                &json!({"modelfile": "FROM qwen", "parameters": parameters,
                    "model_info": {"qwen2.context_length": 32_768}})
                .to_string(),
            )
        }
        ("GET", "/api/v0/models") if kind == Kind::LmStudio => Reply::json(
            200,
            &json!({"data": [{"id": MODEL, "loaded_context_length": window, "max_context_length": 32_768}]})
                .to_string(),
        ),
        ("POST", "/v1/chat/completions") => chat_answer(window, over, r, seen, turn),
        _ => not_found(),
    }
}

/// OpenAI-compatible chat: refuses, truncates or answers; tool calls on every other turn when
/// tools are offered.
fn chat_answer(window: u64, over: Option<Over>, r: &Recorded, seen: &Mutex<Seen>, turn: &Mutex<u32>) -> Reply {
    if r.header("content-type") != Some("application/json") {
        seen.lock().unwrap().bad.push("chat without a JSON content type".into());
    }
    let body = r.json();
    let estimated = openai_input(&body);
    let input = match over {
        Some(Over::CountsMore) => estimated * COUNTS_MORE_TENTHS / 10,
        Some(Over::RealTokenizer) => real_input(&body),
        Some(Over::ByteTokenizer) => byte_input(&body),
        _ => estimated,
    };
    let max = body["max_tokens"].as_u64().unwrap_or(0);
    let refuse = |message: String, code: Value| {
        seen.lock().unwrap().refusals += 1;
        Reply::json(
            400,
            &json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages",
            "code": code}})
            .to_string(),
        )
    };
    match over {
        Some(Over::Always) => {
            return refuse(
                format!(
                    "This model's maximum context length is {window} tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.",
                    window + 1_000
                ),
                json!("context_length_exceeded"),
            );
        }
        Some(Over::OpenAi) if input > window => {
            return refuse(
                format!(
                    "This model's maximum context length is {window} tokens. However, your messages resulted in {input} tokens. Please reduce the length of the messages."
                ),
                json!("context_length_exceeded"),
            );
        }
        Some(Over::OpenAi) if input + max > window => {
            return refuse(
                format!(
                    "This model's maximum context length is {window} tokens. However, you requested {} tokens ({input} in the messages, {max} in the completion). Please reduce the length of the messages or completion.",
                    input + max
                ),
                Value::Null,
            );
        }
        Some(Over::Unnamed) if input + max > window => {
            return refuse("Request too long for this model.".into(), json!("context_length_exceeded"));
        }
        Some(Over::RealTokenizer | Over::ByteTokenizer) if input + max > window => {
            // What a request was refused for: a request refused twice would show here twice.
            seen.lock().unwrap().refused_bodies.push(body["messages"].to_string());
            return refuse(
                format!(
                    "This model's maximum context length is {window} tokens. However, you requested {} tokens ({input} in the messages, {max} in the completion). Please reduce the length of the messages or completion.",
                    input + max
                ),
                Value::Null,
            );
        }
        Some(Over::Vllm) if input + max > window => {
            seen.lock().unwrap().refusals += 1;
            return Reply::json(400, &json!({"object": "error", "message": format!("This model's maximum context length is {window} tokens. However, you requested {} tokens ({input} in the messages, {max} in the completion). Please reduce the length of the messages or completion.", input + max), "type": "BadRequestError", "param": null, "code": 400}).to_string());
        }
        Some(Over::LlamaCpp) if input > window => {
            seen.lock().unwrap().refusals += 1;
            return Reply::json(400, &json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": input, "n_ctx": window}}).to_string());
        }
        _ => {}
    }
    let truncated = over == Some(Over::Truncate) && input + max > window;
    if input + max > window && !truncated {
        seen.lock().unwrap().overflows.push(format!("input {input} + max_tokens {max} > {window}"));
    }
    seen.lock().unwrap().answered += 1;
    if body["stream"] != true {
        // A summary request (whole answer, no tools).
        let summary = format!(
            "Summary: the user sent numbered notes; {} messages were summarised.",
            body["messages"].as_array().map_or(0, Vec::len)
        );
        return Reply::json(
            200,
            &json!({"id": "s", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": summary}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": input, "completion_tokens": est(&summary)}})
            .to_string(),
        );
    }
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    let offered =
        body["tools"].as_array().into_iter().flatten().any(|t| t["function"]["name"] == "memory_search_nodes");
    let mut n = turn.lock().unwrap();
    *n += 1;
    if offered && last["role"] == "user" && (*n).is_multiple_of(2) {
        return Reply::Stream {
            pieces: openai::tool_answer(&format!("call_{n}"), "memory_search_nodes", r#"{"query":"notes"}"#),
        };
    }
    let text = format!("Noted, turn {n}. {}", "Understood and recorded. ".repeat(8));
    if truncated {
        // Ollama keeps what fits and says how much it read.
        let kept = window.saturating_sub(200);
        let mut pieces = openai::text_answer(&[&text], false);
        let done = pieces.pop().unwrap();
        pieces.push(openai::chunk(
            &json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": kept, "completion_tokens": 40}}),
        ));
        pieces.push(done);
        return Reply::Stream { pieces };
    }
    if over == Some(Over::CountsMore) {
        let mut pieces = openai::text_answer(&[&text], false);
        let done = pieces.pop().unwrap();
        pieces.push(openai::chunk(
            &json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": 40}}),
        ));
        pieces.push(done);
        return Reply::Stream { pieces };
    }
    // Like llama-cpp-python: no usage when streaming.
    Reply::Stream { pieces: openai::text_answer(&[&text], false) }
}

/// A home whose config points the openai provider at `base` (no answer cap, so Seshat sizes the
/// answer itself), with `extra` appended.
pub(crate) fn home_at(provider: &str, base: &str, extra: &str) -> Home {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"{provider}\"\n[providers.{provider}]\nbase_url = \"{base}\"\n\
             first_byte_timeout_secs = 10\nidle_timeout_secs = 5\nmax_retries = 0\n{extra}"
        ),
    )
    .unwrap();
    home
}

/// `seshat chat args…` with the test key for both families.
pub(crate) fn run(home: &Home, args: &[&str]) -> Output {
    home.cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("OPENAI_API_KEY", KEY)
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .arg("chat")
        .args(args)
        .output()
        .expect("run seshat chat")
}

pub(crate) fn ok_json(out: &Output) -> Value {
    let v = json_of(out);
    assert!(out.status.success() && v["error"].is_null(), "{v}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    v
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A note of about `tokens` tokens.
fn note(i: usize, tokens: usize) -> String {
    let mut s = format!("Note {i}: ");
    while est(&s) < tokens as u64 {
        s.push_str("the build step writes the cache key to disk. ");
    }
    s
}

/// Compactions recorded in the home's only session.
fn compactions(home: &Home) -> Vec<seshat::store::Compaction> {
    let store = home.store();
    let id = store.list_sessions(&Default::default()).unwrap()[0].id.clone();
    store.compactions(&id).unwrap()
}

fn small_window_chat(kind: Kind, window: u64, turns: usize, tokens: usize, tool_rounds: bool) {
    let local = Local::start(kind, window, None);
    let home = home_at("openai", &local.base(), "");
    for i in 0..turns {
        let prompt = note(i, tokens);
        let mut args = vec!["--model", MODEL, "--json", "-p", &prompt];
        if i > 0 {
            args.push("--continue");
        }
        let out = run(&home, &args);
        let v = ok_json(&out);
        assert_eq!(v["context"]["window"], window, "turn {i}: {v}");
        assert_eq!(v["context"]["source"], "discovered", "turn {i}");
        assert!(v["text"].as_str().unwrap().starts_with("Noted"), "turn {i}: {v}");
    }
    let seen = local.seen();
    assert!(seen.bad.is_empty(), "{:?}", seen.bad);
    assert!(seen.overflows.is_empty(), "requests that did not fit the {window}-token window: {:?}", seen.overflows);
    assert!(seen.answered as usize >= turns, "{}", seen.answered);
    drop(seen);
    let done = compactions(&home);
    assert!(!done.is_empty(), "the window filled: at least one automatic compaction");
    assert!(done.iter().any(|c| c.summary.is_some()), "{done:?}");
    // Every chat request carried tools only while they fitted, and a max_tokens that fits.
    let chats = local.chats();
    assert!(chats.len() >= turns);
    for c in &chats {
        let body = c.json();
        assert!(body["max_tokens"].as_u64().unwrap() <= seshat::window::Marks::new(window).max_output(u64::MAX));
    }
    let answered_tools =
        chats.iter().filter(|c| c.json()["messages"].as_array().unwrap().last().unwrap()["role"] == "tool").count();
    if tool_rounds {
        assert!(answered_tools >= turns / 2 - 1, "tool results went back to the model: {answered_tools}");
    }
}

#[test]
fn twenty_tool_using_turns_on_an_unknown_8k_model_compact_and_every_request_fits() {
    small_window_chat(Kind::LlamaCpp, 8_192, 20, 450, true);
}

#[test]
fn five_turns_on_a_4k_window_compact_and_every_request_fits() {
    small_window_chat(Kind::OllamaDefault, 4_096, 5, 380, false);
}

#[test]
fn each_local_servers_window_is_discovered_once_and_asked_again_after_a_day() {
    let all = ["GET /v1/models", "GET /props", "GET /api/ps", "POST /api/show", "GET /api/v0/models"];
    for (kind, window, asked) in [
        (Kind::LlamaCpp, 8_192, 2),
        (Kind::Ollama, 12_288, 3),
        (Kind::OllamaShow, 6_144, 4),
        (Kind::OllamaDefault, 4_096, 4),
        (Kind::Vllm, 16_384, 1),
        (Kind::LmStudio, 10_240, 5),
    ] {
        let local = Local::start(kind, window, None);
        let home = home_at("openai", &local.base(), "");
        let v = ok_json(&run(&home, &["--model", MODEL, "--json", "-p", "hi"]));
        let expected = if kind == Kind::OllamaDefault { 4_096 } else { window };
        assert_eq!(
            (v["context"]["window"].as_u64(), v["context"]["source"].as_str()),
            (Some(expected), Some("discovered")),
            "{kind:?}"
        );
        assert_eq!(local.probes(), all[..asked], "{kind:?}: probes in order, stopping at the first that tells");
        assert!(local.seen().bad.is_empty(), "{kind:?}: {:?}", local.seen().bad);

        // The next run asks nothing.
        let v = ok_json(&run(&home, &["--continue", "--model", MODEL, "--json", "-p", "again"]));
        assert_eq!(v["context"]["window"].as_u64(), Some(expected));
        assert_eq!(local.probes().len(), asked, "{kind:?}: the cached answer is used");

        // A day later it asks again.
        let conn = rusqlite::Connection::open(home.db()).unwrap();
        conn.execute("UPDATE model_windows SET learnt_at = learnt_at - 25 * 3600 * 1000", []).unwrap();
        ok_json(&run(&home, &["--continue", "--model", MODEL, "--json", "-p", "later"]));
        assert_eq!(local.probes().len(), 2 * asked, "{kind:?}: asked again after 24 hours");
    }
}

#[test]
fn a_server_that_answers_no_question_gets_the_assumed_window_and_the_user_is_told() {
    let local = Local::start(Kind::Bare, 8_192, None);
    let home = home_at("openai", &local.base(), "");
    let out = run(&home, &["--model", MODEL, "--json", "-p", "hi"]);
    let v = ok_json(&out);
    assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(8_192), Some("assumed")));
    let err = stderr(&out);
    assert!(err.contains("context window of `qwen-local` is unknown") && err.contains("assuming 8192 tokens"), "{err}");
    assert!(err.contains("[providers.openai.models.\"qwen-local\"]"), "the real provider's name: {err}");
    assert_eq!(local.probes().len(), 5, "every probe was tried");
    // The answer "nothing" is cached too: the next run asks nothing, works with the same assumed
    // window and does not say it again (said once per model); `--json` still says it.
    let out = run(&home, &["--continue", "--model", MODEL, "--json", "-p", "again"]);
    assert_eq!(ok_json(&out)["context"]["source"], "assumed");
    assert!(!stderr(&out).contains("assuming 8192 tokens"), "{}", stderr(&out));
    assert_eq!(local.probes().len(), 5);
    // With the window given, nothing is assumed or asked.
    let out = run(&home, &["--continue", "--model", MODEL, "--window", "16384", "--json", "-p", "flag"]);
    assert_eq!(ok_json(&out)["context"]["source"], "flag");
    assert!(!stderr(&out).contains("assuming"));
}

#[test]
fn a_window_below_the_minimum_is_refused_saying_how_to_raise_it() {
    let local = Local::start(Kind::Ollama, 2_048, None);
    let home = home_at("openai", &local.base(), "");
    let out = run(&home, &["--model", MODEL, "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("`qwen-local` is 2048 tokens (discovered)") && err.contains("at least 4096"), "{err}");
    assert!(err.contains("num_ctx") && err.contains("OLLAMA_CONTEXT_LENGTH") && err.contains("-c 8192"), "{err}");
    assert!(local.chats().is_empty(), "nothing was sent");
    let out = run(&home, &["--model", MODEL, "--window", "3000", "-p", "hi"]);
    assert!(stderr(&out).contains("is 3000 tokens (flag)"), "{}", stderr(&out));
}

#[test]
fn the_answers_room_follows_the_window_and_settings_that_cannot_fit_say_so() {
    let local = Local::start(Kind::Bare, 8_192, None);
    let home = home_at("openai", &local.base(), "");
    // --max-output that cannot fit: an error naming both numbers and the largest that fits.
    let out = run(&home, &["--model", MODEL, "--window", "8192", "--max-output", "4000", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("max_output asks for 4000") && err.contains("at most 2477 fit") && err.contains("8192"),
        "{err}"
    );
    // A per-model value likewise.
    let home = home_at(
        "openai",
        &local.base(),
        &format!("[providers.openai.models.\"{MODEL}\"]\ncontext_window = 8192\nmax_output_tokens = 3000\n"),
    );
    let err = stderr(&run(&home, &["--model", MODEL, "-p", "hi"]));
    assert!(
        err.contains("max_output_tokens for `qwen-local` in config.toml asks for 3000") && err.contains("2477"),
        "{err}"
    );
    assert!(local.chats().is_empty());
    // The global cap is clamped with a notice, and the request asks for what fits.
    let home = home_at("openai", &local.base(), "[chat]\nmax_output_tokens = 16000\n");
    let out = run(&home, &["--model", MODEL, "--window", "8192", "-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("max_output_tokens = 16000 is more than fits a 8192-token window: answers get 2477"));
    assert_eq!(local.chats().last().unwrap().json()["max_tokens"], 2_477);
    // Without a cap, an unknown model on 4k gets 839, not 16,384.
    let out = run(&home_at("openai", &local.base(), ""), &["--model", MODEL, "--window", "4096", "-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(local.chats().last().unwrap().json()["max_tokens"], 839);
}

/// A session of `n` alternating user/assistant notes of ~`tokens` each (the history a refused
/// request carries).
pub(crate) fn history(home: &Home, n: usize, tokens: usize) -> String {
    history_of(home, n, |i| note(i, tokens))
}

/// A session of `n` messages, the user's and the assistant's in turn, message `i` saying
/// `text(i)`.
fn history_of(home: &Home, n: usize, text: impl Fn(usize) -> String) -> String {
    let id = home.session("elsewhere");
    let mut store = home.store();
    for i in 0..n {
        let role = if i % 2 == 0 { seshat::conversation::Role::User } else { seshat::conversation::Role::Assistant };
        store.append(&id, &[seshat::conversation::NewMessage::text(role, text(i))]).unwrap();
    }
    id
}

/// A refused request's estimate and the retry's, from what a server received.
fn refusal_then_retry(chats: &[Recorded], input: fn(&Value) -> u64) -> (u64, u64) {
    let streamed: Vec<Value> = chats.iter().map(Recorded::json).filter(|b| b["stream"] == true).collect();
    assert_eq!(streamed.len(), 2, "one refused request and one retry");
    (input(&streamed[0]), input(&streamed[1]) + streamed[1]["max_tokens"].as_u64().unwrap())
}

#[test]
fn each_servers_refusal_for_length_is_recovered_once_after_compacting() {
    // Seshat believes a larger window (a flag here; a model table for the hosted APIs below) than
    // the server runs: the refusal names the real one, Seshat compacts to it and retries once.
    for over in [Over::OpenAi, Over::LlamaCpp, Over::Vllm] {
        let local = Local::start(Kind::Bare, 8_192, Some(over));
        let home = home_at("openai", &local.base(), "");
        let id = history(&home, 24, 450);
        let out = run(&home, &["--resume", &id, "--model", MODEL, "--window", "32768", "--json", "-p", "go on"]);
        let v = ok_json(&out);
        assert_eq!(local.seen().refusals, 1, "{over:?}");
        let (refused, retried) = refusal_then_retry(&local.chats(), openai_input);
        assert!(refused > 8_192 && retried <= 8_192, "{over:?}: refused ~{refused}, retried ~{retried}");
        assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(8_192), Some("learnt")));
        assert_eq!(v["compactions"].as_array().unwrap().len(), 1, "{over:?}: {v}");
        assert!(stderr(&out).contains("now works with a 8192-token window"), "{}", stderr(&out));
        // The user's message is stored once; the answer after it.
        let history = home.store().full_history(&id).unwrap();
        let asked: Vec<_> = history.iter().filter(|m| crate::support::text_of(m) == "go on").collect();
        assert_eq!(asked.len(), 1, "{over:?}");
        assert!(crate::support::text_of(history.last().unwrap()).starts_with("Noted"));
        // Learnt for this server and model: the next run starts from it (no flag this time).
        let v = ok_json(&run(&home, &["--continue", "--model", MODEL, "--json", "-p", "next"]));
        assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(8_192), Some("learnt")));
        assert!(local.seen().overflows.is_empty(), "{:?}", local.seen().overflows);
    }
}

#[test]
fn a_refusal_that_names_no_window_is_learnt_as_nine_tenths_of_the_refused_request() {
    // The server runs 11,500 tokens; the ~12.4k-token request with room for a 12k answer is
    // refused without a number, and nine tenths of the request is a window that works.
    let local = Local::start(Kind::Bare, 11_500, Some(Over::Unnamed));
    let home = home_at("openai", &local.base(), "");
    let id = history(&home, 24, 400);
    let out = run(&home, &["--resume", &id, "--model", MODEL, "--window", "32768", "--json", "-p", "go on"]);
    let v = ok_json(&out);
    assert_eq!(local.seen().refusals, 1);
    let refused = openai_input(&local.chats()[0].json());
    let learnt = v["context"]["window"].as_u64().unwrap();
    assert_eq!(v["context"]["source"], "learnt");
    assert!(learnt * 100 >= refused * 88 && learnt * 100 <= refused * 92, "learnt {learnt} of a ~{refused} request");
    assert!(stderr(&out).contains("without naming its window"), "{}", stderr(&out));
    assert!(local.seen().overflows.is_empty());
}

#[test]
fn openais_input_and_output_refusal_lowers_max_tokens_without_compacting() {
    let local = Local::start(Kind::Bare, 8_192, Some(Over::OpenAi));
    let home = home_at("openai", &local.base(), "");
    let v = ok_json(&run(&home, &["--model", "gpt-4o", "--json", "-p", "hi"]));
    let chats = local.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].json()["max_tokens"], 16_384, "gpt-4o's own limit, on its 128k table window");
    let retry = chats[1].json();
    assert!(retry["max_tokens"].as_u64().unwrap() <= 8_192 - openai_input(&retry), "{}", retry["max_tokens"]);
    assert!(v["compactions"].as_array().unwrap().is_empty(), "nothing to compact: {v}");
    assert_eq!(v["context"]["window"], 8_192);
}

#[test]
fn a_server_that_always_refuses_ends_the_turn_with_context_overflow_after_two_requests() {
    let local = Local::start(Kind::Bare, 8_192, Some(Over::Always));
    let home = home_at("openai", &local.base(), "[plugins.options.summariser]\n");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"openai\"\nsummariser = \"summariser-extractive\"\n[providers.openai]\n\
             base_url = \"{}\"\nmax_retries = 0\n",
            local.base()
        ),
    )
    .unwrap();
    let out = run(&home, &["--model", "gpt-4o", "--json", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["error_code"], "context_overflow", "{v}");
    assert_eq!(local.chats().len(), 2, "the request and one retry, never a loop");
    // With auto-compaction off the window is recorded and the turn fails after one request.
    let out = run(&home, &["--continue", "--model", "gpt-4o", "--no-auto-compact", "--json", "-p", "again"]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "context_overflow", "{v}");
    assert!(v["error"].as_str().unwrap().contains("auto-compaction is off"), "{v}");
    assert_eq!(local.chats().len(), 3);
    let learnt = home.store().model_window(&local.base(), "gpt-4o").unwrap().unwrap();
    assert_eq!((learnt.context_window, learnt.origin), (Some(8_192), seshat::store::WindowOrigin::Learnt));
    // With the breaker tripped, likewise: recorded, no compaction, one request.
    let session = v["session"].as_str().unwrap().to_string();
    let conn = rusqlite::Connection::open(home.db()).unwrap();
    conn.execute("UPDATE sessions SET compaction_failures = 3 WHERE id = ?1", [&session]).unwrap();
    let before = home.store().compactions(&session).unwrap().len();
    let v = json_of(&run(&home, &["--resume", &session, "--model", "gpt-4o", "--json", "-p", "once more"]));
    assert_eq!(v["error_code"], "context_overflow", "{v}");
    assert!(v["error"].as_str().unwrap().contains("summarising is off after repeated failures"), "{v}");
    assert_eq!(local.chats().len(), 4);
    assert_eq!(home.store().compactions(&session).unwrap().len(), before, "nothing was compacted");
}

#[test]
fn a_silently_truncating_server_is_caught_by_the_prompt_tokens_it_reports() {
    // Ollama behind a proxy that answers none of the questions, running a 4,096 window: Seshat
    // assumes 8,192 and sends a ~5,600-token request (prompt and frame); Ollama keeps what fits and says so.
    let local = Local::start(Kind::Bare, 4_096, Some(Over::Truncate));
    let home = home_at("openai", &local.base(), "");
    let prompt = note(0, 4_200);
    let out = run(&home, &["--model", MODEL, "--json", "-p", &prompt]);
    let v = ok_json(&out);
    let err = stderr(&out);
    assert!(err.contains("cut the prompt silently") && err.contains("4096-token window"), "{err}");
    assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(4_096), Some("learnt")));
    let v = ok_json(&run(&home, &["--continue", "--model", MODEL, "--json", "-p", "and?"]));
    assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(4_096), Some("learnt")));
}

/// `seshat chat -p hi` with only `env` set (no config file): as a new user runs it.
fn fresh(home: &Home, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = home.cmd();
    cmd.env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("chat").args(args).output().expect("run seshat chat")
}

#[test]
fn the_provider_comes_from_the_environment_the_official_sdks_read() {
    let claude = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["from Claude"]) },
        Reply::Stream { pieces: anthropic::text_answer(&["from Claude again"]) },
    ]);
    // The README's first commands: export the key, run `seshat chat`.
    let home = Home::new();
    let out = fresh(&home, &[("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", &claude.url())], &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from Claude\n");
    assert!(stderr(&out).contains("[using the anthropic provider (ANTHROPIC_API_KEY is set)]"), "{}", stderr(&out));
    let sent = &claude.requests()[0];
    assert_eq!((sent.path.as_str(), sent.header("x-api-key")), ("/v1/messages", Some(KEY)));
    // Both families: Anthropic, and the status line says how to pick the other.
    let home = Home::new();
    let env =
        [("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", claude.url().leak() as &str), ("OPENAI_API_KEY", KEY)];
    let out = fresh(&home, &env, &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("OPENAI_API_KEY is set too: select the provider `openai`"), "{}", stderr(&out));
    assert_eq!(claude.count(), 2);

    // OPENAI_BASE_URL alone (a keyless local server) and no --model: the first model it lists.
    let local = Local::start(Kind::Vllm, 16_384, None);
    let home = Home::new();
    let base = local.base();
    let out = fresh(&home, &[("OPENAI_BASE_URL", &base)], &["-p", "hi", "--json"]);
    let v = ok_json(&out);
    let err = stderr(&out);
    assert!(err.contains("[using the openai provider (OPENAI_BASE_URL is set)]"), "{err}");
    assert!(err.contains(&format!("[using the model `qwen-local`, the first {base} lists")), "{err}");
    let chat = local.chats().remove(0);
    assert_eq!(chat.json()["model"], MODEL);
    assert_eq!(chat.header("authorization"), None, "no key, no credential");
    assert_eq!(v["context"]["window"], 16_384);
    // This server wants a key: the keyless requests are the ones it refused.
    assert_eq!(
        local.take_bad(),
        [
            "GET /v1/models without the bearer key",
            "GET /v1/models without the bearer key",
            "POST /v1/chat/completions without the bearer key"
        ]
    );
    // OPENAI_API_KEY and a config describing the openai provider alone: the one configured is
    // used (before any guess from the environment), with the key for its credential.
    let home = home_at("openai", &local.base(), "");
    std::fs::write(home.path().join("config.toml"), format!("[providers.openai]\nbase_url = \"{}\"\n", local.base()))
        .unwrap();
    let out = fresh(&home, &[("OPENAI_API_KEY", KEY)], &["-p", "hi", "--model", MODEL]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[using the provider `openai`, the only one config.toml configures]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(local.chats().last().unwrap().header("authorization"), Some(format!("Bearer {KEY}").as_str()));

    // Nothing set: exit 2 and what to set.
    let out = fresh(&Home::new(), &[], &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("OPENAI_API_KEY") && err.contains("OPENAI_BASE_URL"),
        "{err}"
    );
}

#[test]
fn seshat_compact_calls_the_sessions_provider_with_chats_frame() {
    let local = Local::start(Kind::Vllm, 16_384, None);
    let home = home_at("openai", &local.base(), "");
    // (Sized to fit the window with chat's frame, its tools' definitions included.)
    let id = history(&home, 24, 290);
    // A chat turn first: the session now belongs to this provider and model.
    let v = ok_json(&run(&home, &["--resume", &id, "--model", MODEL, "--no-auto-compact", "--json", "-p", "status?"]));
    let used = v["context"]["used"].as_u64().unwrap();
    // The dry run counts what chat counts (its frame included) and calls nothing.
    let before = local.chats().len();
    let dry = home.cmd().args(["compact", &id, "--dry-run", "--json"]).output().unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    let dry: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(dry["tokens_before"].as_u64(), Some(used), "compact and chat agree on the figures: {dry}");
    assert_eq!(local.chats().len(), before);
    // The real one calls the session's model through its provider.
    let out = home.cmd().env("OPENAI_API_KEY", KEY).args(["compact", &id, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["summarised"].as_bool(), report["model_calls"].as_u64()), (Some(true), Some(1)), "{report}");
    // `sessions list` says what is in use now, not what the last turn reported.
    let listed: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--all", "--json"])).unwrap();
    assert_eq!(listed[0]["context_tokens"], report["tokens_after"], "{listed}");
    let summary = local.chats().pop().unwrap();
    let body = summary.json();
    assert_eq!(summary.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!((body["model"].as_str(), body.get("stream")), (Some(MODEL), None));
    assert!(body["max_tokens"].as_u64().unwrap() <= 2_000);
    // The session's own model summarises with the chat's prefix (its server's cache serves it):
    // the chat's tools and messages, then the instruction.
    let chat = local.chats()[before - 1].json();
    assert_eq!(body["tools"], chat["tools"]);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[..messages.len() - 1], chat["messages"].as_array().unwrap()[..messages.len() - 1]);
    let sent = body["messages"].to_string();
    assert!(sent.contains("Note 0:") && sent.contains("Note 5:"), "the dropped messages: {sent}");
    assert!(messages.last().unwrap().to_string().contains("[Seshat: compaction]"), "{sent}");
    assert_eq!(report["summary_request"], "shared_prefix", "{report}");
    assert_eq!(home.store().compactions(&id).unwrap().len(), 1);
    assert!(local.seen().overflows.is_empty());
    // --summary-model picks another model of the provider for the summary.
    ok_json(&run(&home, &["--resume", &id, "--model", MODEL, "--no-auto-compact", "--json", "-p", &note(40, 3_000)]));
    let dry =
        home.cmd().args(["compact", &id, "--dry-run", "--json", "--summary-model", "other-model"]).output().unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    let dry: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(dry["summary_model"], "other-model", "{dry}");
}

/// The Messages requests a [`claude`] server received (its token counts left out).
fn chats_of(server: &Server) -> Vec<Recorded> {
    server.requests().into_iter().filter(|r| r.path == "/v1/messages").collect()
}

/// Anthropic's Messages API with a real window of `window` tokens and an output limit of
/// `max_output`, refusing as Anthropic does.
pub(crate) fn claude(window: u64, max_output: u64, seen: Arc<Mutex<Seen>>) -> Server {
    Server::route(move |r| {
        let known = ["/v1/messages", "/v1/messages/count_tokens"].contains(&r.path.as_str());
        if !known || r.header("x-api-key") != Some(KEY) || r.header("anthropic-version").is_none() {
            seen.lock().unwrap().bad.push(format!("{} {}", r.method, r.path));
            return not_found();
        }
        let body = r.json();
        if r.path == "/v1/messages/count_tokens" {
            // The Messages request without `max_tokens` and `stream`, counted as the chat
            // endpoint counts it.
            if body.get("max_tokens").is_some() || body.get("stream").is_some() || !body["messages"].is_array() {
                seen.lock().unwrap().bad.push(format!("count_tokens with {}", r.body));
            }
            return Reply::json(200, &json!({"input_tokens": anthropic_input(&body)}).to_string());
        }
        let input = anthropic_input(&body);
        let max = body["max_tokens"].as_u64().unwrap_or(0);
        let refuse = |message: String| {
            seen.lock().unwrap().refusals += 1;
            Reply::json(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}).to_string(),
            )
        };
        if max > max_output {
            return refuse(format!(
                "max_tokens: {max} > {max_output}, which is the maximum allowed number of output tokens for claude-sonnet-4-5"
            ));
        }
        if input > window {
            return refuse(format!("prompt is too long: {input} tokens > {window} maximum"));
        }
        if input + max > window {
            return refuse(format!(
                "input length and `max_tokens` exceed context limit: {input} + {max} > {window}, decrease input length or `max_tokens` and try again"
            ));
        }
        seen.lock().unwrap().answered += 1;
        if body["stream"] != true {
            return Reply::json(
                200,
                &json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Summary: numbered notes."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": input, "output_tokens": 6}})
                .to_string(),
            );
        }
        Reply::Stream { pieces: anthropic::text_answer(&["Noted."]) }
    })
}

#[test]
fn anthropics_refusals_are_recovered_by_compacting_lowering_max_tokens_or_learning_the_output_limit() {
    // "prompt is too long": compact to the window it names, retry once.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = claude(20_000, 64_000, seen.clone());
    let home = home_at("anthropic", &server.url(), "");
    let id = history(&home, 30, 900);
    let out = run(&home, &["--resume", &id, "--model", "claude-sonnet-4-5", "--json", "-p", "go on"]);
    let v = ok_json(&out);
    assert_eq!(seen.lock().unwrap().refusals, 1, "{}", stderr(&out));
    let (refused, retried) = refusal_then_retry(&chats_of(&server), anthropic_input);
    assert!(refused > 20_000 && retried <= 20_000, "refused ~{refused}, retried ~{retried}");
    assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(20_000), Some("learnt")));
    assert_eq!(v["compactions"].as_array().unwrap().len(), 1);

    // "input length and `max_tokens` exceed context limit": a smaller max_tokens, no compaction.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = claude(30_000, 64_000, seen.clone());
    let home = home_at("anthropic", &server.url(), "");
    let id = history(&home, 14, 900);
    let v = ok_json(&run(&home, &["--resume", &id, "--model", "claude-sonnet-4-5", "--json", "-p", "go on"]));
    let sent = chats_of(&server);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].json()["max_tokens"], 16_384);
    let retry = sent[1].json();
    assert!(anthropic_input(&retry) + retry["max_tokens"].as_u64().unwrap() <= 30_000);
    assert!(v["compactions"].as_array().unwrap().is_empty(), "{v}");
    let counts = seen.lock().map(|s| (s.refusals, s.answered)).unwrap();
    assert_eq!(counts, (1, 1));

    // "max_tokens: … > m, which is the maximum allowed number of output tokens": learnt and kept.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = claude(200_000, 8_000, seen.clone());
    let home = home_at("anthropic", &server.url(), "");
    ok_json(&run(&home, &["--model", "claude-sonnet-4-5", "--json", "-p", "hi"]));
    let sent = chats_of(&server);
    assert_eq!((sent.len(), sent[1].json()["max_tokens"].as_u64()), (2, Some(8_000)));
    ok_json(&run(&home, &["--continue", "--model", "claude-sonnet-4-5", "--json", "-p", "again"]));
    assert_eq!(chats_of(&server)[2].json()["max_tokens"], 8_000, "the learnt limit is used from the start");
    assert_eq!(server.count(), 3);
    assert!(seen.lock().unwrap().bad.is_empty());
}

#[test]
fn on_a_small_window_the_frame_is_cut_in_the_stated_order_and_says_what_went() {
    use seshat::client::{AgentOptions, Tools};
    let server = Server::start(vec![]);
    let home = Home::new();
    // (Sized so that on 8k it fits with the most essential tools, and the rest do not.)
    std::fs::write(home.path().join("AGENTS.md"), "Always run the tests. ".repeat(40)).unwrap();
    let options = |window| AgentOptions {
        model: Some("tiny-model".into()),
        window: Some(window),
        project_dir: Some(home.path().into()),
        ..AgentOptions::default()
    };
    // On 50k everything fits.
    let agent = crate::chat::sdk_agent(&home, &server, Tools::with_memory(), options(50_000));
    assert!(agent.left_out().is_empty(), "{:?}", agent.left_out());
    assert_eq!(agent.tool_specs().len(), 9);
    assert!(agent.system_prompt().contains("Always run the tests."));
    drop(agent);
    // On 8k, the window assumed for a server that does not say: the project file the user wrote
    // stays, the least essential tools go instead (the searches stay longest).
    let agent = crate::chat::sdk_agent(&home, &server, Tools::with_memory(), options(8_192));
    let budget = seshat::window::Marks::new(8_192).frame_budget();
    assert!(agent.frame().tokens() <= budget, "{} > {budget}", agent.frame().tokens());
    let left = agent.left_out();
    assert!(agent.system_prompt().contains("Always run the tests."), "AGENTS.md fits and is kept: {left:?}");
    assert!(!left.is_empty() && left.iter().all(|l| l.starts_with("the tool ")), "{left:?}");
    for kept in ["memory_search_nodes", "memory_create_entities", "memory_add_observations"] {
        assert!(!left.contains(&format!("the tool {kept}")), "the most essential stay: {left:?}");
    }
    let names: Vec<&str> = agent.tool_specs().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"memory_search_nodes") && !names.contains(&"memory_delete_relations"), "{names:?}");
    assert_eq!(left.len() + names.len(), 9, "each tool is either offered or said to be left out");
    // The prompt names no tool the model does not get.
    let named_absent = |agent: &seshat::client::Agent| -> Vec<String> {
        let offered: Vec<&str> = agent.tool_specs().iter().map(|t| t.name.as_str()).collect();
        agent
            .system_prompt()
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| (w.starts_with("memory_") || w.starts_with("history_")) && !offered.contains(w))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(named_absent(&agent), Vec::<String>::new(), "{}", agent.system_prompt());
    drop(agent);
    // On 4k the same holds, with less.
    let agent = crate::chat::sdk_agent(&home, &server, Tools::with_memory(), options(4_096));
    assert!(agent.frame().tokens() <= seshat::window::Marks::new(4_096).frame_budget() || !agent.left_out().is_empty());
    assert_eq!(named_absent(&agent), Vec::<String>::new(), "{}", agent.system_prompt());
    assert_eq!(server.count(), 0);
}

#[test]
fn a_thrashing_compaction_still_sends_a_request_that_fits() {
    // One huge latest request (pinned) over the threshold but under the hard limit: the summary of
    // the little before it frees almost nothing, is used and counted, and the answer arrives.
    let local = Local::start(Kind::Vllm, 8_192, None);
    let home = home_at("openai", &local.base(), "");
    let id = history(&home, 4, 60);
    let v = ok_json(&run(&home, &["--resume", &id, "--model", MODEL, "--json", "-p", &note(9, 3_600)]));
    assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{v}");
    let report = &v["compactions"][0];
    assert_eq!((report["summarised"].as_bool(), report["thrash"].as_bool()), (Some(true), Some(true)), "{v}");
    let recorded = home.store().compactions(&id).unwrap();
    assert_eq!(recorded.len(), 1);
    assert!(recorded[0].summary.is_some() && recorded[0].error.as_deref().unwrap().starts_with("thrash"));
    assert_eq!(home.store().session(&id).unwrap().compaction_failures, 1);
    assert!(local.seen().overflows.is_empty());
    let shown = home.ok(&["sessions", "show", &id, "--full"]);
    assert!(shown.contains("(counted as a failed compaction: thrash: the summary freed only"), "{shown}");
}

#[test]
fn the_estimate_is_calibrated_from_the_counts_a_server_reports() {
    // A tokenizer that counts 1.8 tokens per estimated one, and says so in its usage.
    let local = Local::start(Kind::Vllm, 8_192, Some(Over::CountsMore));
    let home = home_at("openai", &local.base(), "");
    ok_json(&run(&home, &["--model", MODEL, "--json", "-p", &note(0, 500)]));
    let store = home.store();
    let session = store.list_sessions(&Default::default()).unwrap().remove(0);
    let ratio = session.metadata["calibration"][MODEL].as_f64().unwrap();
    assert!((1.6..=1.85).contains(&ratio), "stored with the session, per model: {ratio}");
    // And per kind of content: mostly prose here, counted at 1.8× its prior.
    let kinds = &session.metadata["calibration_kinds"][MODEL];
    let prose = kinds["prose"].as_f64().unwrap();
    assert!((1.5..=2.0).contains(&prose), "{kinds}");
    assert_eq!(kinds.as_object().unwrap().len(), 6, "every kind: {kinds}");
    // A message Seshat's raw estimate puts under the hard limit (~5,000 of 5,715) is ~9,000 by
    // the server's count: calibrated, it cannot fit even alone, and is refused here before
    // anything is stored or sent.
    let sent = local.chats().len();
    let before = home.store().session(&session.id).unwrap().message_count;
    let out = run(&home, &["--continue", "--model", MODEL, "--json", "-p", &note(1, 3_000)]);
    assert_eq!(json_of(&out)["error_code"], "message_too_large", "{}", stderr(&out));
    assert_eq!(home.store().session(&session.id).unwrap().message_count, before, "nothing was stored");
    let streamed = local.chats()[sent..].iter().filter(|c| c.json()["stream"] == true).count();
    assert_eq!(streamed, 0, "no chat request went out");
    assert!(local.seen().overflows.is_empty(), "by the server's own count: {:?}", local.seen().overflows);
}

#[test]
fn with_auto_compaction_off_a_history_that_does_not_fit_fails_locally_and_keeps_the_message() {
    let local = Local::start(Kind::Vllm, 8_192, None);
    let home = home_at("openai", &local.base(), "");
    let id = history(&home, 24, 450);
    let out = run(&home, &["--resume", &id, "--model", MODEL, "--no-auto-compact", "--json", "-p", "and now?"]);
    let v = json_of(&out);
    assert_eq!(v["error_code"], "compact_full", "{v}");
    assert!(v["error"].as_str().unwrap().contains("auto-compaction is off: compact the session by hand"), "{v}");
    assert!(local.chats().is_empty(), "the server received nothing");
    let store = home.store();
    let last = store.full_history(&id).unwrap().pop().unwrap();
    assert_eq!((last.role, crate::support::text_of(&last)), (seshat::conversation::Role::User, "and now?"));
    assert!(store.trims(&id).unwrap().is_empty() && store.compactions(&id).unwrap().is_empty());
}

#[test]
fn a_server_reporting_far_fewer_prompt_tokens_than_estimated_keeps_the_answer_and_the_window() {
    // A server whose tokenizer is far denser than four characters a token (or that reports only
    // the uncached part of the prompt): 150 prompt tokens for a ~2,000-token request.
    let server = Server::route(|req| {
        if req.path.ends_with("/chat/completions") {
            Reply::Stream { pieces: openai::text_answer(&["Kept ", "whole."], true) }
        } else {
            Reply::json(404, r#"{"error": {"message": "not found"}}"#)
        }
    });
    let home = home_at("openai", &format!("{}/v1", server.url()), "");
    let out = run(&home, &["--model", MODEL, "--json", "-p", &note(0, 2_000)]);
    let v = ok_json(&out);
    assert_eq!(v["text"], "Kept whole.", "{v}");
    assert_eq!(
        (v["context"]["window"].as_u64(), v["context"]["source"].as_str()),
        (Some(8_192), Some("assumed")),
        "{v}"
    );
    assert!(stderr(&out).contains("the window stays at 8192 tokens"), "{}", stderr(&out));
    let session = v["session"].as_str().unwrap();
    let history = home.store().full_history(session).unwrap();
    assert_eq!(history.len(), 2, "the question and the answer are stored");
    assert_eq!(crate::support::text_of(&history[1]), "Kept whole.");
    let recorded = home.store().model_window(&format!("{}/v1", server.url()), MODEL).unwrap();
    assert_eq!(recorded.and_then(|w| w.context_window), None, "no window learnt");
    // The next turn goes out as usual.
    let v = ok_json(&run(&home, &["--continue", "--model", MODEL, "--json", "-p", "and?"]));
    assert_eq!(v["context"]["window"].as_u64(), Some(8_192), "{v}");
}

/// A coding session's message: a tool log with timestamps, identifiers and figures, a stack of
/// code, a JSON result — what coding agents produce, and what a real tokenizer counts densely.
fn coding_message(i: usize) -> String {
    let mut s = format!("$ cargo test -p worker_{i} --release -- --nocapture\n");
    for line in 0..14 {
        s.push_str(&format!(
            "[2026-12-03T10:{:02}:{:02}.{:03}Z] INFO  worker-{i}::batch{line} processed 0x{:08x} rows=48{line:02}/10000 in {}ms (p99={}.{}ms, rss={}MiB)\n",
            line % 60,
            (i * 7 + line) % 60,
            (i * 131 + line * 17) % 1000,
            0x9e37_79b9_u32.wrapping_mul((i * 31 + line) as u32),
            200 + line * 3,
            18 + line,
            line % 10,
            400 + i
        ));
    }
    s.push_str(&format!(
        "    fn apply_{i}(&mut self, ev: &Event) -> Result<(), Error> {{\n        if ev.seq <= self.seq_{i} {{ return Ok(()); }}\n        self.index.insert(ev.key.clone(), ev.seq);\n    }}\n"
    ));
    s.push_str(&format!(
        "{{\"run\":{i},\"passed\":{},\"failed\":0,\"artefact\":\"target/release/worker_{i}\",\"bytes\":{}}}\n",
        40 + i,
        1_048_576 + i * 4096
    ));
    s
}

/// A session of `n` coding messages in the home's store.
pub(crate) fn coding_history(home: &Home, n: usize) -> String {
    history_of(home, n, coding_message)
}

/// `seshat compact <id>` at an 8,192-token window, the summary written by [`MODEL`].
pub(crate) fn compact_at_8k(home: &Home, id: &str) -> Output {
    home.cmd()
        .env("OPENAI_API_KEY", KEY)
        .args(["compact", id, "--window", "8192", "--summary-model", MODEL, "--json"])
        .output()
        .unwrap()
}

#[test]
fn a_code_heavy_session_against_a_real_tokenizer_compacts_and_answers_with_nothing_refused() {
    // The server counts with GPT-2's BPE (denser than four characters a token on logs and code:
    // 1.3× and more here) and refuses anything over its window; Seshat has no counter and no
    // calibration yet, only the estimate's per-kind prior: every request fits the first time.
    for (window, summariser) in [
        (8_192, "summariser"),
        (8_192, "summariser-extractive"),
        (4_096, "summariser"),
        (4_096, "summariser-extractive"),
    ] {
        let local = Local::start(Kind::Bare, window, Some(Over::RealTokenizer));
        let home = home_at("openai", &local.base(), "");
        let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        let config = config.replacen("[plugins]\n", &format!("[plugins]\nsummariser = \"{summariser}\"\n"), 1);
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let id = coding_history(&home, 60);
        let history = home.store().full_history(&id).unwrap();
        let bpe = tiktoken_rs::r50k_base_singleton();
        let real: usize = history.iter().map(|m| bpe.count_ordinary(crate::support::text_of(m))).sum();
        let four_chars: u64 = history.iter().map(|m| crate::support::text_of(m).chars().count() as u64 / 4).sum();
        assert!(real >= 40_000, "a session of at least 40k real tokens: {real}");
        assert!(real as f64 > 1.3 * four_chars as f64, "denser than four characters a token: {real} vs {four_chars}");

        let out =
            run(&home, &["--resume", &id, "--model", MODEL, "--window", &window.to_string(), "--json", "-p", "go on"]);
        let v = ok_json(&out);
        assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{window} {summariser}: the answer arrived: {v}");
        let seen = local.seen();
        let mut refused = seen.refused_bodies.clone();
        let n = refused.len();
        refused.sort();
        refused.dedup();
        assert_eq!(refused.len(), n, "{summariser}: no request was refused twice");
        assert!(seen.overflows.is_empty(), "{:?}", seen.overflows);
        drop(seen);
        let store = home.store();
        assert_eq!(store.session(&id).unwrap().compaction_failures, 0, "{summariser}: the breaker is untouched");
        let done = store.compactions(&id).unwrap();
        assert!(!done.is_empty(), "{summariser}");
        assert!(
            done.iter().all(|c| c.status == seshat::store::CompactionStatus::Ok),
            "{summariser}: every compaction succeeded: {done:?}"
        );
        // The estimate's prior for logs, code and JSON held: nothing was refused.
        assert_eq!(n, 0, "{window} {summariser}: refused {n}: {v}");
    }
}

#[test]
fn seshat_compact_of_a_code_heavy_session_recovers_its_refused_summary_request() {
    // A server counting denser than the estimate's prior, and no calibration yet: the first
    // summary request is refused, and recovered by cutting again at the density the refusal names.
    let local = Local::start(Kind::Bare, 8_192, Some(Over::ByteTokenizer));
    let home = home_at("openai", &local.base(), "");
    let id = coding_history(&home, 60);
    let out = compact_at_8k(&home, &id);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summarised"], true, "{report}");
    assert!(report["refusals_recovered"].as_u64().unwrap() >= 1, "the first summary request was refused: {report}");
    // One refusal in all: what it taught sized every later chunk.
    let refused = local.seen().refused_bodies.len();
    assert_eq!(refused as u64, report["refusals_recovered"].as_u64().unwrap(), "{report}");
    assert!(report["model_calls"].as_u64().unwrap() > refused as u64, "{report}");
    let store = home.store();
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0);
    // What the refusal taught is kept for the model: real tokens per estimated one, above 1.
    let ratio = store.session(&id).unwrap().metadata["calibration"][MODEL].as_f64().unwrap();
    assert!(ratio > 1.2, "{ratio}");
}

/// A file a coding agent read: indented Rust, which OpenAI's tokenizers count near four characters
/// a token and Seshat's estimate, not knowing the tokenizer, counts as GPT-2's would.
fn source_file(i: usize) -> String {
    (0..12)
        .map(|f| {
            format!(
                "    /// Applies event {f} of batch {i}.\n    pub fn apply_{i}_{f}(&mut self, event: &Event) -> Result<(), Error> {{\n        if event.seq <= self.seq {{\n            return Ok(());\n        }}\n        self.index.insert(event.key.clone(), event.seq);\n        Ok(())\n    }}\n"
            )
        })
        .collect()
}

#[test]
fn an_openai_model_is_counted_with_its_own_tokenizer_near_the_threshold() {
    // A session of source files: by Seshat's estimate past the threshold of a 16k window, by
    // o200k (gpt-4o's tokenizer, which Seshat runs here) well under it — so nothing is compacted.
    let local = Local::start(Kind::Bare, 16_384, None);
    let home = home_at("openai", &local.base(), "");
    let id = history_of(&home, 6, source_file);
    let history = home.store().full_history(&id).unwrap();
    let o200k = tiktoken_rs::o200k_base_singleton();
    let real: usize = history.iter().map(|m| o200k.count_ordinary(crate::support::text_of(m))).sum();
    let estimated: u64 = history.iter().map(|m| est(crate::support::text_of(m))).sum();
    let threshold = seshat::window::Marks::new(16_384).threshold;
    // With the frame (system prompt, tool schemas) on top: past the threshold by the estimate
    // (the second run below shows it), well under it counted.
    assert!(estimated > threshold * 9 / 10 && (real as u64) < threshold * 6 / 10, "{estimated} {real} {threshold}");
    let v = ok_json(&run(&home, &["--resume", &id, "--model", "gpt-4o", "--window", "16384", "--json", "-p", "go on"]));
    assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{v}");
    assert_eq!(v["compactions"].as_array().unwrap().len(), 0, "counted under the threshold: nothing compacted: {v}");
    assert!(home.store().compactions(&id).unwrap().is_empty());
    // The same session for a model whose tokenizer cannot run here: the estimate decides.
    let other = home.session("elsewhere");
    {
        let mut store = home.store();
        for m in &history {
            store
                .append(&other, &[seshat::conversation::NewMessage::text(m.role, crate::support::text_of(m))])
                .unwrap();
        }
    }
    let v = ok_json(&run(&home, &["--resume", &other, "--model", MODEL, "--window", "16384", "--json", "-p", "go on"]));
    assert_eq!(v["compactions"].as_array().unwrap().len(), 1, "the estimate is past the threshold: {v}");
}

#[test]
fn a_summary_refused_again_after_the_second_cut_fails_naming_the_messages_and_the_window() {
    // A token a byte: prose counts four times the estimate, past the most Seshat believes (3×),
    // so the second cut is refused too — a failed compaction, which says what could not fit.
    let local = Local::start(Kind::Bare, 8_192, Some(Over::ByteTokenizer));
    let home = home_at("openai", &local.base(), "");
    let id = history(&home, 24, 450);
    let out = compact_at_8k(&home, &id);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the summary of messages 1–"), "{err}");
    assert!(err.contains("was refused twice for its length") && err.contains("its window is 8192 tokens"), "{err}");
    assert!(err.contains("tokens by the model's count"), "the size the refusal named: {err}");
    assert_eq!(local.seen().refused_bodies.len(), 2, "refused once, cut again, refused again — then no more");
    assert_eq!(home.store().session(&id).unwrap().compaction_failures, 1, "a failed compaction");
}

/// The README's `toml` blocks, as written.
fn readme_toml_blocks() -> Vec<String> {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```toml") => current = Some(String::new()),
            (Some(_), l) if l.starts_with("```") => blocks.push(current.take().unwrap()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn every_config_block_in_the_readme_loads_and_the_llamacpp_block_takes_effect() {
    let blocks = readme_toml_blocks();
    assert!(blocks.len() >= 5, "{}", blocks.len());
    for block in &blocks {
        // A plugin's manifest (`plugin.toml`), or the configuration (`config.toml`).
        if block.lines().any(|l| l.starts_with("kind = ")) {
            let manifest = seshat::plugins::Manifest::parse(block, std::path::Path::new("plugin.toml"));
            assert!(manifest.is_ok(), "a README plugin.toml block does not load: {manifest:?}\n{block}");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        // A service's own file (`seshat serve --config FILE`), which names where it listens.
        if block.lines().any(|l| l.starts_with("listen = ")) {
            let file = dir.path().join("service.toml");
            std::fs::write(&file, block).unwrap();
            let loaded = seshat::config::Config::load_service(&file);
            assert!(loaded.is_ok(), "a README service file block does not load: {loaded:?}\n{block}");
            continue;
        }
        std::fs::write(dir.path().join("config.toml"), block).unwrap();
        if let Err(e) = seshat::config::Config::load(dir.path(), None) {
            panic!("a README config block does not load: {e}\n{block}");
        }
    }
    // The llama.cpp block, pointed at a loopback llama-server (which lists its own model id):
    // the configured model and its window are used, not what the server lists.
    let block = blocks.iter().find(|b| b.contains("[providers.llamacpp]")).expect("the llama.cpp block");
    let start = block.find("[providers.llamacpp]").unwrap();
    let end = block[start..].find("\n\n").map_or(block.len(), |e| start + e);
    let local = Local::start(Kind::LlamaCpp, 32_768, None);
    let llamacpp = block[start..end].replace("http://localhost:8080/v1", &local.base());
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), &llamacpp).unwrap();
    let out = run(&home, &["--provider", "llamacpp", "--json", "-p", "hi"]);
    let v = ok_json(&out);
    assert_eq!((v["context"]["window"].as_u64(), v["context"]["source"].as_str()), (Some(32_768), Some("config")));
    assert_eq!(local.chats()[0].json()["model"], "local", "the one model configured for the provider");
    // Configured but not selected, and no key in the environment: the only provider configured
    // is used, and said so.
    let out = home
        .cmd()
        .env("OPENAI_API_KEY", KEY)
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .args(["chat", "--json", "-p", "again"])
        .output()
        .unwrap();
    let v = ok_json(&out);
    assert_eq!(v["context"]["window"], 32_768, "{v}");
    assert!(
        stderr(&out).contains("using the provider `llamacpp`, the only one config.toml configures"),
        "{}",
        stderr(&out)
    );
    // Two configured, none selected: the error names them and how to select one.
    std::fs::write(home.path().join("config.toml"), format!("{llamacpp}\n[providers.vllm]\nplugin = \"openai\"\n"))
        .unwrap();
    let out = home.cmd().args(["chat", "-p", "which?"]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config.toml configures `llamacpp`, `vllm`") && err.contains("provider = \"llamacpp\""),
        "{err}"
    );
}
