//! A provider for tests, built without the SDK against the frozen `wit/v0.1.0` (so it also proves
//! 0.1.0 providers keep loading and working): a decoder resource with state (it numbers the
//! events it was fed), to prove exported resources work across calls. It misbehaves on request
//! (the model `loop`, `membomb` or `panic`; the stream event of the same name), to prove the
//! sandbox holds for providers too.

wit_bindgen::generate!({ path: "../../../../wit/v0.1.0", world: "provider" });

use std::cell::Cell;

use exports::seshat::plugin::translate::{
    Auth, ChatRequest, EncodeOptions, Guest, GuestDecoder, HttpRequest, ProviderInfo, Response, Splice, StreamEvent,
};
use seshat::plugin::types::{Error, Message, ModelInfo, Part, Role, StopReason, Usage};

struct Test;

impl Guest for Test {
    type Decoder = Decoder;

    fn info() -> ProviderInfo {
        ProviderInfo {
            id: "test".into(),
            default_base_url: "http://127.0.0.1:9".into(),
            auth: Auth::Header("x-test-key".into()),
            key_env: Some("TEST_API_KEY".into()),
            models: vec![ModelInfo {
                id: "test-1".into(),
                context_window: 8_192,
                max_output_tokens: 1_024,
                extra: "{}".into(),
            }],
        }
    }

    fn encode_message(message: Message, options: EncodeOptions) -> Result<String, Error> {
        // `id:role:parts`, with `*` marking a cache breakpoint.
        let mark = if options.cache_breakpoint { "*" } else { "" };
        Ok(format!("\"{}:{:?}:{}{mark}\"", message.id, message.role, message.parts.len()))
    }

    fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
        misbehave::on(&request.model, "test provider");
        if request.model == "bad-url" {
            return Ok(HttpRequest {
                method: "POST".into(),
                url: "file:///etc/passwd".into(),
                headers: vec![],
                body: vec![],
                splice: None,
            });
        }
        if request.model == "bad-splice" {
            let splice = Some(Splice { offset: 1_000, separator: ",".into(), lead: false });
            return Ok(HttpRequest {
                method: "POST".into(),
                url: format!("{}/chat", request.base_url),
                headers: vec![],
                body: vec![],
                splice,
            });
        }
        if request.model == "sets-auth" {
            // A plugin trying to add a credential of its own: the host must refuse to send it.
            return Ok(HttpRequest {
                method: "POST".into(),
                url: format!("{}/chat", request.base_url),
                headers: vec![("Authorization".into(), "Bearer stolen".into())],
                body: b"{}".to_vec(),
                splice: None,
            });
        }
        let head = format!("{{\"model\":\"{}\",\"messages\":[", request.model);
        Ok(HttpRequest {
            method: "POST".into(),
            url: format!("{}/chat", request.base_url),
            headers: vec![("content-type".into(), "application/json".into())],
            splice: Some(Splice { offset: head.len() as u64, separator: ",".into(), lead: false }),
            body: format!("{head}]}}").into_bytes(),
        })
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Response, Error> {
        if status != 200 {
            return Err(Error { code: format!("http_{status}"), message: String::from_utf8_lossy(&body).into_owned() });
        }
        Ok(Response {
            message: Message {
                id: 0,
                role: Role::Assistant,
                parts: vec![Part::Text(String::from_utf8_lossy(&body).into_owned())],
            },
            usage: Some(Usage {
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 0,
                cache_creation_tokens: 0,
                context_tokens: 1,
            }),
            stop_reason: StopReason::EndTurn,
        })
    }
}

struct Decoder {
    seen: Cell<u32>,
}

impl GuestDecoder for Decoder {
    fn new() -> Self {
        Decoder { seen: Cell::new(0) }
    }

    fn push(&self, event: String, data: String) -> Result<Vec<StreamEvent>, Error> {
        misbehave::on(&event, "test provider");
        if event == "error" {
            return Err(Error { code: "stream".into(), message: data });
        }
        self.seen.set(self.seen.get() + 1);
        Ok(vec![StreamEvent::TextDelta(format!("{}:{data}", self.seen.get()))])
    }

    fn finish(&self) -> Result<Vec<StreamEvent>, Error> {
        Ok(vec![StreamEvent::Stop(StopReason::Other(format!("after {}", self.seen.get())))])
    }
}

export!(Test);
