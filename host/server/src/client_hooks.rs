//! The client's own hooks (`initialize`'s `hooks`): at each event of a session the connection
//! opened, the server asks the client with `hook/call`. An event whose decision changes something
//! (a prompt, a tool call, a compaction's plan) waits for it; one whose decision changes nothing
//! (`post_compact`, `fork`, `rewind`, `session_end`, `memory_write`) is told and not waited for —
//! it may be told from the very thread that reads the client's answers (an agent closed by the
//! connection). A failure (no answer in time, an error, an answer that is no decision) is
//! reported as a configured hook's is and, on a network service, written to the audit trail (the
//! first [`MAX_AUDITED`] of each hook's on a connection).

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use seshat::hooks::{Handler, HookDecision, HookPayload, Registration};
use seshat::providers::Cancel;
use seshat_protocol::methods::{self as m, Method};

use crate::home::Home;
use crate::outbox::{Outbox, Pending, abandon};

/// Most hooks one connection may register.
pub(crate) const MAX_HOOKS: usize = 64;
/// The longest a client may ask the server to wait for one hook's answer.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Failures of one hook on one connection written to the audit trail; later ones are logged.
pub(crate) const MAX_AUDITED: usize = 20;
/// Answers waited for at once, over the server, of events nothing waits on; past it such an
/// event is told and its answer not read.
const MAX_UNWAITED: usize = 256;

/// How many answers of events nothing waits on are being waited for.
static UNWAITED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Checks the hooks a client registers: named once each, bounded in number, time and size.
pub(crate) fn check(hooks: &[m::HookRegistration]) -> Result<(), String> {
    if hooks.len() > MAX_HOOKS {
        return Err(format!("{} hooks were registered; a connection may register at most {MAX_HOOKS}", hooks.len()));
    }
    for (i, h) in hooks.iter().enumerate() {
        let name_ok = !h.name.is_empty()
            && h.name.len() <= 64
            && h.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(format!(
                "hook {i}'s name `{}` is not letters, digits, `-`, `_` or `.` (1 to 64 of them)",
                h.name.chars().take(80).collect::<String>()
            ));
        }
        if hooks[..i].iter().any(|o| o.name == h.name) {
            return Err(format!("two hooks are named `{}`: name each once (hook/call names it)", h.name));
        }
        if h.timeout_ms.is_some_and(|t| t == 0 || Duration::from_millis(t) > MAX_TIMEOUT) {
            return Err(format!(
                "hook `{}`'s timeout_ms is {}: give 1 to {}",
                h.name,
                h.timeout_ms.unwrap_or(0),
                MAX_TIMEOUT.as_millis()
            ));
        }
        if h.matcher.as_ref().is_some_and(|m| m.len() > 1024) {
            return Err(format!("hook `{}`'s matcher is longer than 1,024 bytes", h.name));
        }
    }
    Ok(())
}

/// The registrations of the client's hooks, for the agents the connection opens.
pub(crate) fn registrations(
    hooks: &[m::HookRegistration],
    ctx: &Home,
    outbox: &Outbox,
    pending: &Pending,
    current: &Arc<Mutex<Cancel>>,
) -> Vec<Registration> {
    hooks
        .iter()
        .map(|h| {
            let handler = ClientHook {
                name: h.name.clone(),
                ctx: ctx.clone(),
                outbox: outbox.clone(),
                pending: pending.clone(),
                current: current.clone(),
                failures: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            };
            let timeout = h.timeout_ms.map_or(seshat::hooks::DEFAULT_TIMEOUT, Duration::from_millis);
            let mut r = Registration::new(h.event, h.name.clone(), Arc::new(handler)).timeout(timeout);
            if let Some(matcher) = &h.matcher {
                r = r.matcher(matcher.clone());
            }
            r.required(h.required)
        })
        .collect()
}

/// One of the client's hooks: answered by asking the client.
#[derive(Clone)]
struct ClientHook {
    name: String,
    ctx: Home,
    outbox: Outbox,
    pending: Pending,
    /// The cancel switch of the job the agent runs now.
    current: Arc<Mutex<Cancel>>,
    /// Its failures so far on this connection.
    failures: Arc<std::sync::atomic::AtomicUsize>,
}

