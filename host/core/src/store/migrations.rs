//! Schema migrations: numbered SQL files, applied in order, one transaction each, tracked by
//! `PRAGMA user_version`.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::Result;

/// Seshat's `PRAGMA application_id` ("SESH"), written by the first migration.
pub const APPLICATION_ID: i32 = 0x5345_5348;

/// Work a migration does after its SQL, inside the same transaction: filling what the SQL made
/// from existing rows in batches, reporting progress as it goes.
type Backfill = fn(&Transaction<'_>, &mut dyn FnMut(u64, u64)) -> Result<()>;

/// The migrations, in order; migration `i` (1-based) brings the schema to version `i`.
const MIGRATIONS: &[(&str, &str, Option<Backfill>)] = &[
    ("0001_init", include_str!("migrations/0001_init.sql"), None),
    ("0002_compaction", include_str!("migrations/0002_compaction.sql"), None),
    ("0003_memory", include_str!("migrations/0003_memory.sql"), None),
    ("0004_model_windows", include_str!("migrations/0004_model_windows.sql"), None),
    ("0005_history_index", include_str!("migrations/0005_history_index.sql"), Some(index_history)),
    ("0006_pins_and_undo", include_str!("migrations/0006_pins_and_undo.sql"), None),
    ("0007_plugin_provenance", include_str!("migrations/0007_plugin_provenance.sql"), None),
    ("0008_knowledge", include_str!("migrations/0008_knowledge.sql"), None),
    ("0009_vectors", include_str!("migrations/0009_vectors.sql"), None),
    ("0010_stemmed_search", include_str!("migrations/0010_stemmed_search.sql"), None),
    ("0011_branches", include_str!("migrations/0011_branches.sql"), None),
];

/// Messages indexed per statement by [`index_history`].
const INDEX_BATCH: i64 = 2_000;

/// Indexes the messages written before the history index existed, a batch of ids at a time.
fn index_history(tx: &Transaction<'_>, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
    let (total, last): (u64, i64) =
        tx.query_row("SELECT count(*), coalesce(max(id), 0) FROM messages", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let mut read = tx.prepare("SELECT id, parts FROM messages WHERE id > ?1 AND id <= ?2")?;
    let mut insert = tx.prepare("INSERT INTO message_fts (rowid, text) VALUES (?1, ?2)")?;
    let (mut from, mut done) = (0i64, 0u64);
    while from < last {
        let rows: Vec<(i64, String)> = read
            .query_map([from, from + INDEX_BATCH], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, parts) in rows {
            let parts: Vec<crate::conversation::Part> = serde_json::from_str(&parts)
                .map_err(|e| super::Error::Corrupt { table: "messages", message: format!("message {id}: {e}") })?;
            insert.execute(rusqlite::params![id, super::history::index_text(&parts)])?;
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

/// The schema version this binary writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// Reads `PRAGMA user_version`.
pub fn version(conn: &Connection) -> Result<u32> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

/// Applies every migration newer than the database's version. Each runs in its own `BEGIN
/// IMMEDIATE` transaction that re-reads the version first, so processes opening a database at the
/// same moment apply each migration exactly once.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    for (index, (name, sql, backfill)) in MIGRATIONS.iter().enumerate() {
        let target = index as u32 + 1;
        if version(conn)? >= target {
            continue;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if version(&tx)? >= target {
            continue;
        }
        if target == 1 {
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
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
        tx.pragma_update(None, "user_version", target)?;
        crate::crash_point::commit(tx, "migration")?;
    }
    Ok(())
}
