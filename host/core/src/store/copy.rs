//! Copying a whole store to another, whichever backends they are on (a SQLite file to a shared
//! PostgreSQL database, and back): every table row for row with its ids, in one transaction on
//! the target, the word indexes rebuilt there from what they index. The target must be empty.

use super::db::{Backend, Db, Param, Row, Value, params};
use super::{Error, Result, Store};

/// The tables whose ids are text (made by Seshat, not by an identity column).
const TEXT_IDS: &[&str] = &["sessions", "tokens"];

/// The tables, parents before children, with the columns both schemas share. The vector
/// indexes come after the rows they cover, so that the target's triggers queue nothing the
/// source had not queued (the queue is copied as it is).
const TABLES: &[(&str, &str)] = &[
    ("users", "name, created_at, admin, disabled_at"),
    ("teams", "name, created_at, review"),
    ("team_members", "team, user_name, access, granted_at, reviewer"),
    ("tokens", "id, user_name, salt, hash, read_only, created_at, expires_at, revoked_at, last_used_at"),
    (
        "sessions",
        "id, title, project, provider, model, context_window, created_at, updated_at, message_count, input_tokens, \
         output_tokens, cache_read_tokens, cache_creation_tokens, context_tokens, metadata, compaction_failures, \
         auto_compact_disabled, parent_id, fork_seq, owner",
    ),
    ("messages", "id, session_id, seq, role, parts, usage, status, created_at"),
    ("drafts", "session_id, after, text, updated_at"),
    ("turn_keys", "id, session_id, key, seq, created_at"),
    (
        "compactions",
        "id, session_id, trigger, tokens_before, tokens_after, through_seq, first_kept_seq, pinned_seq, summary, \
         model, status, error, created_at, instructions, plugin, plugin_sha256, made_seq",
    ),
    (
        "trims",
        "id, session_id, seq, part, original_size, new_size, replacement, created_at, plugin, plugin_sha256, made_seq",
    ),
    ("retractions", "id, session_id, compaction_id, first_trim, last_trim, created_at, made_seq"),
    ("pins", "id, session_id, seq, created_at, made_seq, removed_seq"),
    ("rewinds", "id, session_id, from_seq, through_seq, made_seq, created_at, undone_at, retractions"),
    ("model_windows", "base_url, model, context_window, max_output_tokens, source, learnt_at"),
    ("server_models", "base_url, model, used_at"),
    ("memory_sources", "id, kind, user_name, session, seq, plugin, created_at"),
    ("memory_deletions", "id, origin, summary, created_at, restored_at, owner, source_id"),
    (
        "memory_entities",
        "id, scope, project, owner, name, name_key, entity_type, staged, created_at, updated_at, deleted_by, \
         source_id, expires_at",
    ),
    (
        "memory_observations",
        "id, entity_id, content, created_at, deleted_by, source_id, valid_until, superseded_by, conflicts_with",
    ),
    (
        "memory_relations",
        "id, scope, project, owner, from_name, from_key, to_name, to_key, relation_type, created_at, deleted_by, \
         source_id",
    ),
    ("memory_notes", "id, scope, project, owner, key, value, updated_at, source_id, expires_at"),
    ("memory_versions", "id, entity_id, version, change, state, source_id, created_at"),
    ("memory_proposals", "id, team, tool, params, source_id, status, decided_by, decided_at, reason, created_at"),
    ("documents", "id, scope, project, owner, path, kind, sha256, bytes, indexed_at"),
    ("chunks", "id, document_id, ordinal, start_line, end_line, heading, text, tokens"),
    ("chunk_vectors", "chunk_id, vector"),
    ("message_vectors", "message_id, vector"),
    ("entity_vectors", "entity_id, vector"),
    ("vector_indexes", "corpus, embedder, model, dimensions, generation, enabled, created_at"),
    ("embed_queue", "corpus, item, queued_at, attempts, claimed_until, claimed_by"),
    ("audit_events", "id, at, event, user_name, token, peer, method, target, code, detail"),
];

/// Rows read per query from the source (a table is read in pages of its key, so that a large
/// one is never held whole).
const PAGE: i64 = 1_000;

/// What [`Store::copy_to`] copied: rows per table, in copy order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Copied {
    /// `(table, rows)`.
    pub tables: Vec<(String, u64)>,
}

