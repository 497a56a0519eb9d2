//! A provider plugin for Seshat: translates chat requests into one HTTP API and back.
use seshat_plugin_sdk::provider::{
    Auth, ChatRequest, Error, GuestDecoder, HttpRequest, Message, ModelInfo, Part, Provider, ProviderInfo, Response,
    Role, StopReason, StreamEvent,
};

struct Plugin;

impl Provider for Plugin {
    type Decoder = Decoder;

    fn info() -> ProviderInfo {
        ProviderInfo {
            id: "example".into(),
            default_base_url: "https://api.example.com".into(),
            auth: Auth::Bearer,
            key_env: Some("EXAMPLE_API_KEY".into()),
            models: vec![ModelInfo { id: "example-1".into(), context_window: 128_000, max_output_tokens: 8_192, extra: "{}".into() }],
        }
    }

    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        let body = format!("{{\"model\":{:?},\"messages\":{}}}", request.model, request.messages.len());
        Ok(HttpRequest {
            method: "POST".into(),
            url: format!("{}/v1/chat", request.base_url.trim_end_matches('/')),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into_bytes(),
        })
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error> {
        let text = String::from_utf8_lossy(&body).into_owned();
        if status >= 400 {
            return Err(Error { code: format!("http_{status}"), message: text });
        }
        let message = Message { id: 0, role: Role::Assistant, parts: vec![Part::Text(text)] };
        Ok(Response { message, usage: None, stop_reason: StopReason::EndTurn })
    }
}

/// Treats every server-sent event's data as answer text.
struct Decoder;

impl GuestDecoder for Decoder {
    fn new() -> Self {
        Decoder
    }
    fn push(&self, _event: String, data: String) -> Result<Vec<StreamEvent>, Error> {
        Ok(vec![StreamEvent::TextDelta(data)])
    }
    fn finish(&self) -> Result<Vec<StreamEvent>, Error> {
        Ok(vec![StreamEvent::Stop(StopReason::EndTurn)])
    }
}

seshat_plugin_sdk::export_provider!(Plugin);
