//! The sessions `seshat serve` runs turns in: one agent per session, opened on its first turn and
//! kept by the connection between turns; each turn or compaction borrows it on a worker of the
//! server's bounded pool ([`super::pool`]), so a session between turns holds no thread. While
//! one runs, the session is claimed — in this process and in the store, for every process sharing
//! it — so a second `turn/start` on it meanwhile, here or in another `seshat serve`, is
//! `session_busy`.
//! A turn streams notifications and ends with `turn/completed`; a tool the client registered is
//! run by asking the client (`tool/call`) and waiting for its answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::Value;
use seshat::client::{Agent, Observer, SessionChoice, Tool};
use seshat::compaction::{Report, Starting, Summarising};
use seshat::plugins::StreamEvent;
use seshat::providers::Cancel;
use seshat::tool::{ToolDef, ToolOutput};
use seshat_protocol::methods as m;
use seshat_protocol::notifications as n;

use super::counts::{Counts, Held};
use super::pool::Pool;
use crate::connection::ClientSetup;
use crate::error::RpcError;
use crate::home::Home;
use crate::in_flight::InFlight;
use crate::metrics::{Failure, Metrics};
use crate::outbox::{Outbox, Pending};

/// Set when the server is stopping: a tool call or hook waiting for its client gives up.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Whether the server is stopping.
pub(crate) fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// One open session of a connection: its agent, kept between turns (a turn starts without
/// opening it again) and lent to a worker for each job. The session's claim lets one job at a
/// time hold it.
struct Slot {
    /// (`None` once a job panicked with it: dropped then, so its store connection — and the
    /// session's claim held there — went with it; the slot is opened again on the next turn.)
    agent: Arc<Mutex<Option<Agent>>>,
    /// The cancel switch of the last job this connection gave it.
    cancel: Cancel,
    /// The same switch, as the client's tools of the agent see it (a tool call waiting for the
    /// client gives up when the turn is interrupted).
    current: Arc<Mutex<Cancel>>,
    /// When it was last given a job (the connection's job count then).
    used: u64,
    /// Its place among its user's open sessions and the server's.
    _counted: (Option<Held<String>>, Held<()>),
    /// The generation of the service's configuration its agent was opened with: after a reload
    /// the agent is opened again (its provider, model settings and plugins as configured now).
    generation: u64,
}

/// The sessions open (each with its agent and its store connection), per network user and over
/// the whole server (shared by every connection, with [`Busy`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Workers {
    per_user: Counts<String>,
    all: Counts<()>,
    /// The most workers the files the process may open allow (none set: no such bound).
    /// What the files the process may open allow (0: no bound), set again on reload.
    fitted: Arc<AtomicUsize>,
}

/// The agents a connection keeps (or `max_sessions_per_user` under `[serve]`, when larger); past
/// this, the least recently used idle one is closed (and opened again when its session has a
/// turn). Each holds its store connection, so a client
/// going through many sessions on one connection does not hold one server connection for each.
const MAX_AGENTS: usize = 64;

/// What a connection's turns need of it: the command's context, what the client registered,
/// where lines go, and the client's pending answers.
#[derive(Clone, Copy)]
pub(crate) struct Link<'a> {
    pub(crate) ctx: &'a Home,
    pub(crate) setup: &'a ClientSetup,
    pub(crate) outbox: &'a Outbox,
    pub(crate) pending: &'a Pending,
    /// The network client's user, whose turns at once are limited to `max_turns`.
    pub(crate) user: Option<&'a str>,
    pub(crate) max_turns: usize,
    /// Sessions the user may keep open at once (network clients), and the server.
    pub(crate) max_sessions: usize,
    pub(crate) max_workers: usize,
}

/// The sessions with a turn or compaction in flight, across every connection of the server, each
/// with the cancel switch of its job: any connection may interrupt it, and a signal interrupts
/// them all.
#[derive(Debug, Clone, Default)]
pub(crate) struct Busy(Arc<(Mutex<Jobs>, Condvar)>, Workers, Pool);

/// The jobs in flight: each session's cancel switch and the user who started it.
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    jobs: HashMap<String, (Cancel, Option<String>)>,
    /// No new job starts (the server is stopping).
    closed: bool,
}

