//! A provider plugin for Seshat: translates chat requests into one HTTP API and back.
use seshat_plugin_sdk::provider::{
    Auth, ChatRequest, EncodeOptions, Error, GuestDecoder, HttpRequest, Message, ModelInfo, Part, Provider,
    ProviderInfo, Response, Role, Splice, StopReason, StreamEvent,
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

    /// One message as a fragment of the body; the host caches it and splices it in.
    fn encode_message(message: Message, _options: EncodeOptions) -> Result<String, Error> {
        let text: Vec<String> = message
            .parts
            .into_iter()
            .filter_map(|p| if let Part::Text(t) = p { Some(format!("{t:?}")) } else { None })
            .collect();
        Ok(format!("{{\"role\":\"{:?}\",\"text\":[{}]}}", message.role, text.join(",")))
    }

    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        // The messages go between the brackets: the splice says where.
        let head = format!("{{\"model\":{:?},\"messages\":[", request.model);
        Ok(HttpRequest {
            method: "POST".into(),
            url: format!("{}/v1/chat", request.base_url.trim_end_matches('/')),
            headers: vec![("content-type".into(), "application/json".into())],
            splice: Some(Splice { offset: head.len() as u64, separator: ",".into(), lead: false }),
            body: format!("{head}]}}").into_bytes(),
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
