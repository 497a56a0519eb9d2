//! The compaction pipeline, checked before every model call.
//!
//! 1. Below the threshold ([`crate::window::Marks`]): nothing.
//! 2. Micro-compaction: the trimmer plugin proposes trims of large tool results (metadata in,
//!    edits out); the host validates and records them. If that brings the request under the
//!    target, no model is called.
//! 3. Summary: the summariser plugin writes a summary of the messages being dropped (and the
//!    previous summary), calling the summary model through the host.
//! 4. The cut ([`cut`]) keeps recent messages up to the target without splitting a tool call from
//!    its result; the latest user request is pinned.
//! 5. The compaction is recorded in one transaction, only if the history did not change meanwhile.
//!    Originals stay; the live view is rebuilt from the record.
//!
//! Failures — a summary call that errors, or a pass that frees less than 5% of the working window
//! — are counted in the session row; after [`MAX_CONSECUTIVE_FAILURES`] in a row, summarising
//! stops for the session (micro-compaction goes on). Every request is checked against the hard
//! limit, also with auto-compaction off: one that does not fit fails here with `compact_full`.
//! Every outgoing request is made valid by [`pairing`].

pub mod cut;
pub mod pairing;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::conversation::{MessageStatus, NewMessage, Part, Role};
use crate::outcomes;
use crate::plugins::{
    Completion, CompletionRequest, ModelCall, ModelError, PluginMessage, SummariserPlugin, SummaryRequest, TrimBudget,
    TrimMessage, TrimPart, TrimmerPlugin,
};
use crate::store::{Compaction, CompactionStatus, CompactionTrigger, LiveView, Origin, PluginRef, Store};
use crate::window::{self, Marks};
pub use seshat_protocol::turn::Report;

/// After this many failed compactions in a row, summarising stops for the session.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// A pass that frees less than this share (percent) of the working window is a failure (thrash).
pub const THRASH_PERCENT: u64 = 5;
/// Tool outputs longer than this many characters are cut (head, tail and outcome lines) in
/// summary requests.
pub const SUMMARY_TOOL_OUTPUT_CHARS: usize = 2_000;

/// Errors of the compaction pipeline. [`Error::code`] gives stable codes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request does not fit the model's window and compaction could not make it fit.
    #[error(
        "compact_full: the request needs ~{needed} tokens but at most {limit} fit ({window}-token window less \
         {max_output} for the answer){hint}"
    )]
    CompactFull {
        /// Estimated request size.
        needed: u64,
        /// The hard limit.
        limit: u64,
        /// The model's window.
        window: u64,
        /// Room kept for the answer.
        max_output: u64,
        /// What the user can do.
        hint: String,
    },
    /// The summary could not be written; the turn ends, the user's message stays saved.
    #[error("compaction failed ({failures} in a row): {message}")]
    SummaryFailed {
        /// Failures in a row, this one included.
        failures: u32,
        /// What went wrong.
        message: String,
    },
    /// The window is below [`window::MIN_WINDOW`](crate::window::MIN_WINDOW): nothing was
    /// compacted or recorded.
    #[error("{0}")]
    WindowTooSmall(String),
    /// The session's window is unknown and none was given: nothing was compacted or recorded
    /// (coded `window_too_small` too, as before it had a variant of its own).
    #[error(
        "the context window of session {0} is unknown: give its window (at least {min} tokens)",
        min = window::MIN_WINDOW
    )]
    WindowUnknown(String),
    /// The store failed (including a conflicting concurrent change).
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// A plugin failed outside the summary (the trimmer).
    #[error(transparent)]
    Plugin(#[from] crate::plugins::Error),
}

