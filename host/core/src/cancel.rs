//! The flag that stops work in flight — a turn, its model calls, a compaction's summary calls —
//! shared with whoever stops it (a signal handler, a client's interrupt).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A cancellation flag shared with a signal handler.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<(AtomicBool, tokio::sync::Notify)>);

impl Cancel {
    /// Requests cancellation (safe from any thread).
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Clears the flag for the next turn.
    pub fn reset(&self) {
        self.0.0.store(false, Ordering::SeqCst);
    }

    /// Waits until cancellation is requested.
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            // A notify between the check and the wait is caught by the short timeout.
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
    }
}
