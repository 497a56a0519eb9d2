//! Checking upgrade tokens within the handshake's time: one thread owns the store connection the
//! checks use and takes them from a bounded queue; a handshake waits for its answer until its
//! deadline and no longer. A store that stops answering (a frozen server or network) costs each
//! waiting handshake its timeout, never more, and a full queue is refused at once — so neither a
//! slow store nor a crowd of clients holds a socket past the handshake timeout.

use std::sync::mpsc;
use std::time::Instant;

use seshat::store::{Caller, Refusal, Store};

/// Checks waiting for the checker at most; past this a handshake is refused at once.
const QUEUE: usize = 64;

/// What a token check found.
#[derive(Debug)]
pub(super) enum Checked {
    /// The token's caller.
    Caller(Caller),
    /// The token is not one to accept.
    Refused(Refusal),
    /// The store failed (logged here): its code.
    Failed(&'static str),
    /// No answer before the deadline, or too many checks waiting.
    Late,
}

/// A check asked of the checker's thread: the token, the client's address and where the answer
/// goes.
type Ask = (String, std::net::SocketAddr, mpsc::SyncSender<Checked>);

/// The token checker: a handle to its thread (which ends when the handle is dropped).
#[derive(Debug)]
pub(super) struct TokenCheck {
    asks: mpsc::SyncSender<Ask>,
}

impl TokenCheck {
    /// Starts the checker's thread with its own `store` connection.
    pub(super) fn start(store: Store) -> TokenCheck {
        let (asks, queue) = mpsc::sync_channel::<Ask>(QUEUE);
        std::thread::Builder::new()
            .name("token-check".into())
            .spawn(move || {
                for (token, peer, answer) in queue {
                    let checked = match store.authenticate(&token) {
                        Ok(Ok(caller)) => Checked::Caller(caller),
                        Ok(Err(refusal)) => {
                            // A refused login is audited with the token's id when it has one.
                            let mut event = seshat::store::AuditEvent::new("refused_login");
                            event.token = seshat::store::token_id(&token).map(str::to_string);
                            event.peer = Some(peer.to_string());
                            event.code = Some(refusal.code().to_string());
                            tracing::info!(target: "seshat::audit", %peer, code = refusal.code(), "refused login");
                            if let Err(e) = store.record_audit(&event) {
                                tracing::warn!("cannot record an audit event: {e}");
                            }
                            Checked::Refused(refusal)
                        }
                        Err(e) => {
                            tracing::warn!("cannot check a token: {e}");
                            Checked::Failed(e.code())
                        }
                    };
                    // The handshake may have given up waiting: nobody to tell.
                    let _ = answer.try_send(checked);
                }
            })
            .expect("spawn the token checker");
        TokenCheck { asks }
    }

    /// Checks `token` from `peer`, waiting until `deadline` at most (blocking the calling thread).
    pub(super) fn check(&self, token: &str, peer: std::net::SocketAddr, deadline: Instant) -> Checked {
        let (answer, answered) = mpsc::sync_channel(1);
        if self.asks.try_send((token.to_string(), peer, answer)).is_err() {
            return Checked::Late;
        }
        answered.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or(Checked::Late)
    }
}
