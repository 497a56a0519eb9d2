//! Schema migrations, numbered per backend: SQL files applied in order, one transaction each,
//! tracked by `PRAGMA user_version` in a SQLite file and by the `seshat_schema` table on
//! PostgreSQL (whose schema starts at its own 1, the SQLite schema's 13).

use super::Result;
use super::db::{Backend, Db, Tx, params};

/// Seshat's `PRAGMA application_id` ("SESH"), written by the first migration.
pub const APPLICATION_ID: i32 = 0x5345_5348;

/// Work a migration does after its SQL, inside the same transaction: filling what the SQL made
/// from existing rows in batches, reporting progress as it goes.
type Backfill = fn(&Tx<'_>, &mut dyn FnMut(u64, u64)) -> Result<()>;

/// The migrations, in order; migration `i` (1-based) brings the schema to version `i`.
const MIGRATIONS: &[(&str, &str, Option<Backfill>)] = &[
    ("0001_init", include_str!("migrations/sqlite/0001_init.sql"), None),
    ("0002_compaction", include_str!("migrations/sqlite/0002_compaction.sql"), None),
    ("0003_memory", include_str!("migrations/sqlite/0003_memory.sql"), None),
    ("0004_model_windows", include_str!("migrations/sqlite/0004_model_windows.sql"), None),
    ("0005_history_index", include_str!("migrations/sqlite/0005_history_index.sql"), Some(index_history)),
    ("0006_pins_and_undo", include_str!("migrations/sqlite/0006_pins_and_undo.sql"), None),
    ("0007_plugin_provenance", include_str!("migrations/sqlite/0007_plugin_provenance.sql"), None),
    ("0008_knowledge", include_str!("migrations/sqlite/0008_knowledge.sql"), None),
    ("0009_vectors", include_str!("migrations/sqlite/0009_vectors.sql"), None),
    ("0010_stemmed_search", include_str!("migrations/sqlite/0010_stemmed_search.sql"), None),
    ("0011_branches", include_str!("migrations/sqlite/0011_branches.sql"), None),
    ("0012_queue_claims", include_str!("migrations/sqlite/0012_queue_claims.sql"), None),
    ("0013_owners", include_str!("migrations/sqlite/0013_owners.sql"), None),
    ("0014_tokens", include_str!("migrations/sqlite/0014_tokens.sql"), None),
    ("0015_drafts", include_str!("migrations/sqlite/0015_drafts.sql"), None),
    ("0016_turn_keys", include_str!("migrations/sqlite/0016_turn_keys.sql"), None),
    ("0017_access", include_str!("migrations/sqlite/0017_access.sql"), Some(fold_user_names)),
    ("0018_audit", include_str!("migrations/sqlite/0018_audit.sql"), None),
    ("0019_server_models", include_str!("migrations/sqlite/0019_server_models.sql"), None),
    ("0020_redaction_key", include_str!("migrations/sqlite/0020_redaction_key.sql"), Some(make_redaction_key)),
    ("0021_memory_provenance", include_str!("migrations/sqlite/0021_memory_provenance.sql"), None),
    ("0022_memory_review", include_str!("migrations/sqlite/0022_memory_review.sql"), None),
];

/// The line by which a SQLite migration says it rebuilds tables that others reference: it runs
/// with foreign keys off (dropping a referenced table would otherwise delete the rows that refer
/// to it) and checks every reference before it commits, as SQLite's documented procedure does.
const REBUILDS_TABLES: &str = "-- seshat: rebuilds tables";

/// PostgreSQL's migrations, in order.
const POSTGRES_MIGRATIONS: &[(&str, &str, Option<Backfill>)] = &[
    ("0001_init", include_str!("migrations/postgres/0001_init.sql"), None),
    ("0002_memory_substring", include_str!("migrations/postgres/0002_memory_substring.sql"), None),
    (
        "0003_word_indexes_without_pending",
        include_str!("migrations/postgres/0003_word_indexes_without_pending.sql"),
        None,
    ),
    ("0004_tokens", include_str!("migrations/postgres/0004_tokens.sql"), None),
    ("0005_drafts", include_str!("migrations/postgres/0005_drafts.sql"), None),
    ("0006_turn_keys", include_str!("migrations/postgres/0006_turn_keys.sql"), None),
    ("0007_access", include_str!("migrations/postgres/0007_access.sql"), Some(fold_user_names)),
    ("0008_audit", include_str!("migrations/postgres/0008_audit.sql"), None),
    ("0009_server_models", include_str!("migrations/postgres/0009_server_models.sql"), None),
    ("0010_schema_compatibility", include_str!("migrations/postgres/0010_schema_compatibility.sql"), None),
    ("0011_redaction_key", include_str!("migrations/postgres/0011_redaction_key.sql"), Some(make_redaction_key)),
    ("0012_memory_provenance", include_str!("migrations/postgres/0012_memory_provenance.sql"), None),
    ("0013_memory_review", include_str!("migrations/postgres/0013_memory_review.sql"), None),
];

/// The line by which a migration says it only adds (tables, columns with defaults, indexes):
/// builds of the schema before it can still use the database, so a rolling upgrade keeps them
/// serving. A PostgreSQL database records the oldest such version (`compatible_from`).
const ADDITIVE: &str = "-- seshat: additive";

/// The PostgreSQL schema version from which `seshat_schema` records `compatible_from`.
const COMPATIBILITY_SINCE: u32 = 10;

/// One migration of a backend.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Migration {
    /// The schema version it brings the database to.
    pub version: u32,
    /// Its name (`0010_schema_compatibility`).
    pub name: &'static str,
    /// Whether it only adds, so builds of the schema before it keep working.
    pub additive: bool,
}

