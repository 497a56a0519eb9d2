//! What a service counts for its operators, in Prometheus' text format ([`Metrics::render`]).
//! The names, their units and labels are listed in the README's operating section; every one
//! starts `seshat_`. Labels take only the protocol's method names, error codes and fixed words —
//! never a user, a session or text a client sent — so their number stays bounded.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

type Labels = Vec<(&'static str, String)>;

/// The service's counters, gauges and histograms (cheap to clone: every clone counts the same).
#[derive(Debug, Clone)]
pub struct Metrics(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    registry: Registry,
    connections: Gauge,
    requests: Family<Labels, Counter>,
    request_seconds: Family<Labels, Histogram>,
    turns_in_flight: Gauge,
    turns: Family<Labels, Counter>,
    turn_seconds: Histogram,
    first_event_seconds: Histogram,
    provider_failures: Family<Labels, Counter>,
    plugin_failures: Family<Labels, Counter>,
    compactions: Family<Labels, Counter>,
    tokens_freed: Counter,
    embedding_queue: Family<Labels, Gauge>,
    store_open_seconds: Histogram,
}

/// Latency buckets from 1 ms to about 65 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("seshat");
        let connections = Gauge::default();
        registry.register("connections", "Network clients connected now", connections.clone());
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "requests",
            "JSON-RPC requests answered, by method and outcome (ok, or the error's code)",
            requests.clone(),
        );
        let request_seconds = Family::<Labels, Histogram>::new_with_constructor(latency as fn() -> Histogram);
        registry.register_with_unit(
            "request_duration",
            "Time to answer a request, by method (a turn's answer comes when it starts)",
            Unit::Seconds,
            request_seconds.clone(),
        );
        let turns_in_flight = Gauge::default();
        registry.register("turns_in_flight", "Turns and compactions running now", turns_in_flight.clone());
        let turns = Family::<Labels, Counter>::default();
        registry.register("turns", "Turns ended, by outcome (ok, interrupted, or the error's code)", turns.clone());
        let turn_seconds = latency();
        registry.register_with_unit(
            "turn_duration",
            "A turn's time, start to end",
            Unit::Seconds,
            turn_seconds.clone(),
        );
        let first_event_seconds = latency();
        registry.register_with_unit(
            "turn_first_event",
            "Time from a turn's start to its first streamed event",
            Unit::Seconds,
            first_event_seconds.clone(),
        );
        let provider_failures = Family::<Labels, Counter>::default();
        registry.register(
            "provider_failures",
            "Turns the model's server failed, by the error's code",
            provider_failures.clone(),
        );
        let plugin_failures = Family::<Labels, Counter>::default();
        registry.register("plugin_failures", "Turns a plugin failed, by the error's code", plugin_failures.clone());
        let compactions = Family::<Labels, Counter>::default();
        registry.register(
            "compactions",
            "Compactions done, by trigger (auto: inside a turn; manual: session/compact)",
            compactions.clone(),
        );
        let tokens_freed = Counter::default();
        registry.register("compaction_tokens_freed", "Tokens compactions took out of the view", tokens_freed.clone());
        let embedding_queue = Family::<Labels, Gauge>::default();
        registry.register(
            "embedding_queue_depth",
            "Texts waiting to be embedded, by corpus (history, memory), read at each scrape",
            embedding_queue.clone(),
        );
        let store_open_seconds = latency();
        registry.register_with_unit(
            "store_open",
            "Time to open a store connection when none was idle",
            Unit::Seconds,
            store_open_seconds.clone(),
        );
        Metrics(Arc::new(Inner {
            registry,
            connections,
            requests,
            request_seconds,
            turns_in_flight,
            turns,
            turn_seconds,
            first_event_seconds,
            provider_failures,
            plugin_failures,
            compactions,
            tokens_freed,
            embedding_queue,
            store_open_seconds,
        }))
    }
}

