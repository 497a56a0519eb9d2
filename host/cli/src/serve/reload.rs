//! SIGHUP: the service reads its configuration again and puts it in force without dropping a
//! connection — the TLS certificate for the next handshakes, the limits, the providers, plugins
//! and settings for each connection's next request (a session's agent is opened again before its
//! next turn). A file that cannot be read, or TLS files that do not make an identity, are refused
//! whole: the running configuration stays. What only a restart changes (the addresses, the
//! store) is said.

use std::sync::{Arc, Mutex, RwLock};

use seshat::config::Config;
use seshat_server::{Service, Settings};

use super::handshakes::Handshakes;
use super::source::Source;

/// What a reload changes at the service's edge, shared with the accept loop.
pub(super) struct Edge {
    /// TLS for the next handshakes (`None`: plain `ws://`).
    tls: RwLock<Option<tokio_rustls::TlsAcceptor>>,
    /// Connection slots, and how many there are.
    pub(super) connections: Arc<tokio::sync::Semaphore>,
    max_connections: Mutex<usize>,
    /// Handshakes at once.
    pub(super) handshakes: Arc<Handshakes>,
}

impl Edge {
    /// The edge as the service starts.
    pub(super) fn new(tls: Option<Arc<rustls::ServerConfig>>, fitted: &super::files::Fitted) -> Edge {
        Edge {
            tls: RwLock::new(tls.map(tokio_rustls::TlsAcceptor::from)),
            connections: Arc::new(tokio::sync::Semaphore::new(fitted.max_connections)),
            max_connections: Mutex::new(fitted.max_connections),
            handshakes: Handshakes::new(fitted.max_handshakes),
        }
    }

    /// TLS for a handshake starting now.
    pub(super) fn acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        self.tls.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// `max` connection slots from now on: more at once, or fewer as connections leave (the
    /// connections open stay).
    fn resize_connections(&self, max: usize) {
        let mut current = self.max_connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if max > *current {
            self.connections.add_permits(max - *current);
        } else if max < *current {
            let fewer = *current - max;
            let left = fewer - self.connections.forget_permits(fewer);
            if left > 0 {
                // Taken as the connections holding them close.
                let connections = self.connections.clone();
                tokio::spawn(async move {
                    if let Ok(held) = connections.acquire_many_owned(u32::try_from(left).unwrap_or(u32::MAX)).await {
                        held.forget();
                    }
                });
            }
        }
        *current = max;
    }
}

/// What the service runs with and reloads: where its configuration comes from, the settings
/// every connection reads, and the address it listens on as it started.
pub(super) struct Live {
    pub(super) source: Source,
    pub(super) settings: Arc<Settings>,
    /// The `--listen` address the service started with (and is bound to until it restarts).
    pub(super) listen: String,
    /// The `metrics_listen` it started with.
    pub(super) metrics_listen: Option<String>,
}

/// What a reload did.
#[derive(Debug)]
pub(super) struct Reloaded {
    /// The configuration's generation now.
    pub(super) generation: u64,
    /// Settings changed that take effect only when the service restarts.
    pub(super) at_restart: Vec<&'static str>,
    /// What the operator should know (limits lowered to fit the open-file limit).
    pub(super) warnings: Vec<String>,
}

/// Reads the configuration again and puts it in force; `Err` (nothing changed) when it cannot
/// be read or its TLS files do not make an identity.
pub(super) fn reload(live: &Live, edge: &Edge, busy: &Service) -> anyhow::Result<Reloaded> {
    let read = live.source.read()?;
    let listen = read.listen.clone().unwrap_or_default();
    // TLS as the address the service is bound to needs it: a file that now names a `ws://`
    // address (or drops its TLS files) cannot turn the running `wss://` socket into plain text.
    let network =
        super::network::parse(&live.listen, read.tls_cert.as_deref(), read.tls_key.as_deref(), read.insecure_listen)?
            .ok_or_else(|| anyhow::anyhow!("`{}` is not a ws:// or wss:// address", live.listen))?;
    let before = live.settings.config();
    let at_restart = at_restart(&before, &read.config, listen != live.listen, &live.metrics_listen);
    let fitted = super::files::fit(&read.config.serve);
    // Everything checked: put in force.
    let workers = read.config.serve.turn_workers();
    let generation = live.settings.replace(read.config);
    *edge.tls.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
        network.tls.map(tokio_rustls::TlsAcceptor::from);
    edge.resize_connections(fitted.max_connections);
    edge.handshakes.set_max(fitted.max_handshakes);
    busy.fit_workers(fitted.max_workers);
    busy.size_pool(workers);
    let warnings = network.warnings.into_iter().chain(fitted.warning).collect();
    Ok(Reloaded { generation, at_restart, warnings })
}

/// The settings that differ between `before` and `after` and only a restart puts in force.
fn at_restart(before: &Config, after: &Config, listen_changed: bool, metrics: &Option<String>) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if listen_changed {
        changed.push("listen");
    }
    if *metrics != after.serve.metrics_listen {
        changed.push("metrics_listen");
    }
    if before.store.url != after.store.url {
        changed.push("[store] url");
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_the_store_are_said_to_need_a_restart_and_nothing_else_is() {
        let before = Config::default();
        let mut after = Config::default();
        after.serve.max_connections = Some(3);
        after.serve.idle_timeout_secs = Some(5);
        assert_eq!(at_restart(&before, &after, false, &None), Vec::<&str>::new());
        after.serve.metrics_listen = Some("127.0.0.1:9464".into());
        after.store.url = Some("postgres://db/team".into());
        assert_eq!(at_restart(&before, &after, true, &None), ["listen", "metrics_listen", "[store] url"]);
    }

    #[test]
    fn connection_slots_grow_at_once_and_shrink_as_connections_leave() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let fitted = super::super::files::fit_to(&seshat::config::ServeConfig::default(), None);
            let edge = Edge::new(None, &super::super::files::Fitted { max_connections: 2, ..fitted });
            let held = edge.connections.clone().try_acquire_many_owned(2).unwrap();
            assert!(edge.connections.clone().try_acquire_owned().is_err());
            edge.resize_connections(3);
            let third = edge.connections.clone().try_acquire_owned().expect("one more slot at once");
            edge.resize_connections(1);
            drop((held, third));
            // The two slots too many are taken back as their connections close.
            let one = edge.connections.clone().acquire_owned().await.unwrap();
            tokio::task::yield_now().await;
            assert_eq!(edge.connections.available_permits(), 0, "one slot in all, and it is held");
            drop(one);
            assert_eq!(edge.connections.available_permits(), 1);
        });
    }
}
