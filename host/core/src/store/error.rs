//! The store's error type. Each variant has a stable code (`Error::code`) that scripts can match.

use std::path::PathBuf;

/// Errors from the session store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file exists, is not empty, and is not a Seshat database.
    #[error(
        "{} is not a Seshat database ({reason}); it was left untouched. \
         Open a Seshat database or a new path instead",
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
    #[error("no session matches `{0}`")]
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
        /// A repaired import would take it (it breaks the session's structure only).
        repairable: bool,
    },
    /// A message to append breaks the session's structure; nothing was written.
    #[error("{message}; nothing was written")]
    InvalidMessage {
        /// Its position among the messages appended together (0-based).
        index: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A message too large to store; nothing was written.
    #[error(
        "message {index} holds {} MiB of text, more than the {} MiB a stored message may hold: cut the output \
         down (or split it) before storing it; nothing was written",
        bytes >> 20,
        limit >> 20
    )]
    MessageTooLarge {
        /// Its position among the messages appended together (0-based).
        index: usize,
        /// Its text's size in bytes.
        bytes: usize,
        /// The limit in bytes ([`crate::store::MAX_MESSAGE_BYTES`]).
        limit: usize,
    },
    /// Importing a session whose id is already present.
    #[error("session {0} already exists: import it under a new id to keep both")]
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
    #[error("session {session} has no message {seq}")]
    NoSuchMessage {
        /// The session.
        session: String,
        /// The seq asked for.
        seq: u64,
    },
    /// An undo with no compaction or trim left to undo.
    #[error("session {0} has no compaction or trim left to undo")]
    NothingToUndo(String),
    /// A seq outside the session's messages (a fork or rewind point); nothing was written.
    #[error("session {session} has messages 1 to {last}: there is no message {seq} to branch at")]
    SeqOutOfRange {
        /// The session.
        session: String,
        /// The seq asked for.
        seq: u64,
        /// The session's last seq.
        last: u64,
    },
    /// A rewind with nothing to rewind (the messages are already out of the live view) or an undo
    /// of a rewind with no rewind in force.
    #[error("session {0} has nothing to rewind")]
    NothingToRewind(String),
    /// An undo of a rewind after messages were added past it; nothing was written.
    #[error(
        "session {session}'s rewind of messages {from} to {through} cannot be undone: messages were added after \
         it (up to {last}); fork at {through} to continue from the rewound messages"
    )]
    RewindSuperseded {
        /// The session.
        session: String,
        /// The first rewound message.
        from: u64,
        /// The last.
        through: u64,
        /// The session's last seq now.
        last: u64,
    },
    /// A pin or undo the caller's check refused (it would not fit); nothing was written.
    #[error("{0}")]
    Refused(String),
    /// A pin refused because pins would take more than their share of the window; nothing was
    /// pinned (coded `refused`, as the other refusals).
    #[error("{0}")]
    PinBudget(String),
    /// A stored row that cannot be decoded (written by something other than Seshat).
    #[error("corrupt row in {table}: {message}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A column that does not hold what the store reads it as (written by something other than
    /// Seshat).
    #[error("unexpected value in column {index}: {message}")]
    Column {
        /// The column's index in its query.
        index: usize,
        /// What it held instead.
        message: String,
    },
    /// A query that always returns a row returned none.
    #[error("the query returned no row")]
    NoRow,
    /// PostgreSQL failed, before the store named the server and the operation.
    #[error("{}", postgres_message(.0))]
    Postgres(tokio_postgres::Error),
    /// SQLite failed, before the store named the file and the operation ([`Error::Database`]).
    #[error("{}", sqlite_message(.0))]
    Sqlite(rusqlite::Error),
    /// SQLite failed on the database file: which file, doing what, SQLite's one message and what
    /// to do about it.
    #[error("cannot {op} ({}): {message}{}", path.display(), hint_text(.hint))]
    Database {
        /// The database file.
        path: PathBuf,
        /// What was being done (`list sessions`).
        op: &'static str,
        /// What kind of failure, for scripts ([`Error::code`]).
        failure: Failure,
        /// SQLite's message, once.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// A file operation failed.
    #[error("{action} {}: {cause}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
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
            Error::InvalidMessage { .. } => "invalid_message",
            Error::MessageTooLarge { .. } => "message_too_large",
            Error::SessionExists(_) => "session_exists",
            Error::Conflict { .. } => "conflict",
            Error::InvalidTrim { .. } => "invalid_trim",
            Error::NoSuchMessage { .. } => "no_such_message",
            Error::NothingToUndo(_) => "nothing_to_undo",
            Error::SeqOutOfRange { .. } => "seq_out_of_range",
            Error::NothingToRewind(_) => "nothing_to_rewind",
            Error::RewindSuperseded { .. } => "rewind_superseded",
            Error::Refused(_) | Error::PinBudget(_) => "refused",
            Error::Corrupt { .. } | Error::Column { .. } | Error::NoRow => "corrupt_row",
            Error::Postgres(_) => "database",
            Error::Sqlite(_) => "database",
            Error::Database { failure, .. } => failure.code(),
            Error::Io { .. } => "io",
        }
    }
}