impl Error {
    /// A stable code: `compact_full`, `compact_failed`, or the underlying error's.
    pub fn code(&self) -> &'static str {
        match self {
            Error::CompactFull { .. } => "compact_full",
            Error::SummaryFailed { .. } => "compact_failed",
            Error::WindowTooSmall(_) | Error::WindowUnknown(_) => "window_too_small",
            Error::Store(e) => e.code(),
            Error::Plugin(e) => e.code(),
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Calls models for the compaction (the summary). The chat layer implements it with the real
/// providers; tests script it.
pub trait ModelClient: Send + Sync {
    /// Calls `model`.
    fn complete(&self, model: &str, request: CompletionRequest) -> std::result::Result<Completion, ModelError>;
    /// The model's context window, when known.
    fn context_window(&self, model: &str) -> Option<u64>;
}

/// Tokens kept in a summary request for the summariser's own instructions and the transcript's
/// framing, beside the messages and the previous summary.
pub const SUMMARY_PROMPT_TOKENS: u64 = 400;

/// A [`ModelClient`] with no models: every summary call fails, saying what to configure. For
/// clients that only compact with a summariser that needs no model.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoModels;

impl ModelClient for NoModels {
    fn complete(&self, model: &str, _request: CompletionRequest) -> std::result::Result<Completion, ModelError> {
        Err(ModelError {
            code: "no_provider".into(),
            message: format!(
                "no provider is configured to call `{model}`: set `provider` under [plugins] in config.toml (or \
                 export ANTHROPIC_API_KEY / OPENAI_API_KEY), or select the offline summariser with \
                 `summariser = \"summariser-extractive\"`"
            ),
        })
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// A [`ModelClient`] that answers every call with what it was asked, for trying a summariser
/// without a model (`seshat plugins test`): `[echo stub: N messages, B bytes asked]` followed
/// by the last message's text, cut to the answer's room (four bytes a token).
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoModel;

/// The model id [`EchoModel`] reports.
pub const ECHO_MODEL: &str = "echo-stub";

impl ModelClient for EchoModel {
    fn complete(&self, _model: &str, request: CompletionRequest) -> std::result::Result<Completion, ModelError> {
        let asked: usize = request.system.as_deref().map_or(0, str::len)
            + request.messages.iter().flat_map(|m| &m.parts).map(Part::byte_size).sum::<usize>();
        let last: String = request
            .messages
            .last()
            .map(|m| {
                m.parts
                    .iter()
                    .filter_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None })
                    .collect()
            })
            .unwrap_or_default();
        let end = last.floor_char_boundary((request.max_tokens as usize).saturating_mul(4));
        Ok(Completion {
            text: format!("[echo stub: {} messages, {asked} bytes asked]\n{}", request.messages.len(), &last[..end]),
            usage: None,
            stop_reason: crate::plugins::StopReason::EndTurn,
        })
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// A [`ModelClient`] bound to one model, as the summariser plugin's `complete` sees it. Every
/// request is checked against the model's window: one that cannot fit with its answer is refused
/// here (nothing is sent), and the answer's room is lowered to what fits.
struct BoundModel {
    client: Arc<dyn ModelClient>,
    model: String,
    calls: Arc<std::sync::atomic::AtomicU32>,
    /// The summary model's window (0: unknown, nothing checked).
    window: u64,
}

/// The smallest answer room worth asking a summary model for.
const MIN_SUMMARY_ANSWER: u64 = 64;

impl ModelCall for BoundModel {
    fn complete(&mut self, mut request: CompletionRequest) -> std::result::Result<Completion, ModelError> {
        if self.window > 0 {
            let input = request.system.as_deref().map_or(0, window::estimate_text)
                + request.messages.iter().map(|m| window::estimate_parts(&m.parts)).sum::<u64>();
            let room = self.window.saturating_sub(input);
            if room < MIN_SUMMARY_ANSWER {
                return Err(ModelError {
                    code: "summary_too_large".into(),
                    message: format!(
                        "the summary request needs ~{input} tokens, which leaves no room for an answer in the \
                         {}-token window of `{}`; nothing was sent",
                        self.window, self.model
                    ),
                });
            }
            request.max_tokens = request.max_tokens.min(u32::try_from(room).unwrap_or(u32::MAX));
        }
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.client.complete(&self.model, request)
    }
}

/// The parts of a request that are not the conversation (all counted in the window).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// The system prompt (Seshat's, the project's instructions, the memory context).
    pub system: String,
    /// The tool schemas as sent.
    pub tools: String,
}

impl Frame {
    /// Estimated tokens.
    pub fn tokens(&self) -> u64 {
        window::estimate_text(&self.system) + window::estimate_text(&self.tools)
    }
}

/// How compaction is set up for a session.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Whether compaction runs automatically before model calls.
    pub auto_compact: bool,
    /// The session model's context window; `None` disables auto-compaction (with a warning).
    pub context_window: Option<u64>,
    /// Room kept for the answer.
    pub max_output_tokens: u64,
    /// The session's model (summaries use it unless `summary_model` is set).
    pub model: String,
    /// Another model for summaries.
    pub summary_model: Option<String>,
    /// Options for the trimmer (JSON object).
    pub trimmer_options: String,
    /// Options for the summariser (JSON object).
    pub summariser_options: String,
    /// How many real tokens the model counts per estimated token (at least 1: an estimate that
    /// runs high is left as it is). Estimates are scaled by it where they meet the window: the
    /// threshold, the hard limit and the cut.
    pub calibration: f64,
    /// Whether the history tools are offered: the summary's marker and the trims' placeholders
    /// then say how to read the originals back.
    pub recall: bool,
    /// What this compaction is told to keep or stress (recorded with it).
    pub instructions: Option<String>,
    /// A summary prompt replacing the summariser's.
    pub prompt: Option<String>,
}

/// What follows the compaction marker in a request when the history tools are offered.
pub const RECALL_HINT: &str = " history_search finds them and history_read reads them back.";

impl Settings {
    /// An estimate in the model's real tokens.
    pub fn real(&self, estimate: u64) -> u64 {
        calibrated(estimate, self.calibration)
    }

    /// A real token count in estimate units.
    pub fn estimated(&self, real: u64) -> u64 {
        if self.calibration > 1.0 { (real as f64 / self.calibration) as u64 } else { real }
    }
}

/// How far a [`Compactor::preview`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The trimmer's edits only.
    Trims,
    /// The trims, the cut and the summary.
    Summary,
}

/// What a pass does with what it computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Records trims and the compaction.
    Record,
    /// Calls the trimmer, chooses the cut, calls no model, records nothing.
    DryRun,
    /// Calls the plugins up to the stage, records nothing.
    Preview(Stage),
}

