//! Seshat's adapter for Anthropic's Messages API (`POST /v1/messages`).
//!
//! A pure translator: it never sees the API key (the host adds `x-api-key` for the allowed host)
//! and has no network. Prompt caching: `cache_control` goes on the system prompt, the last tool
//! and the latest turn, so each turn's request reuses the previous one's cached prefix.

use std::cell::RefCell;
use std::collections::BTreeMap;

use seshat_plugin_sdk::provider::json::{self, Body, Value, json, serde_json, str_of};
use seshat_plugin_sdk::provider::{
    Auth, ChatRequest, EncodeOptions, Error, GuestDecoder, HttpRequest, InputAndOutput, Limit, Message, Part, Probe,
    Provider, ProviderInfo, Response, Role, StopReason, StreamEvent, TooLong, ToolCallDelta, ToolCallStart, Usage,
    error, model, number_after, post_counter,
};

/// The API version header every request carries.
const API_VERSION: &str = "2023-06-01";

struct Anthropic;

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

impl Provider for Anthropic {
    type Decoder = Decoder;

    fn info() -> ProviderInfo {
        ProviderInfo {
            id: "anthropic".into(),
            default_base_url: "https://api.anthropic.com".into(),
            auth: Auth::Header("x-api-key".into()),
            key_env: Some("ANTHROPIC_API_KEY".into()),
            models: vec![
                model("claude-opus-4-5", 200_000, 64_000),
                model("claude-sonnet-4-5", 200_000, 64_000),
                model("claude-haiku-4-5", 200_000, 64_000),
                model("claude-opus-4-1", 200_000, 32_000),
                model("claude-sonnet-4-0", 200_000, 64_000),
                model("claude-3-5-haiku-latest", 200_000, 8_192),
            ],
        }
    }

