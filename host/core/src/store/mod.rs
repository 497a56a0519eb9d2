//! The session store: every conversation in one local SQLite file.
//!
//! Messages are append-only (enforced by triggers); compactions and trims are records beside the
//! originals. Every write is one `BEGIN IMMEDIATE` transaction, the file is in WAL mode with a
//! busy timeout, so several processes can share it and a crash loses no acknowledged write.

/// Runs a store method's body, naming the database file and `op` in any SQLite failure it
/// returns ([`Error::Database`]).
macro_rules! on_db {
    ($self:ident, $op:literal, $body:block) => {{
        #[allow(clippy::redundant_closure_call)]
        let result = (|| -> $crate::store::Result<_> { $body })();
        result.map_err(|e| e.at(&$self.path, $op))
    }};
}

mod branches;
pub(crate) mod db;
mod error;
mod history;
mod knowledge;
mod lineage;
mod messages;
mod migrations;
mod models;
mod open;
mod pins;
pub mod ranking;
mod sessions;
mod sources;
mod transfer;
mod vectors;
mod view;

use std::path::{Path, PathBuf};

use rusqlite::Connection;

pub use branches::{Forked, Rewind, Rewound};
pub(crate) use error::sqlite_message;
pub use error::{Error, Failure, Result};
pub use history::{HISTORY_RANGE_MAX, HistoryHit, HistoryScope, INDEX_WHOLE_BYTES, INDEX_WHOLE_TEXT_BYTES, index_text};
pub use knowledge::{ChunkHit, ChunkText, DocumentInfo, KnowledgeFilter, NewChunk, NewDocument};
pub use messages::title_from;
pub use migrations::{APPLICATION_ID, LATEST as SCHEMA_VERSION, Progress, on_migration_progress};
pub use models::{DISCOVERY_TTL_MS, ModelWindow, WindowOrigin};
pub use pins::Retracted;
/// The records the store keeps, defined by the wire protocol (`seshat-protocol`).
pub use seshat_protocol::records::{
    Compaction, CompactionStatus, CompactionTrigger, Message, NewSession, PluginRef, SessionInfo, Trim,
};
pub use sessions::ListFilter;
pub use sessions::MIN_SHORT_ID;
pub use sources::SourceItem;
pub use transfer::{ImportOptions, Imported, unanswered_text};
pub use vectors::{Queued, QueuedText, VectorHead, VectorIndex};
pub use view::{COMPACTION_MARKER, LiveView, Origin, ViewEntry, summary_text};

/// The most text one stored message may hold: 256 MiB, well inside SQLite's 1 GB limit on a
/// value once the parts are framed as JSON.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How long a writer waits for another process's transaction before giving up.
pub(crate) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An open session database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed, mode 0600) and migrates the database at `path`.
    ///
    /// A non-empty file without Seshat's application id, or with a schema newer than this binary,
    /// is refused and left byte-for-byte untouched.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = open::open(path).map_err(|e| e.at(path, "open the database"))?;
        Ok(Self { conn, path: path.to_path_buf() })
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying connection, for read-only inspection (tests, benchmarks, diagnostics).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection and the file's path, for a subsystem that names the file in its errors.
    pub(crate) fn parts_mut(&mut self) -> (&mut Connection, &Path) {
        (&mut self.conn, &self.path)
    }

    /// The connection for other subsystems that keep their tables in this database (memory).
    pub(crate) fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// The current time in unix milliseconds (the store's timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