/// Where a store's schema stands against this build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SchemaStatus {
    /// The schema version the database records (0: an empty database).
    pub version: u32,
    /// The version this build writes for the database's engine.
    pub latest: u32,
    /// The oldest schema version whose builds can use the database as it is.
    pub compatible_from: u32,
    /// The migrations this build would apply, in order.
    pub pending: Vec<Migration>,
}

/// What a [`SchemaStatus`] means for this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SchemaState {
    /// Nothing there yet: the first use creates the schema.
    Empty,
    /// The schema this build writes.
    Current,
    /// Older than this build's: migrations are pending.
    Outdated,
    /// Newer than this build's, and declared usable by it (additive migrations since).
    NewerCompatible,
    /// Newer than this build's, and not usable by it.
    NewerIncompatible,
}

impl SchemaStatus {
    /// What the status means for this build.
    pub fn state(&self) -> SchemaState {
        use std::cmp::Ordering::*;
        match (self.version, self.version.cmp(&self.latest)) {
            (0, _) => SchemaState::Empty,
            (_, Equal) => SchemaState::Current,
            (_, Less) => SchemaState::Outdated,
            (_, Greater) if self.compatible_from <= self.latest => SchemaState::NewerCompatible,
            (_, Greater) => SchemaState::NewerIncompatible,
        }
    }
}

/// The database's status against this build.
pub(crate) fn status(db: &Db) -> Result<SchemaStatus> {
    let (version, latest) = current(db)?;
    let compatible_from = match db {
        Db::Postgres(_) if version >= COMPATIBILITY_SINCE => db
            .query_opt("SELECT coalesce(compatible_from, version) FROM seshat_schema", params![], |r| r.get(0))?
            .unwrap_or(version),
        _ => version,
    };
    Ok(SchemaStatus { version, latest, compatible_from, pending: pending(db.backend(), version) })
}

/// The status of a database that does not exist yet on `backend`.
pub(crate) fn empty(backend: Backend) -> SchemaStatus {
    let latest = match backend {
        Backend::Sqlite => LATEST,
        Backend::Postgres => LATEST_POSTGRES,
    };
    SchemaStatus { version: 0, latest, compatible_from: 0, pending: pending(backend, 0) }
}

/// `backend`'s migrations after `version`.
fn pending(backend: Backend, version: u32) -> Vec<Migration> {
    let migrations = match backend {
        Backend::Sqlite => MIGRATIONS,
        Backend::Postgres => POSTGRES_MIGRATIONS,
    };
    migrations
        .iter()
        .enumerate()
        .map(|(i, (name, sql, _))| Migration { version: i as u32 + 1, name, additive: sql.contains(ADDITIVE) })
        .filter(|m| m.version > version)
        .collect()
}

