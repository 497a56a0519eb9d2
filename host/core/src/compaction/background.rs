//! Background compaction: a summary written off the turn's path.
//!
//! When a session passes the early mark (below the threshold), or has been idle long enough, a
//! pass is planned on the live view as it stands (its **snapshot**): the trims and the cut are
//! chosen and the notice told, as on the path, but nothing is recorded. The summary is then
//! written on its own thread, with a second summariser instance and a model client of its own
//! (the chat's is busy with the turn), while the session goes on. At the next safe point — before
//! a model call, or when the session is idle — it is **swapped in**: recorded as the session's
//! compaction with the messages appended since kept after it, only if nothing up to the snapshot
//! changed (a rewind, a pin, a trim, another compaction); otherwise it is discarded. A turn waits
//! for it only when its request would not fit the window without it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use super::write::{self, Written};
use super::{
    BackgroundReason, BackgroundRun, Compactor, Frame, Mode, ModelClient, Plan, Planned, Progress, Report, Result, Run,
    Settings, current_use_calibrated, entry_tokens, estimate_request, finish, with_trims,
};
use crate::plugins::{LoadedPlugin, SummariserPlugin};
use crate::store::{CompactionTrigger, LiveView, Origin, Store};
use crate::window::Marks;

/// Where a job's thread leaves its summary (and the summariser it borrowed), and wakes whoever
/// waits for it.
#[derive(Default)]
struct Slot {
    /// The result, until it is swapped in.
    done: Mutex<Filled>,
    ready: Condvar,
}

/// A slot's state: `finished` is set once and never reset (the result may already be taken).
#[derive(Default)]
struct Filled {
    finished: bool,
    result: Option<(Option<SummariserPlugin>, Written)>,
}

/// Background summaries being written at once in this process, at most [`MAX_RUNNING`]: past it,
/// a session is compacted on the path (a service with many sessions near their threshold does not
/// start a thread and a provider call for each).
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The most background summaries written at once in one process.
pub const MAX_RUNNING: usize = 4;

/// The most background summaries written at once in one process for which an idle session's may
/// start: idle sessions leave room for those of sessions in use.
pub const MAX_RUNNING_FOR_IDLE: usize = 2;

/// Whether an idle session's summary may start now (see [`MAX_RUNNING_FOR_IDLE`]).
pub(crate) fn room_for_idle() -> bool {
    RUNNING.load(Ordering::SeqCst) < MAX_RUNNING_FOR_IDLE
}

/// A summary being written in the background.
struct Job {
    session: String,
    reason: BackgroundReason,
    plan: Box<Plan>,
    slot: Arc<Slot>,
}

/// Waits for a background summary without holding what started it (an idle timer's thread).
#[derive(Clone)]
pub struct Waiter(Arc<Slot>);

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").finish_non_exhaustive()
    }
}

impl Waiter {
    /// Whether the summary is written (or failed), without waiting.
    pub fn is_written(&self) -> bool {
        self.0.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).finished
    }

    /// Blocks until the summary is written (or failed).
    pub fn wait(&self) {
        self.wait_unless(&|| false);
    }

    /// Blocks until the summary is written (or failed), or until `stop` says to stop waiting
    /// (asked every tenth of a second): whether it was written.
    pub fn wait_unless(&self, stop: &dyn Fn() -> bool) -> bool {
        let mut done = self.0.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while !done.finished {
            if stop() {
                return false;
            }
            let tick = std::time::Duration::from_millis(100);
            done = self.0.ready.wait_timeout(done, tick).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
        true
    }
}

/// What became of a background summary at a safe point.
#[derive(Debug)]
pub(crate) enum Swapped {
    /// Recorded: the session's view now starts with it.
    Applied(Box<Report>),
    /// Not recorded, and why (the view up to its snapshot changed, or the summary would not make
    /// the request smaller).
    Discarded(String),
    /// The summariser or its model failed: summaries are made on the path until one succeeds.
    Failed(String),
}

