//! Seshat's adapter for the OpenAI Chat Completions API (`POST {base}/chat/completions`), which
//! OpenAI-compatible servers (Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter) also speak.
//!
//! A pure translator: it never sees the API key (the host adds `Authorization: Bearer` for the
//! allowed host, or nothing when no key is configured) and has no network.

use std::cell::RefCell;
use std::collections::BTreeMap;

use seshat_plugin_sdk::provider::json::{self, Body, Value, json, serde_json, str_of};
use seshat_plugin_sdk::provider::{
    Auth, ChatRequest, Discovery, EncodeOptions, Error, GuestDecoder, HttpRequest, InputAndOutput, Limit, Message,
    Part, Probe, Provider, ProviderInfo, Response, Role, StopReason, StreamEvent, Thinking, TooLong, ToolCall,
    ToolCallDelta, ToolCallStart, Usage, error, get_probe, model, number_after, post_counter,
};

struct OpenAi;

/// Reasoning models take `max_completion_tokens` and reject `max_tokens`.
fn uses_completion_tokens(model: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"].iter().any(|p| model.starts_with(p))
}

impl Provider for OpenAi {
    type Decoder = Decoder;

    fn info() -> ProviderInfo {
        ProviderInfo {
            id: "openai".into(),
            default_base_url: "https://api.openai.com/v1".into(),
            auth: Auth::Bearer,
            key_env: Some("OPENAI_API_KEY".into()),
            models: vec![
                model("gpt-5", 400_000, 128_000),
                model("gpt-5-mini", 400_000, 128_000),
                model("gpt-4.1", 1_047_576, 32_768),
                model("gpt-4.1-mini", 1_047_576, 32_768),
                model("gpt-4o", 128_000, 16_384),
                model("gpt-4o-mini", 128_000, 16_384),
                model("o3", 200_000, 100_000),
                model("o4-mini", 200_000, 100_000),
            ],
        }
    }

