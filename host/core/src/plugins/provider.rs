//! Provider plugins: pure translators between Seshat's messages and one HTTP API. They never see
//! credentials and have no network; the host sends what they build.

use serde::Serialize;
use wasmtime::component::ResourceAny;

use super::bindings::Versioned;
use super::bindings::{v0_1 as v1, v0_2 as v2, v0_3 as v3, v0_4 as v4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::sandbox::State;
use super::{Error, PluginKind, PluginMessage, Result, StopReason};
use crate::conversation::Usage;
pub use seshat_protocol::turn::StreamEvent;

/// How requests are authenticated (the host adds the credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthScheme {
    /// No credential.
    None,
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key in the named header.
    Header(String),
}

/// A model a provider knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Largest output in tokens.
    pub max_output_tokens: u64,
    /// Extras, a JSON object.
    pub extra: String,
}

/// What a provider serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderInfo {
    /// Short id.
    pub id: String,
    /// Base URL when none is configured.
    pub default_base_url: String,
    /// Authentication scheme.
    pub auth: AuthScheme,
    /// Conventional environment variable of the key.
    pub key_env: Option<String>,
    /// Known models.
    pub models: Vec<ModelInfo>,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: String,
}

/// How one message is encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeOptions {
    /// The model the request goes to.
    pub model: String,
    /// Whether this provider and model wrote the message (reasoning may be passed back).
    pub same_model: bool,
    /// Whether it is the request's last message (where a prompt-cache breakpoint goes).
    pub cache_breakpoint: bool,
}

/// A chat request in Seshat's terms, without its conversation (the host splices the encoded
/// messages into the body the plugin builds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// Model id.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// Tools.
    pub tools: Vec<ToolSpec>,
    /// Largest answer.
    pub max_tokens: u32,
    /// Stream or not.
    pub stream: bool,
    /// Base URL.
    pub base_url: String,
    /// Options, a JSON object.
    pub extra: String,
}

/// Where encoded messages go in a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    /// Byte offset in the body.
    pub offset: usize,
    /// Between two messages.
    pub separator: String,
    /// Whether a separator goes before the first too.
    pub lead: bool,
}

/// An HTTP request built by a provider (no credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method.
    pub method: String,
    /// Full URL.
    pub url: String,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body, without the conversation.
    pub body: Vec<u8>,
    /// Where the conversation goes.
    pub splice: Option<Splice>,
}

impl HttpRequest {
    /// The body with the encoded messages spliced in (empty fragments are skipped).
    pub fn body_with<'a>(&self, fragments: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
        let Some(splice) = &self.splice else { return self.body.clone() };
        let mut body = Vec::with_capacity(self.body.len() * 2);
        body.extend_from_slice(&self.body[..splice.offset]);
        let mut first = !splice.lead;
        for fragment in fragments.into_iter().filter(|f| !f.is_empty()) {
            if !first {
                body.extend_from_slice(splice.separator.as_bytes());
            }
            first = false;
            body.extend_from_slice(fragment.as_bytes());
        }
        body.extend_from_slice(&self.body[splice.offset..]);
        body
    }
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The answer.
    pub message: PluginMessage,
    /// Usage, when reported.
    pub usage: Option<Usage>,
    /// Why it stopped.
    pub stop_reason: StopReason,
}

/// An HTTP request as a plugin built it, before the host checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRequest {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// (offset, separator, lead).
    pub(crate) splice: Option<(u64, String, bool)>,
}

/// A question for the server about its models (0.2.0 providers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What it asks (handed back with the answer).
    pub name: String,
    /// The request, checked like a chat request.
    pub request: HttpRequest,
}

/// What a server said about its models (0.2.0 providers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The window the server runs the model with.
    pub context_window: Option<u64>,
    /// The model's largest answer.
    pub max_output_tokens: Option<u64>,
    /// The models the server lists.
    pub models: Vec<String>,
}

/// What a refusal says about a model's limits (0.2.0 providers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Limit {
    /// The request is longer than the window.
    TooLong {
        /// The window the error names.
        window: Option<u64>,
        /// The request's size as the server counted it.
        requested: Option<u64>,
    },
    /// The input plus `max_tokens` exceed the window.
    InputAndOutput {
        /// The input's tokens.
        input: u64,
        /// The `max_tokens` asked for.
        max_tokens: u64,
        /// The window.
        window: u64,
    },
    /// `max_tokens` is more than the model can write: its limit.
    MaxOutput(u64),
}

versioned_kind! {
    /// Providers: Seshat's messages in, an HTTP request out; the answer in, events out.
    Provider: PluginKind::Provider, host (),
    v0_1 (v1::provider::Provider, v1::provider::ProviderPre<State<()>>),
    v0_2 (v2::provider::Provider, v2::provider::ProviderPre<State<()>>),
    v0_3 (v3::provider::Provider, v3::provider::ProviderPre<State<()>>),
    v0_4 (v4::provider::Provider, v4::provider::ProviderPre<State<()>>)
}

