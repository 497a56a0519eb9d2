//! Access is live: every open network connection is checked again whenever access changes — a
//! token revoked, a user disabled or removed, a grant changed (the store's access version moves,
//! whichever process changed it) — and when its token's expiry passes. A connection whose access
//! is gone is told why and closed; its turns in flight are stored as interrupted.
//!
//! One thread per process watches, with its own store connection, every [`POLL`]: a read of one
//! row when nothing changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use seshat::store::{Caller, Store};
use tokio::sync::oneshot;

/// How often the watcher looks at the access version: a change takes effect within this (and a
/// check of every connection).
const POLL: Duration = Duration::from_millis(250);

/// How often the audit trail's old events are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(3_600);

/// Why a connection's access ended: the refusal's code and message.
#[derive(Debug)]
pub(super) struct Ended {
    pub(super) code: &'static str,
    pub(super) message: String,
}

/// An open connection as the watcher knows it.
struct Watched {
    token: String,
    expires_at: Option<i64>,
    end: oneshot::Sender<Ended>,
}

/// The open connections and the thread that watches their access.
#[derive(Default)]
pub(super) struct Access {
    watched: Mutex<HashMap<u64, Watched>>,
    next: AtomicU64,
}

/// A connection's place in the watch; dropping it ends the watch of that connection.
pub(super) struct Registration {
    access: Arc<Access>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut w) = self.access.watched.lock() {
            w.remove(&self.id);
        }
    }
}

impl Access {
    /// Starts watching with `store` (a connection of its own), until the last handle is dropped.
    pub(super) fn start(store: Store) -> Arc<Access> {
        let access = Arc::new(Access::default());
        let weak = Arc::downgrade(&access);
        std::thread::Builder::new().name("access-watch".into()).spawn(move || watch(&store, &weak)).expect("spawn");
        access
    }

    /// Watches the connection acting for `caller`: the receiver hears why, if its access ends.
    pub(super) fn register(self: &Arc<Self>, caller: &Caller) -> (Registration, oneshot::Receiver<Ended>) {
        let (end, ended) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let watched = Watched { token: caller.token.clone(), expires_at: caller.expires_at, end };
        self.watched.lock().expect("never poisoned").insert(id, watched);
        (Registration { access: self.clone(), id }, ended)
    }
}

/// The watcher's loop: at each change of the access version (or a passed expiry), every
/// connection's token is checked again; those refused are ended.
fn watch(store: &Store, access: &Weak<Access>) {
    let mut seen = None;
    let mut pruned = std::time::Instant::now() - PRUNE_EVERY;
    loop {
        std::thread::sleep(POLL);
        if pruned.elapsed() >= PRUNE_EVERY {
            pruned = std::time::Instant::now();
            if let Err(e) = store.prune_audit() {
                tracing::warn!("cannot prune the audit trail: {e}");
            }
        }
        let Some(access) = access.upgrade() else { return };
        let version = match store.access_version() {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!("cannot read the access version: {e}");
                None
            }
        };
        let now = seshat::store::now_ms();
        let mut watched = access.watched.lock().expect("never poisoned");
        let expired = watched.values().any(|w| w.expires_at.is_some_and(|e| e <= now));
        if version.is_some() && version == seen && !expired {
            continue;
        }
        let mut ended = Vec::new();
        let mut failed = false;
        for (id, w) in watched.iter_mut() {
            match store.token_state(&w.token) {
                Ok(Ok(caller)) => w.expires_at = caller.expires_at,
                Ok(Err(refusal)) => ended.push((*id, refusal)),
                Err(e) => {
                    tracing::warn!("cannot check an open connection's token: {e}");
                    failed = true;
                    break;
                }
            }
        }
        for (id, refusal) in ended {
            if let Some(w) = watched.remove(&id) {
                tracing::info!(target: "seshat::audit", token = %w.token, code = refusal.code(), "access ended");
                let mut event = seshat::store::AuditEvent::new("revoked");
                event.token = Some(w.token.clone());
                event.code = Some(refusal.code().to_string());
                if let Err(e) = store.record_audit(&event) {
                    tracing::warn!("cannot record an audit event: {e}");
                }
                let _ = w.end.send(Ended { code: refusal.code(), message: refusal.to_string() });
            }
        }
        // Checked through: this version is done (a failed check is tried again next time).
        if !failed {
            seen = version;
        }
    }
}