impl Busy {
    /// Bounds the workers that run turns and compactions to `max` at once, for every connection.
    pub(crate) fn size_pool(&self, max: usize) {
        self.2.resize(max);
    }

    /// Bounds the session workers to `max` at most, whatever the configuration says (the files
    /// the process may open hold no more).
    pub(crate) fn fit_workers(&self, max: usize) {
        self.1.fitted.store(max, Ordering::Relaxed);
    }

    /// Claims `session` for `user` with a fresh cancel switch. Refused when a turn or compaction
    /// holds it (on any connection), when `user` already runs `max` jobs, or when the server is
    /// stopping. The claim ends when it is dropped, even if the job panics.
    fn claim(&self, session: &str, user: Option<&str>, max: usize) -> Result<Claim, RpcError> {
        let mut held = self.0.0.lock().expect("never poisoned");
        if held.closed {
            return Err(RpcError::seshat("server_stopping", "the server is stopping: connect again in a moment"));
        }
        if held.jobs.contains_key(session) {
            return Err(RpcError::busy(session));
        }
        if let Some(user) = user {
            let running = held.jobs.values().filter(|(_, u)| u.as_deref() == Some(user)).count();
            if running >= max {
                return Err(RpcError::seshat(
                    "too_many_turns",
                    format!(
                        "{user} already runs {running} turns at once, as many as the server allows \
                         (`max_turns_per_user` under [serve]): wait for one to complete"
                    ),
                ));
            }
        }
        let cancel = Cancel::default();
        held.jobs.insert(session.to_string(), (cancel.clone(), user.map(str::to_string)));
        Ok(Claim { busy: self.clone(), session: session.to_string(), cancel, held: None })
    }

    pub(crate) fn contains(&self, session: &str) -> bool {
        self.0.0.lock().expect("never poisoned").jobs.contains_key(session)
    }

    /// Interrupts `session`'s job, whichever connection started it; whether one was running.
    pub(crate) fn interrupt(&self, session: &str) -> bool {
        let held = self.0.0.lock().expect("never poisoned");
        held.jobs.get(session).inspect(|(c, _)| c.cancel()).is_some()
    }

    /// The server is stopping: no new job starts from now on.
    pub(crate) fn refuse_new(&self) {
        self.0.0.lock().expect("never poisoned").closed = true;
    }

    /// The server is stopping gracefully: no new job starts, and this waits up to `grace` for
    /// the jobs in flight to finish by themselves; returns how many still run.
    pub(crate) fn drain(&self, grace: std::time::Duration) -> usize {
        let (lock, released) = &*self.0;
        let mut held = lock.lock().expect("never poisoned");
        held.closed = true;
        let (held, _) = released.wait_timeout_while(held, grace, |h| !h.jobs.is_empty()).expect("never poisoned");
        held.jobs.len()
    }

    /// The server is stopping: tool calls waiting for their client give up, every job in flight
    /// is interrupted, and this waits (up to `wait`) until each has stored what it had and
    /// released its session; returns how many had not finished by then.
    pub(crate) fn stop_all(&self, wait: std::time::Duration) -> usize {
        STOPPING.store(true, Ordering::SeqCst);
        let (lock, released) = &*self.0;
        let mut held = lock.lock().expect("never poisoned");
        held.closed = true;
        for (cancel, _) in held.jobs.values() {
            cancel.cancel();
        }
        let (held, _) = released.wait_timeout_while(held, wait, |h| !h.jobs.is_empty()).expect("never poisoned");
        held.jobs.len()
    }
}

/// A session held by one job; released when dropped.
struct Claim {
    busy: Busy,
    session: String,
    cancel: Cancel,
    /// The claim every process sharing the store sees (another `seshat serve` on the same
    /// database, on this machine or another), held by the session's agent's store. A job that
    /// panics drops it with the agent, whose closed connection releases it.
    held: Option<seshat::store::SessionClaim>,
}

impl Claim {
    /// Gives the session back: in the store (through the agent that claimed it there), then here.
    /// A claim the store could not take back is a warning (it ends with the agent's connection).
    fn release(mut self, agent: &mut Agent) -> Option<String> {
        let held = self.held.take()?;
        let e = agent.release(held).err()?;
        tracing::warn!(session = %self.session, "cannot release the session's claim in the store: {e}");
        Some(format!("the session's claim could not be given back (it ends with the connection): {e}"))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let (lock, released) = &*self.busy.0;
        lock.lock().map(|mut b| b.jobs.remove(&self.session)).ok();
        released.notify_all();
    }
}

