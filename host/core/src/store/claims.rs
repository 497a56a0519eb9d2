//! A session held by one turn across every process (and machine) sharing the store: a turn, or a
//! compaction, runs in a session only while the store it writes through holds the session's
//! claim — on SQLite an exclusive lock on a file beside the database, on PostgreSQL a
//! session-level advisory lock on the store's own connection (so a turn opens no connection of
//! its own). The claim goes with its holder: given back by [`Store::release_session`], or when the
//! process dies (the operating system drops a file's lock, the server a connection's locks).

use std::path::{Path, PathBuf};

use sha2::Digest;

use super::db::{Db, params};
use super::{Error, Location, Result, Store};

/// A session claimed by a store (see [`Store::claim_session`]); give it back with
/// [`Store::release_session`] on the same store.
#[derive(Debug)]
#[must_use = "a claim is given back with Store::release_session"]
pub struct SessionClaim {
    held: Option<Held>,
}

/// What keeps a claim held.
#[derive(Debug)]
enum Held {
    /// An exclusive lock on a file beside the SQLite database (released when closed).
    File(#[allow(dead_code, reason = "held for its lock")] std::fs::File),
    /// A session-level advisory lock on `key`, held by the claiming store's connection.
    Advisory(i64),
}

impl Drop for SessionClaim {
    fn drop(&mut self) {
        if let Some(Held::Advisory(key)) = self.held {
            // Still held by the store's connection until it closes: a holder that forgets to give
            // it back keeps the session busy for every other process meanwhile.
            tracing::warn!(key, "a session's claim was dropped without Store::release_session");
        }
    }
}

impl Store {
    /// Claims `session` for a turn or a compaction, for every process sharing the store; `None`
    /// when another holder (in this process or another, on this machine or another) has it. On
    /// PostgreSQL the claim is held by this store's connection, so it is given back through this
    /// store ([`Store::release_session`]); closing the store gives it back too.
    pub fn claim_session(&self, session: &str) -> Result<Option<SessionClaim>> {
        // Only the session's owner claims it: nobody holds another user's session busy.
        super::sessions::owned(&self.db, session, &self.user).map_err(|e| e.at(&self.location, "claim the session"))?;
        let held = match &self.location {
            Location::File(path) => {
                lock_file(path, session).map_err(|e| e.at(&self.location, "claim the session"))?.map(Held::File)
            }
            Location::Postgres(_) => {
                let key = advisory_key(session);
                let got: bool = self
                    .db
                    .query_value("SELECT pg_try_advisory_lock(?1)", params![key])
                    .map_err(|e| e.at(&self.location, "claim the session"))?;
                if got && let Db::Postgres(pg) = &self.db {
                    pg.claimed();
                }
                got.then_some(Held::Advisory(key))
            }
        };
        Ok(held.map(|held| SessionClaim { held: Some(held) }))
    }

    /// Whether the claims this store holds were lost with its database connection (a server
    /// restart, a dropped connection): its writes are then refused with `claim_lost` until the
    /// claims are given back. Asked without a round trip (what the server sent is read first);
    /// never on a SQLite file, whose claims go only with the process.
    pub fn claim_lost(&self) -> bool {
        match &self.db {
            Db::Postgres(pg) => pg.claim_lost(),
            Db::Sqlite(_) => false,
        }
    }

    /// After a lost claim ([`Store::claim_lost`]): takes `session`'s claim again on the connection
    /// open now, when nobody took it meanwhile; `true` when this store holds it (again, or all
    /// along), `false` when another holder has it — this store's writes stay refused until its
    /// claim is given back.
    pub fn reclaim_session(&self, session: &str) -> Result<bool> {
        let Db::Postgres(pg) = &self.db else { return Ok(true) };
        if !pg.claim_lost() {
            return Ok(true);
        }
        let got: bool = self
            .db
            .query_value("SELECT pg_try_advisory_lock(?1)", params![advisory_key(session)])
            .map_err(|e| e.at(&self.location, "claim the session again"))?;
        if got {
            pg.reclaimed();
        }
        Ok(got)
    }

    /// Gives back a claim this store made (a connection lost meanwhile took its claim with it).
    pub fn release_session(&self, mut claim: SessionClaim) -> Result<()> {
        match claim.held.take() {
            Some(Held::Advisory(key)) => {
                let lost = self.claim_lost();
                // A claim lost with its connection is not held by the one open now: nothing to
                // unlock (the lock went with the old connection).
                let released: Result<bool> =
                    if lost { Ok(false) } else { self.db.query_value("SELECT pg_advisory_unlock(?1)", params![key]) };
                if let Db::Postgres(pg) = &self.db {
                    pg.unclaimed();
                }
                released.map(drop).map_err(|e| e.at(&self.location, "release the session"))
            }
            Some(Held::File(lock)) => {
                drop(lock);
                Ok(())
            }
            None => Ok(()),
        }
    }
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