/// Makes user names unique ignoring case (`alice`, `Alice` and `ALICE` are one user) when the
/// names already there allow it; a store that already holds two such names keeps them (each is
/// its owner's), and new names are checked against every spelling by the statement adding them.
/// The store's redaction key, made with the table that keeps it (in the migration's transaction,
/// so it is there, committed, before anything is redacted with it).
fn make_redaction_key(tx: &Tx<'_>, _progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
    super::redaction_key::make(tx)
}

fn fold_user_names(tx: &Tx<'_>, _progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
    let clashes: i64 = tx.query_value(
        "SELECT count(*) FROM (SELECT lower(name) FROM users GROUP BY lower(name) HAVING count(*) > 1) AS c",
        params![],
    )?;
    if clashes == 0 {
        tx.execute_batch("CREATE UNIQUE INDEX users_name_folded ON users (lower(name))")?;
    } else {
        tracing::warn!(clashes, "user names that differ only in case are kept; new ones are refused");
    }
    Ok(())
}

/// Messages indexed per statement by [`index_history`].
const INDEX_BATCH: i64 = 2_000;

/// Indexes the messages written before the history index existed, a batch of ids at a time.
fn index_history(tx: &Tx<'_>, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
    let (total, last): (u64, i64) =
        tx.query_row("SELECT count(*), coalesce(max(id), 0) FROM messages", params![], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (mut from, mut done) = (0i64, 0u64);
    while from < last {
        let rows: Vec<(i64, String)> = tx.query_vec(
            "SELECT id, parts FROM messages WHERE id > ?1 AND id <= ?2",
            params![from, from + INDEX_BATCH],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, parts) in rows {
            let parts: Vec<crate::conversation::Part> = serde_json::from_str(&parts)
                .map_err(|e| super::Error::Corrupt { table: "messages", message: format!("message {id}: {e}") })?;
            tx.execute(
                "INSERT INTO message_fts (rowid, text) VALUES (?1, ?2)",
                params![id, super::history::index_text(&parts)],
            )?;
            done += 1;
        }
        from += INDEX_BATCH;
        progress(done, total);
    }
    Ok(())
}

/// Who hears about long migrations: (what is being done, items done, items in all).
pub type Progress = Box<dyn Fn(&str, u64, u64) + Send + Sync>;

static PROGRESS: std::sync::OnceLock<Progress> = std::sync::OnceLock::new();

/// Sets, once per process, who hears how far a long migration has got (the CLI draws a progress
/// bar on a terminal). Without it, migrations run silently. Returns `false` when one was already
/// set.
pub fn on_migration_progress(progress: Progress) -> bool {
    PROGRESS.set(progress).is_ok()
}

/// The SQLite schema version this binary writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// The PostgreSQL schema version this binary writes.
pub const LATEST_POSTGRES: u32 = POSTGRES_MIGRATIONS.len() as u32;

/// Reads a SQLite file's `PRAGMA user_version`.
pub(crate) fn sqlite_version(conn: &rusqlite::Connection) -> Result<u32> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

/// Reads a PostgreSQL database's schema version (0 before the first migration).
pub(crate) fn postgres_version(db: &Db) -> Result<u32> {
    let exists: bool = db.query_value("SELECT to_regclass('seshat_schema') IS NOT NULL", params![])?;
    if !exists {
        return Ok(0);
    }
    Ok(db.query_opt("SELECT version FROM seshat_schema", params![], |r| r.get(0))?.unwrap_or(0))
}

fn version(db: &Db) -> Result<u32> {
    match db {
        Db::Sqlite(conn) => sqlite_version(conn),
        Db::Postgres(_) => postgres_version(db),
    }
}

/// The database's schema version, and the one this build writes for its engine.
pub(crate) fn current(db: &Db) -> Result<(u32, u32)> {
    let latest = match db.backend() {
        Backend::Sqlite => LATEST,
        Backend::Postgres => LATEST_POSTGRES,
    };
    Ok((version(db)?, latest))
}

/// Applies every migration newer than the database's version. Each runs in its own write
/// transaction that re-reads the version first, so processes opening a database at the same
/// moment apply each migration exactly once.
pub(crate) fn migrate(db: &mut Db) -> Result<()> {
    let migrations = match db.backend() {
        Backend::Sqlite => MIGRATIONS,
        Backend::Postgres => POSTGRES_MIGRATIONS,
    };
    for (index, (name, sql, backfill)) in migrations.iter().enumerate() {
        let target = index as u32 + 1;
        let from = version(db)?;
        if from >= target {
            continue;
        }
        let rebuilds = sql.contains(REBUILDS_TABLES);
        let additive = sql.contains(ADDITIVE);
        if let (Db::Sqlite(conn), true) = (&*db, rebuilds) {
            conn.pragma_update(None, "foreign_keys", false)?;
            conn.pragma_update(None, "legacy_alter_table", true)?;
        }
        let applied = apply(db, target, name, sql, *backfill, rebuilds, additive);
        if let (Db::Sqlite(conn), true) = (&*db, rebuilds) {
            conn.pragma_update(None, "legacy_alter_table", false)?;
            conn.pragma_update(None, "foreign_keys", true)?;
        }
        // A failure of the migration's own statements (a table already there, one missing) says
        // the tables do not match the recorded version; the rest (no privilege, a full disk, a
        // busy or unreachable server) say what they say.
        applied.map_err(|e| match e {
            super::Error::Sqlite(e) if super::error::Failure::of(&e) == super::error::Failure::Other => {
                super::Error::Migration {
                    from,
                    to: target,
                    name: name.to_string(),
                    message: super::error::sqlite_message(&e),
                }
            }
            super::Error::Postgres(ref p)
                if p.as_db_error().is_some()
                    && super::error::Failure::of_postgres(p) == super::error::Failure::Other =>
            {
                super::Error::Migration {
                    from,
                    to: target,
                    name: name.to_string(),
                    message: super::error::postgres_message(p),
                }
            }
            other => other,
        })?;
    }
    Ok(())
}

/// Applies migration `target` (`name`, `sql`, then `backfill`) in one write transaction, unless
/// another process applied it first.
fn apply(
    db: &mut Db,
    target: u32,
    name: &str,
    sql: &str,
    backfill: Option<Backfill>,
    rebuilds: bool,
    additive: bool,
) -> Result<()> {
    {
        let tx = db.transaction()?;
        if version(&tx)? >= target {
            return Ok(());
        }
        if let Db::Sqlite(conn) = &*tx
            && target == 1
        {
            conn.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        tx.execute_batch(sql)?;
        if let Some(backfill) = backfill {
            let what = format!("upgrading the database ({name})");
            backfill(&tx, &mut |done, total| {
                if let Some(progress) = PROGRESS.get() {
                    progress(&what, done, total);
                }
            })?;
        }
        if rebuilds {
            let broken: Option<String> = tx.query_opt(
                "SELECT \"table\" || ' row ' || rowid || ' refers to a missing ' || parent FROM pragma_foreign_key_check",
                params![],
                |r| r.get(0),
            )?;
            if let Some(broken) = broken {
                return Err(super::Error::Corrupt { table: "(foreign keys)", message: format!("{name}: {broken}") });
            }
        }
        match &*tx {
            Db::Sqlite(conn) => conn.pragma_update(None, "user_version", target)?,
            Db::Postgres(_) if target >= COMPATIBILITY_SINCE => {
                // An additive migration keeps the builds the schema before it served.
                let before: Option<u32> =
                    tx.query_opt("SELECT coalesce(compatible_from, version) FROM seshat_schema", params![], |r| {
                        r.get(0)
                    })?;
                let compatible = if additive { before.unwrap_or(target) } else { target };
                tx.execute("DELETE FROM seshat_schema", params![])?;
                tx.execute(
                    "INSERT INTO seshat_schema (version, compatible_from) VALUES (?1, ?2)",
                    params![target, compatible],
                )?;
            }
            Db::Postgres(_) => {
                tx.execute("DELETE FROM seshat_schema", params![])?;
                tx.execute("INSERT INTO seshat_schema (version) VALUES (?1)", params![target])?;
            }
        }
        tx.commit_at("migration")?;
    }
    Ok(())
}
