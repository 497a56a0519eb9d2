//! A connection's sessions between their turns: the background's work, on one thread per
//! connection (none per session).
//!
//! A turn past the early mark starts its summary in the background; when it is written, the
//! session is between turns and nobody else holds it, the summary is swapped in at once (not at
//! the next turn's model call) and a local server's prompt cache filled with the compacted
//! conversation, so the next turn neither waits for the summary nor reads the new conversation
//! cold. A session left without a job for `[compaction] idle_after_secs`, past the idle mark, is
//! compacted the same way while the provider's prompt cache still holds it. Both are told to the
//! connection's client as a compaction outside a turn (turn 0).

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seshat::client::{Agent, Observer};
use seshat::compaction::{Report, Summarising, Waiter};
use seshat::providers::Cancel;
use seshat_protocol::notifications as n;

use crate::outbox::Outbox;
use crate::turns::Busy;

/// A session's agent as its connection keeps it (`None` once a job panicked with it).
pub(crate) type SharedAgent = Arc<Mutex<Option<Agent>>>;

/// How often a summary being written is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Tells the connection's tending thread that a job of a session ended.
#[derive(Clone)]
pub(crate) struct Tending(Sender<(String, SharedAgent)>);

impl Tending {
    /// Starts the connection's tending thread (it ends with the last sender, when the connection
    /// closes, and stops filling a cache then).
    pub(crate) fn start(busy: Busy, outbox: Outbox) -> std::io::Result<Tending> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("seshat-tending".into()).spawn(move || run(&rx, &busy, &outbox))?;
        Ok(Tending(tx))
    }

    /// `session`'s job ended: its summary (if one is written in the background) and its idle time
    /// are watched from now.
    pub(crate) fn ended(&self, session: &str, agent: &SharedAgent) {
        let _ = self.0.send((session.to_string(), agent.clone()));
    }
}

/// A session being watched: its agent as long as the connection keeps it (a closed agent — the
/// connection keeps a bounded number — is not kept open by being watched).
struct Watched {
    agent: std::sync::Weak<Mutex<Option<Agent>>>,
    /// Its summary being written in the background.
    writing: Option<Waiter>,
    /// When it is idle enough to be compacted (none: not watched for that).
    idle_at: Option<Instant>,
}

fn run(rx: &Receiver<(String, SharedAgent)>, busy: &Busy, outbox: &Outbox) {
    let mut watched: HashMap<String, Watched> = HashMap::new();
    let stop = Cancel::default();
    loop {
        let now = Instant::now();
        let next_idle = watched.values().filter_map(|w| w.idle_at).min();
        let mut wait = next_idle.map_or(Duration::from_secs(3600), |at| at.saturating_duration_since(now));
        if watched.values().any(|w| w.writing.is_some()) {
            wait = wait.min(LOOK_EVERY);
        }
        match rx.recv_timeout(wait) {
            Ok((session, agent)) => {
                let (writing, idle_after) = match agent.try_lock() {
                    Ok(mut slot) => slot.as_mut().map_or((None, None), inspect),
                    Err(_) => (None, None),
                };
                let idle_at = idle_after.map(|after| Instant::now() + after);
                watched.insert(session, Watched { agent: Arc::downgrade(&agent), writing, idle_at });
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                stop.cancel();
                return;
            }
        }
        let now = Instant::now();
        let sessions: Vec<String> = watched.keys().cloned().collect();
        for session in sessions {
            let Some(w) = watched.get_mut(&session) else { continue };
            let Some(agent) = w.agent.upgrade() else {
                // The connection closed its agent.
                watched.remove(&session);
                continue;
            };
            let written = w.writing.as_ref().is_some_and(Waiter::is_written);
            let idle = w.writing.is_none() && w.idle_at.is_some_and(|at| at <= now);
            if !written && !idle {
                continue;
            }
            // A job runs (it swaps the summary in itself, and tells when it ends). (Not claimed
            // here: a turn asked meanwhile waits the moment the agent is held, instead of being
            // refused.)
            if busy.contains(&session) {
                watched.remove(&session);
                continue;
            }
            // A panic here drops the agent (and its store connection, with any claim), as a
            // job's does; the connection opens it again on its next turn.
            let tended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if written {
                    w.writing = None;
                    swap(&session, &agent, outbox, &stop);
                } else {
                    w.idle_at = None;
                    w.writing = start_idle(&session, &agent, outbox);
                }
            }));
            if tended.is_err() {
                *agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                watched.remove(&session);
                continue;
            }
            if w.writing.is_none() && w.idle_at.is_none() {
                watched.remove(&session);
            }
        }
    }
}

/// What to watch of an agent whose job ended: its summary being written, and how long before it
/// is idle enough to compact.
fn inspect(agent: &mut Agent) -> (Option<Waiter>, Option<Duration>) {
    (agent.background_waiter(), agent.client().config().compaction.idle_after())
}

/// Starts the idle compaction of `session`: what to wait on, when one started.
fn start_idle(session: &str, agent: &SharedAgent, outbox: &Outbox) -> Option<Waiter> {
    let mut slot = agent.try_lock().ok()?;
    let agent = slot.as_mut()?;
    agent.idle_compaction(&mut Between { outbox: outbox.clone(), session: session.to_string() })
}

/// Swaps in `session`'s summary written in the background and fills the prompt cache (on a
/// thread of its own: the cache's filling may take a local server minutes).
fn swap(session: &str, agent: &SharedAgent, outbox: &Outbox, stop: &Cancel) {
    let Ok(mut slot) = agent.try_lock() else { return };
    let Some(agent) = slot.as_mut() else { return };
    let warming = agent.swap_between_turns(&mut Between { outbox: outbox.clone(), session: session.to_string() });
    drop(slot);
    let Some(warming) = warming else { return };
    let stop = stop.clone();
    let spawned = std::thread::Builder::new().name("seshat-warming".into()).spawn(move || warming.fill(&stop));
    if let Err(e) = spawned {
        tracing::warn!("the prompt cache is not filled: {e}");
    }
}

/// The background's notices between turns, as notifications under turn 0.
struct Between {
    outbox: Outbox,
    session: String,
}

impl Observer for Between {
    fn compaction_summarising(&mut self, summarising: &Summarising) {
        let (session, summarising) = (self.session.clone(), summarising.clone());
        self.outbox.notice::<n::CompactionSummarising>(&n::CompactionSummarisingParams {
            session,
            turn: 0,
            summarising,
        });
    }

    fn compaction(&mut self, report: &Report) {
        let (session, report) = (self.session.clone(), report.clone());
        self.outbox.notice::<n::Compaction>(&n::CompactionParams { session, turn: 0, report });
    }

    fn warning(&mut self, message: &str) {
        let (session, message) = (self.session.clone(), message.to_string());
        self.outbox.notice::<n::Warning>(&n::WarningParams { session, turn: 0, message });
    }
}