/// One trim a preview would make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimChange {
    /// The message's seq.
    pub seq: u64,
    /// The part's index.
    pub part: u32,
    /// The content's size before, in bytes.
    pub bytes_before: u64,
    /// Its size after.
    pub bytes_after: u64,
    /// The content after.
    pub text: String,
}

/// What a [`Compactor::preview`] found: the figures, the trims and the summary.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// The figures, as a dry run reports them (the summary's size counted when one was written).
    pub report: Report,
    /// The trims, in the order made.
    pub trims: Vec<TrimChange>,
    /// The summary or the summariser's failure; `None` when no summary was asked for (the trims
    /// stage, or nothing to drop).
    pub summary: Option<std::result::Result<String, String>>,
}

impl Preview {
    fn with(mut self, report: Report) -> Self {
        self.report = report;
        self
    }
}

/// A request ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The conversation, paired and in order.
    pub messages: Vec<pairing::Msg>,
    /// Estimated tokens of the whole request.
    pub tokens: u64,
    /// What compaction did before this call, if it ran.
    pub compaction: Option<Report>,
    /// Things the user should know (an unknown window, a tripped breaker).
    pub warnings: Vec<String>,
}

/// A compaction about to run: told before the plugins (and the summary model) are called, so a
/// front end can show it is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Starting {
    /// Why it runs.
    pub trigger: CompactionTrigger,
    /// Estimated tokens of the request before it.
    pub tokens: u64,
    /// The model's context window.
    pub window: u64,
}

/// Runs the pipeline with the selected plugins and model client.
pub struct Compactor<'a> {
    /// The trimmer.
    pub trimmer: &'a mut TrimmerPlugin,
    /// The summariser.
    pub summariser: &'a mut SummariserPlugin,
    /// Calls the summary model.
    pub models: Arc<dyn ModelClient>,
}

impl std::fmt::Debug for Compactor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor").finish_non_exhaustive()
    }
}

/// Estimated tokens of one view entry.
fn entry_tokens(parts: &[Part]) -> u64 {
    window::estimate_parts(parts)
}

/// The most of the target the user's pins may take, in percent.
pub const PIN_SHARE_PERCENT: u64 = 25;

/// Pins message `seq` of a session (and the other side of its tool exchanges, so a pair is never
/// split), unless the pinned messages would then take more than [`PIN_SHARE_PERCENT`] of the
/// target of a `window`-token window: that is refused with how much is pinned. Returns the seqs
/// newly pinned.
pub fn pin(store: &mut Store, session: &str, seq: u64, window: u64) -> Result<Vec<u64>> {
    let allowed = Marks::new(window).target * PIN_SHARE_PERCENT / 100;
    let check = |store: &Store, pinned: &[u64]| -> crate::store::Result<()> {
        let mut tokens = 0;
        for &p in pinned {
            tokens += store.message(session, p)?.map_or(0, |m| entry_tokens(&m.parts));
        }
        if tokens > allowed {
            return Err(crate::store::Error::PinBudget(format!(
                "pinning message {seq} would pin {} messages of ~{tokens} tokens, over the {allowed} tokens pins may \
                 take ({PIN_SHARE_PERCENT}% of the {}-token target of a {window}-token window); nothing was pinned. \
                 Unpin something first",
                pinned.len(),
                Marks::new(window).target
            )));
        }
        Ok(())
    };
    Ok(store.pin(session, seq, check)?)
}

/// Undoes the latest compaction or trim pass of a session (a retraction record; nothing is
/// deleted), unless the live view it restores would not fit the window with the answer's room:
/// that is refused and nothing changes.
pub fn undo(store: &mut Store, session: &str, frame: &Frame, settings: &Settings) -> Result<crate::store::Retracted> {
    let check = |store: &Store| -> crate::store::Result<()> {
        let Some(window) = settings.context_window else { return Ok(()) };
        let view = store.live_view(session)?;
        let needed = settings.real(estimate_request(frame, &view));
        let limit = Marks::new(window).hard_limit(settings.max_output_tokens);
        if needed > limit {
            return Err(crate::store::Error::Refused(format!(
                "undoing would make the request ~{needed} tokens, over the {limit} that fit ({window}-token window less \
                 {} for the answer); nothing was undone",
                settings.max_output_tokens
            )));
        }
        Ok(())
    };
    Ok(store.retract_latest(session, check)?)
}

