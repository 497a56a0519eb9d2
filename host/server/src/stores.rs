//! The store connections a server's connections borrow for one request at a time: a client
//! between requests holds none, so the files and database connections an instance uses grow with
//! the requests in flight, not with the clients connected.

use std::sync::{Arc, Mutex};

use seshat::store::Store;

/// Store connections kept open between requests, at most; one more given back is closed.
pub const IDLE_STORES: usize = 16;

/// The idle store connections (cheap to clone: every clone is the same pool).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stores(Arc<Mutex<Vec<Store>>>);

impl Stores {
    /// An idle store connection, if one is kept.
    pub(crate) fn take(&self) -> Option<Store> {
        self.0.lock().ok()?.pop()
    }

    /// Keeps `store` for the next request, or closes it when [`IDLE_STORES`] are kept already.
    pub(crate) fn give(&self, store: Store) {
        if let Ok(mut idle) = self.0.lock()
            && idle.len() < IDLE_STORES
        {
            idle.push(store);
        }
    }
}
