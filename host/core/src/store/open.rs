//! Opening the database file safely: refuse foreign or newer files without touching them, create
//! new ones private to the user, then migrate and switch to WAL.
//!
//! A database that cannot be written is still opened for reading: SQLite opens a read-only file
//! read-only by itself, and a WAL database in a read-only directory without its `-wal` and `-shm`
//! files (which SQLite would have to create) is opened immutable — nobody can be writing it, as a
//! writer would need those files too. Only a write then fails, saying which file or directory
//! is read-only.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::db::{Db, Postgres};
use super::migrations::{self, APPLICATION_ID};
use super::{BUSY_TIMEOUT, Error, Result, Server};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

pub(super) fn open(path: &Path) -> Result<Db> {
    let io = |action| move |cause| Error::Io { action, path: path.to_path_buf(), cause };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(io("cannot create directory for"))?;
    }
    let mut conn = {
        // Held until the connection is open and its file registered, so that no other thread can
        // open a connection between the header check's close and the registration.
        let mut checked = CHECKED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let seen = file_key(path).is_some_and(|key| checked.contains(&key));
        if !seen {
            check_header(path)?;
        }
        create_private_file(path).map_err(io("cannot create"))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        if let Some(key) = file_key(path) {
            checked.insert(key);
        }
        conn
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Checked again through SQLite itself, which never closes a descriptor the process holds locks
    // through: a file already seen may have been replaced by another one at the same inode.
    check_application_id(&conn, path)?;
    let found = match migrations::sqlite_version(&conn) {
        Ok(found) => found,
        Err(e) if cannot_create_wal_files(&e, path) => {
            conn = open_immutable(path)?;
            migrations::sqlite_version(&conn)?
        }
        Err(e) => return Err(e),
    };
    if found > migrations::LATEST {
        return Err(Error::NewerSchema {
            location: super::Location::File(path.to_path_buf()),
            found,
            supported: migrations::LATEST,
        });
    }
    conn.pragma_update(None, "foreign_keys", true)?;
    let read_only = conn.is_readonly(rusqlite::MAIN_DB)?;
    if read_only && found < migrations::LATEST {
        // Upgrading writes: say so as the write that failed would.
        return Err(Error::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
            Some(format!(
                "the database (schema version {found}) needs upgrading to {}, which writes to it",
                migrations::LATEST
            )),
        )));
    }
    let mut db = Db::Sqlite(conn);
    migrations::migrate(&mut db)?;
    let Db::Sqlite(conn) = &db else { unreachable!("opened as SQLite") };
    if !read_only {
        use_wal(conn)?;
    }
    // In WAL mode NORMAL loses nothing on a process crash; only an OS crash can drop the last
    // transactions.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(db)
}

/// The oldest PostgreSQL server the store runs on.
pub(crate) const POSTGRES_MIN_VERSION: u32 = 13;

/// Connects to a PostgreSQL database, creating the schema in an empty one. A shared store is
/// never upgraded implicitly: a schema older than this build's is refused (an operator migrates
/// it, [`migrate`]), as is a newer one unless it declares this build's schema compatible
/// (additive migrations since); a server older than [`POSTGRES_MIN_VERSION`] is refused too.
pub(super) fn connect(server: &Server) -> Result<Db> {
    let mut db = connect_checked(server)?;
    let status = migrations::status(&db)?;
    let location = || super::Location::Postgres(server.clone());
    let (found, supported) = (status.version, status.latest);
    match status.state() {
        migrations::SchemaState::Empty => migrations::migrate(&mut db)?,
        migrations::SchemaState::Current | migrations::SchemaState::NewerCompatible => {}
        migrations::SchemaState::Outdated => {
            return Err(Error::OutdatedSchema { location: location(), found, supported });
        }
        migrations::SchemaState::NewerIncompatible => {
            return Err(Error::NewerSchema { location: location(), found, supported });
        }
    }
    Ok(db)
}

/// Brings a PostgreSQL database to this build's schema (an operator's explicit upgrade): a
/// schema newer than this build's is refused before anything is written.
pub(super) fn migrate(server: &Server) -> Result<Db> {
    let mut db = connect_checked(server)?;
    let status = migrations::status(&db)?;
    if status.version > status.latest {
        return Err(Error::NewerSchema {
            location: super::Location::Postgres(server.clone()),
            found: status.version,
            supported: status.latest,
        });
    }
    migrations::migrate(&mut db)?;
    Ok(db)
}

/// A connection to `server`, refused when the server is older than [`POSTGRES_MIN_VERSION`].
fn connect_checked(server: &Server) -> Result<Db> {
    let db = connect_only(server)?;
    let version: String = db.query_value("SHOW server_version_num", super::db::params![])?;
    let version: u32 = version.trim().parse().unwrap_or(0) / 10_000;
    if version < POSTGRES_MIN_VERSION {
        return Err(Error::ServerTooOld { found: version, needed: POSTGRES_MIN_VERSION });
    }
    Ok(db)
}

