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

mod accounting;
pub(crate) mod background;
mod commands;
pub mod cut;
mod error;
mod models;
pub mod pairing;
mod passes;
mod shared;
mod summary;
mod write;

pub use accounting::{Frame, current_use, current_use_calibrated, estimate_request};
pub use background::Waiter;
pub use commands::{PIN_SHARE_PERCENT, pin, rewind, undo};
pub use error::{Error, Result};
pub use models::{CountRequest, ECHO_MODEL, EchoModel, ModelClient, NoModels, RequestShape, SharedRequest};
pub use passes::{Pass, passes};
pub use summary::{SUMMARY_PROMPT_TOKENS, SUMMARY_TOOL_OUTPUT_CHARS};

use accounting::{calibrated, content_len, entry_tokens, request_size, uncalibrated};
use summary::cap_summary;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::conversation::{MessageStatus, NewMessage, Part, Role};
use crate::plugins::{SummariserPlugin, TrimBudget, TrimMessage, TrimPart, TrimmerPlugin};
use crate::store::{Compaction, CompactionStatus, CompactionTrigger, LiveView, Origin, PluginRef, Store};
use crate::window::{self, Marks};
pub use seshat_protocol::turn::{
    BackgroundReason, BackgroundRun, Report, SeqRange, Summarising, SummaryRequestKind, TrimSize, WindowMarks,
};

/// After this many failed compactions in a row, summarising stops for the session.
pub(crate) const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// A pass that frees less than this share (percent) of the working window is a failure (thrash).
pub(crate) const THRASH_PERCENT: u64 = 5;
/// What is asked before a pass runs (a front end's `pre_compact` hooks): told the pass's trigger
/// and figures, it answers whether to skip the pass this time and what the summary should also
/// keep or stress.
#[derive(Clone)]
pub struct PreCompact(pub Arc<dyn Fn(&Starting) -> PreCompactAnswer + Send + Sync>);

impl std::fmt::Debug for PreCompact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreCompact")
    }
}

/// What [`PreCompact`] answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreCompactAnswer {
    /// Do not compact this time, and why.
    pub skip: Option<String>,
    /// What the summary should also keep or stress.
    pub instructions: Vec<String>,
}

impl PreCompactAnswer {
    /// An answer skipping the pass for `why`, or giving `instructions`.
    pub fn new(skip: Option<String>, instructions: Vec<String>) -> Self {
        PreCompactAnswer { skip, instructions }
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
    /// For a compaction the user asks for: summarise the live view before this message and keep
    /// it and everything after verbatim, whatever the target says (`compact --until`).
    pub until: Option<u64>,
    /// Stops the compaction (its summary calls included) when cancelled: nothing of it is kept
    /// and it counts as no failure.
    pub cancel: crate::cancel::Cancel,
    /// How a summary is asked of the session's own model (another summary model is always asked
    /// the separate way).
    pub summary_request: SummaryRequestKind,
    /// How the chat's requests are shaped, when an agent sends them: what a summary sharing
    /// their prefix needs (without it, summaries are asked the separate way).
    pub shape: Option<RequestShape>,
    /// The summary model's prices, when configured: the report says what its summary cost.
    pub summary_price: Option<crate::conversation::Price>,
    /// Asked before a pass on the path or in the background runs (the `pre_compact` hooks):
    /// whether to skip it this time, and what its summary should also keep or stress.
    pub pre_compact: Option<PreCompact>,
}

/// The least an automatic compaction summarises, in tokens: below it a summary would be as long
/// as what it replaces.
const MIN_WORTH_SUMMARISING: u64 = 256;

/// The least room for an answer worth sending a request with (below it, the request does not fit).
const MIN_ANSWER_ROOM: u64 = 256;

/// What follows the compaction marker in a request when the history tools are offered.
pub const RECALL_HINT: &str = " history_search finds them and history_read reads them back.";

impl Settings {
    /// An estimate in the model's real tokens.
    pub fn real(&self, estimate: u64) -> u64 {
        calibrated(estimate, self.calibration)
    }

    /// A real token count in estimate units.
    pub fn estimated(&self, real: u64) -> u64 {
        uncalibrated(real, self.calibration)
    }
}

/// How far a [`Compactor::preview`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Stage {
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
    /// Calls the trimmer and chooses the cut, records nothing: the summary is written off the
    /// turn's path and swapped in later ([`background`]).
    Background,
}