/// How `session/compact` compacts.
#[derive(Debug, Default)]
pub(crate) struct Compacting {
    /// What the summary should keep or stress.
    pub(crate) instructions: Option<String>,
    /// Summarise everything before this message.
    pub(crate) until: Option<u64>,
    /// Say what would happen without changing anything.
    pub(crate) dry_run: bool,
}

/// The sessions with agents (of one connection).
pub(crate) struct Turns {
    slots: HashMap<String, Slot>,
    next: u64,
    /// How many jobs the connection has given its workers.
    jobs: u64,
    busy: Busy,
    /// The connection's jobs given to the pool and not yet done.
    running: InFlight,
    /// What the service counts.
    metrics: Metrics,
    /// The sessions' background work between their turns (started with the first job).
    tending: Option<crate::tending::Tending>,
}

impl Turns {
    /// A connection's turns, sharing the server's `busy` sessions.
    pub(crate) fn new(busy: Busy, metrics: Metrics) -> Self {
        Turns { slots: HashMap::new(), next: 0, jobs: 0, busy, running: InFlight::default(), metrics, tending: None }
    }

    /// Whether `session` has a turn or compaction in flight (on this connection or another).
    pub(crate) fn busy(&self, session: &str) -> bool {
        self.busy.contains(session)
    }

    /// Closes the least recently used idle agent when the connection keeps as many as it may (a
    /// job still finishing with it keeps it until done).
    fn make_room(&mut self, max_sessions: usize) {
        if self.slots.len() < MAX_AGENTS.max(max_sessions) {
            return;
        }
        let idle = self.slots.iter().filter(|(s, _)| !self.busy.contains(s)).min_by_key(|(_, slot)| slot.used);
        if let Some(session) = idle.map(|(s, _)| s.clone()) {
            self.slots.remove(&session);
        }
    }

    /// A place for one more open session among the user's and the server's, closing this
    /// connection's least recently used idle one when that makes room; `too_many_sessions` when
    /// nothing does.
    fn count_in(&mut self, link: Link<'_>) -> Result<(Option<Held<String>>, Held<()>), RpcError> {
        let workers = self.busy.1.clone();
        loop {
            let mine = match link.user {
                Some(user) => workers.per_user.try_take(&user.to_string(), link.max_sessions).map(Some),
                None => Some(None),
            };
            let fitted = workers.fitted.load(Ordering::Relaxed);
            let max_workers = if fitted == 0 { link.max_workers } else { link.max_workers.min(fitted) };
            let all = mine.as_ref().and_then(|_| workers.all.try_take(&(), max_workers));
            if let (Some(mine), Some(all)) = (mine, all) {
                return Ok((mine, all));
            }
            // An idle session of this connection's own goes first.
            let idle = self.slots.iter().filter(|(s, _)| !self.busy.contains(s)).min_by_key(|(_, slot)| slot.used);
            let Some(session) = idle.map(|(s, _)| s.clone()) else {
                let who = link.user.map_or_else(|| "the server".to_string(), str::to_string);
                return Err(RpcError::seshat(
                    "too_many_sessions",
                    format!(
                        "{who} keeps as many sessions open as allowed (`max_sessions_per_user` and `max_workers` \
                         under [serve]): close a connection, or wait for one to end"
                    ),
                ));
            };
            self.slots.remove(&session);
        }
    }

    /// Drops a session's agent (the session was deleted).
    pub(crate) fn forget(&mut self, session: &str) {
        self.slots.remove(session);
    }

