//! The workers that run turns and compactions: a bounded pool shared by every connection. A
//! worker borrows a session's agent for one job and gives it back; a session between turns holds
//! no thread. Threads start when jobs wait and none is free, up to the bound, and end after a
//! while with nothing to do, so an idle server holds none; past the bound, jobs wait their turn
//! in the order they came.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A job for a worker.
pub(crate) type Work = Box<dyn FnOnce() + Send>;

/// How long a worker with nothing to do waits for a job before it ends.
const LINGER: Duration = Duration::from_secs(10);

/// The pool (cheap to clone: every clone is the same pool).
#[derive(Clone)]
pub(crate) struct Pool(Arc<(Mutex<State>, Condvar)>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.0.0.lock().expect("never poisoned");
        f.debug_struct("Pool").field("threads", &state.threads).field("max", &state.max).finish()
    }
}

struct State {
    queue: VecDeque<Work>,
    /// Workers waiting for a job.
    idle: usize,
    /// Workers alive.
    threads: usize,
    /// The most workers at once.
    max: usize,
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new(DEFAULT_WORKERS)
    }
}

/// Workers at most unless configured (`[serve] turn_workers`).
pub(crate) const DEFAULT_WORKERS: usize = 64;

impl Pool {
    /// A pool of at most `max` workers (at least one).
    pub(crate) fn new(max: usize) -> Self {
        let state = State { queue: VecDeque::new(), idle: 0, threads: 0, max: max.max(1) };
        Pool(Arc::new((Mutex::new(state), Condvar::new())))
    }

    /// Bounds the pool to `max` workers from now on (at least one; workers beyond it end when
    /// their job is done).
    pub(crate) fn resize(&self, max: usize) {
        self.0.0.lock().expect("never poisoned").max = max.max(1);
    }

    /// Runs `work` on a worker: a free one, a new one while the pool is under its bound, else the
    /// first to finish its job. `Err` when no thread could be started and none is alive to run it.
    pub(crate) fn run(&self, work: Work) -> Result<(), std::io::Error> {
        let mut state = self.0.0.lock().expect("never poisoned");
        state.queue.push_back(work);
        if state.idle > 0 {
            self.0.1.notify_one();
        }
        if state.idle < state.queue.len() && state.threads < state.max {
            state.threads += 1;
            drop(state);
            let pool = self.clone();
            let started = std::thread::Builder::new().name("seshat-turn".into()).spawn(move || pool.work());
            if let Err(e) = started {
                let mut state = self.0.0.lock().expect("never poisoned");
                state.threads -= 1;
                if state.threads == 0 {
                    state.queue.clear();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// A worker's life: jobs until none comes for [`LINGER`] (or the pool shrank below it).
    fn work(&self) {
        let (lock, wake) = &*self.0;
        let mut state = lock.lock().expect("never poisoned");
        loop {
            if state.threads > state.max {
                break;
            }
            if let Some(work) = state.queue.pop_front() {
                drop(state);
                // A job that panics takes its session's agent with it; the worker goes on.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
                state = lock.lock().expect("never poisoned");
                continue;
            }
            state.idle += 1;
            let (next, waited) = wake.wait_timeout(state, LINGER).expect("never poisoned");
            state = next;
            state.idle -= 1;
            if waited.timed_out() && state.queue.is_empty() {
                break;
            }
        }
        state.threads -= 1;
    }

    /// Workers alive now.
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.0.0.lock().expect("never poisoned").threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_past_the_bound_wait_and_all_run_on_at_most_that_many_threads() {
        let pool = Pool::new(2);
        let (release, gate) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let (done, finished) = mpsc::channel::<std::thread::ThreadId>();
        for _ in 0..6 {
            let (gate, done) = (gate.clone(), done.clone());
            pool.run(Box::new(move || {
                gate.lock().unwrap().recv().unwrap();
                done.send(std::thread::current().id()).unwrap();
            }))
            .unwrap();
        }
        assert_eq!(pool.threads(), 2, "two workers for six jobs");
        for _ in 0..6 {
            release.send(()).unwrap();
        }
        let ran: Vec<_> = (0..6).map(|_| finished.recv().unwrap()).collect();
        let threads: std::collections::HashSet<_> = ran.iter().collect();
        assert!(threads.len() <= 2, "every job ran, on at most the two workers: {threads:?}");
    }

    #[test]
    fn a_panicking_job_leaves_its_worker_running_the_next() {
        let pool = Pool::new(1);
        pool.run(Box::new(|| panic!("a job that fails"))).unwrap();
        let (done, finished) = mpsc::channel();
        pool.run(Box::new(move || done.send(7).unwrap())).unwrap();
        assert_eq!(finished.recv().unwrap(), 7);
    }
}