/// Calls `translate::$f` of whichever version the instance speaks.
macro_rules! each_version {
    ($bound:expr, $store:expr, $f:ident ( $($arg:expr),* )) => {
        match $bound {
            Versioned::V0_1(b) => v1::translate::$f(b, $store $(, $arg)*),
            Versioned::V0_2(b) => v2::translate::$f(b, $store $(, $arg)*),
            Versioned::V0_3(b) => v3::translate::$f(b, $store $(, $arg)*),
            Versioned::V0_4(b) => v4::translate::$f(b, $store $(, $arg)*),
        }
    };
}

/// A loaded provider, ready to call.
pub struct ProviderPlugin {
    handle: Handle<Provider>,
}

shared_accessors!(ProviderPlugin);

impl ProviderPlugin {
    /// Whether it speaks 0.2.0 or later (probes and refusal limits).
    pub(crate) fn discovers(&self) -> bool {
        !matches!(self.handle.pre(), Versioned::V0_1(_))
    }

    fn call<R>(
        &mut self,
        f: impl FnOnce(
            &mut wasmtime::Store<State<()>>,
            &Versioned<v1::provider::Provider, v2::provider::Provider, v3::provider::Provider, v4::provider::Provider>,
        ) -> wasmtime::Result<std::result::Result<R, v1::wit::Error>>,
    ) -> Result<R> {
        self.handle.call(f)
    }

    /// What the provider serves.
    pub fn info(&mut self) -> Result<ProviderInfo> {
        self.call(|s, b| each_version!(b, s, info()))
    }

    /// Encodes one message as a fragment of the provider's wire format.
    pub fn encode_message(&mut self, message: &PluginMessage, options: &EncodeOptions) -> Result<String> {
        self.call(|s, b| each_version!(b, s, encode_message(message, options)))
    }

    /// Builds the HTTP request for a chat request.
    pub fn build_request(&mut self, request: &ChatRequest) -> Result<HttpRequest> {
        let raw = self.call(|s, b| each_version!(b, s, build_request(request)))?;
        self.checked(raw)
    }

    /// The plugin's request, checked (see [`check_request`]).
    fn checked(&self, http: RawRequest) -> Result<HttpRequest> {
        check_request(self.handle.id(), http)
    }

    /// Decodes a whole (non-streamed) answer or an error body.
    pub fn parse_response(&mut self, status: u16, body: &[u8]) -> Result<Response> {
        self.call(|s, b| each_version!(b, s, parse_response(status, body)))
    }

    /// The probes that tell a model's window (or, for `None`, the server's models), in order;
    /// none for a 0.1.0 plugin.
    pub fn probes(&mut self, model: Option<&str>, base_url: &str) -> Result<Vec<Probe>> {
        if !self.discovers() {
            return Ok(Vec::new());
        }
        let probes = self.call(|s, b| match b {
            Versioned::V0_1(_) => Ok(Ok(Vec::new())),
            Versioned::V0_2(b) => v2::translate::probes(b, s, model, base_url),
            Versioned::V0_3(b) => v3::translate::probes(b, s, model, base_url),
            Versioned::V0_4(b) => v4::translate::probes(b, s, model, base_url),
        })?;
        self.without_splice(probes, "probe", "probes carry no conversation")
    }

    /// Probes (or counters) as the plugin built them, checked, none with a place for messages.
    fn without_splice(&self, raw: Vec<(String, RawRequest)>, what: &str, why: &str) -> Result<Vec<Probe>> {
        raw.into_iter()
            .map(|(name, raw)| {
                let request = self.checked(raw)?;
                if request.splice.is_some() {
                    return Err(self.handle.invalid(format!("{what} `{name}` has a place for messages; {why}")));
                }
                Ok(Probe { name, request })
            })
            .collect()
    }

    /// Reads the answer to a probe.
    pub fn parse_probe(&mut self, name: &str, model: Option<&str>, status: u16, body: &[u8]) -> Result<Discovery> {
        self.call(|s, b| match b {
            Versioned::V0_1(_) => Ok(Ok(Discovery::default())),
            Versioned::V0_2(b) => v2::translate::parse_probe(b, s, name, model, status, body),
            Versioned::V0_3(b) => v3::translate::parse_probe(b, s, name, model, status, body),
            Versioned::V0_4(b) => v4::translate::parse_probe(b, s, name, model, status, body),
        })
    }

    /// What an error answer says of the model's limits, if it refuses the request for its length
    /// or its `max_tokens` (a 0.1.0 plugin cannot say).
    pub fn refusal_limit(&mut self, status: u16, body: &[u8]) -> Result<Option<Limit>> {
        self.call(|s, b| match b {
            Versioned::V0_1(_) => Ok(Ok(None)),
            Versioned::V0_2(b) => v2::translate::refusal_limit(b, s, status, body),
            Versioned::V0_3(b) => v3::translate::refusal_limit(b, s, status, body),
            Versioned::V0_4(b) => v4::translate::refusal_limit(b, s, status, body),
        })
    }

