//! Summariser plugins: write the summary that replaces dropped messages, calling the summary model
//! through the host's `complete`, a bounded number of times with bounded `max-tokens`.

use std::sync::OnceLock;

use wasmtime::component::{HasSelf, Linker};

use super::bindings::v0_1::summariser as b;
use super::bindings::v0_1::summariser::exports::seshat::plugin::summarise as export;
use super::bindings::v0_1::summariser::seshat::plugin::model;
use super::bindings::v0_1::wit;
use super::sandbox::{self, Slot, State};
use super::{Error, LoadedPlugin, PluginKind, PluginMessage, Result, StopReason};
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

fn linker() -> wasmtime::Result<&'static Linker<State<ModelHost>>> {
    static LINKER: OnceLock<Linker<State<ModelHost>>> = OnceLock::new();
    sandbox::linker(&LINKER, |l| b::Summariser::add_to_linker::<_, HasSelf<_>>(l, |s| s))
}

/// A loaded summariser, ready to call.
pub struct SummariserPlugin {
    pre: b::SummariserPre<State<ModelHost>>,
    slot: Slot<ModelHost, b::Summariser>,
}

impl std::fmt::Debug for SummariserPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummariserPlugin")
            .field("id", &self.slot.id)
            .field("limits", &self.slot.limits)
            .finish_non_exhaustive()
    }
}

impl SummariserPlugin {
    /// Prepares a loaded plugin as a summariser.
    pub fn new(plugin: &LoadedPlugin) -> Result<Self> {
        let (pre, slot) = sandbox::prepare(plugin, PluginKind::Summariser, linker(), b::SummariserPre::new)?;
        Ok(Self { pre, slot: slot.with_bindings() })
    }

    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.slot.id
    }

    /// Writes a summary. `model` serves the plugin's `complete` calls, at most
    /// `limits.complete_calls` of them, each capped at `limits.complete_max_tokens`.
    pub fn summarise(&mut self, request: &SummaryRequest, model: Box<dyn ModelCall>) -> Result<String> {
        let limits = self.slot.limits;
        let req = export::SummaryRequest {
            messages: request.messages.iter().map(Into::into).collect(),
            previous_summary: request.previous_summary.clone(),
            max_tokens: request.max_tokens,
            model_window: request.model_window,
            extra: request.extra.clone(),
        };
        let pre = &self.pre;
        let summary = self.slot.call(
            |s| pre.instantiate(s),
            |store, bindings| {
                *store.data_mut().host_mut() = ModelHost {
                    model: Some(model),
                    calls: 0,
                    max_calls: limits.complete_calls,
                    max_tokens: limits.complete_max_tokens,
                };
                let result = bindings.seshat_plugin_summarise().call_summarise(&mut *store, &req);
                store.data_mut().host_mut().model = None;
                result
            },
        )?;
        if summary.trim().is_empty() {
            return Err(Error::InvalidOutput { plugin: self.slot.id.clone(), message: "the summary is empty".into() });
        }
        Ok(summary)
    }
}