    fn encode_message(message: Message, _options: EncodeOptions) -> Result<String, Error> {
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for part in message.parts {
            match part {
                Part::Text(t) => {
                    if !text.is_empty() && !t.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
                Part::ToolCall(c) => calls.push(json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })),
                Part::ToolResult(r) => {
                    let content = if r.is_error { format!("Error: {}", r.content) } else { r.content };
                    results.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": content}));
                }
                // Chat Completions takes no reasoning back.
                Part::Thinking(_) | Part::RedactedThinking(_) => {}
            }
        }
        let mut items: Vec<Value> = results;
        match message.role {
            Role::Assistant if !text.is_empty() || !calls.is_empty() => {
                let mut m =
                    json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                items.push(m);
            }
            Role::Assistant => {}
            role if !text.is_empty() => {
                let name = if role == Role::System { "system" } else { "user" };
                items.push(json!({"role": name, "content": text}));
            }
            _ => {}
        }
        Ok(items.iter().map(Value::to_string).collect::<Vec<_>>().join(","))
    }

    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        let extra = json::options(&request.extra)?;
        let max_key = if uses_completion_tokens(&request.model) { "max_completion_tokens" } else { "max_tokens" };
        let mut fields = vec![("model", json!(request.model)), (max_key, json!(request.max_tokens))];
        if request.stream {
            fields.push(("stream", json!(true)));
            fields.push(("stream_options", json!({"include_usage": true})));
        }
        if !request.tools.is_empty() {
            let mut tools = Vec::with_capacity(request.tools.len());
            for tool in &request.tools {
                tools.push(json!({
                    "type": "function",
                    "function": {"name": tool.name, "description": tool.description, "parameters": json::schema(tool)?},
                }));
            }
            fields.push(("tools", Value::Array(tools)));
        }
        let system: Vec<Value> = request
            .system
            .filter(|s| !s.is_empty())
            .map(|s| json!({"role": "system", "content": s}))
            .into_iter()
            .collect();
        let (body, splice) = json::body(&fields, &extra, "messages", &system)?;
        let url = format!("{}/chat/completions", request.base_url.trim_end_matches('/'));
        Ok(json::post(url, request.stream, &[], body, splice))
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error> {
        let value = match json::parse_body(status, &body, "the server's answer")? {
            Body::Success(v) if v.get("error").is_none_or(Value::is_null) => v,
            Body::Success(v) | Body::Failure(v) => return Err(http_error(status, &v, &body)),
        };
        let choice = &value["choices"][0];
        let m = &choice["message"];
        let mut parts = Vec::new();
        if let Some(r) = m["reasoning_content"].as_str().filter(|r| !r.is_empty()) {
            parts.push(Part::Thinking(Thinking { text: r.into(), signature: None }));
        }
        if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
            parts.push(Part::Text(t.into()));
        }
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            parts.push(Part::ToolCall(ToolCall {
                id: str_of(&c["id"]),
                name: str_of(&c["function"]["name"]),
                arguments: str_of(&c["function"]["arguments"]),
            }));
        }
        Ok(Response {
            message: Message { id: 0, role: Role::Assistant, parts },
            usage: value.get("usage").filter(|u| u.is_object()).map(usage),
            stop_reason: stop_reason(choice["finish_reason"].as_str().unwrap_or("stop")),
        })
    }

    /// OpenAI-compatible servers list models at `/models`, but each local server tells the window
    /// it runs with somewhere else: vLLM in that list (`max_model_len`), llama.cpp's server at
    /// `/props`, Ollama at `/api/ps` (the loaded model) and `/api/show` (its `num_ctx`), LM Studio
    /// at `/api/v0/models`. Each answers 404 to the others' questions.
    fn probes(model: Option<String>, base_url: String) -> Vec<Probe> {
        let base = base_url.trim_end_matches('/');
        let mut probes = vec![get_probe("models", format!("{base}/models"))];
        // OpenAI's own API has none of the local servers' endpoints.
        let Some(model) = model.filter(|_| !base.starts_with("https://api.openai.com")) else { return probes };
        let root = base.strip_suffix("/v1").unwrap_or(base);
        probes.push(get_probe("llama.cpp-props", format!("{root}/props")));
        probes.push(get_probe("ollama-ps", format!("{root}/api/ps")));
        let show = json!({ "model": model }).to_string().into_bytes();
        probes.push(Probe {
            name: "ollama-show".into(),
            request: HttpRequest {
                method: "POST".into(),
                url: format!("{root}/api/show"),
                headers: vec![("content-type".into(), "application/json".into())],
                body: show,
                splice: None,
            },
        });
        probes.push(get_probe("lmstudio-models", format!("{root}/api/v0/models")));
        probes
    }

    fn parse_probe(name: String, model: Option<String>, status: u16, body: Vec<u8>) -> Discovery {
        let mut found = Discovery { context_window: None, max_output_tokens: None, models: Vec::new() };
        let Ok(v) = serde_json::from_slice::<Value>(&body) else { return found };
        if !(200..300).contains(&status) {
            return found;
        }
        let model = model.unwrap_or_default();
        let listed = |key: &str| v[key].as_array().cloned().unwrap_or_default();
        let named = |m: &Value| [&m["id"], &m["name"], &m["model"]].iter().any(|k| k.as_str() == Some(model.as_str()));
        match name.as_str() {
            "models" => {
                let data = listed("data");
                found.models = data.iter().filter_map(|m| m["id"].as_str().map(String::from)).collect();
                // vLLM; llama.cpp's `meta.n_ctx_train` is the trained length, not the window.
                found.context_window = data.iter().find(|m| named(m)).and_then(|m| m["max_model_len"].as_u64());
            }
            "llama.cpp-props" => {
                found.context_window =
                    v["default_generation_settings"]["n_ctx"].as_u64().or_else(|| v["n_ctx"].as_u64());
            }
            "ollama-ps" => {
                found.context_window =
                    listed("models").iter().find(|m| named(m)).and_then(|m| m["context_length"].as_u64());
            }
            "ollama-show" if v.get("parameters").is_some() || v.get("modelfile").is_some() => {
                // `model_info.*.context_length` is the trained length; the server runs `num_ctx`,
                // which defaults to 4,096.
                let parameters = v["parameters"].as_str().unwrap_or_default();
                let num_ctx = parameters.lines().find_map(|l| {
                    let mut words = l.split_whitespace();
                    (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok()).flatten()
                });
                found.context_window = Some(num_ctx.unwrap_or(4_096));
            }
            "lmstudio-models" => {
                found.context_window = listed("data")
                    .iter()
                    .find(|m| named(m))
                    .and_then(|m| m["loaded_context_length"].as_u64().or_else(|| m["max_context_length"].as_u64()));
            }
            _ => {}
        }
        found
    }

    /// Local servers count with the model's own tokenizer: vLLM at `POST /tokenize` given the
    /// chat messages (`{"count": N, …}`, its chat template applied), llama.cpp's server at the
    /// same path given text (`{"content": …}` → `{"tokens": […]}`), llama-cpp-python at
    /// `POST /extras/tokenize/count` (`{"input": …}` → `{"count": N}`). Each answers the others'
    /// questions with an error, a 404 or an empty list. The two text counters get the
    /// conversation in ChatML's shape (`<|im_start|>role … <|im_end|>`), special tokens parsed,
    /// so the template's few tokens a message count too. OpenAI's own API has no counter (the host
    /// counts its models with their own tokenizer).
    fn counters(request: ChatRequest, messages: Vec<Message>) -> Vec<Probe> {
        let base = request.base_url.trim_end_matches('/').to_string();
        if base.starts_with("https://api.openai.com") {
            return Vec::new();
        }
        let root = base.strip_suffix("/v1").unwrap_or(&base).to_string();
        let text = chatml(&request, &messages);
        let mut counters = Vec::new();
        if let Ok(mut body) = json::request_body::<Self>(request, messages) {
            body.retain(|k, _| k == "model" || k == "messages" || k == "tools");
            body.insert("add_generation_prompt".into(), json!(true));
            let body = Value::Object(body).to_string().into_bytes();
            counters.push(post_counter("vllm-tokenize", format!("{root}/tokenize"), body));
        }
        let content = json!({"content": text, "add_special": true, "parse_special": true}).to_string();
        counters.push(post_counter("llama.cpp-tokenize", format!("{root}/tokenize"), content.into_bytes()));
        let input = json!({"input": text}).to_string();
        counters.push(post_counter(
            "llama-cpp-python-count",
            format!("{root}/extras/tokenize/count"),
            input.into_bytes(),
        ));
        counters
    }

    fn parse_count(name: String, status: u16, body: Vec<u8>) -> Option<u64> {
        if !(200..300).contains(&status) {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).ok()?;
        let n = match name.as_str() {
            "vllm-tokenize" | "llama-cpp-python-count" => v["count"].as_u64(),
            "llama.cpp-tokenize" => v["tokens"].as_array().map(|t| t.len() as u64),
            _ => None,
        };
        n.filter(|&n| n > 0)
    }

    /// OpenAI and the servers that copy it (`context_length_exceeded`, "maximum context length
    /// is N tokens"), vLLM ("you requested N tokens (a in the messages, b in the completion)",
    /// "'max_tokens' … is too large"), llama.cpp (`exceed_context_size_error` with `n_ctx`).
    fn refusal_limit(status: u16, body: Vec<u8>) -> Option<Limit> {
        if !(400..500).contains(&status) {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let e = if v["error"].is_object() { &v["error"] } else { &v };
        let message =
            e["message"].as_str().map(String::from).unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        let kind = [&e["type"], &e["code"]].iter().filter_map(|k| k.as_str()).collect::<Vec<_>>().join(" ");
        if kind.contains("exceed_context_size") || e["n_ctx"].is_u64() {
            return Some(Limit::TooLong(TooLong {
                window: e["n_ctx"].as_u64(),
                requested: e["n_prompt_tokens"].as_u64(),
            }));
        }
        let lower = message.to_lowercase();
        let window = number_after(&lower, "maximum context length is");
        if let Some(max) = number_after(&lower, "supports at most").filter(|_| lower.contains("completion tokens")) {
            return Some(Limit::MaxOutput(max));
        }
        if let (Some(window), Some(input)) = (window, number_after(&lower, "your request has")) {
            // vLLM: "'max_tokens' … is too large: b. … maximum context length is c tokens and your
            // request has a input tokens".
            let max_tokens = number_after(&lower, "too large").unwrap_or(window.saturating_sub(input));
            return Some(io_or_too_long(input, max_tokens, window));
        }
        if let (Some(window), Some(input)) = (window, number_after(&lower, "tokens (")) {
            // "you requested N tokens (a in the messages, b in the completion)".
            let max_tokens = number_after(&lower, "in the messages,").unwrap_or(0);
            return Some(io_or_too_long(input, max_tokens, window));
        }
        if kind.contains("context_length_exceeded") || window.is_some() {
            let requested = number_after(&lower, "resulted in").or_else(|| number_after(&lower, "you requested"));
            return Some(Limit::TooLong(TooLong { window, requested }));
        }
        None
    }
}