    /// Claims `session` and hands `job` to a worker of the pool with the session's agent, opened
    /// (with what the client asked for) on first use or after a job failed with it. The worker
    /// claims the session in the store, through its agent's own connection, before the job runs;
    /// when another holder has it the worker answers request `id` with `session_busy` and the job
    /// never runs. The job answers `id` itself.
    fn run(
        &mut self,
        link: Link<'_>,
        session: &str,
        id: Value,
        job: impl FnOnce(&mut Agent, Cancel, Claim, Value) + Send + 'static,
    ) -> Result<(), RpcError> {
        let mut claim = self.busy.claim(session, link.user, link.max_turns)?;
        let generation = link.ctx.generation();
        // (An agent another thread holds — background work, perhaps waiting for this client's
        // hook, whose answer this thread reads — is in use, not stale: never waited for here.)
        let stale = |s: &Slot| {
            s.generation != generation
                || match s.agent.try_lock() {
                    Ok(a) => a.is_none(),
                    Err(std::sync::TryLockError::WouldBlock) => false,
                    Err(std::sync::TryLockError::Poisoned(_)) => true,
                }
        };
        if self.slots.get(session).is_some_and(stale) {
            self.slots.remove(session);
        }
        // A new slot's agent is opened by its first job, off the connection's thread: opening
        // tells the client's session_start hooks, whose answers that thread reads.
        let mut opener = None;
        if !self.slots.contains_key(session) {
            self.make_room(link.max_sessions);
            let counted = self.count_in(link)?;
            let current = Arc::new(Mutex::new(Cancel::default()));
            opener = Some(Opener {
                ctx: link.ctx.clone(),
                setup: link.setup.clone(),
                outbox: link.outbox.clone(),
                pending: link.pending.clone(),
                session: session.to_string(),
                current: current.clone(),
            });
            self.slots.insert(
                session.to_string(),
                Slot {
                    agent: Arc::new(Mutex::new(None)),
                    cancel: Cancel::default(),
                    current,
                    used: 0,
                    _counted: counted,
                    generation,
                },
            );
        }
        self.jobs += 1;
        let slot = self.slots.get_mut(session).expect("made above");
        slot.used = self.jobs;
        let cancel = claim.cancel.clone();
        slot.cancel = cancel.clone();
        if let Ok(mut current) = slot.current.lock() {
            *current = cancel.clone();
        }
        let agent = slot.agent.clone();
        let outbox = link.outbox.clone();
        let hide = link.user.map(|_| link.ctx.clone());
        if self.tending.is_none() {
            match crate::tending::Tending::start(self.busy.clone(), outbox.clone()) {
                Ok(t) => self.tending = Some(t),
                Err(e) => tracing::warn!("no background work between turns (summaries are swapped in at a turn): {e}"),
            }
        }
        let tending = self.tending.clone().map(|t| (t, session.to_string(), agent.clone()));
        let running = self.running.enter();
        // The job's log lines carry the request that started it.
        let span = tracing::Span::current();
        self.busy
            .2
            .run(Box::new(move || {
                let _running = running;
                let _request = span.enter();
                // (A job that panicked dropped the agent: the slot is opened again on the next turn.)
                let mut slot = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let (None, Some(opener)) = (slot.as_ref(), opener) {
                    match opener.open() {
                        Ok(opened) => *slot = Some(opened),
                        Err(e) => {
                            drop(claim);
                            let e = match &hide {
                                Some(ctx) => RpcError::seshat(e.stable(), ctx.hide_paths(&e.message)),
                                None => e,
                            };
                            return outbox.error(id, e);
                        }
                    }
                }
                let Some(agent) = slot.as_mut() else {
                    drop(claim);
                    return outbox
                        .error(id, RpcError::seshat("internal_error", "the session's agent failed; try again"));
                };
                let refused = match agent.claim() {
                    Ok(Some(held)) => {
                        claim.held = Some(held);
                        let ran =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(agent, cancel, claim, id)));
                        if ran.is_err() {
                            // The agent goes, and with its store connection the session's claim.
                            *slot = None;
                        }
                        drop(slot);
                        if let Some((tending, session, agent)) = tending {
                            tending.ended(&session, &agent);
                        }
                        return;
                    }
                    Ok(None) => RpcError::busy(&claim.session),
                    Err(e) => {
                        let message = e.to_string();
                        let message = hide.as_ref().map_or(message.clone(), |ctx| ctx.hide_paths(&message));
                        RpcError::seshat(e.code(), message)
                    }
                };
                // Free here before the answer, so a request that follows it is not refused here.
                drop(claim);
                outbox.error(id, refused);
            }))
            .map_err(|e| RpcError::seshat("internal_error", format!("no worker could be started for the turn: {e}")))
    }

    /// Starts a turn of `session` with the user's `text`; its worker answers request `id` with
    /// the turn's number before the turn's first notification.
    pub(crate) fn start(
        &mut self,
        link: Link<'_>,
        session: &str,
        text: String,
        key: Option<String>,
        id: Value,
    ) -> Result<(), RpcError> {
        tracing::trace!(session, "turn/start");
        self.next += 1;
        let turn = self.next;
        let (outbox, session_id) = (link.outbox.clone(), session.to_string());
        // A network client's outcome names none of the server's places.
        let hide = link.user.map(|_| link.ctx.clone());
        let audited = link.user.map(str::to_string);
        let metrics = self.metrics.clone();
        self.run(link, session, id, move |agent, cancel, claim, id| {
            let running = metrics.job();
            let began = std::time::Instant::now();
            let started = m::TurnStartResult { session: session_id.clone(), turn };
            match crate::outbox::answer::<m::TurnStart>(&started) {
                Ok(result) => outbox.result(id, result.unwrap_or_default()),
                Err(e) => return outbox.error(id, e),
            }
            let mut notifier = Notifier {
                outbox: outbox.clone(),
                session: session_id.clone(),
                turn,
                first: Some((began, metrics.clone())),
            };
            let outcome = agent.turn_keyed(&text, key.as_deref(), &cancel, &mut notifier);
            let from_provider = match &outcome {
                Ok(_) => true, // (an outcome's own error is the model's stream cut short)
                Err(e) => matches!(e, seshat::client::Error::Provider(_)),
            };
            let mut outcome = outcome.unwrap_or_else(|e| seshat::client::TurnOutcome {
                session: session_id.clone(),
                error: Some(e.to_string()),
                error_code: Some(e.code().to_string()),
                ..Default::default()
            });
            let failure = outcome
                .error_code
                .as_deref()
                .filter(|code| *code != "interrupted")
                .map(|code| (code, Failure::of(code, from_provider)));
            // (A turn cut short by an error that says it was interrupted is interrupted too.)
            let interrupted = outcome.interrupted || outcome.error_code.as_deref() == Some("interrupted");
            metrics.turn(began.elapsed(), interrupted, failure);
            if let Some((code, source)) = failure {
                let error = outcome.error.as_deref().unwrap_or("");
                let error = hide.as_ref().map_or_else(|| error.to_string(), |ctx| ctx.hide_paths(error));
                tracing::warn!(target: "seshat::service", session = %session_id, code, ?source, "the turn failed: {error}");
            }
            for report in outcome.compactions.iter().filter(|r| !r.dry_run) {
                metrics.compaction(false, report.tokens_before.saturating_sub(report.tokens_after));
            }
            if let (Some(user), Some("plugin_failed")) = (&audited, outcome.error_code.as_deref()) {
                let mut event = seshat::store::AuditEvent::new("plugin_crash");
                event.user = Some(user.clone());
                event.method = Some("turn/start".into());
                event.target = Some(session_id.clone());
                event.code = outcome.error_code.clone();
                event.detail = outcome.error.clone();
                if let Err(e) = agent.client().store().record_audit(&event) {
                    tracing::warn!("cannot record an audit event: {e}");
                }
            }
            if let Some(ctx) = &hide {
                outcome.error = outcome.error.map(|e| ctx.hide_paths(&e));
                outcome.warnings = outcome.warnings.iter().map(|w| ctx.hide_paths(w)).collect();
            }
            // Free before the answer, so a request that follows it finds the session free.
            if let Some(warning) = claim.release(agent) {
                notifier.warning(&warning);
                outcome.warnings.push(warning);
            }
            // No longer running once the client hears it ended.
            drop(running);
            outbox.notice::<n::Completed>(&n::CompletedParams { session: session_id, turn, outcome });
        })
    }

    /// Compacts `session` now as `how` says; the answer to request `id` comes when done.
    pub(crate) fn compact(
        &mut self,
        link: Link<'_>,
        session: &str,
        how: Compacting,
        id: Value,
    ) -> Result<(), RpcError> {
        let outbox = link.outbox.clone();
        let metrics = self.metrics.clone();
        let session_id = session.to_string();
        self.run(link, session, id, move |agent, _cancel, claim, id| {
            let _running = metrics.job();
            // Its progress is told as a turn's is, under turn 0 (no turn).
            let mut notifier = Notifier { outbox: outbox.clone(), session: session_id, turn: 0, first: None };
            let report = agent.compact_observed(how.dry_run, how.instructions.as_deref(), how.until, &mut notifier);
            if let Some(report) = report.as_ref().ok().filter(|r| !r.dry_run) {
                metrics.compaction(true, report.tokens_before.saturating_sub(report.tokens_after));
            }
            let _ = claim.release(agent);
            match report {
                Ok(report) => match crate::outbox::answer::<m::SessionCompact>(&m::SessionCompactResult { report }) {
                    Ok(result) => outbox.result(id, result.unwrap_or_default()),
                    Err(e) => outbox.error(id, e),
                },
                Err(e) => outbox.error(id, RpcError::seshat(e.code(), e.to_string())),
            }
        })
    }

    /// Interrupts `session`'s turn, whichever connection started it; whether one was running.
    pub(crate) fn interrupt(&self, session: &str) -> bool {
        self.busy.interrupt(session)
    }

    /// Interrupts every turn this connection started (the client went away).
    pub(crate) fn interrupt_all(&mut self) {
        for slot in self.slots.values() {
            slot.cancel.cancel();
        }
    }

    /// Waits for every turn of the connection to store what it has, and closes its sessions.
    pub(crate) fn join_all(&mut self) {
        self.running.wait_none();
        self.slots.clear();
    }
}

