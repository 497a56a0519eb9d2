//! The session store: every conversation in one local SQLite file, or in one PostgreSQL database
//! that many processes and machines share ([`Location`]).
//!
//! Messages are append-only (enforced by triggers); compactions and trims are records beside the
//! originals. Every write is one transaction that holds the store's write lock (see [`db`]); a
//! SQLite file is in WAL mode with a busy timeout, so several processes can share it and a crash
//! loses no acknowledged write.

/// Runs a store method's body, naming the database and `op` in any database failure it returns
/// ([`Error::Database`]).
macro_rules! on_db {
    ($self:ident, $op:literal, $body:block) => {{
        #[allow(clippy::redundant_closure_call)]
        let result = (|| -> $crate::store::Result<_> { $body })();
        result.map_err(|e| e.at(&$self.location, $op))
    }};
}

mod audit;
mod branches;
mod claims;
mod copy;
pub(crate) mod db;
mod drafts;
mod error;
mod history;
mod knowledge;
mod lineage;
mod location;
mod messages;
mod migrations;
mod models;
mod open;
pub(crate) mod owners;
mod pins;
mod projects;
pub mod ranking;
mod redaction_key;
mod retention;
mod rewrite;
mod schema;
mod sessions;
mod sources;
mod tls;
mod tokens;
mod transfer;
mod turn_keys;
mod vectors;
mod view;
mod weights;

use std::path::Path;

use db::Db;
pub(crate) use redaction_key::Redacting;

pub use audit::{AUDIT_DAYS, AuditEvent, AuditFilter};
pub use branches::{Forked, Rewind, Rewound};
pub use claims::SessionClaim;
pub use copy::Copied;
pub use db::Backend;
pub use error::{Error, Failure, Result};
pub use history::{HISTORY_RANGE_MAX, HistoryHit, HistoryScope, INDEX_WHOLE_BYTES, INDEX_WHOLE_TEXT_BYTES, index_text};
pub use knowledge::{ChunkHit, ChunkText, DocumentInfo, KnowledgeFilter, NewChunk, NewDocument};
pub use location::{Location, Server};
pub use messages::title_from;
pub use migrations::{
    APPLICATION_ID, LATEST as SCHEMA_VERSION, Migration, Progress, SchemaState, SchemaStatus, on_migration_progress,
};
pub use models::{DISCOVERY_TTL_MS, ModelWindow, WindowOrigin};
pub use owners::{Access, Grant, Removed, UserInfo};
pub use pins::Retracted;
pub use retention::{Purged, PurgedSession};
pub use rewrite::Redacted;
/// The records the store keeps, defined by the wire protocol (`seshat-protocol`).
pub use seshat_protocol::records::{
    Compaction, CompactionStatus, CompactionTrigger, Message, NewSession, PluginRef, SessionInfo, Trim,
};
pub use sessions::ListFilter;
pub use sessions::MIN_SHORT_ID;
pub use sources::SourceItem;
pub use tokens::{Caller, NewToken, Refusal, TokenInfo, token_id};
pub use transfer::{ImportOptions, Imported, unanswered_text};
pub use turn_keys::{MAX_TURN_KEY_BYTES, Request, new_turn_key};
pub use vectors::{Queued, QueuedText, VectorHead, VectorIndex};
pub use view::{COMPACTION_MARKER, LiveView, Origin, ViewEntry, summary_text};

/// The most text one stored message may hold: 256 MiB, well inside SQLite's 1 GB limit on a
/// value once the parts are framed as JSON.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How long a writer waits for another process's transaction before giving up.
pub(crate) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The user a store acts for when none is named: the single user of a single-user install.
pub const LOCAL_USER: &str = "local";

/// The session metadata key holding the last seq another agent wrote (a foreign import): the
/// usage reported up to it was that agent's requests', not Seshat's.
pub const FOREIGN_THROUGH: &str = "foreign_through";

/// An open session database, acting for one user (its caller): every operation reads and writes
/// only what that user owns or is granted, the check made in the operation's own SQL.
pub struct Store {
    db: Db,
    location: Location,
    user: String,
    /// PostgreSQL: how many messages hold each word searched lately.
    counts: weights::Counts,
    /// What is redacted before it is written.
    redaction: crate::redaction::Policy,
    /// The store's redaction key, read on first need.
    key: std::sync::OnceLock<Vec<u8>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("location", &self.location).field("user", &self.user).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed, mode 0600) and migrates the SQLite database at `path`.
    ///
    /// A non-empty file without Seshat's application id, or with a schema newer than this binary,
    /// is refused and left byte-for-byte untouched.
    pub fn open(path: &Path) -> Result<Self> {
        Self::connect(&Location::File(path.to_path_buf()))
    }

    /// Opens the store at `location`: a SQLite file as [`Store::open`] does, or a PostgreSQL
    /// database, migrated to this binary's schema (a database with a newer schema is refused).
    pub fn connect(location: &Location) -> Result<Self> {
        let db = match location {
            Location::File(path) => open::open(path),
            Location::Postgres(server) => open::connect(server),
        }
        .map_err(|e| e.at(location, "open the database"))?;
        Ok(Self {
            db,
            location: location.clone(),
            user: LOCAL_USER.to_string(),
            counts: Default::default(),
            redaction: Default::default(),
            key: Default::default(),
        })
    }

    /// The same store acting for `user` (see [`Store::add_user`]): sessions, memory and
    /// documents are then that user's, and team scopes those granted to them.
    pub fn acting_for(mut self, user: &str) -> Self {
        self.user = user.to_string();
        self
    }

    /// The user the store acts for ([`LOCAL_USER`] unless [`Store::acting_for`] named another).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The engine the store runs on.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// The SQLite database file's path (`None` on PostgreSQL).
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// The underlying SQLite connection, for read-only inspection (tests, benchmarks,
    /// diagnostics); `None` on PostgreSQL.
    pub fn sqlite_connection(&self) -> Option<&rusqlite::Connection> {
        match &self.db {
            Db::Sqlite(conn) => Some(conn),
            Db::Postgres(_) => None,
        }
    }

    /// Reads the database's schema version again: an error when it is newer than this build
    /// can use (a newer build migrated it since this connection opened, with migrations that are
    /// not additive), older than it writes (restored from an old backup), or when the database
    /// does not answer.
    pub fn check_schema(&self) -> Result<()> {
        let status = migrations::status(&self.db)?;
        let (location, found, supported) = (self.location.clone(), status.version, status.latest);
        match status.state() {
            SchemaState::NewerIncompatible => Err(Error::NewerSchema { location, found, supported }),
            SchemaState::Outdated => Err(Error::OutdatedSchema { location, found, supported }),
            _ => Ok(()),
        }
    }

    /// The connection, where it leads, the caller and what the store redacts, for a subsystem
    /// that names the database in its errors, acts for the caller and writes text.
    pub(crate) fn parts_mut(&mut self) -> (&mut Db, &Location, &str, Redacting<'_>) {
        (&mut self.db, &self.location, &self.user, Redacting { policy: &self.redaction, key: &self.key })
    }
}

/// The current time in unix milliseconds (the store's timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
