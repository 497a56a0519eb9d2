//! The store's redaction key, and the rules in force for a write ([`Store::scrub`]).

use super::db::{Backend, Db, params};
use super::{Result, Store};
use crate::redaction::{Policy, Scrub};

/// The key's length in bytes.
const KEY_BYTES: usize = 32;

/// Makes the store's key (from the system's random source) unless it has one: two processes
/// making it at once keep the first one written.
pub(super) fn make(db: &Db) -> Result<()> {
    let mut key = vec![0u8; KEY_BYTES];
    getrandom::fill(&mut key)
        .map_err(|e| super::Error::Refused(format!("no random bytes for the redaction key: {e}")))?;
    let insert = match db.backend() {
        Backend::Sqlite => "INSERT OR IGNORE INTO redaction_key (id, key) VALUES (1, ?1)",
        Backend::Postgres => "INSERT INTO redaction_key (id, key) VALUES (1, ?1) ON CONFLICT (id) DO NOTHING",
    };
    db.execute(insert, params![key])?;
    Ok(())
}

/// The store's key: made with the schema (so committed before anything is redacted with it);
/// made now only in a database whose row was removed by hand.
fn load(db: &Db) -> Result<Vec<u8>> {
    let read = || db.query_opt("SELECT key FROM redaction_key WHERE id = 1", params![], |r| r.get::<Vec<u8>>(0));
    if let Some(key) = read()? {
        return Ok(key);
    }
    make(db)?;
    read()?.ok_or(super::Error::NoRow)
}

impl Store {
    /// Sets what this store redacts before it writes (by default the built-in rules, everywhere).
    pub fn set_redaction(&mut self, policy: Policy) {
        self.redaction = policy;
    }

    /// What this store redacts.
    pub fn redaction(&self) -> &Policy {
        &self.redaction
    }

    /// The rules in force for text of `project`, with the store's key; `None` when nothing is
    /// redacted there.
    pub(crate) fn scrub(&self, project: &str) -> Result<Option<Scrub<'_>>> {
        scrub_with(&self.db, &self.redaction, &self.key, project)
    }
}

/// [`Store::scrub`] from the store's parts (for code that holds its connection mutably).
pub(crate) fn scrub_with<'a>(
    db: &Db,
    policy: &'a Policy,
    key: &'a std::sync::OnceLock<Vec<u8>>,
    project: &str,
) -> Result<Option<Scrub<'a>>> {
    if !policy.enabled() {
        return Ok(None);
    }
    if key.get().is_none() {
        let loaded = load(db)?;
        let _ = key.set(loaded);
    }
    let key = key.get().map(Vec::as_slice).unwrap_or_default();
    Ok(policy.for_project(project, key)?)
}

/// A store's policy and key, borrowed apart from its connection (so a write can redact inside its
/// transaction, once it knows the project).
#[derive(Clone, Copy)]
pub(crate) struct Redacting<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) key: &'a std::sync::OnceLock<Vec<u8>>,
}

impl std::fmt::Debug for Redacting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Redacting").field("enabled", &self.policy.enabled()).finish_non_exhaustive()
    }
}

impl<'a> Redacting<'a> {
    /// The rules in force for text of `project` (`None`: nothing redacted there).
    pub(crate) fn scrub(&self, db: &Db, project: &str) -> Result<Option<Scrub<'a>>> {
        scrub_with(db, self.policy, self.key, project)
    }
}