/// Estimated tokens of the whole request: frame plus view.
pub fn estimate_request(frame: &Frame, view: &LiveView) -> u64 {
    frame.tokens() + view.entries.iter().map(|e| entry_tokens(&e.parts)).sum::<u64>()
}

/// How full the window is: the context tokens the provider last reported, plus that call's output,
/// plus estimates of the messages appended since; with no report yet, or none since the last
/// compaction, the estimate of the whole request.
pub fn current_use(frame: &Frame, view: &LiveView) -> u64 {
    current_use_calibrated(frame, view, 1.0)
}

/// An estimate in real tokens: scaled by `calibration` when the model counts more than estimated.
fn calibrated(estimate: u64, calibration: f64) -> u64 {
    if calibration > 1.0 { (estimate as f64 * calibration).ceil() as u64 } else { estimate }
}

/// [`current_use`] in the model's real tokens: estimates scaled by `calibration` (when above 1).
pub fn current_use_calibrated(frame: &Frame, view: &LiveView, calibration: f64) -> u64 {
    let real = |estimate: u64| calibrated(estimate, calibration);
    let compacted_through = view.compaction.as_ref().map_or(0, |c| c.through_seq);
    let report = view.entries.iter().enumerate().rev().find_map(|(i, e)| {
        let usage = e.usage?;
        let context = usage.context_tokens?;
        (e.seq? > compacted_through).then_some((i, context, usage.output_tokens))
    });
    match report {
        Some((i, context, output)) => {
            let since: u64 = view.entries[i + 1..].iter().map(|e| entry_tokens(&e.parts)).sum();
            window::Use { reported: Some(context), reported_output: output, since: real(since) }.tokens().unwrap_or(0)
        }
        None => real(estimate_request(frame, view)),
    }
}