/// The input alone is too long (compact), or only with the answer's room (ask for less).
/// A chat request as text in ChatML's shape, for the servers that count text: the system prompt
/// and the tools' schemas, then each message's text, tool calls (`name(arguments)`) and results.
fn chatml(request: &ChatRequest, messages: &[Message]) -> String {
    let mut out = String::new();
    let mut turn = |role: &str, body: &str| {
        out.push_str("<|im_start|>");
        out.push_str(role);
        out.push('\n');
        out.push_str(body);
        out.push_str("<|im_end|>\n");
    };
    // Chat templates put each tool's definition into the prompt as JSON, as the request carries it.
    let mut system = request.system.clone().unwrap_or_default();
    for tool in &request.tools {
        let parameters = json::schema(tool).unwrap_or(Value::Null);
        let function = json!({"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": parameters}});
        system.push('\n');
        system.push_str(&function.to_string());
    }
    if !system.is_empty() {
        turn("system", &system);
    }
    for m in messages {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut body = String::new();
        for p in &m.parts {
            match p {
                Part::Text(t) => body.push_str(t),
                Part::ToolCall(c) => body.push_str(&format!("{}({})", c.name, c.arguments)),
                Part::ToolResult(r) => body.push_str(&r.content),
                Part::Thinking(_) | Part::RedactedThinking(_) => continue,
            }
            body.push('\n');
        }
        turn(role, body.trim_end());
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

fn io_or_too_long(input: u64, max_tokens: u64, window: u64) -> Limit {
    if input >= window {
        Limit::TooLong(TooLong { window: Some(window), requested: Some(input) })
    } else {
        Limit::InputAndOutput(InputAndOutput { input, max_tokens, window })
    }
}

fn usage(u: &Value) -> Usage {
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0).min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: cached,
        cache_creation_tokens: 0,
        context_tokens: prompt,
    }
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.into()),
    }
}