/// A client's background compaction: what it needs to write summaries off the path, and the job
/// in flight (one at a time).
pub(crate) struct Background {
    /// Serves the background's summary calls: a connection of its own.
    models: Option<Arc<dyn ModelClient>>,
    /// The summariser, to make the background's instance from.
    loaded: Option<LoadedPlugin>,
    /// The background's summariser instance, between jobs.
    spare: Option<SummariserPlugin>,
    job: Option<Job>,
    /// The early mark, in percent of the threshold.
    early_percent: u64,
    /// The idle mark, in percent of the threshold: an idle session above it is compacted.
    idle_percent: u64,
    /// The session whose background summary failed: its summaries are made on the path until one
    /// succeeds.
    failed: Option<String>,
    /// Tokens in use when a plan last found nothing to summarise: below the threshold, no new plan
    /// until the session grows by half the way from the early mark to the threshold.
    quiet_at: Option<(String, u64)>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("enabled", &self.enabled())
            .field("job", &self.job.as_ref().map(|j| (&j.session, j.reason)))
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Default for Background {
    fn default() -> Self {
        Self {
            models: None,
            loaded: None,
            spare: None,
            job: None,
            early_percent: 85,
            idle_percent: 70,
            failed: None,
            quiet_at: None,
        }
    }
}

impl Background {
    /// Turns it on: `models` serves its summary calls (not the chat's own connection), `loaded` is
    /// the summariser to make its instance from; the early and idle marks in percent of the
    /// threshold.
    pub(crate) fn enable(&mut self, models: Arc<dyn ModelClient>, loaded: LoadedPlugin, marks: (u64, u64)) {
        self.models = Some(models);
        self.loaded = Some(loaded);
        self.spare = None;
        self.early_percent = marks.0.clamp(1, 100);
        self.idle_percent = marks.1.clamp(1, 100);
    }

    /// Whether summaries can be written in the background.
    pub(crate) fn enabled(&self) -> bool {
        self.models.is_some() && self.loaded.is_some()
    }

    /// Whether a summary of `session` is being written (or waits to be swapped in).
    pub(crate) fn running(&self, session: &str) -> bool {
        self.job.as_ref().is_some_and(|j| j.session == session)
    }

    /// Drops a finished job of a session other than `session` (the client moved on: a fork, another
    /// session), keeping its summariser.
    fn reap(&mut self, session: &str) {
        let Some(job) = self.job.as_ref().filter(|j| j.session != session) else { return };
        let mut done = job.slot.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !done.finished {
            return;
        }
        let taken = done.result.take();
        drop(done);
        if let Some((summariser, _)) = taken {
            self.spare = summariser.or(self.spare.take());
        }
        self.job = None;
    }

    /// What to wait on for `session`'s summary being written, if one is.
    pub(crate) fn waiter(&self, session: &str) -> Option<Waiter> {
        self.job.as_ref().filter(|j| j.session == session).map(|j| Waiter(j.slot.clone()))
    }

    /// The early mark of a window with `marks`: at most the threshold, and far enough above the
    /// target that a pass started there frees what a pass must (a pass keeps at most the target,
    /// summary included): on a small window, whose threshold lies close to its target, it is the
    /// threshold itself.
    pub(crate) fn early_mark(&self, marks: &Marks) -> u64 {
        (marks.threshold * self.early_percent / 100).max(worth_from(marks)).min(marks.threshold)
    }

    /// The idle mark of a window with `marks`: an idle session above it is compacted (at most the
    /// early mark).
    pub(crate) fn idle_mark(&self, marks: &Marks) -> u64 {
        (marks.threshold * self.idle_percent / 100).max(worth_from(marks)).min(self.early_mark(marks))
    }

    /// Whether a job may start for `session` at `tokens` in use (none running, none failed, the
    /// session grown since a plan last found nothing to summarise below `threshold`).
    pub(crate) fn may_start(&mut self, session: &str, tokens: u64, marks: &Marks) -> bool {
        self.reap(session);
        let failed = self.failed.as_deref() == Some(session);
        if !self.enabled() || failed || self.job.is_some() || RUNNING.load(Ordering::SeqCst) >= MAX_RUNNING {
            return false;
        }
        let step = marks.threshold.saturating_sub(self.early_mark(marks)) / 2;
        match &self.quiet_at {
            Some((s, at)) if s == session && tokens <= marks.threshold => tokens > at + step.max(1),
            _ => true,
        }
    }