    fn encode_message(message: Message, options: EncodeOptions) -> Result<String, Error> {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool | Role::System => "user",
        };
        let mut blocks = Vec::new();
        for part in message.parts {
            match part {
                Part::Text(text) if text.is_empty() => {}
                Part::Text(text) if message.role == Role::System => {
                    blocks.push(json!({"type": "text", "text": format!("<system>\n{text}\n</system>")}));
                }
                Part::Text(text) => blocks.push(json!({"type": "text", "text": text})),
                Part::ToolCall(call) => {
                    // Arguments the model wrote as something other than a JSON object are passed
                    // back under one key, so the request stays valid.
                    let input = match serde_json::from_str::<Value>(&call.arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({"arguments": call.arguments}),
                    };
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                Part::ToolResult(result) => blocks.push(json!({
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": result.content,
                    "is_error": result.is_error,
                })),
                // Reasoning goes back only to the model that wrote it, with its signature intact.
                Part::Thinking(t) if options.same_model => {
                    if let Some(signature) = t.signature {
                        blocks.push(json!({"type": "thinking", "thinking": t.text, "signature": signature}));
                    }
                }
                Part::RedactedThinking(data) if options.same_model => {
                    blocks.push(json!({"type": "redacted_thinking", "data": data}));
                }
                Part::Thinking(_) | Part::RedactedThinking(_) => {}
            }
        }
        if options.cache_breakpoint {
            let last =
                blocks.iter_mut().rev().find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
            if let Some(Value::Object(block)) = last {
                block.insert("cache_control".into(), ephemeral());
            }
        }
        if blocks.is_empty() {
            return Ok(String::new());
        }
        Ok(json!({"role": role, "content": blocks}).to_string())
    }

    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        let extra = json::options(&request.extra)?;
        let mut fields = vec![("model", json!(request.model)), ("max_tokens", json!(request.max_tokens))];
        if request.stream {
            fields.push(("stream", json!(true)));
        }
        if let Some(system) = request.system.filter(|s| !s.is_empty()) {
            fields.push(("system", json!([{"type": "text", "text": system, "cache_control": ephemeral()}])));
        }
        if !request.tools.is_empty() {
            let mut tools = Vec::with_capacity(request.tools.len());
            for tool in &request.tools {
                tools.push(
                    json!({"name": tool.name, "description": tool.description, "input_schema": json::schema(tool)?}),
                );
            }
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = ephemeral();
            }
            fields.push(("tools", Value::Array(tools)));
        }
        let (body, splice) = json::body(&fields, &extra, "messages", &[])?;
        let url = format!("{}/v1/messages", request.base_url.trim_end_matches('/'));
        Ok(json::post(url, request.stream, &[("anthropic-version", API_VERSION)], body, splice))
    }

    /// `POST /v1/messages/count_tokens` takes the Messages request without `max_tokens` (and
    /// `stream`) and answers `{"input_tokens": N}`; the host adds `x-api-key` as for chat.
    fn counters(request: ChatRequest, messages: Vec<Message>) -> Vec<Probe> {
        let url = format!("{}/v1/messages/count_tokens", request.base_url.trim_end_matches('/'));
        let Ok(mut body) = json::request_body::<Self>(request, messages) else { return Vec::new() };
        body.remove("max_tokens");
        body.remove("stream");
        let mut counter = post_counter("count_tokens", url, Value::Object(body).to_string().into_bytes());
        counter.request.headers.push(("anthropic-version".into(), API_VERSION.into()));
        vec![counter]
    }

    fn parse_count(_name: String, status: u16, body: Vec<u8>) -> Option<u64> {
        if !(200..300).contains(&status) {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).ok()?;
        v["input_tokens"].as_u64().filter(|&n| n > 0)
    }

    /// "prompt is too long: N tokens > M maximum"; "input length and `max_tokens` exceed context
    /// limit: a + b > c"; "max_tokens: b > m, which is the maximum allowed number of output
    /// tokens for …".
    fn refusal_limit(status: u16, body: Vec<u8>) -> Option<Limit> {
        if status != 400 && status != 413 {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).ok()?;
        let message = v["error"]["message"].as_str()?.to_lowercase();
        if message.contains("prompt is too long") {
            let requested = number_after(&message, "prompt is too long");
            let window = number_after(&message, "tokens >");
            return Some(Limit::TooLong(TooLong { window, requested }));
        }
        if message.contains("exceed context limit") {
            let input = number_after(&message, "context limit")?;
            let max_tokens = number_after(&message, "+")?;
            let window = number_after(&message, ">")?;
            return Some(Limit::InputAndOutput(InputAndOutput { input, max_tokens, window }));
        }
        if message.contains("maximum allowed number of output tokens") {
            return number_after(&message, ">").map(Limit::MaxOutput);
        }
        None
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error> {
        let value = match json::parse_body(status, &body, "Anthropic's answer")? {
            Body::Success(v) if v["type"] != "error" => v,
            Body::Success(v) | Body::Failure(v) => return Err(http_error(status, &v, &body)),
        };
        let mut parts = Vec::new();
        for block in value["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => parts.push(Part::Text(str_of(&block["text"]))),
                Some("tool_use") => parts.push(Part::ToolCall(seshat_plugin_sdk::provider::ToolCall {
                    id: str_of(&block["id"]),
                    name: str_of(&block["name"]),
                    arguments: block["input"].to_string(),
                })),
                Some("thinking") => parts.push(Part::Thinking(seshat_plugin_sdk::provider::Thinking {
                    text: str_of(&block["thinking"]),
                    signature: block["signature"].as_str().map(String::from),
                })),
                Some("redacted_thinking") => parts.push(Part::RedactedThinking(str_of(&block["data"]))),
                _ => {}
            }
        }
        Ok(Response {
            message: Message { id: 0, role: Role::Assistant, parts },
            usage: Some(usage(&value["usage"], 0)),
            stop_reason: stop_reason(value["stop_reason"].as_str().unwrap_or("end_turn")),
        })
    }
}

/// Anthropic's usage object; `output` overrides when the stream reported a later count.
fn usage(u: &Value, output: u64) -> Usage {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let (input, read, created) = (n("input_tokens"), n("cache_read_input_tokens"), n("cache_creation_input_tokens"));
    Usage {
        input_tokens: input,
        output_tokens: n("output_tokens").max(output),
        cache_read_tokens: read,
        cache_creation_tokens: created,
        context_tokens: input + read + created,
    }
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.into()),
    }
}

/// Maps an error body (`{"type":"error","error":{"type":…,"message":…}}`) to a stable code.
fn http_error(status: u16, value: &Value, body: &[u8]) -> Error {
    let kind = value["error"]["type"].as_str().unwrap_or_default();
    let detail = match value["error"]["message"].as_str() {
        Some(m) => m.to_string(),
        None => String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned(),
    };
    let (code, hint) = match (kind, status) {
        ("authentication_error", _) | (_, 401) => {
            ("auth_failed", "check the API key (ANTHROPIC_API_KEY or api_key_env)")
        }
        ("permission_error", _) | (_, 403) => ("permission_denied", "the key may not use this model or feature"),
        ("not_found_error", _) | (_, 404) => ("not_found", "check the model id and the base URL"),
        ("rate_limit_error", _) | (_, 429) => ("rate_limited", "wait and retry, or lower the request rate"),
        ("request_too_large", _) | (_, 413) => ("request_too_large", "the request is larger than the API accepts"),
        ("overloaded_error", _) | (_, 529) => ("overloaded", "Anthropic is overloaded; retry later"),
        ("invalid_request_error", _) | (_, 400) => ("invalid_request", "the request was rejected as invalid"),
        (_, 500..=599) | ("api_error", _) => ("server_error", "a server error; retry later"),
        _ => ("http_error", "unexpected answer"),
    };
    error(code, format!("Anthropic answered HTTP {status}: {detail} ({hint})"))
}

