//! Provider plugins: pure translators between Seshat's messages and one HTTP API. They never see
//! credentials and have no network; the host sends what they build.

use std::sync::OnceLock;

use serde::Serialize;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceAny};

use super::bindings::v0_1::provider as b;
use super::bindings::v0_1::provider::exports::seshat::plugin::translate as t;
use super::sandbox::{self, Slot, State};
use super::{Error, LoadedPlugin, PluginKind, PluginMessage, Result, StopReason};
use crate::store::Usage;

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

/// One decoded streaming event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The reasoning's signature.
    ThinkingSignature {
        /// The signature.
        signature: String,
    },
    /// Encrypted reasoning.
    RedactedThinking {
        /// The data.
        data: String,
    },
    /// A tool call starts.
    ToolCallStart {
        /// Position.
        index: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Tool call arguments.
    ToolCallDelta {
        /// Position.
        index: u32,
        /// Next piece.
        arguments: String,
    },
    /// Usage so far.
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The answer ended.
    Stop {
        /// Why.
        reason: StopReason,
    },
    /// An error mid-stream.
    Error {
        /// Code.
        code: String,
        /// Message.
        message: String,
    },
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

fn linker() -> wasmtime::Result<&'static Linker<State<()>>> {
    static LINKER: OnceLock<Linker<State<()>>> = OnceLock::new();
    sandbox::linker(&LINKER, |l| b::Provider::add_to_linker::<_, HasSelf<_>>(l, |s| s))
}

/// A loaded provider, ready to call.
pub struct ProviderPlugin {
    allowed_hosts: Vec<String>,
    pre: b::ProviderPre<State<()>>,
    slot: Slot<(), b::Provider>,
}

impl std::fmt::Debug for ProviderPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderPlugin")
            .field("id", &self.slot.id)
            .field("limits", &self.slot.limits)
            .finish_non_exhaustive()
    }
}

impl ProviderPlugin {
    /// Prepares a loaded plugin as a provider.
    pub fn new(plugin: &LoadedPlugin) -> Result<Self> {
        let (pre, slot) = sandbox::prepare(plugin, PluginKind::Provider, linker(), b::ProviderPre::new)?;
        Ok(Self { allowed_hosts: plugin.manifest.allowed_hosts.clone(), pre, slot: slot.with_bindings() })
    }

    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.slot.id
    }

    /// Hosts its manifest allows requests to.
    pub fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    /// Runs one call into the guest with the sandbox's accounting; a trap drops the instance.
    fn call<R>(
        &mut self,
        f: impl FnOnce(
            &mut Store<State<()>>,
            &b::Provider,
        ) -> wasmtime::Result<std::result::Result<R, super::bindings::v0_1::wit::Error>>,
    ) -> Result<R> {
        let pre = &self.pre;
        self.slot.call(|s| pre.instantiate(s), f)
    }

    /// What the provider serves.
    pub fn info(&mut self) -> Result<ProviderInfo> {
        let info = self.call(|s, b| b.seshat_plugin_translate().call_info(s).map(Ok))?;
        Ok(ProviderInfo {
            id: info.id,
            default_base_url: info.default_base_url,
            auth: match info.auth {
                t::Auth::None => AuthScheme::None,
                t::Auth::Bearer => AuthScheme::Bearer,
                t::Auth::Header(h) => AuthScheme::Header(h),
            },
            key_env: info.key_env,
            models: info
                .models
                .into_iter()
                .map(|m| ModelInfo {
                    id: m.id,
                    context_window: m.context_window,
                    max_output_tokens: m.max_output_tokens,
                    extra: m.extra,
                })
                .collect(),
        })
    }

    /// Encodes one message as a fragment of the provider's wire format.
    pub fn encode_message(&mut self, message: &PluginMessage, options: &EncodeOptions) -> Result<String> {
        let message = message.into();
        let options = t::EncodeOptions {
            model: options.model.clone(),
            same_model: options.same_model,
            cache_breakpoint: options.cache_breakpoint,
        };
        self.call(|s, b| b.seshat_plugin_translate().call_encode_message(s, &message, &options))
    }

    /// Builds the HTTP request for a chat request.
    pub fn build_request(&mut self, request: &ChatRequest) -> Result<HttpRequest> {
        let req = t::ChatRequest {
            model: request.model.clone(),
            system: request.system.clone(),
            tools: request
                .tools
                .iter()
                .map(|t| t::ToolSpec {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    parameters: t.parameters.clone(),
                })
                .collect(),
            max_tokens: request.max_tokens,
            stream: request.stream,
            base_url: request.base_url.clone(),
            extra: request.extra.clone(),
        };
        let id = self.slot.id.clone();
        let http = self.call(|s, b| b.seshat_plugin_translate().call_build_request(s, &req))?;
        let invalid = |message: String| Error::InvalidOutput { plugin: id.clone(), message };
        if http.method.is_empty() || !http.method.bytes().all(|c| c.is_ascii_uppercase()) {
            return Err(invalid(format!("`{}` is not an HTTP method", http.method)));
        }
        if !(http.url.starts_with("https://") || http.url.starts_with("http://")) {
            return Err(invalid(format!("`{}` is not an http(s) URL", http.url)));
        }
        for (name, value) in &http.headers {
            let name_ok = !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
            if !name_ok || value.bytes().any(|c| c == b'\r' || c == b'\n') {
                return Err(invalid(format!("invalid header `{name}`")));
            }
        }
        let splice = match http.splice {
            None => None,
            Some(sp) => {
                let offset = usize::try_from(sp.offset).ok().filter(|&o| o <= http.body.len());
                let Some(offset) = offset else {
                    return Err(invalid(format!(
                        "the messages' place ({}) is past the end of the {}-byte body",
                        sp.offset,
                        http.body.len()
                    )));
                };
                if sp.separator.len() > 16 {
                    return Err(invalid("the message separator is longer than 16 bytes".into()));
                }
                Some(Splice { offset, separator: sp.separator, lead: sp.lead })
            }
        };
        Ok(HttpRequest { method: http.method, url: http.url, headers: http.headers, body: http.body, splice })
    }

    /// Decodes a whole (non-streamed) answer or an error body.
    pub fn parse_response(&mut self, status: u16, body: &[u8]) -> Result<Response> {
        let r = self.call(|s, b| b.seshat_plugin_translate().call_parse_response(s, status, body))?;
        Ok(Response { message: r.message.into(), usage: r.usage.map(Into::into), stop_reason: r.stop_reason.into() })
    }

    /// Starts decoding one streamed answer.
    pub fn decoder(&mut self) -> Result<StreamDecoder<'_>> {
        let resource = self.call(|s, b| b.seshat_plugin_translate().decoder().call_constructor(s).map(Ok))?;
        Ok(StreamDecoder { plugin: self, resource: Some(resource) })
    }
}