    /// A summary made on the path succeeded: background summaries may be tried again.
    pub(crate) fn path_succeeded(&mut self) {
        self.failed = None;
        self.quiet_at = None;
    }

    /// Plans a pass on `view` (the snapshot) with `compactor`'s trimmer and, when a summary is
    /// needed, starts writing it on its own thread (`progress` is told what it will replace).
    /// Returns whether a job started; nothing is recorded either way. A plan or a thread that
    /// cannot start is said in `warnings`, and summaries of the session go on the path.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &mut self,
        compactor: &mut Compactor<'_>,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        view: LiveView,
        reason: BackgroundReason,
        progress: &mut dyn FnMut(Progress<'_>),
        warnings: &mut Vec<String>,
    ) -> bool {
        match self.try_start(compactor, store, session, frame, settings, view, reason, progress) {
            Ok(started) => started,
            Err(e) => {
                tracing::warn!(session, "the background summary could not start: {e}");
                warnings.push(format!(
                    "the summary could not be started in the background ({e}); it is written on the turn's path"
                ));
                self.failed = Some(session.to_string());
                false
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn try_start(
        &mut self,
        compactor: &mut Compactor<'_>,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        settings: &Settings,
        view: LiveView,
        reason: BackgroundReason,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<bool> {
        let (Some(models), Some(loaded)) = (self.models.clone(), self.loaded.as_ref()) else { return Ok(false) };
        if self.job.is_some() {
            return Ok(false);
        }
        let tokens = current_use_calibrated(frame, &view, settings.calibration);
        let mut summariser = match self.spare.take() {
            Some(s) => s,
            None => SummariserPlugin::new(loaded)?,
        };
        // The background's own cancel: the user stopping a turn does not stop it.
        let mut settings = settings.clone();
        settings.cancel = crate::cancel::Cancel::default();
        let run = Run {
            trigger: CompactionTrigger::Auto,
            mode: Mode::Background,
            measured: None,
            progress: Some(progress),
            background: Some(reason),
        };
        let plan = match compactor.plan(store, session, frame, &settings, run, Some(view)) {
            Ok(Planned::Summary(plan)) => plan,
            Ok(Planned::Done(_)) => {
                self.spare = Some(summariser);
                self.quiet_at = Some((session.to_string(), tokens));
                return Ok(false);
            }
            Err(e) => {
                self.spare = Some(summariser);
                return Err(e);
            }
        };
        let slot = Arc::new(Slot::default());
        let work = plan.write.clone();
        let filled = slot.clone();
        RUNNING.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("seshat-summary".into()).spawn(move || {
            // A summariser that panics leaves no instance, and a failure to swap in.
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let written = write::write(&mut summariser, &models, &work);
                (summariser, written)
            }));
            let result = match written {
                Ok((summariser, written)) => (Some(summariser), written),
                Err(_) => (None, Written::failed("the summary's thread panicked")),
            };
            RUNNING.fetch_sub(1, Ordering::SeqCst);
            let mut done = filled.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            done.result = Some(result);
            done.finished = true;
            filled.ready.notify_all();
        });
        if let Err(e) = spawned {
            RUNNING.fetch_sub(1, Ordering::SeqCst);
            return Err(super::Error::SummaryFailed {
                failures: 0,
                message: format!("cannot start the background summary: {e}"),
            });
        }
        self.quiet_at = None;
        self.job = Some(Job { session: session.to_string(), reason, plan, slot });
        Ok(true)
    }

    /// Swaps in `session`'s background summary when it is written (`wait`: waiting for it), at a
    /// safe point; `None` when there is none (or it is not written yet and `wait` is false).
    pub(crate) fn swap(
        &mut self,
        store: &mut Store,
        session: &str,
        frame: &Frame,
        wait: Option<&crate::cancel::Cancel>,
    ) -> Result<Option<Swapped>> {
        self.reap(session);
        if !self.running(session) {
            return Ok(None);
        }
        let Some(job) = self.job.as_ref() else { return Ok(None) };
        if let Some(cancel) = wait
            && !Waiter(job.slot.clone()).wait_unless(&|| cancel.is_cancelled())
        {
            return Err(super::Error::Interrupted);
        }
        let taken = job.slot.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).result.take();
        let Some((summariser, written)) = taken else { return Ok(None) };
        self.spare = summariser.or(self.spare.take());
        let Some(job) = self.job.take() else { return Ok(None) };
        let swapped = swap_in(store, session, frame, job, written)?;
        match &swapped {
            Swapped::Failed(_) => self.failed = Some(session.to_string()),
            Swapped::Applied(r) => {
                self.failed = None;
                // The next pass in the background waits until the session has grown again.
                self.quiet_at = Some((session.to_string(), r.tokens_after));
            }
            Swapped::Discarded(_) => {}
        }
        Ok(Some(swapped))
    }
}

/// The least a pass may start from for what it frees to count (a pass keeps at most the target,
/// its summary included): the target and the share of the working window a pass must free.
fn worth_from(marks: &Marks) -> u64 {
    marks.target + marks.usable * super::THRASH_PERCENT / 100 + 1
}

/// The entries of `view` up to message `through` (the summary in force included).
fn up_to(view: &LiveView, through: u64) -> impl Iterator<Item = &crate::store::ViewEntry> {
    view.entries.iter().filter(move |e| e.seq.is_none_or(|s| s <= through))
}

/// Records `job`'s summary as the session's compaction if the view up to its snapshot is as it
/// was (the messages appended since stay after it).
fn swap_in(store: &mut Store, session: &str, frame: &Frame, job: Job, written: Written) -> Result<Swapped> {
    let Job { reason, mut plan, .. } = job;
    let snapshot_seq = plan.through_seq;
    if let Err(e) = &written.summarised {
        tracing::warn!(session, "the background summary failed: {e}");
        return Ok(Swapped::Failed(format!(
            "the summary written in the background failed ({e}); the session is compacted on the turn's path when \
             it passes the threshold"
        )));
    }
    let current = store.live_view(session)?;
    let unchanged = plan.snapshot.as_ref().is_some_and(|s| up_to(s, snapshot_seq).eq(up_to(&current, snapshot_seq)));
    if !unchanged {
        tracing::info!(session, snapshot_seq, "the background summary is discarded: the view before it changed");
        return Ok(Swapped::Discarded(format!(
            "the summary written in the background (of the view up to message {snapshot_seq}) was discarded: the \
             history before it changed meanwhile (a rewind, a pin or another compaction)"
        )));
    }
    // The figures as the session stands now: what was appended since the snapshot counts.
    let settings = &plan.write.settings;
    let through_seq = current.session.message_count;
    let before = current_use_calibrated(frame, &current, settings.calibration)
        .max(settings.real(estimate_request(frame, &current)));
    let untrimmed = estimate_request(frame, &current);
    let trimmed = if plan.trims.is_empty() { current } else { with_trims(current, &plan.trims) };
    let (first_kept, pinned) = (plan.first_kept_seq, plan.pinned_seq);
    let kept: Vec<&crate::store::ViewEntry> = trimmed
        .entries
        .iter()
        .filter(|e| e.origin != Origin::Summary)
        .filter(|e| e.pinned || e.seq.is_some_and(|s| s >= first_kept || Some(s) == pinned))
        .collect();
    let kept_tokens: u64 = kept.iter().map(|e| entry_tokens(&e.parts)).sum();
    let report = &mut plan.report;
    report.tokens_before = before;
    report.trims_freed = settings.real(untrimmed).saturating_sub(settings.real(estimate_request(frame, &trimmed)));
    report.tokens_after = before.saturating_sub(report.trims_freed);
    report.kept = kept.len();
    report.background =
        Some(BackgroundRun { reason, snapshot_seq, appended: through_seq.saturating_sub(snapshot_seq) });
    let preview = finish(store, session, frame, *plan, written, through_seq, kept_tokens)?;
    match preview.report.not_applied.clone() {
        Some(why) => Ok(Swapped::Discarded(why)),
        None => Ok(Swapped::Applied(Box::new(preview.report))),
    }
}