impl Compactor<'_> {
    /// Runs before every model call: compacts if the session passed the threshold, checks the
    /// hard limit, and returns the paired request. Synthetic results for calls that never got one
    /// are stored first.
    pub fn before_call(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
    ) -> Result<Prepared> {
        let view = store.live_view(session)?;
        self.before_call_with(store, session, frame, settings, view, &mut |_| {})
    }

    /// [`Compactor::before_call`] on a live view the caller already has (kept up to date with
    /// [`Store::refresh_live_view`]), so a long session's turn does not re-read its history.
    /// `starting` is told before a compaction runs.
    pub fn before_call_with(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        view: LiveView,
        starting: &mut dyn FnMut(&Starting),
    ) -> Result<Prepared> {
        let mut warnings = Vec::new();
        let mut report = None;
        let tokens = current_use_calibrated(frame, &view, settings.calibration);
        match settings.context_window {
            None => warnings.push(format!(
                "the context window of `{}` is unknown: auto-compaction is off for this session (give the window, or \
                 set the model's context_window in config.toml)",
                settings.model
            )),
            Some(window) if settings.auto_compact && tokens > Marks::new(window).threshold => {
                starting(&Starting { trigger: CompactionTrigger::Auto, tokens, window });
                let r = self.pass(store, session, frame, settings, CompactionTrigger::Auto, Mode::Record)?.report;
                if !r.summarised {
                    let info = store.session(session)?;
                    if info.compaction_failures >= MAX_CONSECUTIVE_FAILURES {
                        warnings.push(format!(
                            "summarising is off after {MAX_CONSECUTIVE_FAILURES} failed compactions in a row; \
                             a manual compaction retries"
                        ));
                    } else if info.auto_compact_disabled {
                        warnings.push(
                            "automatic summarising is disabled for this session (its record says so); \
                             a manual compaction still compacts it"
                                .to_string(),
                        );
                    }
                }
                report = Some(r);
            }
            Some(_) => {}
        }
        // The view changes only if compaction recorded something.
        let view = if report.is_some() { store.live_view(session)? } else { view };
        let mut messages: Vec<pairing::Msg> = view
            .entries
            .into_iter()
            .map(|mut e| {
                if settings.recall
                    && e.origin == Origin::Summary
                    && let Some(Part::Text { text }) = e.parts.last_mut()
                {
                    text.push_str(RECALL_HINT);
                }
                pairing::Msg { seq: e.seq, role: e.role, parts: e.parts }
            })
            .collect();
        let stored = stored_answers(store, session, &messages)?;
        let answered: HashSet<String> = stored.keys().cloned().collect();
        let repair = pairing::repair(&mut messages, &answered);
        if !stored.is_empty() {
            // Results the store has but the view lost: send them with their calls.
            messages.push(pairing::Msg { seq: None, role: Role::Tool, parts: stored.into_values().collect() });
        }
        if !repair.unanswered.is_empty() {
            let parts: Vec<Part> =
                repair.unanswered.iter().map(|(id, name)| pairing::synthetic_result(id, name)).collect();
            let msg =
                NewMessage { role: Role::Tool, parts: parts.clone(), usage: None, status: MessageStatus::Synthetic };
            let seq = store.append(session, &[msg])?[0];
            messages.push(pairing::Msg { seq: Some(seq), role: Role::Tool, parts });
        }
        let messages = pairing::arrange(messages);
        let tokens_now = frame.tokens() + messages.iter().map(|m| entry_tokens(&m.parts)).sum::<u64>();
        if let Some(window) = settings.context_window {
            let limit = Marks::new(window).hard_limit(settings.max_output_tokens);
            if settings.real(tokens_now) > limit {
                let failures = store.session(session)?.compaction_failures;
                let hint = if failures >= MAX_CONSECUTIVE_FAILURES {
                    "; summarising is off after repeated failures: compact the session by hand or start a new one"
                        .to_string()
                } else if !settings.auto_compact {
                    "; auto-compaction is off: compact the session by hand".to_string()
                } else {
                    "; start a new session or shorten the input".to_string()
                };
                return Err(Error::CompactFull {
                    needed: settings.real(tokens_now),
                    limit,
                    window,
                    max_output: settings.max_output_tokens,
                    hint,
                });
            }
        }
        Ok(Prepared { messages, tokens: tokens_now, compaction: report, warnings })
    }

    /// Compacts now as the automatic pass does, whatever the threshold says (recovering from a
    /// refusal for length): the breaker is honoured and failures are counted.
    pub fn compact_auto(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
    ) -> Result<Report> {
        Ok(self.pass(store, session, frame, settings, CompactionTrigger::Auto, Mode::Record)?.report)
    }

    /// Compacts now (`seshat compact`, `/compact`): ignores the breaker, and its success clears it.
    pub fn compact(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        dry_run: bool,
    ) -> Result<Report> {
        let mode = if dry_run { Mode::DryRun } else { Mode::Record };
        Ok(self.pass(store, session, frame, settings, CompactionTrigger::Manual, mode)?.report)
    }

    /// Runs a manual compaction's steps exactly as [`Compactor::compact`] would, up to `stage`,
    /// calling the plugins (and, for the summary, the model client) but recording nothing: what
    /// `seshat plugins test` shows. The summariser's failure is in [`Preview::summary`], not an
    /// error.
    pub fn preview(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        stage: Stage,
    ) -> Result<Preview> {
        self.pass(store, session, frame, settings, CompactionTrigger::Manual, Mode::Preview(stage))
    }

    fn pass(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        trigger: CompactionTrigger,
        mode: Mode,
    ) -> Result<Preview> {
        let dry_run = mode != Mode::Record;
        let info = store.session(session)?;
        let Some(window) = settings.context_window.or(info.context_window) else {
            return Err(Error::WindowUnknown(session.to_string()));
        };
        let model = info.model.as_deref().unwrap_or(&settings.model);
        let from = if settings.context_window.is_some() { "as given" } else { "recorded for the session" };
        if let Some(e) = window::too_small_from(model, window, from) {
            return Err(Error::WindowTooSmall(e));
        }
        let marks = Marks::new(window);
        let view = store.live_view(session)?;
        let before = current_use(frame, &view).max(estimate_request(frame, &view));
        let mut report = Report { tokens_before: before, dry_run, ..Report::default() };
        let mut preview = Preview::default();

        // Micro-compaction.
        let plugin_start = std::time::Instant::now();
        let trims = self.trims(&view, frame, &marks, settings)?;
        report.plugin_micros += plugin_start.elapsed().as_micros() as u64;
        report.trimmed = trims.len();
        if matches!(mode, Mode::Preview(_)) {
            preview.trims = trims
                .iter()
                .map(|(seq, part, after)| {
                    let before = view
                        .entries
                        .iter()
                        .find(|e| e.seq == Some(*seq))
                        .and_then(|e| e.parts.get(*part as usize))
                        .map_or(0, content_len);
                    TrimChange {
                        seq: *seq,
                        part: *part,
                        bytes_before: before,
                        bytes_after: after.len() as u64,
                        text: after.clone(),
                    }
                })
                .collect();
        }
        let untrimmed = estimate_request(frame, &view);
        // A dry run applies the trims to its copy of the view exactly as the store would, so it
        // chooses the same cut as the real run.
        let view = match (trims.is_empty(), dry_run) {
            (true, _) => view,
            (false, true) => with_trims(view, &trims),
            (false, false) => {
                let by = PluginRef { id: self.trimmer.id().to_string(), sha256: self.trimmer.sha256().to_string() };
                store.record_trims_by(session, &trims, Some(&by))?;
                store.live_view(session)?
            }
        };
        let after_trims = estimate_request(frame, &view);
        report.trims_freed = untrimmed.saturating_sub(after_trims);
        report.tokens_after = after_trims;
        if mode == Mode::Preview(Stage::Trims) || (trigger == CompactionTrigger::Auto && after_trims <= marks.target) {
            return Ok(preview.with(report));
        }
        let breaker_open = info.compaction_failures >= MAX_CONSECUTIVE_FAILURES || info.auto_compact_disabled;
        if trigger == CompactionTrigger::Auto && breaker_open {
            return Ok(preview.with(report));
        }

        // The cut.
        let entries: Vec<&crate::store::ViewEntry> =
            view.entries.iter().filter(|e| e.origin != Origin::Summary).collect();
        let items: Vec<cut::Item> = entries.iter().map(|e| item(e)).collect();
        let summary_tokens = marks.summary_tokens();
        let budget = settings.estimated(marks.target).saturating_sub(frame.tokens() + summary_tokens);
        let decision = cut::choose(&items, budget);
        let stays = |i: usize| Some(i) == decision.pinned || entries[i].pinned;
        let dropped: Vec<&crate::store::ViewEntry> =
            entries[..decision.first_kept].iter().enumerate().filter(|(i, _)| !stays(*i)).map(|(_, e)| *e).collect();
        let before_cut_kept: Vec<usize> = (0..decision.first_kept).filter(|&i| stays(i)).collect();
        report.dropped = dropped.len();
        report.kept = entries.len() - decision.first_kept + before_cut_kept.len();
        if dropped.is_empty() {
            return Ok(preview.with(report));
        }
        let summary_model = settings.summary_model.clone().unwrap_or_else(|| settings.model.clone());
        report.summary_model = Some(summary_model.clone());
        let kept_tokens: u64 = entries[decision.first_kept..].iter().map(|e| entry_tokens(&e.parts)).sum::<u64>()
            + before_cut_kept.iter().map(|&i| entry_tokens(&entries[i].parts)).sum::<u64>();
        if mode == Mode::DryRun {
            report.tokens_after = frame.tokens() + kept_tokens + summary_tokens;
            report.summarised = true;
            return Ok(preview.with(report));
        }

        // The summary, in chunks when the dropped part does not fit the summary model's window.
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let previous = view.compaction.as_ref().and_then(|c| c.summary.clone());
        let plugin_start = std::time::Instant::now();
        let summary = self.summarise(&dropped, previous, &summary_model, summary_tokens, settings, &calls);
        report.plugin_micros += plugin_start.elapsed().as_micros() as u64;
        report.model_calls = calls.load(std::sync::atomic::Ordering::Relaxed);
        // A summariser that called no model (the extractive one) had no summary model.
        let summary_model = (report.model_calls > 0).then_some(summary_model);
        report.summary_model.clone_from(&summary_model);
        let through_seq = info.message_count;
        let first_kept_seq = entries.get(decision.first_kept).and_then(|e| e.seq).unwrap_or(through_seq + 1);
        let pinned_seq = decision.pinned.and_then(|p| entries[p].seq);
        let summariser =
            PluginRef { id: self.summariser.id().to_string(), sha256: self.summariser.sha256().to_string() };
        let failed = |store: &mut Store, error: String| -> Result<Error> {
            let failures = store.record_compaction(
                session,
                &Compaction {
                    trigger,
                    tokens_before: before,
                    tokens_after: None,
                    through_seq,
                    first_kept_seq: None,
                    pinned_seq: None,
                    summary: None,
                    model: summary_model.clone(),
                    status: CompactionStatus::Failed,
                    error: Some(error.clone()),
                    created_at: crate::store::now_ms(),
                    instructions: settings.instructions.clone(),
                    plugin: Some(summariser.clone()),
                },
            )?;
            Ok(Error::SummaryFailed { failures, message: error })
        };
        if mode == Mode::Preview(Stage::Summary) {
            report.summarised = summary.is_ok();
            if let Ok(s) = &summary {
                report.tokens_after = frame.tokens()
                    + kept_tokens
                    + window::estimate_text(&crate::store::summary_text(&cap_summary(s, summary_tokens)))
                    + 4;
            }
            preview.summary = Some(summary.map(|s| cap_summary(&s, summary_tokens)));
            return Ok(preview.with(report));
        }
        let summary = match summary {
            Ok(s) => cap_summary(&s, summary_tokens),
            Err(e) => return Err(failed(store, e)?),
        };
        let after = frame.tokens() + kept_tokens + window::estimate_text(&crate::store::summary_text(&summary)) + 4;
        let freed = before.saturating_sub(after);
        // A summary that freed too little is still used (it cost a model call), but counts as a
        // failure, so a session that keeps thrashing trips the breaker.
        let thrash = (freed * 100 < marks.usable * THRASH_PERCENT && trigger == CompactionTrigger::Auto).then(|| {
            format!("thrash: the summary freed only {freed} tokens (less than {THRASH_PERCENT}% of the window)")
        });
        report.thrash = thrash.is_some();
        store.record_compaction(
            session,
            &Compaction {
                trigger,
                tokens_before: before,
                tokens_after: Some(after),
                through_seq,
                first_kept_seq: Some(first_kept_seq),
                pinned_seq,
                summary: Some(summary),
                model: summary_model,
                status: CompactionStatus::Ok,
                error: thrash,
                created_at: crate::store::now_ms(),
                instructions: settings.instructions.clone(),
                plugin: Some(summariser),
            },
        )?;
        report.summarised = true;
        report.tokens_after = after;
        Ok(preview.with(report))
    }

    /// Asks the trimmer for edits and turns them into replacements.
    fn trims(
        &mut self,
        view: &LiveView,
        frame: &Frame,
        marks: &Marks,
        settings: &Settings,
    ) -> Result<Vec<(u64, u32, String)>> {
        let requests: Vec<usize> = view
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.origin != Origin::Summary && is_request(e))
            .map(|(i, _)| i)
            .collect();
        // The latest two user turns (from the second-to-last request on) are protected.
        let protected_from =
            if requests.len() >= 2 { requests[requests.len() - 2] } else { requests.first().copied().unwrap_or(0) };
        let mut contents: HashMap<(u64, u32), String> = HashMap::new();
        let messages: Vec<TrimMessage> = view
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let seq = e.seq?;
                let parts: Vec<TrimPart> = e
                    .parts
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        if let Part::ToolResult { content, .. } = p {
                            contents.insert((seq, k as u32), content.clone());
                        }
                        let tokens = window::estimate_parts(std::slice::from_ref(p)) - window::MESSAGE_OVERHEAD;
                        TrimPart { kind: p.kind(), bytes: content_len(p), tokens }
                    })
                    .collect();
                Some(TrimMessage {
                    id: seq,
                    role: e.role,
                    tokens: entry_tokens(&e.parts),
                    parts,
                    protected: i >= protected_from || e.origin == Origin::Pinned || e.pinned,
                })
            })
            .collect();
        let budget = TrimBudget {
            current_tokens: estimate_request(frame, view),
            target_tokens: marks.target,
            threshold_tokens: marks.threshold,
            window_tokens: marks.usable,
            extra: settings.trimmer_options.clone(),
        };
        let shared = Arc::new(contents);
        let reader = shared.clone();
        let edits = self.trimmer.trim(&messages, &budget, move |m, p| reader.get(&(m, p)).cloned())?;
        // Each edit applied once, checked against the content as it is applied.
        let mut trims = Vec::with_capacity(edits.len());
        for e in edits {
            let (seq, part) = e.target();
            let Some(current) = shared.get(&(seq, part)) else { continue };
            let text = e.checked_apply(current, settings.recall).map_err(|message| {
                crate::plugins::Error::InvalidOutput { plugin: self.trimmer.id().to_string(), message }
            })?;
            trims.push((seq, part, text));
        }
        Ok(trims)
    }

    fn summarise(
        &mut self,
        dropped: &[&crate::store::ViewEntry],
        previous: Option<String>,
        model: &str,
        summary_tokens: u64,
        settings: &Settings,
        calls: &Arc<std::sync::atomic::AtomicU32>,
    ) -> std::result::Result<String, String> {
        // The session's own model runs with the session's window (which may have been discovered
        // or learnt, so its provider may not know it), another model with the window its provider
        // knows; when both are known, the smaller.
        let own = if model == settings.model { settings.context_window } else { None };
        let model_window = match (own, self.models.context_window(model)) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).or(settings.context_window).unwrap_or(0),
        };
        // No message may be larger than a request can hold beside the instructions, a previous
        // summary (at most the cap) and the answer.
        let largest = model_window.saturating_sub(2 * summary_tokens + SUMMARY_PROMPT_TOKENS + 64);
        let max_chars = usize::try_from(largest.saturating_mul(4)).unwrap_or(usize::MAX).max(400);
        let messages: Vec<PluginMessage> = dropped.iter().map(|e| summary_message(e, max_chars)).collect();
        let mut running = previous;
        // Chunks are sized so each request (instructions, previous summary, messages) and its
        // answer fit the summary model's window; `BoundModel` checks every request against it.
        let chunk_room = |previous: &Option<String>| {
            model_window.saturating_sub(
                summary_tokens + SUMMARY_PROMPT_TOKENS + previous.as_deref().map_or(0, window::estimate_text),
            )
        };
        let mut rest: &[PluginMessage] = &messages;
        while !rest.is_empty() {
            let chunk = first_chunk(rest, chunk_room(&running));
            rest = &rest[chunk.len()..];
            let request = SummaryRequest {
                messages: chunk.to_vec(),
                previous_summary: running.clone(),
                max_tokens: summary_tokens as u32,
                model_window,
                extra: settings.summariser_options.clone(),
                instructions: settings.instructions.clone(),
                prompt: settings.prompt.clone(),
            };
            let bound = BoundModel {
                client: self.models.clone(),
                model: model.to_string(),
                calls: calls.clone(),
                window: model_window,
            };
            running = Some(self.summariser.summarise(&request, Box::new(bound)).map_err(|e| e.to_string())?);
        }
        running.ok_or_else(|| "nothing to summarise".to_string())
    }
}

