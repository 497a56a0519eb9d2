//! Schema migrations: numbered SQL files, applied in order, one transaction each, tracked by
//! `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

use super::Result;

/// Seshat's `PRAGMA application_id` ("SESH"), written by the first migration.
pub const APPLICATION_ID: i32 = 0x5345_5348;

/// The migrations, in order; migration `i` (1-based) brings the schema to version `i`.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("migrations/0001_init.sql")),
    ("0002_compaction", include_str!("migrations/0002_compaction.sql")),
    ("0003_memory", include_str!("migrations/0003_memory.sql")),
    ("0004_model_windows", include_str!("migrations/0004_model_windows.sql")),
];

/// The schema version this binary writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// Reads `PRAGMA user_version`.
pub fn version(conn: &Connection) -> Result<u32> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

/// Applies every migration newer than the database's version. Each runs in its own `BEGIN
/// IMMEDIATE` transaction that re-reads the version first, so processes opening a database at the
/// same moment apply each migration exactly once.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    for (index, (_name, sql)) in MIGRATIONS.iter().enumerate() {
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
        tx.pragma_update(None, "user_version", target)?;
        tx.commit()?;
    }
    Ok(())
}
