//! The service's limits fitted to the files the process may open. The soft limit on open files
//! is raised to the hard one; when even that cannot hold every connection, handshake and session
//! worker the configuration allows, those limits are lowered to fit, and the operator is told —
//! so a client past them is refused with a code instead of hanging on an accept that fails.

use seshat::config::ServeConfig;

/// Files the process keeps for itself: stdio, the listener, the runtime, the token checker's
/// and the access watcher's store connections, plugins, logs, model servers' sockets — and the
/// store connections requests borrow: those in flight (one per request thread) and the idle ones
/// the server keeps (each up to four files: SQLite's database, journal and shared-memory files,
/// or one socket to PostgreSQL).
const RESERVED: u64 = 64 + 4 * (super::network::REQUEST_THREADS + seshat_server::IDLE_STORES) as u64;
/// Files one open connection holds between requests: its socket (a request borrows a store
/// connection, counted in [`RESERVED`]). A connection that searched documents keeps the
/// corpus's store connection, and one whose memory or history is embedded the embedding queue's:
/// not counted here.
const PER_CONNECTION: u64 = 1;
/// Files one session worker may hold: its store connection and a socket to the model server.
const PER_WORKER: u64 = 4;

/// The limits the service runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fitted {
    /// Handshakes at once, the whole service over.
    pub(super) max_handshakes: usize,
    /// Connections at once.
    pub(super) max_connections: usize,
    /// Session workers at once.
    pub(super) max_workers: usize,
    /// What was lowered, and why, when anything was.
    pub(super) warning: Option<String>,
}

/// Raises the soft limit on open files to the hard one, then fits `config`'s limits to it.
pub(super) fn fit(config: &ServeConfig) -> Fitted {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = raised;
        }
    }
    fit_to(config, limit.current)
}

/// `config`'s limits fitted to `files` open files (`None`: no limit).
pub(super) fn fit_to(config: &ServeConfig, files: Option<u64>) -> Fitted {
    let wanted = (config.max_handshakes(), config.max_connections(), config.max_workers());
    let needed = RESERVED + wanted.0 as u64 + PER_CONNECTION * wanted.1 as u64 + PER_WORKER * wanted.2 as u64;
    let Some(files) = files.filter(|f| *f < needed) else {
        return Fitted { max_handshakes: wanted.0, max_connections: wanted.1, max_workers: wanted.2, warning: None };
    };
    let share = files.saturating_sub(RESERVED) as f64 / (needed - RESERVED) as f64;
    let scaled = |n: usize| ((n as f64 * share).floor() as usize).max(1);
    let fitted = (scaled(wanted.0), scaled(wanted.1), scaled(wanted.2));
    let warning = format!(
        "this process may open {files} files (ulimit -n), fewer than the {needed} its limits need: \
         max_connections is {} (not {}), max_workers {} (not {}), handshakes at once {} (not {}), so \
         clients past them are refused with a code; raise the limit (`ulimit -n`, systemd's \
         LimitNOFILE=) to serve more",
        fitted.1, wanted.1, fitted.2, wanted.2, fitted.0, wanted.0
    );
    Fitted { max_handshakes: fitted.0, max_connections: fitted.1, max_workers: fitted.2, warning: Some(warning) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_fit_the_files_the_process_may_open() {
        let config = ServeConfig::default();
        let roomy = fit_to(&config, Some(1 << 20));
        assert_eq!((roomy.max_handshakes, roomy.max_connections, roomy.max_workers), (256, 256, 512));
        assert_eq!(roomy.warning, None);
        assert_eq!(fit_to(&config, None), roomy);
        let tight = fit_to(&config, Some(1024));
        let used = RESERVED
            + tight.max_handshakes as u64
            + PER_CONNECTION * tight.max_connections as u64
            + PER_WORKER * tight.max_workers as u64;
        assert!(used <= 1024, "{tight:?} needs {used}");
        assert!(tight.max_connections >= 50 && tight.max_connections < 256, "{tight:?}");
        assert!(tight.warning.as_deref().is_some_and(|w| w.contains("ulimit -n")), "{tight:?}");
        // Below what the process keeps for itself, one of each is left: refused with a code.
        let starved = fit_to(&config, Some(16));
        assert_eq!((starved.max_handshakes, starved.max_connections, starved.max_workers), (1, 1, 1));
    }
}