/// A stream decoder living in the provider's instance. Dropping it frees the guest resource.
pub struct StreamDecoder<'a> {
    plugin: &'a mut ProviderPlugin,
    resource: Option<ResourceAny>,
}

impl std::fmt::Debug for StreamDecoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamDecoder").field("plugin", &self.plugin.slot.id).finish_non_exhaustive()
    }
}

impl StreamDecoder<'_> {
    /// Feeds one framed server-sent event.
    pub fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>> {
        let resource = self.live_resource()?;
        let events = self.plugin.call(|s, b| b.seshat_plugin_translate().decoder().call_push(s, resource, event, data));
        self.after(events)
    }

    /// The stream ended.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>> {
        let resource = self.live_resource()?;
        let events = self.plugin.call(|s, b| b.seshat_plugin_translate().decoder().call_finish(s, resource));
        self.after(events)
    }

    fn live_resource(&self) -> Result<ResourceAny> {
        self.resource.ok_or_else(|| Error::Trap {
            plugin: self.plugin.slot.id.clone(),
            kind: PluginKind::Provider.as_str(),
            message: "the decoder was lost when the plugin was restarted".into(),
        })
    }

    fn after(&mut self, events: Result<Vec<t::StreamEvent>>) -> Result<Vec<StreamEvent>> {
        if !self.plugin.slot.is_live() {
            // The instance trapped and was dropped with the resource inside it.
            self.resource = None;
        }
        Ok(events?.into_iter().map(event_from_wit).collect())
    }
}

impl Drop for StreamDecoder<'_> {
    fn drop(&mut self) {
        if let (Some(resource), Some(store)) = (self.resource.take(), self.plugin.slot.store_mut()) {
            // A failure here leaves the resource to die with the instance.
            let _ = resource.resource_drop(&mut *store);
        }
    }
}

fn event_from_wit(e: t::StreamEvent) -> StreamEvent {
    match e {
        t::StreamEvent::TextDelta(text) => StreamEvent::TextDelta { text },
        t::StreamEvent::ThinkingDelta(text) => StreamEvent::ThinkingDelta { text },
        t::StreamEvent::ThinkingSignature(signature) => StreamEvent::ThinkingSignature { signature },
        t::StreamEvent::RedactedThinking(data) => StreamEvent::RedactedThinking { data },
        t::StreamEvent::ToolCallStart(s) => StreamEvent::ToolCallStart { index: s.index, id: s.id, name: s.name },
        t::StreamEvent::ToolCallDelta(d) => StreamEvent::ToolCallDelta { index: d.index, arguments: d.arguments },
        t::StreamEvent::Usage(u) => StreamEvent::Usage { usage: u.into() },
        t::StreamEvent::Stop(r) => StreamEvent::Stop { reason: r.into() },
        t::StreamEvent::Error(e) => StreamEvent::Error { code: e.code, message: e.message },
    }
}
