//! Summariser plugins: write the summary that replaces dropped messages, calling the summary model
//! through the host's `complete`, a bounded number of times with bounded `max-tokens`.

use std::sync::OnceLock;

use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::bindings::v0_1::summariser as b;
use super::bindings::v0_1::summariser::exports::seshat::plugin::summarise as export;
use super::bindings::v0_1::summariser::seshat::plugin::model;
use super::bindings::v0_1::wit;
use super::limits::Limits;
use super::sandbox::{self, State};
use super::{Error, LoadedPlugin, PluginKind, PluginMessage, Result, StopReason, link_error};
use crate::store::Usage;

/// A model call a summariser asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<PluginMessage>,
    /// Largest answer (already capped by the host).
    pub max_tokens: u32,
    /// Options, a JSON object.
    pub extra: String,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The text.
    pub text: String,
    /// Usage, when reported.
    pub usage: Option<Usage>,
    /// Why it stopped.
    pub stop_reason: StopReason,
}

/// A model failure, as the plugin sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// A stable code.
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// Whatever calls the summary model for a summariser (the compaction pipeline's model client).
pub trait ModelCall: Send {
    /// Calls the model.
    fn complete(&mut self, request: CompletionRequest) -> std::result::Result<Completion, ModelError>;
}

/// What to summarise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRequest {
    /// The messages being dropped.
    pub messages: Vec<PluginMessage>,
    /// The summary they follow.
    pub previous_summary: Option<String>,
    /// Largest summary in tokens.
    pub max_tokens: u32,
    /// The summary model's window.
    pub model_window: u64,
    /// Options, a JSON object.
    pub extra: String,
}

/// Host context of a summariser call.
#[derive(Default)]
pub(crate) struct ModelHost {
    model: Option<Box<dyn ModelCall>>,
    calls: u32,
    max_calls: u32,
    max_tokens: u32,
}

impl model::Host for State<ModelHost> {
    fn complete(&mut self, request: model::CompletionRequest) -> std::result::Result<model::Completion, wit::Error> {
        self.host_time(|h| {
            if h.calls >= h.max_calls {
                return Err(wit::Error {
                    code: "complete_limit".into(),
                    message: format!("this summariser may call the model at most {} times per summary", h.max_calls),
                });
            }
            h.calls += 1;
            let Some(model) = h.model.as_mut() else {
                return Err(wit::Error {
                    code: "no_model".into(),
                    message: "no summary model is available here".into(),
                });
            };
            let req = CompletionRequest {
                system: request.system,
                messages: request.messages.into_iter().map(Into::into).collect(),
                max_tokens: request.max_tokens.min(h.max_tokens),
                extra: request.extra,
            };
            model
                .complete(req)
                .map(|c| model::Completion {
                    text: c.text,
                    usage: c.usage.map(Into::into),
                    stop_reason: c.stop_reason.into(),
                })
                .map_err(|e| wit::Error { code: e.code, message: e.message })
        })
    }
}

fn linker() -> Result<&'static Linker<State<ModelHost>>, wasmtime::Error> {
    static LINKER: OnceLock<Linker<State<ModelHost>>> = OnceLock::new();
    if let Some(l) = LINKER.get() {
        return Ok(l);
    }
    let mut linker = Linker::new(super::engine::engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    b::Summariser::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
    Ok(LINKER.get_or_init(|| linker))
}

/// A loaded summariser, ready to call.
pub struct SummariserPlugin {
    id: String,
    limits: Limits,
    pre: b::SummariserPre<State<ModelHost>>,
    live: Option<(Store<State<ModelHost>>, b::Summariser)>,
}

impl std::fmt::Debug for SummariserPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummariserPlugin").field("id", &self.id).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl SummariserPlugin {
    /// Prepares a loaded plugin as a summariser.
    pub fn new(plugin: &LoadedPlugin) -> Result<Self> {
        plugin.expect_kind(PluginKind::Summariser)?;
        let id = plugin.manifest.id.clone();
        let pre = linker()
            .and_then(|l| l.instantiate_pre(&plugin.component))
            .and_then(b::SummariserPre::new)
            .map_err(|e| link_error(&id, &e))?;
        Ok(Self { id, limits: plugin.limits, pre, live: None })
    }

    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Writes a summary. `model` serves the plugin's `complete` calls, at most
    /// `limits.complete_calls` of them, each capped at `limits.complete_max_tokens`.
    pub fn summarise(&mut self, request: &SummaryRequest, model: Box<dyn ModelCall>) -> Result<String> {
        let (id, limits) = (self.id.clone(), self.limits);
        if self.live.is_none() {
            let mut store = sandbox::new_store(&limits, ModelHost::default());
            sandbox::start_call(&mut store);
            match self.pre.instantiate(&mut store) {
                Ok(b) => self.live = Some((store, b)),
                Err(e) => return Err(sandbox::classify(&store, &e, &id, PluginKind::Summariser, &limits)),
            }
        }
        let (store, bindings) = self.live.as_mut().expect("just created");
        *store.data_mut().host_mut() = ModelHost {
            model: Some(model),
            calls: 0,
            max_calls: limits.complete_calls,
            max_tokens: limits.complete_max_tokens,
        };
        let req = export::SummaryRequest {
            messages: request.messages.iter().map(Into::into).collect(),
            previous_summary: request.previous_summary.clone(),
            max_tokens: request.max_tokens,
            model_window: request.model_window,
            extra: request.extra.clone(),
        };
        sandbox::start_call(store);
        let result = bindings.seshat_plugin_summarise().call_summarise(&mut *store, &req);
        store.data_mut().host_mut().model = None;
        match result {
            Ok(Ok(summary)) if summary.trim().is_empty() => {
                Err(Error::InvalidOutput { plugin: id, message: "the summary is empty".into() })
            }
            Ok(Ok(summary)) => Ok(summary),
            Ok(Err(e)) => Err(Error::Plugin { plugin: id, code: e.code, message: e.message }),
            Err(trap) => {
                let err = sandbox::classify(store, &trap, &id, PluginKind::Summariser, &limits);
                self.live = None;
                Err(err)
            }
        }
    }
}