/// What opens a session's agent in its first job: the connection's place, what the client asked
/// for at `initialize`, and the ways to ask the client.
struct Opener {
    ctx: Home,
    setup: ClientSetup,
    outbox: Outbox,
    pending: Pending,
    session: String,
    current: Arc<Mutex<Cancel>>,
}

impl Opener {
    /// Opens the agent.
    fn open(self) -> Result<Agent, RpcError> {
        open_agent(&self.ctx, &self.setup, &self.outbox, &self.pending, &self.session, &self.current)
    }
}

/// Opens `session`'s agent through the library's environment, with what the client asked for at
/// `initialize`, the client's tools and the client's hooks.
fn open_agent(
    ctx: &Home,
    setup: &ClientSetup,
    outbox: &Outbox,
    pending: &Pending,
    session: &str,
    current: &Arc<Mutex<Cancel>>,
) -> Result<Agent, RpcError> {
    let overrides = seshat::client::Overrides {
        provider: setup.provider.clone(),
        model: setup.model.clone(),
        summary_model: setup.summary_model.clone(),
        window: setup.window,
        auto_compact: setup.auto_compact.filter(|on| !on),
        ..seshat::client::Overrides::default()
    };
    let tools: Vec<Box<dyn Tool>> = setup
        .tools
        .iter()
        .map(|spec| {
            Box::new(ClientTool {
                current: current.clone(),
                definition: spec.clone(),
                outbox: outbox.clone(),
                pending: pending.clone(),
                session: session.to_string(),
            }) as Box<dyn Tool>
        })
        .collect();
    let overrides = seshat::client::Overrides {
        hooks: crate::client_hooks::registrations(&setup.hooks, ctx, outbox, pending, current),
        ..overrides
    };
    let opened =
        ctx.environment(overrides).and_then(|env| env.agent(SessionChoice::Resume(session.to_string()), tools));
    // The agent lives past its turn: summaries are written in the background and swapped in at a
    // later turn's model call.
    let opened = opened.map(|mut agent| {
        agent.enable_background();
        agent
    });
    opened.map_err(|e| match e {
        seshat::client::Error::Provider(e @ seshat::providers::Error::NotConfigured(_)) => {
            RpcError::seshat("provider_not_configured", e.to_string())
        }
        seshat::client::Error::Plugin(e @ seshat::plugins::Error::NotFound { kind: "provider", .. }) => {
            RpcError::seshat("provider_not_configured", e.to_string())
        }
        e => RpcError::seshat(e.code(), e.to_string()),
    })
}

