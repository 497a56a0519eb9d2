//! Summariser plugins: write the summary that replaces dropped messages, calling the summary model
//! through the host's `complete`, a bounded number of times with bounded `max-tokens`.

use super::bindings::v0_1::wit;
use super::bindings::{Versioned, v0_1, v0_2, v0_3, v0_4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::sandbox::State;
use super::{PluginKind, PluginMessage, Result, StopReason};
use crate::conversation::Usage;

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

/// A model failure, as the plugin sees it (its code and message), with what a refusal for length
/// said of the model's limits, for the host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelError {
    /// A stable code.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// The limits a refusal for the request's length named (the plugin never sees them).
    pub limit: Option<super::Limit>,
}

impl ModelError {
    /// A failure with a code and a message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), limit: None }
    }

    /// The failure of a request refused for its length, with what the refusal named.
    pub fn refused(code: impl Into<String>, message: impl Into<String>, limit: super::Limit) -> Self {
        Self { code: code.into(), message: message.into(), limit: Some(limit) }
    }
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
    /// What the user asked this compaction to keep or stress (0.2.0 plugins receive it).
    pub instructions: Option<String>,
    /// The user's own summary prompt, replacing the plugin's (0.2.0 plugins receive it).
    pub prompt: Option<String>,
}

/// Host context of a summariser's (or an extractor's) call.
#[derive(Default)]
pub(crate) struct ModelHost {
    model: Option<Box<dyn ModelCall>>,
    calls: u32,
    max_calls: u32,
    max_tokens: u32,
}

impl ModelHost {
    /// A call's context: `model` serves at most `max_calls` calls of at most `max_tokens` each.
    pub(super) fn new(model: Box<dyn ModelCall>, max_calls: u32, max_tokens: u32) -> Self {
        ModelHost { model: Some(model), calls: 0, max_calls, max_tokens }
    }

    /// Ends a call: the model is dropped.
    pub(super) fn clear(&mut self) {
        self.model = None;
    }

    /// Serves one `complete` call: bounded in number and `max-tokens`.
    pub(super) fn complete(&mut self, request: CompletionRequest) -> std::result::Result<Completion, wit::Error> {
        if self.calls >= self.max_calls {
            return Err(wit::Error {
                code: "complete_limit".into(),
                message: format!("this plugin may call the model at most {} times per call", self.max_calls),
            });
        }
        self.calls += 1;
        let Some(model) = self.model.as_mut() else {
            return Err(wit::Error { code: "no_model".into(), message: "no model is available here".into() });
        };
        let request = CompletionRequest { max_tokens: request.max_tokens.min(self.max_tokens), ..request };
        model.complete(request).map_err(|e| wit::Error { code: e.code, message: e.message })
    }
}

/// The `model` interface of one contract version, served by [`ModelHost::complete`] (its
/// records are the same in every version).
macro_rules! model_host {
    ($model:path) => {
        impl $model for State<ModelHost> {
            fn complete(&mut self, request: CompletionRequest0) -> std::result::Result<Completion0, wit::Error> {
                let request = CompletionRequest {
                    system: request.system,
                    messages: request.messages.into_iter().map(Into::into).collect(),
                    max_tokens: request.max_tokens,
                    extra: request.extra,
                };
                self.host_time(|h| h.complete(request)).map(|c| Completion0 {
                    text: c.text,
                    usage: c.usage.map(Into::into),
                    stop_reason: c.stop_reason.into(),
                })
            }
        }
    };
}
pub(super) use model_host;

mod host_v0_1 {
    use super::*;
    use v0_1::summariser::seshat::plugin::model::{Completion as Completion0, CompletionRequest as CompletionRequest0};
    model_host!(v0_1::summariser::seshat::plugin::model::Host);
}

mod host_v0_2 {
    use super::*;
    use v0_2::summariser::seshat::plugin::model::{Completion as Completion0, CompletionRequest as CompletionRequest0};
    model_host!(v0_2::summariser::seshat::plugin::model::Host);
}

mod host_v0_3 {
    use super::*;
    use v0_3::summariser::seshat::plugin::model::{Completion as Completion0, CompletionRequest as CompletionRequest0};
    model_host!(v0_3::summariser::seshat::plugin::model::Host);
}

mod host_v0_4 {
    use super::*;
    use v0_4::summariser::seshat::plugin::model::{Completion as Completion0, CompletionRequest as CompletionRequest0};
    model_host!(v0_4::summariser::seshat::plugin::model::Host);
}

versioned_kind! {
    /// Summarisers: the dropped messages in, a summary out; the host serves their `complete`.
    Summariser: PluginKind::Summariser, host ModelHost,
    v0_1 (v0_1::summariser::Summariser, v0_1::summariser::SummariserPre<State<ModelHost>>),
    v0_2 (v0_2::summariser::Summariser, v0_2::summariser::SummariserPre<State<ModelHost>>),
    v0_3 (v0_3::summariser::Summariser, v0_3::summariser::SummariserPre<State<ModelHost>>),
    v0_4 (v0_4::summariser::Summariser, v0_4::summariser::SummariserPre<State<ModelHost>>)
}

/// A loaded summariser, ready to call.
pub struct SummariserPlugin {
    handle: Handle<Summariser>,
}

shared_accessors!(SummariserPlugin);

impl SummariserPlugin {
    /// Writes a summary. `model` serves the plugin's `complete` calls, at most
    /// `limits.complete_calls` of them, each capped at `limits.complete_max_tokens`.
    pub fn summarise(&mut self, request: &SummaryRequest, model: Box<dyn ModelCall>) -> Result<String> {
        let limits = self.handle.limits();
        /// The request in one version's record: the fields every version has, and those a
        /// later version added.
        macro_rules! request {
            ($export:path $(, $field:ident)*) => {{
                use $export as export;
                export::SummaryRequest {
                    messages: request.messages.iter().map(Into::into).collect(),
                    previous_summary: request.previous_summary.clone(),
                    max_tokens: request.max_tokens,
                    model_window: request.model_window,
                    extra: request.extra.clone(),
                    $($field: request.$field.clone(),)*
                }
            }};
        }
        let summary = self.handle.call(|store, bindings| {
            *store.data_mut().host_mut() = ModelHost::new(model, limits.complete_calls, limits.complete_max_tokens);
            let result = match bindings {
                Versioned::V0_1(b) => b
                    .seshat_plugin_summarise()
                    .call_summarise(&mut *store, &request!(v0_1::summariser::exports::seshat::plugin::summarise)),
                Versioned::V0_2(b) => b.seshat_plugin_summarise().call_summarise(
                    &mut *store,
                    &request!(v0_2::summariser::exports::seshat::plugin::summarise, instructions, prompt),
                ),
                Versioned::V0_3(b) => b.seshat_plugin_summarise().call_summarise(
                    &mut *store,
                    &request!(v0_3::summariser::exports::seshat::plugin::summarise, instructions, prompt),
                ),
                Versioned::V0_4(b) => b.seshat_plugin_summarise().call_summarise(
                    &mut *store,
                    &request!(v0_4::summariser::exports::seshat::plugin::summarise, instructions, prompt),
                ),
            };
            store.data_mut().host_mut().clear();
            result
        })?;
        if summary.trim().is_empty() {
            return Err(self.handle.invalid(
                "the summary is empty: a summariser must return the summary's text, or an error when it cannot \
                 write one"
                    .into(),
            ));
        }
        Ok(summary)
    }
}