fn content_len(p: &Part) -> u64 {
    match p {
        Part::ToolResult { content, .. } => content.len() as u64,
        other => other.byte_size() as u64,
    }
}

/// The view with trims applied to its tool results, as the store applies recorded ones.
fn with_trims(mut view: LiveView, trims: &[(u64, u32, String)]) -> LiveView {
    for (seq, part, replacement) in trims {
        let target =
            view.entries.iter_mut().find(|e| e.seq == Some(*seq)).and_then(|e| e.parts.get_mut(*part as usize));
        if let Some(Part::ToolResult { content, .. }) = target {
            content.clone_from(replacement);
        }
    }
    view
}

fn is_request(e: &crate::store::ViewEntry) -> bool {
    e.role == Role::User && e.parts.iter().any(|p| matches!(p, Part::Text { .. }))
}

fn item(e: &crate::store::ViewEntry) -> cut::Item {
    cut::Item {
        seq: e.seq.unwrap_or(0),
        role: e.role,
        tokens: entry_tokens(&e.parts),
        calls: e.parts.iter().filter_map(|p| p.tool_call_id().map(str::to_string)).collect(),
        results: e.parts.iter().filter_map(|p| p.answered_call_id().map(str::to_string)).collect(),
        is_request: is_request(e),
        pinned: e.pinned,
    }
}

