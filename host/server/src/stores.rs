//! The store connections a server's connections borrow for one request at a time: a client
//! between requests holds none, so the files and database connections an instance uses grow with
//! the requests in flight, not with the clients connected. One kept idle past [`IDLE_FOR`] is
//! closed when the service sweeps ([`Stores::close_idle`]): after a busy spell the instance
//! returns to what it held before.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seshat::store::Store;

/// Store connections kept open between requests, at most; one more given back is closed.
pub const IDLE_STORES: usize = 16;

/// How long a store connection is kept unused before a sweep closes it.
pub const IDLE_FOR: Duration = Duration::from_secs(10);

/// The idle store connections, the most recently used last, each with when it was given back
/// (cheap to clone: every clone is the same pool).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stores(Arc<Mutex<Vec<(Store, Instant)>>>);

impl Stores {
    /// The idle store connection used last, if one is kept.
    pub(crate) fn take(&self) -> Option<Store> {
        self.0.lock().ok()?.pop().map(|(store, _)| store)
    }

    /// An idle store connection, or a new one to `home`'s store when none is kept (give it back
    /// with [`Stores::give`]).
    pub(crate) fn take_or_open(&self, home: &crate::Home) -> Result<Store, seshat::store::Error> {
        self.take().map_or_else(|| home.store(), Ok)
    }

    /// Keeps `store` for the next request, or closes it when [`IDLE_STORES`] are kept already.
    pub(crate) fn give(&self, store: Store) {
        if let Ok(mut idle) = self.0.lock()
            && idle.len() < IDLE_STORES
        {
            idle.push((store, Instant::now()));
        }
    }

    /// Closes the connections unused for `idle_for` or longer; returns how many it closed.
    pub(crate) fn close_idle(&self, idle_for: Duration) -> usize {
        let closed: Vec<(Store, Instant)> = match self.0.lock() {
            Ok(mut idle) => {
                // (The least recently used come first: the ones to close are a prefix.)
                let old = idle.iter().take_while(|(_, since)| since.elapsed() >= idle_for).count();
                idle.drain(..old).collect()
            }
            Err(_) => Vec::new(),
        };
        // Closed outside the lock: a request taking a connection meanwhile does not wait.
        closed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &tempfile::TempDir) -> Store {
        Store::open(&dir.path().join("seshat.db")).expect("a store opens")
    }

    #[test]
    fn a_sweep_closes_only_connections_idle_that_long_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let stores = Stores::default();
        stores.give(store(&dir));
        stores.give(store(&dir));
        assert_eq!(stores.close_idle(Duration::from_secs(3600)), 0, "none idle an hour");
        assert!(stores.take().is_some() && stores.take().is_some(), "both still kept");
        assert!(stores.take().is_none());
        stores.give(store(&dir));
        stores.give(store(&dir));
        // Given back just now, each is idle for at least no time: a sweep with no delay takes both.
        assert_eq!(stores.close_idle(Duration::ZERO), 2);
        assert!(stores.take().is_none(), "the closed are no longer lent");
    }

    #[test]
    fn no_more_than_the_bound_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stores = Stores::default();
        for _ in 0..IDLE_STORES + 3 {
            stores.give(store(&dir));
        }
        assert_eq!(stores.close_idle(Duration::ZERO), IDLE_STORES);
    }
}