/// Streams a turn's progress to the client as notifications.
struct Notifier {
    outbox: Outbox,
    session: String,
    turn: u64,
    /// Until the turn's first event: when it began, and where that time is counted.
    first: Option<(std::time::Instant, Metrics)>,
}

impl Observer for Notifier {
    fn event(&mut self, event: &StreamEvent) {
        if let Some((began, metrics)) = self.first.take() {
            metrics.first_event(began.elapsed());
        }
        let (session, turn) = (self.session.clone(), self.turn);
        self.outbox.notice::<n::TurnEvent>(&n::TurnEventParams { session, turn, event: event.clone() });
    }

    fn compaction_started(&mut self, starting: &Starting) {
        let (session, turn) = (self.session.clone(), self.turn);
        let Starting { trigger, tokens, window } = *starting;
        self.outbox.notice::<n::CompactionStarted>(&n::CompactionStartedParams {
            session,
            turn,
            trigger,
            tokens,
            window,
        });
    }

    fn compaction_summarising(&mut self, summarising: &Summarising) {
        let (session, turn) = (self.session.clone(), self.turn);
        let summarising = summarising.clone();
        self.outbox.notice::<n::CompactionSummarising>(&n::CompactionSummarisingParams { session, turn, summarising });
    }

    fn compaction(&mut self, report: &Report) {
        let (session, turn) = (self.session.clone(), self.turn);
        self.outbox.notice::<n::Compaction>(&n::CompactionParams { session, turn, report: report.clone() });
    }

