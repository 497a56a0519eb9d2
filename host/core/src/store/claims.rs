//! A session held by one turn across every process (and machine) sharing the store: a turn, or a
//! compaction, runs in a session only while its worker holds the session's claim, and the claim
//! goes with its holder — released when dropped, or when the process dies (the operating system
//! drops a SQLite file's lock, the server a PostgreSQL connection's advisory lock).

use std::path::{Path, PathBuf};

use sha2::Digest;

use super::db::{Db, params};
use super::{Error, Location, Result};

/// A held claim on a session; dropping it releases the session.
#[derive(Debug)]
pub struct SessionClaim {
    _held: Held,
}

/// What keeps a claim held (until dropped).
enum Held {
    /// An exclusive lock on a file beside the SQLite database.
    File { _lock: std::fs::File },
    /// A connection holding a session-level advisory lock.
    Connection { _lock: Box<Db> },
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Held::File { .. } => "Held::File",
            Held::Connection { .. } => "Held::Connection",
        })
    }
}

/// Claims `session` in the store at `location`; `None` when another worker (in this process or
/// another) holds it.
pub fn claim_session(location: &Location, session: &str) -> Result<Option<SessionClaim>> {
    let held = match location {
        Location::File(path) => lock_file(path, session)
            .map_err(|e| e.at(location, "claim the session"))?
            .map(|lock| Held::File { _lock: lock }),
        Location::Postgres(server) => {
            let db = super::open::connect_only(server).map_err(|e| e.at(location, "claim the session"))?;
            let got: bool = db
                .query_value("SELECT pg_try_advisory_lock(?1)", params![advisory_key(session)])
                .map_err(|e| e.at(location, "claim the session"))?;
            got.then(|| Held::Connection { _lock: Box::new(db) })
        }
    };
    Ok(held.map(|held| SessionClaim { _held: held }))
}

/// The advisory lock's key for a session: the first 8 bytes of a hash of its id.
fn advisory_key(session: &str) -> i64 {
    let digest = sha2::Sha256::digest(format!("seshat session {session}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
}

/// The directory of the lock files beside a SQLite database.
fn lock_dir(db: &Path) -> PathBuf {
    let name = db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    db.with_file_name(format!("{name}.claims"))
}

/// Takes an exclusive, non-blocking lock on the session's lock file; `None` when it is held.
fn lock_file(db: &Path, session: &str) -> Result<Option<std::fs::File>> {
    let dir = lock_dir(db);
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |cause| Error::Io { action, path, cause }
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io("cannot create the claims directory", &dir))?;
        // Session ids are ULIDs: a safe file name (anything else is hashed).
        let name = if session.bytes().all(|b| b.is_ascii_alphanumeric()) {
            session.to_string()
        } else {
            format!("{:016x}", advisory_key(session))
        };
        let path = dir.join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io("cannot open the claim", &path))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(file)),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
            Err(e) => Err(Error::Io { action: "cannot lock the claim", path, cause: e.into() }),
        }
    }
    // Elsewhere a claim holds within this process only (the database file itself stands for it).
    #[cfg(not(unix))]
    {
        let _ = (dir, session);
        Ok(Some(std::fs::File::open(db).map_err(io("cannot open", db))?))
    }
}