/// A connection to `server`, nothing checked or migrated (for a claim's own connection).
pub(super) fn connect_only(server: &Server) -> Result<Db> {
    // As libpq: never TLS over a Unix socket (the host is its directory).
    let local = server.host().starts_with('/');
    let pg = match server.tls() {
        _ if local => Postgres::connect(server.config(), tokio_postgres::NoTls, server.wait()),
        super::location::TlsMode::Disable => Postgres::connect(server.config(), tokio_postgres::NoTls, server.wait()),
        _ => Postgres::connect(server.config(), super::tls::connector(server)?, server.wait()),
    }
    .map_err(|e| match e {
        super::db::ConnectFailure::Postgres(e) => Error::Postgres(e),
        super::db::ConnectFailure::Io(e) => Error::Unreachable(e.to_string()),
    })?;
    Ok(Db::Postgres(pg))
}

/// Whether opening failed only because SQLite could not create the `-wal`/`-shm` files of a WAL
/// database beside it (a read-only directory), with no `-wal` file there to read.
fn cannot_create_wal_files(e: &Error, path: &Path) -> bool {
    let Error::Sqlite(rusqlite::Error::SqliteFailure(code, _)) = e else { return false };
    let wal = path.with_file_name(format!("{}-wal", path.file_name().unwrap_or_default().to_string_lossy()));
    let readonly_directory = code.extended_code == rusqlite::ffi::SQLITE_READONLY_DIRECTORY;
    (readonly_directory || code.code == rusqlite::ErrorCode::CannotOpen) && !wal.exists()
}

/// Opens `path` read-only and immutable (see the module's docs for when that is safe).
fn open_immutable(path: &Path) -> Result<Connection> {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '?' | '#' | '%' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Switches the database to WAL. Two processes switching a new database at once each hold the
/// shared lock the other needs gone, and SQLite fails one of them at once rather than let the busy
/// handler wait on a deadlock; that one retries (until the busy timeout), by which time the other
/// has switched the file.
fn use_wal(conn: &Connection) -> Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(Error::Corrupt { table: "journal_mode", message: format!("cannot use WAL (got {mode})") });
            }
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The files this process has opened a connection to, by device and inode: their header is never
/// read with a descriptor of our own again. On POSIX, closing *any* descriptor on a file drops
/// every lock the process holds on it, SQLite's included; another process would then believe it
/// is the last one using the database and delete its `-wal` and `-shm` files under the live
/// connections ("How To Corrupt An SQLite Database File", §2.2).
static CHECKED: std::sync::Mutex<BTreeSet<(u64, u64)>> = std::sync::Mutex::new(BTreeSet::new());

/// The device and inode of `path` (following links, as SQLite does), read without opening it.
#[cfg(unix)]
fn file_key(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_key(_: &Path) -> Option<(u64, u64)> {
    None
}

/// Refuses a database whose application id, read by SQLite, is not Seshat's (an empty file, which
/// migration will make Seshat's, passes).
pub(super) fn check_application_id(conn: &Connection, path: &Path) -> Result<()> {
    let pages: i64 = match conn.query_row("PRAGMA page_count", [], |r| r.get(0)) {
        Ok(n) => n,
        // A file SQLite cannot read yet (a WAL database in a read-only directory) is checked by
        // what opening it immutably reads next.
        Err(_) => return Ok(()),
    };
    if pages == 0 {
        return Ok(());
    }
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    seshat_application_id(path, app_id)
}

/// Refuses a database whose application id (however it was read) is not Seshat's.
fn seshat_application_id(path: &Path, app_id: i32) -> Result<()> {
    if app_id != APPLICATION_ID {
        return Err(Error::ForeignDatabase {
            path: path.to_path_buf(),
            reason: format!("its application id is {app_id:#x}, not Seshat's {APPLICATION_ID:#x}"),
        });
    }
    Ok(())
}

/// Refuses a non-empty file that is not a Seshat database, reading only its header bytes so that
/// SQLite never gets the chance to roll back, checkpoint or otherwise write to it. Only ever called
/// for a file this process holds no connection to (see [`CHECKED`]).
fn check_header(path: &Path) -> Result<()> {
    let foreign = |reason: &str| Error::ForeignDatabase { path: path.to_path_buf(), reason: reason.into() };
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(cause) => {
            return Err(Error::Io { action: "cannot read", path: path.to_path_buf(), cause });
        }
    };
    let mut header = Vec::with_capacity(100);
    file.by_ref().take(100).read_to_end(&mut header).map_err(|cause| Error::Io {
        action: "cannot read",
        path: path.to_path_buf(),
        cause,
    })?;
    if header.is_empty() {
        return Ok(());
    }
    if header.len() < 100 || &header[..16] != SQLITE_MAGIC {
        return Err(foreign("not a SQLite file"));
    }
    seshat_application_id(path, i32::from_be_bytes([header[68], header[69], header[70], header[71]]))
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Creates the file with mode 0600 if it does not exist (SQLite gives its `-wal` and `-shm` files
/// the same mode).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