/// What one pass is asked to do.
struct Run<'s> {
    /// Why it runs.
    trigger: CompactionTrigger,
    /// What it does with what it computes.
    mode: Mode,
    /// The request's size in real tokens as the caller measured it (the model's own count).
    measured: Option<u64>,
    /// Told the size the pass starts from before any model is called (the figure its report
    /// gives as `tokens_before`), then what a summary will replace before it is written.
    progress: Option<&'s mut dyn FnMut(Progress<'_>)>,
    /// Why the summary is written in the background, when it is.
    background: Option<BackgroundReason>,
}

impl Run<'_> {
    fn manual(mode: Mode) -> Run<'static> {
        Run { trigger: CompactionTrigger::Manual, mode, measured: None, progress: None, background: None }
    }
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
pub(crate) struct Preview {
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
    /// The least any tokenizer Seshat knows counts for it (four characters a token throughout,
    /// no prior): a server reporting far fewer cut the prompt.
    pub floor_tokens: u64,
    /// What compaction did before this call, if it ran.
    pub compaction: Option<Report>,
    /// Things the user should know (an unknown window, a tripped breaker).
    pub warnings: Vec<String>,
    /// The conversation as the model's own tokenizer counted it before anything was done to it,
    /// when it was counted (near the threshold, where precision decides): a real count to
    /// calibrate the estimate with.
    pub counted: Option<Counted>,
    /// A smaller answer room than configured, when the model's count shows the request fits
    /// only with it.
    pub max_tokens: Option<u64>,
}

/// A real count of a request and the estimate it was counted against, by kind of content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// The model's count.
    pub real: u64,
    /// The estimate of the same request, by kind.
    pub tally: window::Tally,
}

/// A compaction about to run: told before the plugins (and the summary model) are called, so a
/// front end can show it is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Starting {
    /// Why it runs.
    pub trigger: CompactionTrigger,
    /// Tokens in use before it, in the model's real tokens: the figure its report gives as
    /// `tokens_before`.
    pub tokens: u64,
    /// The model's context window.
    pub window: u64,
}