impl Handler for ClientHook {
    fn handle(&self, payload: &HookPayload, _tool: Option<&str>, timeout: Duration) -> Result<HookDecision, String> {
        let params = m::HookCallParams { name: self.name.clone(), payload: payload.clone() };
        let (id, rx) = self.outbox.request::<m::HookCall>(&self.pending, &params);
        let deadline = Some(Instant::now() + timeout);
        let what = format!("the hook `{}`", self.name);
        let event = payload.event;
        if !(event.can_block() || event.takes_context() || event == seshat::hooks::HookEvent::PreCompact) {
            // Nothing waits on it: its answer is read on a thread of its own, for its failures.
            if UNWAITED.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= MAX_UNWAITED {
                UNWAITED.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                abandon(&self.pending, &id);
                return Ok(HookDecision::default());
            }
            let reader = self.clone();
            let payload = payload.clone();
            let spawned = std::thread::Builder::new().name("seshat-hook-answer".into()).spawn(move || {
                // (The client leaving is not the hook's failure.)
                let answer = wait(&rx, || false, deadline, &what);
                let failed = match answer {
                    Ok(answer) => decision(&answer).err(),
                    Err(why) if why.starts_with(LOST) => None,
                    Err(why) => {
                        abandon(&reader.pending, &id);
                        Some(why)
                    }
                };
                if let Some(why) = failed {
                    tracing::warn!("the {} hook `{}` {why}", payload.event, reader.name);
                    reader.audit(&payload, &why);
                }
                UNWAITED.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
            if spawned.is_err() {
                UNWAITED.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            return Ok(HookDecision::default());
        }
        let interrupted = || self.current.lock().is_ok_and(|c| c.is_cancelled());
        let decided = wait(&rx, interrupted, deadline, &what).and_then(|answer| decision(&answer));
        if let Err(why) = &decided {
            abandon(&self.pending, &id);
            self.audit(payload, why);
        }
        decided
    }
}

/// The decision in a client's answer, or why there is none.
fn decision(answer: &Value) -> Result<HookDecision, String> {
    if let Some(e) = answer.get("error") {
        return Err(format!("answered an error: {}", e["message"].as_str().unwrap_or("(no message)")));
    }
    serde_json::from_value::<HookDecision>(answer["result"].clone())
        .map_err(|e| format!("answered what is not a decision ({e})"))
}

impl ClientHook {
    /// On a network service, writes the failure to the audit trail (the first [`MAX_AUDITED`]
    /// of this hook's on the connection; the rest are logged only).
    fn audit(&self, payload: &HookPayload, why: &str) {
        let Some(user) = self.ctx.user() else { return };
        if self.failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= MAX_AUDITED {
            tracing::debug!(hook = %self.name, "a client's hook failed again (not audited: {MAX_AUDITED} were): {why}");
            return;
        }
        let mut event = seshat::store::AuditEvent::new("hook_failed");
        event.user = Some(user.to_string());
        event.method = Some(m::HookCall::NAME.into());
        event.target = Some(payload.session.clone());
        event.code = Some(payload.event.as_str().into());
        event.detail = Some(format!("{}: {}", self.name, why.chars().take(500).collect::<String>()));
        tracing::warn!(target: "seshat::audit", %user, hook = %self.name, event = %payload.event, "a client's hook failed: {why}");
        if let Err(e) = self.ctx.store().and_then(|s| s.record_audit(&event)) {
            tracing::warn!("cannot record an audit event: {e}");
        }
    }
}

/// How a wait that lost the client begins.
const LOST: &str = "lost the client";

/// Waits for the client's answer on `rx`: until it comes, `deadline` passes, the job is
/// `interrupted`, the server stops or the client goes away (then why, naming `what`).
pub(crate) fn wait(
    rx: &mpsc::Receiver<Value>,
    interrupted: impl Fn() -> bool,
    deadline: Option<Instant>,
    what: &str,
) -> Result<Value, String> {
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(answer) => return Ok(answer),
            Err(mpsc::RecvTimeoutError::Timeout) if interrupted() => {
                return Err(format!("the turn was interrupted before the client answered {what}"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) if crate::turns::stopping() => {
                return Err(format!("seshat serve stopped before the client answered {what}"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) if deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(format!("got no answer from the client in time for {what}"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(format!("{LOST} before it answered {what}"));
            }
        }
    }
}

/// Tells the client's hooks of `data` (an event nothing waits on: a fork, a rewind done by a
/// request the connection answers at once); what fails is logged (and audited).
pub(crate) fn tell(
    hooks: &[m::HookRegistration],
    ctx: &Home,
    outbox: &Outbox,
    pending: &Pending,
    session: &str,
    data: &seshat::hooks::Data<'_>,
) {
    if !hooks.iter().any(|h| h.event == data.event()) {
        return;
    }
    let mut told = seshat::hooks::Hooks::default();
    let current = Arc::new(Mutex::new(Cancel::default()));
    for r in registrations(hooks, ctx, outbox, pending, &current) {
        told.register(r);
    }
    let seq = ctx.store().and_then(|s| s.session(session)).map_or(0, |s| s.message_count);
    let payload = seshat::hooks::payload(session, &ctx.project, seq, data);
    // (Not waited for: these events' answers are read on threads of their own.)
    for failure in told.run(&payload, None).failures {
        tracing::warn!("{failure}");
    }
}
