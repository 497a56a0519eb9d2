#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "provider",
        pub_export_macro: true,
        export_macro_name: "__export_provider_world",
        default_bindings_module: "::seshat_plugin_sdk::provider::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_provider_world;

pub use bindings::exports::seshat::plugin::translate::{
    Auth, ChatRequest, Discovery, EncodeOptions, Guest as __Guest, GuestDecoder, HttpRequest, InputAndOutput, Limit,
    Probe, ProviderInfo, Response, Splice, StreamEvent, TooLong, ToolCallDelta, ToolCallStart, ToolSpec,
};
pub use bindings::seshat::plugin::types::{
    Error, Message, ModelInfo, Part, Role, StopReason, Thinking, ToolCall, ToolResult, Usage,
};

/// A provider adapter. `Decoder` is the per-answer stream decoder.
pub trait Provider {
    /// The stream decoder type.
    type Decoder: GuestDecoder + 'static;
    /// What the provider serves.
    fn info() -> ProviderInfo;
    /// Encodes one message as a fragment of the wire format (empty to send nothing of it).
    fn encode_message(message: Message, options: EncodeOptions) -> Result<String, Error>;
    /// Turns a chat request into an HTTP request (never with credentials), with a
    /// [`Splice`] saying where the encoded messages go.
    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error>;
    /// Decodes a whole answer or an error body.
    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error>;

    /// Requests asking the server for `model`'s window (or, with `None`, its list of models),
    /// in the order to try them (0.2.0). The default asks nothing: right for an API whose
    /// models are all in [`Provider::info`].
    fn probes(_model: Option<String>, _base_url: String) -> Vec<Probe> {
        Vec::new()
    }

    /// Reads the answer to the probe `name` (0.2.0). Say nothing (the default) for an answer
    /// that does not tell: the host tries the next probe.
    fn parse_probe(_name: String, _model: Option<String>, _status: u16, _body: Vec<u8>) -> Discovery {
        Discovery { context_window: None, max_output_tokens: None, models: Vec::new() }
    }

    /// Whether an error answer refuses the request for its length or its `max_tokens`, and
    /// what it says of the limits (0.2.0). The default recognises none.
    fn refusal_limit(_status: u16, _body: Vec<u8>) -> Option<Limit> {
        None
    }

    /// Requests asking the server how many tokens `request`'s input is, with `messages` as its
    /// conversation, in the order to try them (0.3.0). The default asks
    /// nothing: right for an API without a counting endpoint (the host then counts locally where
    /// it can, or estimates). Build each with [`post_counter`].
    fn counters(_request: ChatRequest, _messages: Vec<Message>) -> Vec<Probe> {
        Vec::new()
    }

    /// Reads the answer to the counter `name`: the input tokens, or `None` when the answer does
    /// not say (the host tries the next counter). Never report 0 for an answer that counted
    /// nothing: say `None`.
    fn parse_count(_name: String, _status: u16, _body: Vec<u8>) -> Option<u64> {
        None
    }
}

kind_helpers!("[providers.<name>] options");
stop_reason_display!();

impl<T: Provider> __Guest for T {
    type Decoder = <T as Provider>::Decoder;
    fn info() -> ProviderInfo {
        __install_panic_hook();
        <T as Provider>::info()
    }
    fn encode_message(message: Message, options: EncodeOptions) -> Result<String, Error> {
        __install_panic_hook();
        <T as Provider>::encode_message(message, options)
    }
    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        __install_panic_hook();
        <T as Provider>::build_request(request)
    }
    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error> {
        __install_panic_hook();
        <T as Provider>::parse_response(status, body)
    }
    fn probes(model: Option<String>, base_url: String) -> Vec<Probe> {
        __install_panic_hook();
        <T as Provider>::probes(model, base_url)
    }
    fn parse_probe(name: String, model: Option<String>, status: u16, body: Vec<u8>) -> Discovery {
        __install_panic_hook();
        <T as Provider>::parse_probe(name, model, status, body)
    }
    fn refusal_limit(status: u16, body: Vec<u8>) -> Option<Limit> {
        __install_panic_hook();
        <T as Provider>::refusal_limit(status, body)
    }
    fn counters(request: ChatRequest, messages: Vec<Message>) -> Vec<Probe> {
        __install_panic_hook();
        <T as Provider>::counters(request, messages)
    }
    fn parse_count(name: String, status: u16, body: Vec<u8>) -> Option<u64> {
        __install_panic_hook();
        <T as Provider>::parse_count(name, status, body)
    }
}