/// Result alias for the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Sqlite(e)
    }
}

/// The kinds of database failure a user can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The file is damaged (or not a database after all).
    Malformed,
    /// The file or its directory cannot be written.
    ReadOnly,
    /// The disk (or the database's page limit) is full.
    Full,
    /// Another process held the database past the busy timeout.
    Busy,
    /// The file cannot be opened.
    CannotOpen,
    /// Anything else.
    Other,
}

impl Failure {
    /// A stable code: `database_malformed`, `database_read_only`, `disk_full`, `database_busy`,
    /// `database_cannot_open` or `database`.
    pub fn code(self) -> &'static str {
        match self {
            Failure::Malformed => "database_malformed",
            Failure::ReadOnly => "database_read_only",
            Failure::Full => "disk_full",
            Failure::Busy => "database_busy",
            Failure::CannotOpen => "database_cannot_open",
            Failure::Other => "database",
        }
    }

    fn of(e: &rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        match e.sqlite_error_code() {
            Some(C::DatabaseCorrupt | C::NotADatabase) => Failure::Malformed,
            Some(C::ReadOnly) => Failure::ReadOnly,
            Some(C::DiskFull) => Failure::Full,
            Some(C::DatabaseBusy | C::DatabaseLocked) => Failure::Busy,
            Some(C::CannotOpen) => Failure::CannotOpen,
            _ => Failure::Other,
        }
    }
}

/// SQLite's message for `e`, said once (rusqlite's own display repeats it with the code).
pub(crate) fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) if !message.is_empty() => message.clone(),
        rusqlite::Error::SqliteFailure(code, _) => {
            let text = code.to_string();
            // `Error code 11: The database disk image is malformed` → the description.
            text.split_once(": ").map_or(text.clone(), |(_, d)| d.to_string())
        }
        other => other.to_string(),
    }
}

/// PostgreSQL's message for a failure: the server's own words (with its detail) when it sent
/// some, the client's otherwise.
pub(crate) fn postgres_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{}: {detail}", db.message()),
            None => db.message().to_string(),
        },
        None => e.to_string(),
    }
}

fn hint_text(hint: &str) -> String {
    let mut chars = hint.chars();
    match chars.next() {
        None => String::new(),
        Some(first) => format!(". {}{}", first.to_uppercase(), chars.as_str()),
    }
}

/// The permissions of `path` as `ls` shows them (`r--r--r--`), or why they cannot be read.
#[cfg(unix)]
fn permissions(path: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) => {
            let mode = m.permissions().mode();
            let bits: String =
                (0..9).rev().map(|i| if mode & (1 << i) == 0 { '-' } else { ['x', 'w', 'r'][i % 3] }).collect();
            format!("mode {bits}")
        }
        Err(e) => format!("cannot read its mode: {e}"),
    }
}

#[cfg(not(unix))]
fn permissions(path: &std::path::Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().readonly() => "read-only".into(),
        Ok(_) => "writable".into(),
        Err(e) => format!("cannot read its mode: {e}"),
    }
}

/// Whether the current user may write `path` (as the OS decides, root included), asked without
/// opening it: closing a descriptor on the database file would drop every lock this process holds
/// on it (see `open.rs`).
#[cfg(unix)]
fn writable(path: &std::path::Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

#[cfg(not(unix))]
fn writable(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly())
}

impl Error {
    /// Names the database file and the operation in a SQLite failure, with what to do about it;
    /// other errors are returned as they are.
    pub(crate) fn at(self, path: &std::path::Path, op: &'static str) -> Error {
        let Error::Sqlite(e) = self else { return self };
        let failure = Failure::of(&e);
        let message = sqlite_message(&e);
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        let hint = match failure {
            Failure::Malformed => "the file is damaged: restore it from a backup, or move it aside (Seshat then \
                starts a new database) and import the sessions back from their exports"
                .to_string(),
            Failure::ReadOnly if !writable(path) => format!(
                "the database file is read-only ({}): make it writable (chmod u+w) to change anything; reading works",
                permissions(path)
            ),
            Failure::ReadOnly if !writable(dir) => format!(
                "its directory {} is read-only ({}), and SQLite writes its -wal and -shm files beside the database: \
                 make the directory writable to change anything; reading works",
                dir.display(),
                permissions(dir)
            ),
            Failure::ReadOnly => "the database was opened read-only: nothing can be changed in this run".to_string(),
            Failure::Full => "the disk is full (or the database reached its size limit): free some space and try \
                again; nothing of this operation was written"
                .to_string(),
            Failure::Busy => "another process kept the database busy: try again when it is done".to_string(),
            Failure::CannotOpen => {
                format!("check that {} exists and that you may read it ({})", dir.display(), permissions(dir))
            }
            Failure::Other => String::new(),
        };
        Error::Database { path: path.to_path_buf(), op, failure, message, hint }
    }
}