/// `text` cut to `max_chars` characters: three quarters from its start, a quarter from its end,
/// and a line saying how much went.
fn head_and_tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let head: String = text.chars().take(max_chars * 3 / 4).collect();
    let tail: String = text.chars().skip(count - max_chars / 4).collect();
    format!("{head}\n[… {} characters cut …]\n{tail}", count - max_chars)
}

/// A long tool output as a summary request carries it: its head, its tail and the lines that
/// carry its outcome ([`outcomes::keep`]) within `max_chars`, or a head and a tail when it has
/// too few lines for that.
fn outcome_cut(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let Some(ranges) = outcomes::keep(text, max_chars) else { return head_and_tail(text, max_chars) };
    let mut out = outcomes::stitch(text, &ranges, |n| Some(format!("[… {n} lines cut …]")));
    out.truncate(out.trim_end().len());
    out
}

/// A dropped message as the summariser gets it: long tool outputs cut to a head, a tail and their
/// outcome lines, and any text beyond `max_chars` in all (a message larger than a summary request
/// can hold) to a head and a tail.
fn summary_message(e: &crate::store::ViewEntry, max_chars: usize) -> PluginMessage {
    let texts = e.parts.iter().filter(|p| matches!(p, Part::Text { .. })).count().max(1);
    let parts = e
        .parts
        .iter()
        .map(|p| match p {
            Part::ToolResult { call_id, content, is_error } => Part::ToolResult {
                call_id: call_id.clone(),
                content: outcome_cut(content, SUMMARY_TOOL_OUTPUT_CHARS.min(max_chars)),
                is_error: *is_error,
            },
            Part::Text { text } => Part::Text { text: head_and_tail(text, max_chars / texts) },
            other => other.clone(),
        })
        .collect();
    PluginMessage { id: e.seq.unwrap_or(0), role: e.role, parts }
}

