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
        "{location} has schema version {found}, newer than the {supported} this seshat supports; \
         it was left untouched. Upgrade seshat to open it"
    )]
    NewerSchema {
        /// The refused database.
        location: super::Location,
        /// Its `user_version`.
        found: u32,
        /// The newest version this binary knows.
        supported: u32,
    },
    /// A shared store's schema is older than this build's: opening it never upgrades it.
    #[error(
        "{location} has schema version {found}, older than the {supported} this seshat writes; it was left \
         untouched: a shared store is upgraded only when an operator migrates it explicitly"
    )]
    OutdatedSchema {
        /// The refused database.
        location: super::Location,
        /// The version it records.
        found: u32,
        /// The version this build writes.
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
    /// A user or team name that is malformed, unknown or already taken; nothing was written.
    #[error("{0}")]
    Principal(String),
    /// An admin's act (users, tokens) asked for by a user who is not one; nothing was written.
    #[error("{user} may not {act}: only an admin may (ask one, or the service's operator)")]
    AdminOnly {
        /// Who asked.
        user: String,
        /// What they asked for.
        act: String,
    },
    /// A read of a team scope the caller is not granted, or a write to one the caller may not
    /// write (not a member, or read-only); nothing was written.
    #[error(
        "{user} may not {action} team:{team} ({reason}): ask one of the team's writers for access, or use your \
         own scopes; nothing was written"
    )]
    ScopeDenied {
        /// What was refused: `read` or `write to`.
        action: &'static str,
        /// The caller.
        user: String,
        /// The team.
        team: String,
        /// Why: not a member, or read-only.
        reason: &'static str,
    },
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
    /// A stored message that cannot be read back (written by something other than Seshat).
    #[error(
        "message {} of session {session} cannot be read: its `{column}` column holds what Seshat cannot read \
         ({message}); the rest of the store is unaffected: delete the session, or restore the database from a backup",
        seq.map_or_else(|| "?".to_string(), |s| s.to_string())
    )]
    CorruptMessage {
        /// The session whose rows hold it (a fork's parent, for an inherited message).
        session: String,
        /// Its seq, when that much could be read.
        seq: Option<u64>,
        /// The column that cannot be read.
        column: &'static str,
        /// What it holds instead.
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
    /// A schema migration failed on what the database holds (its tables do not match the
    /// version it records, say); nothing of that migration was kept.
    #[error(
        "cannot upgrade the database from schema version {from} to {to} (migration {name}): {message}. Nothing of \
         the upgrade was kept; a database whose tables do not match the version it records was changed by \
         something other than this seshat: restore it from a backup, or copy it into a new database with the seshat that \
         wrote it"
    )]
    Migration {
        /// The version the database recorded.
        from: u32,
        /// The version the failed migration brings it to.
        to: u32,
        /// The migration's name (`0016_turn_keys`).
        name: String,
        /// The engine's message.
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
    /// The PostgreSQL server is older than the store supports; nothing was written.
    #[error("the PostgreSQL server is version {found}, older than the {needed} Seshat needs: upgrade the server")]
    ServerTooOld {
        /// Its major version.
        found: u32,
        /// The oldest supported.
        needed: u32,
    },
    /// The database server could not be reached at all (before the store named it).
    #[error("{0}")]
    Unreachable(String),
    /// The server did not answer a statement within the store's wait (a frozen server or
    /// network), before the store named it; nothing of the statement's transaction was kept.
    #[error("the server did not answer within {} s", .0.as_secs())]
    Timeout(std::time::Duration),
    /// The connection that held a session's claim was lost (the server restarted, or dropped it):
    /// another process may hold the session now, so nothing more was written through it.
    #[error(
        "the hold on the session (its claim) was lost with the database connection (the server restarted or \
         dropped it): nothing more was written, so another client's turn is not interleaved with this one; \
         run the turn again"
    )]
    ClaimLost,
    /// A turn's idempotency key that is empty, too long or holds control characters; nothing was
    /// stored.
    #[error("{0}; nothing was stored")]
    InvalidTurnKey(String),
    /// A turn's idempotency key already used in the session for another request; nothing was
    /// stored.
    #[error(
        "idempotency key `{key}` was used in session {session} for another request (message {seq}): a retry sends \
         the same text with the same key, a new request a new key; nothing was stored"
    )]
    TurnKeyReused {
        /// The session.
        session: String,
        /// The key.
        key: String,
        /// The user's message stored with it.
        seq: u64,
    },
    /// The redaction settings do not load (a pattern that is not a regular expression).
    #[error(transparent)]
    Redaction(#[from] crate::redaction::Error),
    /// A credential in what was to be written into a team's scope, which every member reads:
    /// nothing was written.
    #[error(
        "refused: the text for {scope} holds a credential (rule `{rule}`); team memory and documents are read by \
         every member, so credentials are never written there. Remove it (or write it to your own scope, where it \
         is stored as a placeholder); nothing was written"
    )]
    CredentialRefused {
        /// The team scope.
        scope: String,
        /// The id of the rule that found the credential.
        rule: String,
    },
    /// The database failed: which database (a file, or a server without its password), doing
    /// what, the engine's one message and what to do about it.
    #[error("cannot {op} ({location}): {message}{}", hint_text(.hint))]
    Database {
        /// The database.
        location: super::Location,
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
            Error::OutdatedSchema { .. } => "schema_outdated",
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
            Error::Principal(_) => "invalid_principal",
            Error::AdminOnly { .. } => "admin_only",
            Error::ScopeDenied { .. } => "scope_denied",
            Error::Corrupt { .. } | Error::CorruptMessage { .. } | Error::Column { .. } | Error::NoRow => "corrupt_row",
            Error::Postgres(_) | Error::Unreachable(_) => "database",
            Error::Timeout(_) => "database_timeout",
            Error::ClaimLost => "claim_lost",
            Error::InvalidTurnKey(_) => "invalid_params",
            Error::Migration { .. } => "migration_failed",
            Error::TurnKeyReused { .. } => "turn_key_reused",
            Error::Redaction(e) => e.code(),
            Error::CredentialRefused { .. } => "credential_refused",
            Error::ServerTooOld { .. } => "server_too_old",
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
    /// The server cannot be reached (refused, unknown host, timed out, or the connection was
    /// lost).
    CannotConnect,
    /// A statement or a lock wait passed its timeout (the store URL's `statement_timeout` and
    /// `lock_timeout`), or the server did not answer in time.
    Timeout,
    /// The server refused the user or password.
    Authentication,
    /// The user may not do this in this database.
    PermissionDenied,
    /// Anything else.
    Other,
}