/// Maps an error (`{"error":{"message":…,"type":…,"code":…}}`, or a bare body) to a stable code.
fn http_error(status: u16, value: &Value, body: &[u8]) -> Error {
    let detail = match (&value["error"]["message"], &value["error"]) {
        (Value::String(m), _) => m.clone(),
        (_, Value::String(m)) => m.clone(),
        _ => String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned(),
    };
    let (code, hint) = match status {
        401 => ("auth_failed", "check the API key (OPENAI_API_KEY or api_key_env)"),
        404 => ("not_found", "check the model id and the base URL (it usually ends in /v1)"),
        other => seshat_plugin_sdk::http_status(other),
    };
    error(code, format!("the server answered HTTP {status}: {detail} ({hint})"))
}

/// The per-answer stream decoder. `[DONE]` ends the stream; the finish reason is held back until
/// then because the usage chunk (when the server sends one) comes after it.
struct Decoder {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// Tool call indexes already started.
    started: BTreeMap<u32, ()>,
    stop: Option<StopReason>,
    done: bool,
}

impl GuestDecoder for Decoder {
    fn new() -> Self {
        Decoder { state: RefCell::new(State::default()) }
    }

    fn push(&self, _event: String, data: String) -> Result<Vec<StreamEvent>, Error> {
        let mut st = self.state.borrow_mut();
        let mut out = Vec::new();
        if data.trim() == "[DONE]" {
            st.done = true;
            out.push(StreamEvent::Stop(st.stop.take().unwrap_or(StopReason::EndTurn)));
            return Ok(out);
        }
        let v: Value = serde_json::from_str(&data)
            .map_err(|e| error("bad_stream", format!("the server sent a chunk that is not JSON: {e}")))?;
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            let message = e["message"].as_str().map_or_else(|| e.to_string(), String::from);
            out.push(StreamEvent::Error(error(
                "server_error",
                format!("the server reported an error mid-answer: {message}"),
            )));
            return Ok(out);
        }
        for choice in v["choices"].as_array().into_iter().flatten() {
            let d = &choice["delta"];
            for key in ["reasoning_content", "reasoning"] {
                if let Some(r) = d[key].as_str().filter(|r| !r.is_empty()) {
                    out.push(StreamEvent::ThinkingDelta(r.into()));
                }
            }
            if let Some(t) = d["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta(t.into()));
            }
            for (i, c) in d["tool_calls"].as_array().into_iter().flatten().enumerate() {
                let index = c["index"].as_u64().map_or(i as u32, |n| n as u32);
                if let std::collections::btree_map::Entry::Vacant(e) = st.started.entry(index) {
                    e.insert(());
                    out.push(StreamEvent::ToolCallStart(ToolCallStart {
                        index,
                        id: str_of(&c["id"]),
                        name: str_of(&c["function"]["name"]),
                    }));
                }
                if let Some(a) = c["function"]["arguments"].as_str().filter(|a| !a.is_empty()) {
                    out.push(StreamEvent::ToolCallDelta(ToolCallDelta { index, arguments: a.into() }));
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                st.stop = Some(stop_reason(reason));
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(usage(u)));
        }
        Ok(out)
    }

    fn finish(&self) -> Result<Vec<StreamEvent>, Error> {
        let mut st = self.state.borrow_mut();
        if st.done {
            return Ok(Vec::new());
        }
        // Some servers close the stream after the finish reason without `[DONE]`.
        match st.stop.take() {
            Some(reason) => Ok(vec![StreamEvent::Stop(reason)]),
            None => Err(error("incomplete_stream", "the server's stream ended before the answer did")),
        }
    }
}

seshat_plugin_sdk::export_provider!(OpenAi);
