//! Per-key bounds on the network service: connections still in their handshake per address,
//! connections per user. A key past its bound is refused; the others go on.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// How many of something each key holds now.
#[derive(Debug)]
pub struct Counts<K: Eq + Hash + Clone>(Arc<Mutex<HashMap<K, usize>>>);

impl<K: Eq + Hash + Clone> Clone for Counts<K> {
    fn clone(&self) -> Self {
        Counts(self.0.clone())
    }
}

impl<K: Eq + Hash + Clone> Default for Counts<K> {
    fn default() -> Self {
        Counts(Arc::default())
    }
}

/// One of a key's count; dropping it gives it back.
#[derive(Debug)]
pub struct Held<K: Eq + Hash + Clone> {
    counts: Arc<Mutex<HashMap<K, usize>>>,
    key: K,
}

impl<K: Eq + Hash + Clone> Counts<K> {
    /// Takes one for `key` unless it already holds `max`.
    pub fn try_take(&self, key: &K, max: usize) -> Option<Held<K>> {
        let mut counts = self.0.lock().expect("never poisoned");
        let n = counts.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Held { counts: self.0.clone(), key: key.clone() })
    }
}

impl<K: Eq + Hash + Clone> Drop for Held<K> {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.counts.lock()
            && let Some(n) = counts.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}