/// A column's value read from the source, owned until it is written to the target.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Owned {
    fn of(row: &Row<'_>, i: usize) -> Result<Self> {
        Ok(match row.value(i)? {
            Value::Null => Owned::Null,
            Value::Int(n) => Owned::Int(n),
            Value::Real(f) => Owned::Real(f),
            Value::Blob(b) => Owned::Blob(b.to_vec()),
            Value::Text(_) | Value::EscapedText(_) => Owned::Text(row.get(i)?),
            Value::OutOfRange(u) => {
                return Err(Error::Column { index: i, message: format!("{u} is out of range") });
            }
        })
    }
}

impl Param for Owned {
    fn value(&self) -> Value<'_> {
        match self {
            Owned::Null => Value::Null,
            Owned::Int(n) => Value::Int(*n),
            Owned::Real(f) => Value::Real(*f),
            Owned::Text(s) => Value::Text(s),
            Owned::Blob(b) => Value::Blob(b),
        }
    }
}

impl Store {
    /// Copies everything in this store to `target`, which must hold nothing yet; all or nothing.
    /// The source is read in one snapshot (a moment of it, whatever its writers do meanwhile),
    /// the target written in one transaction, and the copy compared with that moment
    /// ([`Store::differences`]) before the target commits: a copy that differs is rolled back,
    /// leaving the target empty. `progress` hears (table, rows copied, rows in the table) as it
    /// goes.
    pub fn copy_to(&mut self, target: &mut Store, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<Copied> {
        let location = target.location.clone();
        self.db.begin_snapshot().map_err(|e| e.at(&self.location, "read the store to copy"))?;
        let copied = (|| {
            target.db.begin_write()?;
            let copied = fill(&self.db, &target.db, &location, progress);
            let verified = copied.and_then(|copied| {
                let differences = self.differences(target)?;
                if differences.is_empty() {
                    Ok(copied)
                } else {
                    Err(Error::Refused(format!(
                        "the copy in {location} differs from the source: {}; nothing was written to {location}",
                        differences.join("; ")
                    )))
                }
            });
            match verified {
                Ok(copied) => {
                    crate::crash_point::reach("copy");
                    target.db.execute_batch("COMMIT")?;
                    Ok(copied)
                }
                Err(e) => {
                    let _ = target.db.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })();
        let _ = self.db.execute_batch("COMMIT");
        copied.map_err(|e: Error| e.at(&location, "copy the store"))
    }
}

/// Copies every table of `source` into `target` (inside the caller's transaction on each).
fn fill(
    source: &Db,
    target: &Db,
    location: &super::Location,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Copied> {
    for (table, _) in TABLES {
        // Every store starts with its local user.
        let sql = match *table {
            "users" => format!("SELECT count(*) FROM {table} WHERE name <> '{}'", super::LOCAL_USER),
            _ => format!("SELECT count(*) FROM {table}"),
        };
        let n: i64 = target.query_value(&sql, params![])?;
        if n > 0 {
            return Err(Error::Refused(format!(
                "the target store {location} is not empty ({table} has {n} rows): copy into a new, empty \
                 store; nothing was copied"
            )));
        }
    }
    target.execute("DELETE FROM users", params![])?;
    let mut copied = Copied::default();
    for (table, columns) in TABLES {
        let total: u64 = source.query_value(&format!("SELECT count(*) FROM {table}"), params![])?;
        let rows = copy_table(source, target, table, columns, total, progress)?;
        copied.tables.push((table.to_string(), rows));
    }
    index_history(source, target, progress)?;
    if target.backend() == Backend::Postgres {
        // Rows came with their ids: the identity columns go on after the highest.
        for (table, columns) in TABLES {
            if columns.starts_with("id,") && !TEXT_IDS.contains(table) {
                target.query_value::<i64>(
                    &format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                         coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
                    ),
                    params![],
                )?;
            }
        }
    }
    Ok(copied)
}

impl Store {
    /// What differs between this store and `other`, after a copy: every session's export (byte
    /// for byte) and every row of every table (the memory graph, notes, documents, vectors and
    /// queue included) must be the same; each difference found is named (none: an empty list).
    /// Every user's sessions are compared, each exported as its owner.
    pub fn differences(&mut self, other: &mut Store) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let ids = |store: &Store| -> Result<Vec<(String, String)>> {
            store.db.query_vec("SELECT id, owner FROM sessions ORDER BY id", params![], |r| Ok((r.get(0)?, r.get(1)?)))
        };
        let (mine, theirs) = (ids(self)?, ids(other)?);
        if mine != theirs {
            out.push(format!("the sessions differ: {} here, {} there", mine.len(), theirs.len()));
        }
        let callers = (self.user.clone(), other.user.clone());
        let exports = (|| -> Result<()> {
            for (id, owner) in mine.iter().filter(|s| theirs.contains(s)) {
                self.user.clone_from(owner);
                other.user.clone_from(owner);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                self.export(id, &mut a)?;
                other.export(id, &mut b)?;
                if a != b {
                    out.push(format!("session {id} exports differently"));
                }
            }
            Ok(())
        })();
        (self.user, other.user) = callers;
        exports?;
        for (table, columns) in TABLES {
            let width = columns.split(',').count();
            let key = columns.split(',').next().unwrap_or("id").trim();
            let sql = format!("SELECT {columns} FROM {table} ORDER BY {key}");
            // Rows keyed by text are put in one order here: the backends' collations differ.
            let rows = |store: &Store| -> Result<Vec<Vec<Owned>>> {
                let mut rows: Vec<Vec<Owned>> =
                    store.db.query_vec(&sql, params![], |r| (0..width).map(|i| Owned::of(r, i)).collect())?;
                if !rows.iter().all(|r| matches!(r.first(), Some(Owned::Int(_)))) {
                    rows.sort_by_cached_key(|r| format!("{r:?}"));
                }
                Ok(rows)
            };
            let (a, b) = (rows(self)?, rows(other)?);
            if a != b {
                let first = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                out.push(format!(
                    "{table} differs ({} rows here, {} there; first at row {})",
                    a.len(),
                    b.len(),
                    first + 1
                ));
            }
        }
        Ok(out)
    }
}

/// Copies one table's rows, a page of its key at a time, reporting progress.
fn copy_table(
    source: &Db,
    target: &Db,
    table: &str,
    columns: &str,
    total: u64,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<u64> {
    let width = columns.split(',').count();
    let key = columns.split(',').next().unwrap_or("id").trim();
    let marks: Vec<String> = (1..=width).map(|i| format!("?{i}")).collect();
    let insert = format!("INSERT INTO {table} ({columns}) VALUES ({})", marks.join(", "));
    // Tables keyed by an integer are read in pages of it; the few others (sessions by their text
    // id, the small keyed-by-name tables) whole, in key order.
    let paged = matches!(key, "id" | "chunk_id" | "message_id" | "entity_id") && !TEXT_IDS.contains(&table);
    let mut done = 0u64;
    let mut after = i64::MIN;
    loop {
        let rows: Vec<Vec<Owned>> = if paged {
            source.query_vec(
                &format!("SELECT {columns} FROM {table} WHERE {key} > ?1 ORDER BY {key} LIMIT {PAGE}"),
                params![after],
                |r| (0..width).map(|i| Owned::of(r, i)).collect(),
            )?
        } else {
            source.query_vec(&format!("SELECT {columns} FROM {table} ORDER BY {key}"), params![], |r| {
                (0..width).map(|i| Owned::of(r, i)).collect()
            })?
        };
        for row in &rows {
            let bound: Vec<&dyn Param> = row.iter().map(|v| v as &dyn Param).collect();
            target.execute(&insert, &bound)?;
        }
        done += rows.len() as u64;
        progress(table, done, total);
        match rows.last().map(|r| &r[0]) {
            Some(Owned::Int(last)) if paged && rows.len() as i64 == PAGE => after = *last,
            _ => return Ok(done),
        }
    }
}

/// Fills the target's history index from the messages copied (the index holds what
/// [`super::history::index_text`] makes of each, on either backend).
fn index_history(source: &Db, target: &Db, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
    let total: u64 = source.query_value("SELECT count(*) FROM messages", params![])?;
    let (mut after, mut done) = (0i64, 0u64);
    loop {
        let rows: Vec<(i64, String)> = source.query_vec(
            &format!("SELECT id, parts FROM messages WHERE id > ?1 ORDER BY id LIMIT {PAGE}"),
            params![after],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, parts) in &rows {
            let parts: Vec<crate::conversation::Part> = serde_json::from_str(parts)
                .map_err(|e| Error::Corrupt { table: "messages", message: format!("message {id}: {e}") })?;
            super::history::index(target, *id, &super::history::index_text(&parts))?;
        }
        done += rows.len() as u64;
        progress("the history index", done, total);
        match rows.last() {
            Some((last, _)) if rows.len() as i64 == PAGE => after = *last,
            _ => return Ok(()),
        }
    }
}
