//! The client's own hooks (`initialize`'s `hooks`): at each event of a session the connection
//! opened, the server asks the client with `hook/call` and waits for its decision. A failure (no
//! answer in time, an error, an answer that is no decision, the client gone) is reported as a
//! configured hook's is — and, on a network service, written to the audit trail.

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use seshat::hooks::{Handler, HookDecision, HookPayload, Registration};
use seshat::providers::Cancel;
use seshat_protocol::methods::{self as m, Method};

use crate::home::Home;
use crate::outbox::{Outbox, Pending};

/// Most hooks one connection may register.
pub(crate) const MAX_HOOKS: usize = 64;
/// The longest a client may ask the server to wait for one hook's answer.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(600);

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
struct ClientHook {
    name: String,
    ctx: Home,
    outbox: Outbox,
    pending: Pending,
    /// The cancel switch of the job the agent runs now.
    current: Arc<Mutex<Cancel>>,
}

impl Handler for ClientHook {
    fn handle(&self, payload: &HookPayload, _tool: Option<&str>, timeout: Duration) -> Result<HookDecision, String> {
        let params = m::HookCallParams { name: self.name.clone(), payload: payload.clone() };
        let rx = self.outbox.request::<m::HookCall>(&self.pending, &params);
        let interrupted = || self.current.lock().is_ok_and(|c| c.is_cancelled());
        let decided = wait(&rx, interrupted, Some(Instant::now() + timeout), &format!("the hook `{}`", self.name))
            .and_then(|answer| {
                if let Some(e) = answer.get("error") {
                    return Err(format!("answered an error: {}", e["message"].as_str().unwrap_or("(no message)")));
                }
                serde_json::from_value::<HookDecision>(answer["result"].clone())
                    .map_err(|e| format!("answered what is not a decision ({e})"))
            });
        if let Err(why) = &decided {
            self.audit(payload, why);
        }
        decided
    }
}

impl ClientHook {
    /// On a network service, writes the failure to the audit trail.
    fn audit(&self, payload: &HookPayload, why: &str) {
        let Some(user) = self.ctx.user() else { return };
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
                return Err(format!("lost the client before it answered {what}"));
            }
        }
    }
}