impl Metrics {
    /// Everything counted, in the Prometheus text format (OpenMetrics).
    pub fn render(&self) -> String {
        let mut text = String::new();
        // (Writing to a String cannot fail.)
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.0.registry);
        text
    }

    /// A network client connected; it is counted until the guard is dropped.
    pub fn connected(&self) -> Connected {
        self.0.connections.inc();
        Connected(self.0.connections.clone())
    }

    /// A request of `method` answered with `outcome` (`None`: ok) after `took`.
    pub(crate) fn request(&self, method: &str, outcome: Option<&str>, took: Duration) {
        // A method the protocol does not declare is counted under one name.
        let method = seshat_protocol::methods::access(method).map_or("unknown", |_| method).to_string();
        let outcome = outcome.unwrap_or("ok").to_string();
        self.0.requests.get_or_create(&vec![("method", method.clone()), ("outcome", outcome)]).inc();
        self.0.request_seconds.get_or_create(&vec![("method", method)]).observe(took.as_secs_f64());
    }

    /// A turn or compaction started; it is counted as running until the guard is dropped.
    pub(crate) fn job(&self) -> Connected {
        self.0.turns_in_flight.inc();
        Connected(self.0.turns_in_flight.clone())
    }

    /// A turn's first streamed event, `after` its start.
    pub(crate) fn first_event(&self, after: Duration) {
        self.0.first_event_seconds.observe(after.as_secs_f64());
    }

    /// A turn ended after `took`: `failure` is its error's code and where it came from.
    pub(crate) fn turn(&self, took: Duration, interrupted: bool, failure: Option<(&str, Failure)>) {
        self.0.turn_seconds.observe(took.as_secs_f64());
        let outcome = match failure {
            Some((code, _)) => code.to_string(),
            None if interrupted => "interrupted".into(),
            None => "ok".into(),
        };
        self.0.turns.get_or_create(&vec![("outcome", outcome)]).inc();
        match failure {
            Some((code, Failure::Provider)) => {
                self.0.provider_failures.get_or_create(&vec![("code", code.to_string())]).inc();
            }
            Some((code, Failure::Plugin)) => {
                self.0.plugin_failures.get_or_create(&vec![("code", code.to_string())]).inc();
            }
            Some((_, Failure::Other)) | None => {}
        }
    }

    /// A compaction took `freed` tokens out of the view; `manual` when a client asked for it.
    pub(crate) fn compaction(&self, manual: bool, freed: u64) {
        let trigger = if manual { "manual" } else { "auto" };
        self.0.compactions.get_or_create(&vec![("trigger", trigger.to_string())]).inc();
        self.0.tokens_freed.inc_by(freed);
    }

    /// How many texts of `corpus` wait to be embedded.
    pub(crate) fn embedding_queue(&self, corpus: &str, depth: u64) {
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        self.0.embedding_queue.get_or_create(&vec![("corpus", corpus.to_string())]).set(depth);
    }

    /// A store connection was opened in `took` (none was idle).
    pub(crate) fn store_opened(&self, took: Duration) {
        self.0.store_open_seconds.observe(took.as_secs_f64());
    }
}

/// Where a turn's failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The model's server (or the way to it).
    Provider,
    /// A plugin (the provider adapter, a trimmer, a summariser).
    Plugin,
    /// Anything else (the store, the session).
    Other,
}

impl Failure {
    /// Where a turn's error with `code` came from, by the code's family.
    pub(crate) fn of(code: &str, from_provider: bool) -> Failure {
        if code.starts_with("plugin_") {
            Failure::Plugin
        } else if from_provider && !CONFIGURATION.contains(&code) {
            Failure::Provider
        } else {
            Failure::Other
        }
    }
}

/// A provider's codes that say the service is set up wrong, not that the model's server failed.
const CONFIGURATION: &[&str] = &["provider_not_configured", "host_not_allowed"];

/// Counts something as present while held (a connection, a job).
#[derive(Debug)]
pub struct Connected(Gauge);

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.dec();
    }
}