    /// The requests asking the server to count `request`'s input tokens with `messages` as its
    /// conversation, in the order to try them (0.3.0; none before, or for an API without one).
    /// Each is checked as a probe is: no place for messages, since it carries them already.
    pub fn counters(&mut self, request: &ChatRequest, messages: &[PluginMessage]) -> Result<Vec<Probe>> {
        let counters = self.call(|s, b| match b {
            Versioned::V0_1(_) | Versioned::V0_2(_) => Ok(Ok(Vec::new())),
            Versioned::V0_3(b) => v3::translate::counters(b, s, request, messages),
            Versioned::V0_4(b) => v4::translate::counters(b, s, request, messages),
        })?;
        self.without_splice(counters, "counter", "a counter's body carries its conversation")
    }

    /// Reads a counter's answer: the input tokens, when it says (0.3.0).
    pub fn parse_count(&mut self, name: &str, status: u16, body: &[u8]) -> Result<Option<u64>> {
        self.call(|s, b| match b {
            Versioned::V0_1(_) | Versioned::V0_2(_) => Ok(Ok(None)),
            Versioned::V0_3(b) => v3::translate::parse_count(b, s, name, status, body),
            Versioned::V0_4(b) => v4::translate::parse_count(b, s, name, status, body),
        })
    }

    /// Starts decoding one streamed answer.
    pub fn decoder(&mut self) -> Result<StreamDecoder<'_>> {
        let resource = self.call(|s, b| each_version!(b, s, decoder()))?;
        Ok(StreamDecoder { plugin: self, resource: Some(resource) })
    }
}

/// A request a plugin built (a provider's or an embedder's), checked: an HTTP method, an http(s) URL, headers that cannot
/// smuggle others, a splice point inside the body.
pub(super) fn check_request(plugin: &str, http: RawRequest) -> Result<HttpRequest> {
    let id = plugin.to_string();
    let invalid = |message: String| Error::InvalidOutput { plugin: id.clone(), message };
    if http.method.is_empty() || !http.method.bytes().all(|c| c.is_ascii_uppercase()) {
        return Err(invalid(format!(
            "`{}` is not an HTTP method: a method is upper-case ASCII letters, e.g. `POST`",
            http.method
        )));
    }
    if !(http.url.starts_with("https://") || http.url.starts_with("http://")) {
        return Err(invalid(format!("`{}` is not an http(s) URL: it must start with https:// or http://", http.url)));
    }
    for (name, value) in &http.headers {
        let name_ok = !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
        if !name_ok || value.bytes().any(|c| c == b'\r' || c == b'\n') {
            return Err(invalid(format!(
                "invalid header `{name}`: a name is ASCII letters, digits, `-` and `_`, and a value holds no line \
                 break"
            )));
        }
    }
    let splice = match http.splice {
        None => None,
        Some((offset, separator, lead)) => {
            let Some(at) = usize::try_from(offset).ok().filter(|&o| o <= http.body.len()) else {
                return Err(invalid(format!(
                    "the messages' place ({offset}) is past the end of the {}-byte body",
                    http.body.len()
                )));
            };
            if separator.len() > 16 {
                return Err(invalid("the message separator is longer than 16 bytes".into()));
            }
            Some(Splice { offset: at, separator, lead })
        }
    };
    Ok(HttpRequest { method: http.method, url: http.url, headers: http.headers, body: http.body, splice })
}

/// A stream decoder living in the provider's instance. Dropping it frees the guest resource.
pub struct StreamDecoder<'a> {
    plugin: &'a mut ProviderPlugin,
    resource: Option<ResourceAny>,
}

impl std::fmt::Debug for StreamDecoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamDecoder").field("plugin", &self.plugin.id()).finish_non_exhaustive()
    }
}

impl StreamDecoder<'_> {
    /// Feeds one framed server-sent event.
    pub fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>> {
        let resource = self.live_resource()?;
        let events = self.plugin.call(|s, b| each_version!(b, s, push(resource, event, data)));
        self.after(events)
    }

    /// The stream ended.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>> {
        let resource = self.live_resource()?;
        let events = self.plugin.call(|s, b| each_version!(b, s, finish(resource)));
        self.after(events)
    }

    fn live_resource(&self) -> Result<ResourceAny> {
        self.resource.ok_or_else(|| Error::Trap {
            plugin: self.plugin.id().to_string(),
            kind: PluginKind::Provider.as_str(),
            message: "the decoder was lost when the plugin was restarted".into(),
            stderr: String::new(),
        })
    }

    fn after(&mut self, events: Result<Vec<StreamEvent>>) -> Result<Vec<StreamEvent>> {
        if !self.plugin.handle.is_live() {
            // The instance trapped and was dropped with the resource inside it.
            self.resource = None;
        }
        events
    }
}

impl Drop for StreamDecoder<'_> {
    fn drop(&mut self) {
        if let Some(resource) = self.resource.take() {
            self.plugin.handle.drop_resource(resource);
        }
    }
}