    fn tool_call(&mut self, call_id: &str, name: &str, arguments: &str) {
        let (session, turn, call_id) = (self.session.clone(), self.turn, call_id.to_string());
        let (name, arguments) = (name.to_string(), arguments.to_string());
        self.outbox.notice::<n::ToolCalled>(&n::ToolCalledParams { session, turn, name, arguments, call_id });
    }

    fn tool_result(&mut self, call_id: &str, name: &str, content: &str, is_error: bool) {
        let (session, turn, call_id) = (self.session.clone(), self.turn, call_id.to_string());
        let (name, content) = (name.to_string(), content.to_string());
        self.outbox.notice::<n::ToolResult>(&n::ToolResultParams { session, turn, name, content, is_error, call_id });
    }

    fn warning(&mut self, message: &str) {
        let (session, turn) = (self.session.clone(), self.turn);
        self.outbox.notice::<n::Warning>(&n::WarningParams { session, turn, message: message.to_string() });
    }
}

/// A tool the client registered: run by asking the client.
struct ClientTool {
    /// The cancel switch of the job the agent runs now.
    current: Arc<Mutex<Cancel>>,
    definition: ToolDef,
    outbox: Outbox,
    pending: Pending,
    session: String,
}

impl Tool for ClientTool {
    fn definition(&self) -> ToolDef {
        self.definition.clone()
    }

    fn call(&mut self, arguments: &Value) -> ToolOutput {
        ToolOutput::from_text(self.ask(arguments))
    }
}

impl ClientTool {
    /// Whether the job the agent runs now was interrupted.
    fn interrupted(&self) -> bool {
        self.current.lock().is_ok_and(|c| c.is_cancelled())
    }

    /// Asks the client to run the tool; its answer's content, or the error the model reads.
    fn ask(&self, arguments: &Value) -> Result<String, String> {
        let params = m::ToolCallParams {
            session: self.session.clone(),
            name: self.definition.name.clone(),
            arguments: arguments.clone(),
        };
        let (id, rx) = self.outbox.request::<m::ToolCall>(&self.pending, &params);
        let what = format!("`{}`", self.definition.name);
        let answer = crate::client_hooks::wait(&rx, || self.interrupted(), None, &what);
        let answer = answer.inspect_err(|_| crate::outbox::abandon(&self.pending, &id))?;
        if let Some(e) = answer.get("error") {
            return Err(e["message"].as_str().unwrap_or("the client's tool failed").to_string());
        }
        match serde_json::from_value::<m::ToolCallResult>(answer["result"].clone()) {
            Ok(m::ToolCallResult { content, is_error: false }) => Ok(content),
            Ok(m::ToolCallResult { content, is_error: true }) => Err(content),
            Err(e) => {
                Err(format!("the client's answer to `{}` does not fit tool/call's result: {e}", self.definition.name))
            }
        }
    }
}
