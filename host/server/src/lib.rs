//! The core of `seshat serve`, with no transport of its own: the binary reads a client's lines
//! from stdio, a Unix socket or WebSocket frames and feeds them to a [`Connection`]; what the
//! connection answers goes to its [`Output`].
//!
//! * [`Connection`] — one client: who it acts for, what it registered at `initialize`, its
//!   lines fed one at a time to the dispatch, an exhaustive `match` on the protocol's typed
//!   requests whose arms call the handlers (one file per area).
//! * [`Service`] — what every connection of a process shares: the sessions with a turn in
//!   flight (their **claims**, so a session runs one turn at a time whichever connection asks),
//!   the sessions kept open, and the bounded pool of workers that run turns and compactions,
//!   each borrowing its session's agent for the job.
//! * [`Home`] — where the server works and for whom; agents are built through the library's
//!   `Environment` from it and the client's `initialize` params.
//! * [`outbox`] — what a connection writes, bounded by what its client leaves unread; the
//!   server's own requests (`tool/call`, a tool the client registered) wait there for answers.

mod audit;
mod client_hooks;
mod connection;
pub mod counts;
mod error;
mod handlers;
mod home;
pub mod in_flight;
pub mod metrics;
pub mod outbox;
mod pool;
mod principals;
mod server;
mod settings;
mod stores;
mod tending;
mod turns;

pub use connection::{Connection, Output};
pub use error::RpcError;
pub use home::Home;
pub use settings::Settings;
pub use stores::{IDLE_FOR, IDLE_STORES};

/// What every connection of a process shares: see the [crate](self) documentation.
#[derive(Debug, Clone, Default)]
pub struct Service(pub(crate) turns::Busy, pub(crate) stores::Stores, pub(crate) metrics::Metrics);

impl Service {
    /// A service whose turns and compactions run on at most `workers` threads at once.
    pub fn new(workers: usize) -> Service {
        let busy = turns::Busy::default();
        busy.size_pool(workers);
        Service(busy, stores::Stores::default(), metrics::Metrics::default())
    }

    /// What the service counts for its operators.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.2
    }

    /// Everything the service counts, in Prometheus' text format, the embedding queues read now
    /// from the store (`home`'s) first.
    pub fn render_metrics(&self, home: &Home) -> String {
        match self.1.take_or_open(home) {
            Ok(store) => {
                for (name, corpus) in
                    [("history", seshat::store::Queued::History), ("memory", seshat::store::Queued::Memory)]
                {
                    match store.embed_queue_len(corpus) {
                        Ok(depth) => self.2.embedding_queue(name, depth),
                        Err(e) => tracing::warn!("cannot read the {name} embedding queue: {e}"),
                    }
                }
                self.1.give(store);
            }
            Err(e) => tracing::warn!("metrics: cannot open the store: {e}"),
        }
        self.2.render()
    }

    /// Whether the service can serve: its store answers and its schema is the one this build
    /// knows. The error says what is wrong (for a readiness probe; it names no path).
    pub fn ready(&self, home: &Home) -> Result<(), String> {
        let store = self.1.take_or_open(home).map_err(|e| format!("the store: {}", e.code()))?;
        let checked = store.check_schema().map_err(|e| format!("the store: {}", e.code()));
        self.1.give(store);
        checked
    }

    /// Bounds the sessions kept open to `max` at most, whatever the configuration says (the files
    /// the process may open hold no more).
    pub fn fit_workers(&self, max: usize) {
        self.0.fit_workers(max);
    }

    /// Runs turns and compactions on at most `workers` threads at once from now on (a reload;
    /// the jobs running go on).
    pub fn size_pool(&self, workers: usize) {
        self.0.size_pool(workers);
    }

    /// Closes the store connections kept idle for [`IDLE_FOR`] (a service's periodic sweep, so
    /// that what a busy spell opened is let go once it ends); returns how many it closed.
    pub fn close_idle_stores(&self) -> usize {
        self.1.close_idle(IDLE_FOR)
    }

    /// No new turn starts from now on (the process is stopping).
    pub fn refuse_new(&self) {
        self.0.refuse_new();
    }

    /// No new turn starts, and this waits up to `grace` for the turns in flight to finish by
    /// themselves; returns how many still run.
    pub fn drain(&self, grace: std::time::Duration) -> usize {
        self.0.drain(grace)
    }

    /// Interrupts every turn in flight (each stores what arrived) and waits up to `wait` until
    /// each has; returns how many had not by then.
    pub fn stop_all(&self, wait: std::time::Duration) -> usize {
        self.0.stop_all(wait)
    }
}

/// Workers that run turns and compactions at once unless configured (`[serve] turn_workers`).
pub const DEFAULT_TURN_WORKERS: usize = pool::DEFAULT_WORKERS;