impl Failure {
    /// A stable code: `database_malformed`, `database_read_only`, `disk_full`, `database_busy`,
    /// `database_cannot_open`, `database_cannot_connect`, `database_authentication`,
    /// `database_permission_denied` or `database`.
    pub fn code(self) -> &'static str {
        match self {
            Failure::Malformed => "database_malformed",
            Failure::ReadOnly => "database_read_only",
            Failure::Full => "disk_full",
            Failure::Busy => "database_busy",
            Failure::CannotOpen => "database_cannot_open",
            Failure::CannotConnect => "database_cannot_connect",
            Failure::Timeout => "database_timeout",
            Failure::Authentication => "database_authentication",
            Failure::PermissionDenied => "database_permission_denied",
            Failure::Other => "database",
        }
    }

    pub(crate) fn of(e: &rusqlite::Error) -> Self {
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

    pub(crate) fn of_postgres(e: &tokio_postgres::Error) -> Self {
        use tokio_postgres::error::SqlState as S;
        let Some(code) = e.code() else {
            return if e.is_closed() || e.as_db_error().is_none() { Failure::CannotConnect } else { Failure::Other };
        };
        match code {
            c if *c == S::INVALID_PASSWORD || *c == S::INVALID_AUTHORIZATION_SPECIFICATION => Failure::Authentication,
            c if *c == S::INSUFFICIENT_PRIVILEGE => Failure::PermissionDenied,
            c if *c == S::DISK_FULL || *c == S::OUT_OF_MEMORY || *c == S::PROGRAM_LIMIT_EXCEEDED => Failure::Full,
            c if *c == S::READ_ONLY_SQL_TRANSACTION => Failure::ReadOnly,
            c if *c == S::LOCK_NOT_AVAILABLE
                || *c == S::QUERY_CANCELED
                || *c == S::IDLE_IN_TRANSACTION_SESSION_TIMEOUT =>
            {
                Failure::Timeout
            }
            c if *c == S::T_R_DEADLOCK_DETECTED => Failure::Busy,
            c if *c == S::INVALID_CATALOG_NAME
                || *c == S::CANNOT_CONNECT_NOW
                || *c == S::ADMIN_SHUTDOWN
                || *c == S::CRASH_SHUTDOWN
                || *c == S::TOO_MANY_CONNECTIONS
                || *c == S::CONNECTION_FAILURE =>
            {
                Failure::CannotConnect
            }
            c if *c == S::DATA_CORRUPTED || *c == S::INDEX_CORRUPTED => Failure::Malformed,
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
    /// Names the database and the operation in a database failure, with what to do about it;
    /// other errors are returned as they are.
    pub(crate) fn at(self, location: &super::Location, op: &'static str) -> Error {
        let path = match (self, location) {
            (Error::Postgres(e), super::Location::Postgres(server)) => return postgres_failure(&e, server, op),
            (Error::Timeout(wait), super::Location::Postgres(server)) => {
                return Error::Database {
                    location: location.clone(),
                    op,
                    failure: Failure::Timeout,
                    message: format!("the server did not answer within {} s", wait.as_secs()),
                    hint: timeout_hint(server),
                };
            }
            (Error::Unreachable(message), super::Location::Postgres(server)) => {
                let hint = unreachable_hint(server);
                return Error::Database {
                    location: location.clone(),
                    op,
                    failure: Failure::CannotConnect,
                    message,
                    hint,
                };
            }
            (Error::Sqlite(e), super::Location::File(path)) => (e, path),
            (other, _) => return other,
        };
        let (e, path) = path;
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
            _ => String::new(),
        };
        Error::Database { location: location.clone(), op, failure, message, hint }
    }
}

/// What to do when the server cannot be reached.
fn unreachable_hint(server: &super::Server) -> String {
    format!(
        "check that PostgreSQL is running and accepts connections at {} port {} (pg_isready -h {} -p {} tells), \
         and that the store URL names the right host",
        server.host(),
        server.port(),
        server.host(),
        server.port()
    )
}

/// What to do when a statement or a lock wait timed out on `server`.
fn timeout_hint(server: &super::Server) -> String {
    format!(
        "the server at {}:{} was too slow or held by another client (a long lock, a frozen server or network); \
         nothing of this operation was written: try again, or raise statement_timeout / lock_timeout \
         (milliseconds) in the store URL",
        server.host(),
        server.port()
    )
}

/// What to do when the server denied user a privilege, from what it named (`permission denied for
/// table messages`): on a table or sequence, the privileges on Seshat's tables were taken away
/// (whoever owns the user does not matter then); on the database or its schema, creating the
/// tables needs CREATE.
fn permission_hint(message: &str, server: &super::Server) -> String {
    let user = server.user();
    let object = ["table ", "sequence ", "function ", "relation "]
        .iter()
        .find_map(|kind| message.split_once(&format!("for {kind}")).map(|(_, name)| format!("{kind}{}", name.trim())));
    match object {
        Some(object) => format!(
            "user {user} may not use {object} on database {}: its privileges on Seshat's tables were revoked, or the \
             tables belong to another user; have their owner (or a superuser) grant them back: GRANT ALL ON ALL \
             TABLES IN SCHEMA public TO {user}; GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {user}",
            server.database()
        ),
        None => format!(
            "user {user} may not create Seshat's tables in database {}: the store creates them (and the unaccent \
             extension) on first use; have the database's owner grant {user} CREATE on the database and on its \
             schema (GRANT CREATE ON DATABASE …; GRANT CREATE ON SCHEMA public …), or use a database {user} owns",
            server.database()
        ),
    }
}

/// A PostgreSQL failure named with its server (never the password) and what to do.
fn postgres_failure(e: &tokio_postgres::Error, server: &super::Server, op: &'static str) -> Error {
    let failure = Failure::of_postgres(e);
    let message = postgres_message(e);
    let hint = match failure {
        Failure::CannotConnect => unreachable_hint(server),
        Failure::Authentication => format!(
            "the server refused user {} for database {}: check the user and the password (the store URL, \
             PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf",
            server.user(),
            server.database()
        ),
        Failure::PermissionDenied => permission_hint(&message, server),
        Failure::Full => "the server is out of space or memory: free some and try again; nothing of this operation \
            was written"
            .to_string(),
        Failure::Busy => "another client kept the database busy: try again when it is done".to_string(),
        Failure::Timeout => timeout_hint(server),
        Failure::ReadOnly => {
            "the server accepts only reads (a standby?): connect to the primary to change anything".to_string()
        }
        Failure::Malformed => "the server reports damaged data: ask its administrator".to_string(),
        _ => String::new(),
    };
    Error::Database { location: super::Location::Postgres(server.clone()), op, failure, message, hint }
}