/// What a pass tells its caller while it runs, so a front end can show it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// It starts, before the trimmer runs.
    Starting(&'a Starting),
    /// The trims did not make room: a summary is about to be written (the summariser, and the
    /// model it calls, run next).
    Summarising(&'a Summarising),
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
        self.before_call_with(store, session, frame, settings, view, None, &mut |_| {})
    }

    /// [`Compactor::before_call`] on a live view the caller already has (kept up to date with
    /// [`Store::refresh_live_view`]), so a long session's turn does not re-read its history.
    /// `progress` is told as a compaction runs. With `background`, this is a safe point: a summary
    /// written in the background is swapped in, and a session past the early mark gets one
    /// started; a request over the threshold that fits the window is sent while it is written.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn before_call_with(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        view: LiveView,
        mut background: Option<&mut background::Background>,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Prepared> {
        let mut warnings = Vec::new();
        let mut report = None;
        let mut view = view;
        if let Some(bg) = background.as_deref_mut()
            && let Some(swapped) = bg.swap(store, session, frame, None)?
        {
            match swapped {
                background::Swapped::Applied(r) => {
                    report = Some(*r);
                    view = store.live_view(session)?;
                }
                background::Swapped::Discarded(why) | background::Swapped::Failed(why) => warnings.push(why),
            }
        }
        let mut tokens = current_use_calibrated(frame, &view, settings.calibration);
        // Near the threshold, precision decides: count in the model's own tokens where that can
        // be done here (the estimate's prior runs high on code and JSON for such tokenizers).
        let models = self.models.clone();
        let count = |messages: Vec<(Role, &[Part])>| {
            let request = CountRequest { system: &frame.system, tools: &frame.tools, specs: &frame.specs, messages };
            models.count_request(&settings.model, &request)
        };
        let mut counted = None;
        let mut measured;
        let mut settings = settings;
        if let Some(window) = settings.context_window
            && tokens * 10 > Marks::new(window).threshold * 7
            && let Some(n) = count(view.entries.iter().map(|e| (e.role, e.parts.as_slice())).collect())
        {
            // The count is this request's truth: the pass (its target, its cut, its summary
            // requests) works at the density it shows, and the caller learns from it.
            let tally = window::Tally::of_request(
                &[&frame.system, &frame.tools],
                view.entries.iter().map(|e| e.parts.as_slice()),
            );
            let scale = n as f64 / estimate_request(frame, &view).max(1) as f64;
            measured = settings.clone();
            measured.calibration = scale.clamp(1.0, window::MAX_CALIBRATION);
            settings = &measured;
            tokens = n;
            counted = Some(Counted { real: n, tally });
        }
        match settings.context_window {
            None => warnings.push(format!(
                "the context window of `{}` is unknown: auto-compaction is off for this session (give the window, or \
                 set the model's context_window in config.toml)",
                settings.model
            )),
            Some(window) if settings.auto_compact && tokens > Marks::new(window).threshold => {
                let off = background.as_deref_mut().map(|bg| (bg, &mut warnings));
                if !self.off_path(store, session, frame, settings, &view, tokens, off, progress, &mut report)? {
                    let run = Run {
                        trigger: CompactionTrigger::Auto,
                        mode: Mode::Record,
                        measured: counted.as_ref().map(|c| c.real),
                        progress: Some(progress),
                        background: None,
                    };
                    let r = self.pass(store, session, frame, settings, run)?.report;
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
                    if r.summarised
                        && let Some(bg) = background.as_deref_mut()
                    {
                        bg.path_succeeded();
                    }
                    report = Some(r);
                }
            }
            Some(window) if settings.auto_compact => {
                // Below the threshold: past the early mark, the summary is started in the
                // background, to be ready before a turn would wait for it.
                let marks = Marks::new(window);
                if let Some(bg) = background
                    && tokens > bg.early_mark(&marks)
                    && bg.may_start(session, tokens, &marks)
                {
                    let (reason, view) = (BackgroundReason::EarlyMark, view.clone());
                    bg.start(self, store, session, frame, settings, view, reason, progress, &mut warnings);
                }
            }
            Some(_) => {}
        }
        // The view changes only if compaction recorded something.
        let view = if report.is_some() { store.live_view(session)? } else { view };
        let (mut messages, unanswered) = request_messages(store, session, view.entries, settings.recall)?;
        if !unanswered.is_empty() {
            // Calls that never got a result get a synthetic one, stored.
            let msg = NewMessage {
                role: Role::Tool,
                parts: unanswered.clone(),
                usage: None,
                status: MessageStatus::Synthetic,
            };
            let seq = store.append(session, &[msg])?[0];
            messages.push(pairing::Msg { seq: Some(seq), role: Role::Tool, parts: unanswered });
        }
        let messages = pairing::alternate(pairing::arrange(messages));
        let tokens_now = frame.tokens() + messages.iter().map(|m| entry_tokens(&m.parts)).sum::<u64>();
        let mut max_tokens = None;
        if let Some(window) = settings.context_window {
            let limit = Marks::new(window).hard_limit(settings.max_output_tokens);
            // Near the limit by the estimate, or just compacted (the request's mix of content
            // changed: the frame may now weigh most), the model's own count, where it can be had,
            // decides. A request that fits with a smaller answer gets that answer's room.
            let near = settings.real(tokens_now) * 10 > limit * 7 || report.is_some();
            let counted_now =
                if near { count(messages.iter().map(|m| (m.role, m.parts.as_slice())).collect()) } else { None };
            if let Some(c) = counted_now
                && c > limit
                && window.saturating_sub(c) >= MIN_ANSWER_ROOM
            {
                max_tokens = Some(window - c);
            } else if counted_now.map_or(settings.real(tokens_now) > limit, |c| c > limit) {
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
        let floor = |t: &str| Some(window::floor_text(t));
        let floor_tokens =
            request_size(&[&frame.system, &frame.tools], messages.iter().map(|m| m.parts.as_slice()), &floor)
                .unwrap_or(0);
        Ok(Prepared { messages, tokens: tokens_now, floor_tokens, compaction: report, warnings, counted, max_tokens })
    }

    /// Over the threshold with background compaction on: whether the request goes without a
    /// compaction on the path. It does while a summary is written in the background (or one is
    /// started now) and the request fits the window; one that would not fit waits for that summary
    /// (swapped in at once), and goes on the path when it is still over the threshold.
    #[allow(clippy::too_many_arguments)]
    fn off_path(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        view: &LiveView,
        tokens: u64,
        background: Option<(&mut background::Background, &mut Vec<String>)>,
        progress: &mut dyn FnMut(Progress<'_>),
        report: &mut Option<Report>,
    ) -> Result<bool> {
        let (Some((bg, warnings)), Some(window)) = (background, settings.context_window) else { return Ok(false) };
        let marks = Marks::new(window);
        let fits = tokens <= marks.hard_limit(settings.max_output_tokens);
        if report.is_some() && fits {
            // A summary written in the background was just swapped in: the request goes as it is
            // now (the next one is planned in the background when the turn ends).
            return Ok(true);
        }
        if bg.running(session) {
            if fits {
                return Ok(true);
            }
            // The request would not fit without it: the turn waits for the summary (and says so).
            progress(Progress::Starting(&Starting { trigger: CompactionTrigger::Auto, tokens, window }));
            match bg.swap(store, session, frame, Some(&settings.cancel))? {
                Some(background::Swapped::Applied(r)) => {
                    let now = current_use_calibrated(frame, &store.live_view(session)?, settings.calibration);
                    *report = Some(*r);
                    return Ok(now <= marks.threshold);
                }
                Some(background::Swapped::Discarded(why) | background::Swapped::Failed(why)) => warnings.push(why),
                None => {}
            }
            return Ok(false);
        }
        if fits && bg.may_start(session, tokens, &marks) {
            let (reason, view) = (BackgroundReason::EarlyMark, view.clone());
            return Ok(bg.start(self, store, session, frame, settings, view, reason, progress, warnings));
        }
        Ok(false)
    }

    /// Compacts now as the automatic pass does, whatever the threshold says (recovering from a
    /// refusal for length): the breaker is honoured and failures are counted.
    pub(crate) fn compact_auto(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        let run = Run {
            trigger: CompactionTrigger::Auto,
            mode: Mode::Record,
            measured: None,
            progress: Some(progress),
            background: None,
        };
        Ok(self.pass(store, session, frame, settings, run)?.report)
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
        self.compact_with(store, session, frame, settings, dry_run, &mut |_| {})
    }

    /// [`Compactor::compact`], telling `progress` as it runs (what a summary will replace, before
    /// it is written).
    pub fn compact_with(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        dry_run: bool,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        let mode = if dry_run { Mode::DryRun } else { Mode::Record };
        let run = Run { progress: Some(progress), ..Run::manual(mode) };
        Ok(self.pass(store, session, frame, settings, run)?.report)
    }

    /// Runs a manual compaction's steps exactly as [`Compactor::compact`] would, up to `stage`,
    /// calling the plugins (and, for the summary, the model client) but recording nothing: what
    /// `seshat plugins test` shows. The summariser's failure is in [`Preview::summary`], not an
    /// error.
    pub(crate) fn preview(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        stage: Stage,
    ) -> Result<Preview> {
        self.pass(store, session, frame, settings, Run::manual(Mode::Preview(stage)))
    }

    fn pass(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        run: Run<'_>,
    ) -> Result<Preview> {
        match self.plan(store, session, frame, settings, run, None)? {
            Planned::Done(preview) => Ok(*preview),
            Planned::Summary(plan) => {
                let written = write::write(self.summariser, &self.models, &plan.write);
                let through_seq = plan.through_seq;
                let kept_tokens = plan.kept_tokens;
                finish(store, session, frame, *plan, written, through_seq, kept_tokens)
            }
        }
    }

    /// A pass up to the summary: the trims, the cut and what the summary will replace (told to
    /// `run.progress`). [`Planned::Done`] when no summary is written (the trims sufficed, nothing
    /// to drop, the breaker, a dry run or a preview of the trims), with what was recorded. `view`
    /// is the live view to work on (read when not given). In [`Mode::Background`] nothing is
    /// recorded, whatever the outcome.
    fn plan(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        run: Run<'_>,
        view: Option<LiveView>,
    ) -> Result<Planned> {
        let Run { trigger, mode, measured, mut progress, background } = run;
        // What it computes is not recorded (a background pass's is, later, when swapped in).
        let dry_run = !matches!(mode, Mode::Record);
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
        let view = match view {
            Some(v) => v,
            None => store.live_view(session)?,
        };
        // Every figure the report gives is in the model's real tokens (estimates calibrated).
        let before = measured.unwrap_or_else(|| {
            current_use_calibrated(frame, &view, settings.calibration)
                .max(settings.real(estimate_request(frame, &view)))
        });
        // A background pass says nothing until it knows a summary is to be written.
        if let Some(progress) = progress.as_mut().filter(|_| mode != Mode::Background) {
            progress(Progress::Starting(&Starting { trigger, tokens: before, window }));
        }
        let shown = WindowMarks { window, threshold: marks.threshold, target: marks.target };
        let shown_dry = !matches!(mode, Mode::Record | Mode::Background);
        let mut report = Report { tokens_before: before, dry_run: shown_dry, marks: shown, ..Report::default() };
        let mut preview = Preview::default();
        // The front end's hooks: skip this time, or more instructions for the summary.
        let asked;
        let mut settings = settings;
        if let Some(pre) = settings.pre_compact.as_ref().filter(|_| matches!(mode, Mode::Record | Mode::Background)) {
            let answer = (pre.0)(&Starting { trigger, tokens: before, window });
            // A request that would not fit the window is compacted whatever a hook says.
            let must = trigger == CompactionTrigger::Auto && before > marks.hard_limit(settings.max_output_tokens);
            if let Some(why) = answer.skip.filter(|_| !must) {
                report.tokens_after = before;
                report.not_applied = Some(why);
                preview.report = report;
                return Ok(Planned::Done(Box::new(preview)));
            }
            if !answer.instructions.is_empty() {
                let mut with = settings.clone();
                let mut all: Vec<String> = with.instructions.take().into_iter().collect();
                all.extend(answer.instructions);
                with.instructions = Some(all.join("\n\n"));
                asked = with;
                settings = &asked;
            }
        }

        // Micro-compaction.
        let plugin_start = std::time::Instant::now();
        let trims = self.trims(&view, frame, &marks, settings)?;
        report.plugin_micros += plugin_start.elapsed().as_micros() as u64;
        report.trimmed = trims.len();
        let size_in_view = |seq: u64, part: u32| {
            view.entries
                .iter()
                .find(|e| e.seq == Some(seq))
                .and_then(|e| e.parts.get(part as usize))
                .map_or(0, content_len)
        };
        report.trims = trims
            .iter()
            .map(|(seq, part, after)| TrimSize {
                seq: *seq,
                part: *part,
                bytes_before: size_in_view(*seq, *part),
                bytes_after: after.len() as u64,
            })
            .collect();
        if matches!(mode, Mode::Preview(_)) {
            preview.trims = report
                .trims
                .iter()
                .zip(&trims)
                .map(|(t, (_, _, after))| TrimChange {
                    seq: t.seq,
                    part: t.part,
                    bytes_before: t.bytes_before,
                    bytes_after: t.bytes_after,
                    text: after.clone(),
                })
                .collect();
        }
        let untrimmed = estimate_request(frame, &view);
        // A dry run applies the trims to its copy of the view exactly as the store would, so it
        // chooses the same cut as the real run.
        // A real run records them only once it knows it goes on (an interrupted compaction leaves
        // the session as it was).
        // A summary sharing the chat's prefix sends the view as the chat's last request had it:
        // before this pass's trims.
        let shared_possible = settings.summary_request == SummaryRequestKind::SharedPrefix
            && settings.shape.is_some()
            && settings.summary_model.as_deref().is_none_or(|m| m == settings.model)
            && self.summariser.id() == shared::SUMMARISER
            && matches!(mode, Mode::Record | Mode::Background);
        let original = ((shared_possible && !trims.is_empty()) || mode == Mode::Background).then(|| view.clone());
        let view = if trims.is_empty() { view } else { with_trims(view, &trims) };
        let by = PluginRef { id: self.trimmer.id().to_string(), sha256: self.trimmer.sha256().to_string() };
        let keep_trims = |store: &mut Store| -> Result<()> {
            if !dry_run && !trims.is_empty() {
                store.record_trims_by(session, &trims, Some(&by))?;
            }
            Ok(())
        };
        let after_trims = estimate_request(frame, &view);
        report.trims_freed = settings.real(untrimmed).saturating_sub(settings.real(after_trims));
        report.tokens_after = before.saturating_sub(report.trims_freed);
        // Trims first: when they bring a request that was over the target under it, no summary
        // (asked for by hand or not). A manual compaction of a request already under the target
        // summarises all the same (below), unless a cut was named.
        let trims_sufficed = report.tokens_after <= marks.target
            && (trigger == CompactionTrigger::Auto || (before > marks.target && settings.until.is_none()));
        if mode == Mode::Preview(Stage::Trims) || trims_sufficed {
            keep_trims(store)?;
            return Ok(Planned::Done(Box::new(preview.with(report))));
        }
        let breaker_open = info.compaction_failures >= MAX_CONSECUTIVE_FAILURES || info.auto_compact_disabled;
        if trigger == CompactionTrigger::Auto && breaker_open {
            keep_trims(store)?;
            return Ok(Planned::Done(Box::new(preview.with(report))));
        }

        // The cut.
        let entries: Vec<&crate::store::ViewEntry> =
            view.entries.iter().filter(|e| e.origin != Origin::Summary).collect();
        let items: Vec<cut::Item> = entries.iter().map(|e| item(e)).collect();
        let summary_tokens = marks.summary_tokens();
        let budget = settings.estimated(marks.target).saturating_sub(frame.tokens() + summary_tokens);
        let mut decision = cut::choose(&items, budget);
        if let (Some(until), CompactionTrigger::Manual) = (settings.until, trigger) {
            if until == 0 || until > info.message_count {
                return Err(crate::store::Error::SeqOutOfRange {
                    session: session.into(),
                    seq: until,
                    last: info.message_count,
                }
                .into());
            }
            // Everything before `until` in the view, its tool exchanges kept whole.
            let at = entries.iter().position(|e| e.seq.is_some_and(|s| s >= until)).unwrap_or(entries.len());
            let first = if at < entries.len() { cut::settle(&items, at) } else { at };
            decision = cut::Cut { first_kept: first, pinned: None };
        } else if trigger == CompactionTrigger::Manual && decision.first_kept == 0 {
            // Asked for while everything fits the target: compact as asked all the same — every
            // turn before the latest request is summarised, that request and what followed kept.
            if let Some(first) = items.iter().rposition(|i| i.is_request).map(|r| cut::settle(&items, r)) {
                decision = cut::Cut { first_kept: first, pinned: None };
            }
        }
        let stays = |i: usize| Some(i) == decision.pinned || entries[i].pinned;
        let dropped: Vec<&crate::store::ViewEntry> =
            entries[..decision.first_kept].iter().enumerate().filter(|(i, _)| !stays(*i)).map(|(_, e)| *e).collect();
        let before_cut_kept: Vec<usize> = (0..decision.first_kept).filter(|&i| stays(i)).collect();
        report.dropped = dropped.len();
        report.kept = entries.len() - decision.first_kept + before_cut_kept.len();
        let kept_tokens: u64 = entries[decision.first_kept..].iter().map(|e| entry_tokens(&e.parts)).sum::<u64>()
            + before_cut_kept.iter().map(|&i| entry_tokens(&entries[i].parts)).sum::<u64>();
        if let (Some(until), CompactionTrigger::Manual) = (settings.until, trigger) {
            // Kept verbatim whatever the target says: refused when that and the summary cannot fit.
            let needed = settings.real(frame.tokens() + kept_tokens + summary_tokens);
            let limit = marks.hard_limit(settings.max_output_tokens);
            if needed > limit {
                return Err(Error::CompactFull {
                    needed,
                    limit,
                    window: marks.context_window,
                    max_output: settings.max_output_tokens,
                    hint: format!(
                        ": kept verbatim from message {until}, the messages after it and the summary would not fit; \
                         nothing was compacted. Compact until a later message"
                    ),
                });
            }
        }
        let dropped_tokens: u64 = dropped.iter().map(|e| entry_tokens(&e.parts)).sum();
        // Nothing to summarise, or too little for a summary to be smaller (an automatic pass
        // calls no model for it, and it is no failure).
        if dropped.is_empty()
            || (trigger == CompactionTrigger::Auto && settings.real(dropped_tokens) < MIN_WORTH_SUMMARISING)
        {
            keep_trims(store)?;
            return Ok(Planned::Done(Box::new(preview.with(report))));
        }
        report.summarised_seqs = SeqRange::of(dropped.iter().filter_map(|e| e.seq));
        let summary_model = settings.summary_model.clone().unwrap_or_else(|| settings.model.clone());
        report.summary_model = Some(summary_model.clone());
        if mode == Mode::DryRun {
            // The summary at its cap, or at the size of what it summarises when that is less.
            report.tokens_after = settings.real(frame.tokens() + kept_tokens + summary_tokens.min(dropped_tokens));
            report.summary_tokens = Some(settings.real(summary_tokens.min(dropped_tokens)));
            report.summarised = true;
            return Ok(Planned::Done(Box::new(preview.with(report))));
        }
        if let Some(progress) = progress.as_mut() {
            progress(Progress::Summarising(&Summarising {
                trigger,
                tokens: before,
                after_trims: report.tokens_after,
                marks: shown,
                seqs: report.summarised_seqs.clone(),
                messages: dropped.len(),
                messages_tokens: settings.real(dropped_tokens),
                kept: report.kept,
                summariser: self.summariser.id().to_string(),
                model: summary_model.clone(),
                background,
            }));
        }
        let through_seq = info.message_count;
        let shared = shared_possible.then(|| {
            // The first kept message's place in the whole view (the summary entry included).
            let first_kept = entries
                .get(decision.first_kept)
                .and_then(|k| view.entries.iter().position(|e| e.seq.is_some() && e.seq == k.seq))
                .unwrap_or(view.entries.len());
            shared::plan(
                store,
                session,
                frame,
                settings,
                (original.as_ref().unwrap_or(&view), &view),
                first_kept,
                summary_tokens,
                window,
            )
        });
        let write = write::Write {
            session: session.to_string(),
            dropped: dropped.iter().map(|e| (*e).clone()).collect(),
            previous: view.compaction.as_ref().and_then(|c| c.summary.clone()),
            model: summary_model,
            summary_tokens,
            settings: settings.clone(),
            shared,
        };
        Ok(Planned::Summary(Box::new(Plan {
            trigger,
            mode,
            marks,
            report,
            preview,
            trims,
            trimmer: by,
            summariser: PluginRef {
                id: self.summariser.id().to_string(),
                sha256: self.summariser.sha256().to_string(),
            },
            kept_tokens,
            first_kept_seq: entries.get(decision.first_kept).and_then(|e| e.seq).unwrap_or(through_seq + 1),
            pinned_seq: decision.pinned.and_then(|p| entries[p].seq),
            through_seq,
            snapshot: original,
            write,
        })))
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
}

/// What a pass does once it has chosen what a summary replaces.
pub(crate) enum Planned {
    /// No summary: the pass is over (with what it recorded).
    Done(Box<Preview>),
    /// A summary is to be written.
    Summary(Box<Plan>),
}

/// A pass's choices before its summary is written: what the summary replaces and what stays.
pub(crate) struct Plan {
    /// Why it runs.
    trigger: CompactionTrigger,
    /// What it does with what it computes.
    mode: Mode,
    /// The window's marks.
    marks: Marks,
    /// The figures so far.
    report: Report,
    /// A preview's findings so far.
    preview: Preview,
    /// The trims, recorded with the summary.
    trims: Vec<(u64, u32, String)>,
    /// The trimmer that proposed them.
    trimmer: PluginRef,
    /// The summariser.
    summariser: PluginRef,
    /// The messages kept, in estimated tokens.
    kept_tokens: u64,
    /// The first message kept after the cut.
    first_kept_seq: u64,
    /// The request kept before the cut.
    pinned_seq: Option<u64>,
    /// The session's last message when the pass began.
    through_seq: u64,
    /// The view the pass began from, before its trims (kept for a background pass, whose
    /// summary is swapped in only while that view stands).
    snapshot: Option<LiveView>,
    /// What writing the summary needs.
    write: write::Write,
}

/// Ends a pass with its summary `written`: records it (with the trims) as the compaction of the
/// session ending at `through_seq`, unless it was stopped, it failed (recorded as a failure), or
/// it would not make the request smaller than the report's `tokens_after` (not applied). A preview
/// records nothing. `kept_tokens` are the kept messages' estimated tokens.
fn finish(
    store: &mut Store,
    session: &str,
    frame: &Frame,
    plan: Plan,
    written: write::Written,
    through_seq: u64,
    kept_tokens: u64,
) -> Result<Preview> {
    let Plan { trigger, mode, marks, mut report, mut preview, trims, trimmer, summariser, .. } = plan;
    let settings = &plan.write.settings;
    let summary_tokens = plan.write.summary_tokens;
    // A background pass ends here when it is swapped in: recorded as a pass on the path is.
    let dry_run = !matches!(mode, Mode::Record | Mode::Background);
    report.summary_usage = written.usage;
    report.summary_cost_micro_usd = match (&written.usage, settings.summary_price) {
        (Some(u), Some(price)) => Some((price.cost(u) * 1_000_000.0).round() as u64),
        _ => None,
    };
    report.summary_request = written.request;
    report.plugin_micros += written.micros;
    report.model_calls = written.calls;
    if let Ok(learnt) = &written.summarised {
        report.refusals_recovered = learnt.recovered;
        // How the summary model counts, for the next request to it (the chat's, when it is
        // the session's model).
        if let (Some(calibration), false) = (learnt.calibration, dry_run) {
            store.set_calibration(session, &plan.write.model, calibration, None)?;
        }
    }
    let summary = written.summarised.map(|s| s.text);
    // A summariser that called no model (the extractive one) had no summary model.
    let summary_model = (report.model_calls > 0).then(|| plan.write.model.clone());
    report.summary_model.clone_from(&summary_model);
    let failed = |store: &mut Store, error: String| -> Result<Error> {
        let failures = store.record_compaction(
            session,
            &Compaction {
                trigger,
                tokens_before: report.tokens_before,
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
    // The request after the cut, with `summary` (capped) in place of what it replaces.
    let with_summary = |summary: &str| {
        settings.real(frame.tokens() + kept_tokens + window::estimate_text(&crate::store::summary_text(summary)) + 4)
    };
    if mode == Mode::Preview(Stage::Summary) {
        report.summarised = summary.is_ok();
        if let Ok(s) = &summary {
            report.tokens_after = with_summary(&cap_summary(s, summary_tokens));
        }
        preview.summary = Some(summary.map(|s| cap_summary(&s, summary_tokens)));
        return Ok(preview.with(report));
    }
    if settings.cancel.is_cancelled() {
        // Stopped by the user: nothing of it is kept, and it is no failure.
        return Err(Error::Interrupted);
    }
    if !trims.is_empty() {
        store.record_trims_by(session, &trims, Some(&trimmer))?;
    }
    let summary = match summary {
        Ok(s) => cap_summary(&s, summary_tokens),
        Err(e) => return Err(failed(store, e)?),
    };
    let after = with_summary(&summary);
    let summary_size = settings.real(window::estimate_text(&crate::store::summary_text(&summary)) + 4);
    if after >= report.tokens_after {
        report.summarised_seqs.clear();
        // A summary that would not make the request smaller (a short history summarised at
        // length) is not applied, and is no failure: the trims stand, the view stays.
        tracing::debug!(session, after, before = report.tokens_after, "the summary would grow the request");
        report.not_applied = Some(format!(
            "the summary would have made the request larger ({after} tokens against {}): it was not applied, \
             and the view stays as it was{}",
            report.tokens_after,
            if trims.is_empty() { "" } else { " after the trims" }
        ));
        return Ok(preview.with(report));
    }
    let freed = report.tokens_before.saturating_sub(after);
    // A summary that freed too little is still used (it cost a model call), but counts as a
    // failure, so a session that keeps thrashing trips the breaker.
    // (A pass started below the threshold, in the background, is no failure for freeing little.)
    let thrash = (freed * 100 < marks.usable * THRASH_PERCENT
        && trigger == CompactionTrigger::Auto
        && report.tokens_before > marks.threshold)
        .then(|| format!("thrash: the summary freed only {freed} tokens (less than {THRASH_PERCENT}% of the window)"));
    report.thrash = thrash.is_some();
    store.record_compaction(
        session,
        &Compaction {
            trigger,
            tokens_before: report.tokens_before,
            tokens_after: Some(after),
            through_seq,
            first_kept_seq: Some(plan.first_kept_seq),
            pinned_seq: plan.pinned_seq,
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
    report.summary_tokens = Some(summary_size);
    Ok(preview.with(report))
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
    // (Context hooks added after a request is not one.)
    e.role == Role::User
        && e.status != MessageStatus::Synthetic
        && e.parts.iter().any(|p| matches!(p, Part::Text { .. }))
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

/// Stored results (by call id) of calls in `messages` that have no result there.
/// A request's conversation from view `entries`, as every request carries it: the summary with
/// its recall hint when the history tools are offered (`recall`), each tool call with its result
/// (results the store has but the view lost put back after it). Returns it (not yet arranged) and
/// the synthetic results of the calls that never got one, for the caller to add.
fn request_messages(
    store: &Store,
    session: &str,
    entries: Vec<crate::store::ViewEntry>,
    recall: bool,
) -> Result<(Vec<pairing::Msg>, Vec<Part>)> {
    let mut messages: Vec<pairing::Msg> = entries
        .into_iter()
        .map(|mut e| {
            if recall
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
        // Results the store has but the view lost: sent with their calls.
        messages.push(pairing::Msg { seq: None, role: Role::Tool, parts: stored.into_values().collect() });
    }
    let unanswered = repair.unanswered.iter().map(|(id, name)| pairing::synthetic_result(id, name)).collect();
    Ok((messages, unanswered))
}

/// The conversation the next model call of `session` would send, read only: as
/// [`Compactor::before_call_with`] builds it when nothing is due (the calls that never got a
/// result get their synthetic one here without it being stored).
pub(crate) fn request_as_stored(store: &Store, session: &str, recall: bool) -> Result<Vec<pairing::Msg>> {
    let view = store.live_view(session)?;
    let (mut messages, unanswered) = request_messages(store, session, view.entries, recall)?;
    if !unanswered.is_empty() {
        messages.push(pairing::Msg { seq: None, role: Role::Tool, parts: unanswered });
    }
    Ok(pairing::alternate(pairing::arrange(messages)))
}

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
