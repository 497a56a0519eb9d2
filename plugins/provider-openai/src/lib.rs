//! Seshat's adapter for the OpenAI Chat Completions API (`POST {base}/chat/completions`), which
//! OpenAI-compatible servers (Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter) also speak.
//!
//! A pure translator: it never sees the API key (the host adds `Authorization: Bearer` for the
//! allowed host, or nothing when no key is configured) and has no network.

use std::cell::RefCell;
use std::collections::BTreeMap;

use seshat_plugin_sdk::provider::json::{self, Body, Value, json, serde_json, str_of};
use seshat_plugin_sdk::provider::{
    Auth, ChatRequest, EncodeOptions, Error, GuestDecoder, HttpRequest, Message, Part, Provider, ProviderInfo,
    Response, Role, StopReason, StreamEvent, Thinking, ToolCall, ToolCallDelta, ToolCallStart, Usage, error, model,
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
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
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
        let system: Vec<Value> =
            request.system.filter(|s| !s.is_empty()).map(|s| json!({"role": "system", "content": s})).into_iter().collect();
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
        403 => ("permission_denied", "the key may not use this model"),
        404 => ("not_found", "check the model id and the base URL (it usually ends in /v1)"),
        413 => ("request_too_large", "the request is larger than the server accepts"),
        429 => ("rate_limited", "wait and retry, or lower the request rate"),
        400 | 422 => ("invalid_request", "the request was rejected as invalid"),
        500..=599 => ("server_error", "a server error; retry later"),
        _ => ("http_error", "unexpected answer"),
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
        let v: Value =
            serde_json::from_str(&data).map_err(|e| error("bad_stream", format!("the server sent a chunk that is not JSON: {e}")))?;
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            let message = e["message"].as_str().map_or_else(|| e.to_string(), String::from);
            out.push(StreamEvent::Error(error("server_error", format!("the server reported an error mid-answer: {message}"))));
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
