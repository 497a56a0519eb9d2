//! Connections still in their handshake, the whole service over: at most so many at once, and
//! when one more arrives the oldest is dropped to make room. A real client's handshake takes
//! milliseconds, so the sockets dropped are the slow and silent ones, however many addresses
//! they come from; and each one costs a file descriptor only until it is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The handshakes in progress, oldest first.
#[derive(Debug)]
pub(super) struct Handshakes {
    /// The bound (at least one); a reload may change it.
    max: std::sync::atomic::AtomicUsize,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    next: u64,
    waiting: VecDeque<(u64, oneshot::Sender<()>)>,
}

/// One handshake's place; dropping it (the handshake is done, or failed) gives the place back.
#[derive(Debug)]
pub(super) struct Ticket {
    handshakes: Arc<Handshakes>,
    id: u64,
}

impl Handshakes {
    /// At most `max` handshakes at once (at least one).
    pub(super) fn new(max: usize) -> Arc<Handshakes> {
        Arc::new(Handshakes { max: (max.max(1)).into(), queue: Mutex::default() })
    }

    /// At most `max` at once from the next handshake on (at least one).
    pub(super) fn set_max(&self, max: usize) {
        self.max.store(max.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Enters a handshake, dropping the oldest when there are already as many as allowed: the
    /// receiver fires when this one is dropped the same way.
    pub(super) fn enter(self: &Arc<Self>) -> (Ticket, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let mut queue = self.queue.lock().expect("never poisoned");
        let max = self.max.load(std::sync::atomic::Ordering::Relaxed);
        while queue.waiting.len() >= max {
            let Some((_, oldest)) = queue.waiting.pop_front() else { break };
            let _ = oldest.send(());
        }
        let id = queue.next;
        queue.next += 1;
        queue.waiting.push_back((id, tx));
        (Ticket { handshakes: self.clone(), id }, rx)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Ok(mut queue) = self.handshakes.queue.lock() {
            queue.waiting.retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_past_the_bound_drops_the_oldest_still_waiting() {
        let handshakes = Handshakes::new(2);
        let (first, mut first_rx) = handshakes.enter();
        let (second, mut second_rx) = handshakes.enter();
        // The first is done: its place is free, nobody is dropped for the third.
        drop(first);
        assert!(matches!(first_rx.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
        let (_third, mut third_rx) = handshakes.enter();
        assert!(second_rx.try_recv().is_err(), "the second still waits");
        // A fourth: the oldest still waiting (the second) is dropped.
        let (_fourth, mut fourth_rx) = handshakes.enter();
        assert_eq!(second_rx.try_recv(), Ok(()));
        assert!(third_rx.try_recv().is_err() && fourth_rx.try_recv().is_err());
        drop(second);
    }
}
