//! A session held by one turn across every process (and machine) sharing the store: a turn, or a
//! compaction, runs in a session only while its worker holds the session's claim, and the claim
//! goes with its holder — released when dropped, or when the process dies (the operating system
//! drops a SQLite file's lock, the server a PostgreSQL connection's advisory lock).

use std::path::{Path, PathBuf};

use sha2::Digest;

use std::sync::Mutex;

use super::db::{Db, params};
use super::{Error, Location, Result, Server};

/// A held claim on a session; dropping it releases the session.
#[derive(Debug)]
pub struct SessionClaim {
    held: Option<Held>,
}

/// What keeps a claim held (until dropped).
enum Held {
    /// An exclusive lock on a file beside the SQLite database.
    File { _lock: std::fs::File },
    /// A connection holding a session-level advisory lock on `key`.
    Connection { server: Server, key: i64, db: Box<Db> },
}

/// The connections claims have released, kept to hold the next ones (a connection made per
/// claim costs a turn a round of the server's authentication, and churns its processes).
static IDLE: Mutex<Vec<(Server, Box<Db>)>> = Mutex::new(Vec::new());

/// How many released connections are kept; past this they are closed.
const MAX_IDLE: usize = 16;

/// Keeps `db` (holding no lock) for the next claim on `server`, unless enough are kept.
fn keep(server: Server, db: Box<Db>) {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    if idle.len() < MAX_IDLE {
        idle.push((server, db));
    }
}

impl Drop for SessionClaim {
    fn drop(&mut self) {
        if let Some(Held::Connection { server, key, db }) = self.held.take() {
            // Unlocked, the connection holds nothing and is kept; if it failed (the server went
            // away) it is closed, which releases the lock anyway.
            let unlocked: Result<bool> = db.query_value("SELECT pg_advisory_unlock(?1)", params![key]);
            if unlocked.is_ok() {
                keep(server, db);
            }
        }
    }
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
            let key = advisory_key(session);
            let idle = {
                let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
                idle.iter().rposition(|(s, _)| s == server).map(|i| idle.swap_remove(i).1)
            };
            let try_lock = |db: &Db| db.query_value::<bool>("SELECT pg_try_advisory_lock(?1)", params![key]);
            // A kept connection the server closed meanwhile is opened again by the query itself;
            // one that fails otherwise is dropped for a new one.
            let (db, got) = match idle.map(|db| try_lock(&db).map(|got| (db, got))) {
                Some(Ok(kept)) => kept,
                _ => {
                    let db =
                        Box::new(super::open::connect_only(server).map_err(|e| e.at(location, "claim the session"))?);
                    let got = try_lock(&db).map_err(|e| e.at(location, "claim the session"))?;
                    (db, got)
                }
            };
            if got {
                Some(Held::Connection { server: server.clone(), key, db })
            } else {
                keep(server.clone(), db);
                None
            }
        }
    };
    Ok(held.map(|held| SessionClaim { held: Some(held) }))
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