/// A `POST` counter (or probe) of `url` with a JSON `body`.
pub fn post_counter(name: &str, url: String, body: Vec<u8>) -> Probe {
    Probe {
        name: name.into(),
        request: HttpRequest {
            method: "POST".into(),
            url,
            headers: alloc::vec![
                ("content-type".into(), "application/json".into()),
                ("accept".into(), "application/json".into())
            ],
            body,
            splice: None,
        },
    }
}

/// A `GET` probe of `url` asking for JSON.
pub fn get_probe(name: &str, url: String) -> Probe {
    Probe {
        name: name.into(),
        request: HttpRequest {
            method: "GET".into(),
            url,
            headers: alloc::vec![("accept".into(), "application/json".into())],
            body: Vec::new(),
            splice: None,
        },
    }
}

/// The first number after `marker` in `text` (digits, with `,` or `_` between them allowed).
pub fn number_after(text: &str, marker: &str) -> Option<u64> {
    let at = text.find(marker)? + marker.len();
    let digits: String = text[at..]
        .trim_start_matches([' ', ':', '=', '"'])
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// An error with a stable `code` and a message for people.
pub fn error(code: &str, message: impl Into<String>) -> Error {
    Error { code: code.into(), message: message.into() }
}

/// A model entry for [`ProviderInfo::models`].
pub fn model(id: &str, context_window: u64, max_output_tokens: u64) -> ModelInfo {
    ModelInfo { id: id.into(), context_window, max_output_tokens, extra: "{}".into() }
}

/// Helpers for providers whose API takes a JSON body with a `messages` array (feature `json`).
#[cfg(feature = "json")]
pub mod json {
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    pub use serde_json::{self, Map, Value, json};

    use super::{ChatRequest, EncodeOptions, Error, HttpRequest, Message, Splice, ToolSpec, error};

    /// The user's provider options (`ChatRequest::extra`), which must be a JSON object.
    pub fn options(extra: &str) -> Result<Map<String, Value>, Error> {
        match serde_json::from_str(extra) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(error("invalid_request", alloc::format!("provider options must be a JSON object, not `{extra}`"))),
        }
    }

    /// A tool's JSON Schema, parsed.
    pub fn schema(tool: &ToolSpec) -> Result<Value, Error> {
        serde_json::from_str(&tool.parameters)
            .map_err(|e| error("invalid_request", alloc::format!("tool `{}` has an invalid schema: {e}", tool.name)))
    }

    /// A string field, or empty.
    pub fn str_of(v: &Value) -> String {
        v.as_str().unwrap_or_default().to_string()
    }

    /// A `POST` of a JSON body to `url`, with `content-type` and the `accept` a streamed or
    /// whole answer needs, then `headers`.
    pub fn post(url: String, stream: bool, headers: &[(&str, &str)], body: Vec<u8>, splice: Splice) -> HttpRequest {
        let accept = if stream { "text/event-stream" } else { "application/json" };
        let mut all = alloc::vec![("content-type".into(), "application/json".into()), ("accept".into(), accept.into())];
        all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        HttpRequest { method: "POST".into(), url, headers: all, body, splice: Some(splice) }
    }

    /// A whole answer's body, parsed.
    #[derive(Debug)]
    pub enum Body {
        /// A success status with a JSON body.
        Success(Value),
        /// An error status; its JSON body, or `Null` when it is not JSON.
        Failure(Value),
    }

    /// Parses a whole answer's body; a success whose body is not JSON is an `invalid_response`
    /// error naming `who` (e.g. "Anthropic's answer").
    pub fn parse_body(status: u16, body: &[u8], who: &str) -> Result<Body, Error> {
        let ok = (200..300).contains(&status);
        match serde_json::from_slice(body) {
            Ok(v) if ok => Ok(Body::Success(v)),
            Ok(v) => Ok(Body::Failure(v)),
            Err(_) if !ok => Ok(Body::Failure(Value::Null)),
            Err(e) => Err(error("invalid_response", alloc::format!("{who} is not JSON: {e}"))),
        }
    }

    /// A JSON object body ending in the array `key` where the host splices the encoded
    /// messages: `fields` in the order given, then the user's `extra` options (which may not
    /// override them or `key`), then `key` with `lead` items already in it. The bytes before
    /// the messages are the same from turn to turn, as prompt caching needs.
    pub fn body(
        fields: &[(&str, Value)],
        extra: &Map<String, Value>,
        key: &str,
        lead: &[Value],
    ) -> Result<(Vec<u8>, Splice), Error> {
        let mut head = String::from("{");
        for (k, v) in fields {
            head.push_str(&alloc::format!("{}:{v},", Value::from(*k)));
        }
        for (k, v) in extra {
            if k == key || fields.iter().any(|(f, _)| f == k) {
                return Err(error(
                    "invalid_request",
                    alloc::format!("provider option `{k}` is set by Seshat and cannot be overridden"),
                ));
            }
            head.push_str(&alloc::format!("{}:{v},", Value::from(k.as_str())));
        }
        head.push_str(&alloc::format!("{}:[", Value::from(key)));
        let items: Vec<String> = lead.iter().map(Value::to_string).collect();
        head.push_str(&items.join(","));
        let splice = Splice { offset: head.len() as u64, separator: ",".into(), lead: !lead.is_empty() };
        head.push_str("]}");
        Ok((head.into_bytes(), splice))
    }

    /// The whole, non-streamed body provider `P` builds for `request` with `messages` as its
    /// conversation, as the host would splice it, parsed: what a counter (0.3.0) starts from.
    pub fn request_body<P: super::Provider>(
        request: ChatRequest,
        messages: Vec<Message>,
    ) -> Result<Map<String, Value>, Error> {
        let options = EncodeOptions { model: request.model.clone(), same_model: false, cache_breakpoint: false };
        let http = P::build_request(ChatRequest { stream: false, ..request })?;
        let fragments: Vec<String> =
            messages.into_iter().filter_map(|m| P::encode_message(m, options.clone()).ok()).collect();
        spliced(&http, &fragments)
    }

    /// The body `request` will have once the host splices `fragments` (encoded messages, empty
    /// ones left out) into it, parsed.
    fn spliced(request: &HttpRequest, fragments: &[String]) -> Result<Map<String, Value>, Error> {
        let mut body = request.body.clone();
        if let Some(splice) = &request.splice {
            let mut joined = String::new();
            for (i, f) in fragments.iter().filter(|f| !f.is_empty()).enumerate() {
                if i > 0 || splice.lead {
                    joined.push_str(&splice.separator);
                }
                joined.push_str(f);
            }
            let at = (splice.offset as usize).min(body.len());
            body.splice(at..at, joined.into_bytes());
        }
        match serde_json::from_slice(&body) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(error("invalid_request", "the request's body is not a JSON object")),
            Err(e) => Err(error("invalid_request", alloc::format!("the request's body is not JSON: {e}"))),
        }
    }
}

/// Exports a [`Provider`] implementation as the plugin's provider.
#[macro_export]
macro_rules! export_provider {
    ($t:ident) => {
        $crate::provider::__export_provider_world!($t with_types_in $crate::provider::__bindings);
        $crate::__version_section!();
    };
}