/// The per-answer stream decoder: Anthropic numbers content blocks; Seshat numbers tool calls.
struct Decoder {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// Content block index → tool call index, for tool-use blocks.
    tools: BTreeMap<u64, u32>,
    /// Usage from `message_start`, updated by `message_delta`.
    usage: Option<Value>,
    output_tokens: u64,
    stop: Option<StopReason>,
    ended: bool,
}

impl GuestDecoder for Decoder {
    fn new() -> Self {
        Decoder { state: RefCell::new(State::default()) }
    }

    fn push(&self, event: String, data: String) -> Result<Vec<StreamEvent>, Error> {
        let mut st = self.state.borrow_mut();
        let v: Value = serde_json::from_str(&data)
            .map_err(|e| error("bad_stream", format!("Anthropic sent a `{event}` event that is not JSON: {e}")))?;
        let kind = v["type"].as_str().unwrap_or(event.as_str()).to_string();
        let mut out = Vec::new();
        match kind.as_str() {
            "message_start" => {
                st.usage = Some(v["message"]["usage"].clone());
                out.push(StreamEvent::Usage(usage(&v["message"]["usage"], 0)));
            }
            "content_block_start" => {
                let index = v["index"].as_u64().unwrap_or(0);
                let block = &v["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let n = st.tools.len() as u32;
                        st.tools.insert(index, n);
                        out.push(StreamEvent::ToolCallStart(ToolCallStart {
                            index: n,
                            id: str_of(&block["id"]),
                            name: str_of(&block["name"]),
                        }));
                    }
                    Some("redacted_thinking") => out.push(StreamEvent::RedactedThinking(str_of(&block["data"]))),
                    Some("text") if !str_of(&block["text"]).is_empty() => {
                        out.push(StreamEvent::TextDelta(str_of(&block["text"])))
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = v["index"].as_u64().unwrap_or(0);
                let d = &v["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => out.push(StreamEvent::TextDelta(str_of(&d["text"]))),
                    Some("thinking_delta") => out.push(StreamEvent::ThinkingDelta(str_of(&d["thinking"]))),
                    Some("signature_delta") => out.push(StreamEvent::ThinkingSignature(str_of(&d["signature"]))),
                    Some("input_json_delta") => {
                        let Some(&tool) = st.tools.get(&index) else {
                            return Err(error(
                                "bad_stream",
                                format!("tool arguments for block {index}, which is not a tool call"),
                            ));
                        };
                        out.push(StreamEvent::ToolCallDelta(ToolCallDelta {
                            index: tool,
                            arguments: str_of(&d["partial_json"]),
                        }));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                st.output_tokens = v["usage"]["output_tokens"].as_u64().unwrap_or(st.output_tokens);
                let base = st.usage.clone().unwrap_or(Value::Null);
                // Later servers repeat input figures here; prefer them when present.
                let merged = if v["usage"]["input_tokens"].is_u64() { v["usage"].clone() } else { base };
                out.push(StreamEvent::Usage(usage(&merged, st.output_tokens)));
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    st.stop = Some(stop_reason(reason));
                }
            }
            "message_stop" => {
                st.ended = true;
                out.push(StreamEvent::Stop(st.stop.take().unwrap_or(StopReason::EndTurn)));
            }
            "error" => {
                let e = http_error(0, &v, data.as_bytes());
                let code = match v["error"]["type"].as_str() {
                    Some("overloaded_error") => "overloaded".to_string(),
                    Some("rate_limit_error") => "rate_limited".to_string(),
                    _ => e.code,
                };
                let message = format!("Anthropic reported an error mid-answer: {}", str_of(&v["error"]["message"]));
                out.push(StreamEvent::Error(Error { code, message }));
            }
            // `ping`, `content_block_stop` and events added later carry nothing Seshat needs.
            _ => {}
        }
        Ok(out)
    }

    fn finish(&self) -> Result<Vec<StreamEvent>, Error> {
        if self.state.borrow().ended {
            Ok(Vec::new())
        } else {
            Err(error("incomplete_stream", "Anthropic's stream ended before the answer did (no `message_stop`)"))
        }
    }
}

seshat_plugin_sdk::export_provider!(Anthropic);
