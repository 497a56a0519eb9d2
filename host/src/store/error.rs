//! The store's error type. Each variant has a stable code (`Error::code`) that scripts can match.

use std::path::PathBuf;

/// Errors from the session store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file exists, is not empty, and is not a Seshat database.
    #[error(
        "{} is not a Seshat database ({reason}); it was left untouched. \
         Point --db or SESHAT_HOME at a Seshat database or a new path",
        path.display()
    )]
    ForeignDatabase {
        /// The refused file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// The database was written by a newer Seshat.
    #[error(
        "{} has schema version {found}, newer than the {supported} this seshat supports; \
         it was left untouched. Upgrade seshat to open it",
        path.display()
    )]
    NewerSchema {
        /// The refused file.
        path: PathBuf,
        /// Its `user_version`.
        found: u32,
        /// The newest version this binary knows.
        supported: u32,
    },
    /// No session matches the id or prefix.
    #[error("no session matches `{0}`: run `seshat sessions list --all` to see the ids")]
    SessionNotFound(String),
    /// More than one session matches the prefix.
    #[error("`{prefix}` matches several sessions ({}): type more of the id", candidates.join(", "))]
    AmbiguousSession {
        /// What was typed.
        prefix: String,
        /// Some of the matching ids.
        candidates: Vec<String>,
    },
    /// Input to `import` (or `append`) is malformed; nothing was written.
    #[error("line {line}: {message}; nothing was imported")]
    InvalidImport {
        /// 1-based line number.
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// Importing a session whose id is already present.
    #[error("session {0} already exists: pass --new-id to import it as a new session")]
    SessionExists(String),
    /// A write was based on a history that changed meanwhile (another process appended).
    #[error(
        "session {session} changed while this was being prepared (read up to seq {expected}, now {found}); try again"
    )]
    Conflict {
        /// The session.
        session: String,
        /// The last seq the caller had read.
        expected: u64,
        /// The last seq now.
        found: u64,
    },
    /// A trim that does not fit the message it names.
    #[error("invalid trim of message {seq} part {part}: {reason}")]
    InvalidTrim {
        /// The message.
        seq: u64,
        /// The part index.
        part: u32,
        /// Why it was refused.
        reason: String,
    },
    /// A message seq the session does not have.
    #[error("session {session} has no message {seq}: `seshat sessions show {session} --full` lists them")]
    NoSuchMessage {
        /// The session.
        session: String,
        /// The seq asked for.
        seq: u64,
    },
    /// An undo with no compaction or trim left to undo.
    #[error("session {0} has no compaction or trim left to undo")]
    NothingToUndo(String),
    /// A pin or undo the caller's check refused (it would not fit); nothing was written.
    #[error("{0}")]
    Refused(String),
    /// A stored row that cannot be decoded (written by something other than Seshat).
    #[error("corrupt row in {table}: {message}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What is wrong.
        message: String,
    },
    /// SQLite failed.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Error {
    /// A stable, machine-matchable code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::ForeignDatabase { .. } => "foreign_database",
            Error::NewerSchema { .. } => "newer_schema",
            Error::SessionNotFound(_) => "session_not_found",
            Error::AmbiguousSession { .. } => "ambiguous_session",
            Error::InvalidImport { .. } => "invalid_import",
            Error::SessionExists(_) => "session_exists",
            Error::Conflict { .. } => "conflict",
            Error::InvalidTrim { .. } => "invalid_trim",
            Error::NoSuchMessage { .. } => "no_such_message",
            Error::NothingToUndo(_) => "nothing_to_undo",
            Error::Refused(_) => "refused",
            Error::Corrupt { .. } => "corrupt_row",
            Error::Sqlite(_) => "database",
            Error::Io { .. } => "io",
        }
    }
}

/// Result alias for the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;
