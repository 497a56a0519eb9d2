// The provider calls of one contract version, in host types. `include!`d into each version's
// bindings module after `use`s naming its generated `Bindings` and `t` (its `translate`
// interface): the records are the same in every version, so one text serves them all. (An
// included file carries no inner doc comment.)

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::plugins::PluginMessage;
use crate::plugins::provider::{
    AuthScheme, ChatRequest, EncodeOptions, ModelInfo, ProviderInfo, RawRequest, Response, StreamEvent,
};
use crate::plugins::sandbox::State;

/// What a guest call returns: a trap (outer) or the plugin's own error (inner).
type Call<T> = wasmtime::Result<Result<T, crate::plugins::bindings::v0_1::wit::Error>>;

/// `info`.
pub(crate) fn info(b: &Bindings, s: &mut Store<State<()>>) -> Call<ProviderInfo> {
    let info = b.seshat_plugin_translate().call_info(s)?;
    Ok(Ok(ProviderInfo {
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
    }))
}

/// `encode-message`.
pub(crate) fn encode_message(
    b: &Bindings,
    s: &mut Store<State<()>>,
    message: &PluginMessage,
    options: &EncodeOptions,
) -> Call<String> {
    let message = message.into();
    let options = t::EncodeOptions {
        model: options.model.clone(),
        same_model: options.same_model,
        cache_breakpoint: options.cache_breakpoint,
    };
    b.seshat_plugin_translate().call_encode_message(s, &message, &options)
}

/// `build-request`.
pub(crate) fn build_request(b: &Bindings, s: &mut Store<State<()>>, request: &ChatRequest) -> Call<RawRequest> {
    Ok(b.seshat_plugin_translate().call_build_request(s, &chat_request(request))?.map(raw_request))
}

/// A chat request in this version's types.
fn chat_request(request: &ChatRequest) -> t::ChatRequest {
    t::ChatRequest {
        model: request.model.clone(),
        system: request.system.clone(),
        tools: request
            .tools
            .iter()
            .map(|t| t::ToolSpec { name: t.name.clone(), description: t.description.clone(), parameters: t.parameters.clone() })
            .collect(),
        max_tokens: request.max_tokens,
        stream: request.stream,
        base_url: request.base_url.clone(),
        extra: request.extra.clone(),
    }
}

/// An HTTP request as the guest built it, before the host validates it.
#[allow(dead_code, reason = "0.1.0 builds no probes, so only 0.2.0 calls it outside build_request")]
pub(crate) fn raw_request(http: t::HttpRequest) -> RawRequest {
    RawRequest {
        method: http.method,
        url: http.url,
        headers: http.headers,
        body: http.body,
        splice: http.splice.map(|sp| (sp.offset, sp.separator, sp.lead)),
    }
}

/// `parse-response`.
pub(crate) fn parse_response(b: &Bindings, s: &mut Store<State<()>>, status: u16, body: &[u8]) -> Call<Response> {
    Ok(b.seshat_plugin_translate().call_parse_response(s, status, body)?.map(|r| Response {
        message: r.message.into(),
        usage: r.usage.map(Into::into),
        stop_reason: r.stop_reason.into(),
    }))
}

/// The stream decoder's constructor.
pub(crate) fn decoder(b: &Bindings, s: &mut Store<State<()>>) -> Call<ResourceAny> {
    b.seshat_plugin_translate().decoder().call_constructor(s).map(Ok)
}

/// The stream decoder's `push`.
pub(crate) fn push(
    b: &Bindings,
    s: &mut Store<State<()>>,
    decoder: ResourceAny,
    event: &str,
    data: &str,
) -> Call<Vec<StreamEvent>> {
    Ok(b.seshat_plugin_translate().decoder().call_push(s, decoder, event, data)?.map(events))
}

/// The stream decoder's `finish`.
pub(crate) fn finish(b: &Bindings, s: &mut Store<State<()>>, decoder: ResourceAny) -> Call<Vec<StreamEvent>> {
    Ok(b.seshat_plugin_translate().decoder().call_finish(s, decoder)?.map(events))
}

fn events(events: Vec<t::StreamEvent>) -> Vec<StreamEvent> {
    events
        .into_iter()
        .map(|e| match e {
            t::StreamEvent::TextDelta(text) => StreamEvent::TextDelta { text },
            t::StreamEvent::ThinkingDelta(text) => StreamEvent::ThinkingDelta { text },
            t::StreamEvent::ThinkingSignature(signature) => StreamEvent::ThinkingSignature { signature },
            t::StreamEvent::RedactedThinking(data) => StreamEvent::RedactedThinking { data },
            t::StreamEvent::ToolCallStart(s) => StreamEvent::ToolCallStart { index: s.index, id: s.id, name: s.name },
            t::StreamEvent::ToolCallDelta(d) => StreamEvent::ToolCallDelta { index: d.index, arguments: d.arguments },
            t::StreamEvent::Usage(u) => StreamEvent::Usage { usage: u.into() },
            t::StreamEvent::Stop(r) => StreamEvent::Stop { reason: r.into() },
            t::StreamEvent::Error(e) => StreamEvent::Error { code: e.code, message: e.message },
        })
        .collect()
}