/// The longest run of messages from the start of `messages` within `room` estimated tokens (at
/// least one: a single larger message is its own chunk, its tool outputs already cut).
fn first_chunk(messages: &[PluginMessage], room: u64) -> &[PluginMessage] {
    let mut used = 0;
    for (i, m) in messages.iter().enumerate() {
        used += window::estimate_parts(&m.parts);
        if i > 0 && used > room {
            return &messages[..i];
        }
    }
    messages
}

/// A summary longer than its cap (in tokens) is cut to it.
fn cap_summary(s: &str, max_tokens: u64) -> String {
    let max_chars = (max_tokens * 4) as usize;
    if s.chars().count() <= max_chars {
        s.trim().to_string()
    } else {
        let cut: String = s.chars().take(max_chars.saturating_sub(48)).collect();
        format!("{}\n[summary cut to its {max_tokens}-token cap]", cut.trim_end())
    }
}

/// Stored results (by call id) of calls in `messages` that have no result there.
fn stored_answers(store: &Store, session: &str, messages: &[pairing::Msg]) -> Result<HashMap<String, Part>> {
    let answered_here: HashSet<&str> =
        messages.iter().flat_map(|m| m.parts.iter()).filter_map(Part::answered_call_id).collect();
    let open: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(Part::tool_call_id)
        .filter(|id| !answered_here.contains(id))
        .collect();
    if open.is_empty() {
        return Ok(HashMap::new());
    }
    // Rare (an interrupt, a resume): read the history once.
    Ok(store
        .full_history(session)?
        .into_iter()
        .flat_map(|m| m.parts.into_iter())
        .filter_map(|p| match &p {
            Part::ToolResult { call_id, .. } if open.contains(call_id.as_str()) => Some((call_id.clone(), p)),
            _ => None,
        })
        .collect())
}
