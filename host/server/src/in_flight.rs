//! A count of things in flight — a connection's jobs, a service's open connections — that one
//! can wait to fall to zero.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The count (cheap to clone: every clone is the same count).
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<(Mutex<usize>, Condvar)>);

impl InFlight {
    /// Counts one more until the guard is dropped (even by a panic).
    pub fn enter(&self) -> Guard {
        *self.0.0.lock().expect("never poisoned") += 1;
        Guard(self.clone())
    }

    /// Waits until none is in flight.
    pub fn wait_none(&self) {
        let (count, changed) = &*self.0;
        let held = count.lock().expect("never poisoned");
        let _unused = changed.wait_while(held, |n| *n > 0).expect("never poisoned");
    }

    /// Waits up to `wait` until none is in flight; how many still are.
    pub fn wait_none_for(&self, wait: Duration) -> usize {
        let (count, changed) = &*self.0;
        let held = count.lock().expect("never poisoned");
        *changed.wait_timeout_while(held, wait, |n| *n > 0).expect("never poisoned").0
    }
}

/// One in flight, counted in its [`InFlight`] until dropped.
#[derive(Debug)]
pub struct Guard(InFlight);

impl Drop for Guard {
    fn drop(&mut self) {
        let (count, changed) = &*self.0.0;
        if let Ok(mut n) = count.lock() {
            *n -= 1;
        }
        changed.notify_all();
    }
}
