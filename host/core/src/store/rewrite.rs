//! Redacting what a store already holds ([`Store::redact_session`]): a session's messages (their
//! history-index rows made again, their vectors queued again), title, compactions, trims and
//! draft, rewritten under the store's policy in one transaction per session — a process killed
//! part-way leaves each session either rewritten or as it was, and running again goes on (a
//! placeholder is never redacted again).

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::Serialize;

use super::db::{Backend, Tx, params};
use super::redaction_key::Redacting;
use super::{Error, Result, Store, now_ms};
use crate::conversation::Part;
use crate::redaction::{Scrub, owned};

/// What redacting one session found and changed (or, on a dry run, would change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Redacted {
    /// The session.
    pub session: String,
    /// Messages whose parts were rewritten.
    pub messages: u64,
    /// Other records rewritten: the title, compactions, trims, the draft.
    pub records: u64,
    /// Credentials replaced, by rule.
    pub rules: BTreeMap<String, u64>,
    /// Nothing was written (a dry run).
    pub dry_run: bool,
    /// The session's project is one redaction is off for: nothing was looked at.
    pub skipped: bool,
}

/// A compaction's summary, instructions and error.
type CompactionTexts = [Option<String>; 3];

/// The trigger keeping a SQLite file's messages append-only, which a rewrite lifts for its own
/// transaction.
const SQLITE_APPEND_ONLY: &str = "messages_append_only_update";

impl Store {
    /// Redacts what `session` (the caller's) already holds under the store's policy: see the
    /// module's documentation. A `dry_run` counts what would change and writes nothing.
    pub fn redact_session(&mut self, session: &str, dry_run: bool) -> Result<Redacted> {
        let redacting = Redacting { policy: &self.redaction, key: &self.key };
        let user = self.user.clone();
        let result = (|| {
            let tx = self.db.row_locked_transaction()?;
            let project: String = tx
                .query_opt("SELECT project FROM sessions WHERE id = ?1 AND owner = ?2", params![session, user], |r| {
                    r.get(0)
                })?
                .ok_or_else(|| Error::SessionNotFound(session.to_string()))?;
            let mut out = Redacted { session: session.to_string(), dry_run, ..Redacted::default() };
            let Some(scrub) = redacting.scrub(&tx, &project)? else {
                out.skipped = true;
                return Ok(out);
            };
            let counts = RefCell::new(BTreeMap::new());
            rewrite(&tx, session, scrub.counting(&counts), &mut out)?;
            out.rules = counts.into_inner();
            if dry_run {
                drop(tx);
            } else {
                tx.commit_at("redact")?;
            }
            Ok(out)
        })();
        result.map_err(|e: Error| e.at(&self.location, "redact a session"))
    }
}

impl Store {
    /// After a rewrite or a purge: what a SQLite file kept of the old text is overwritten — the
    /// word index's segments merged (its deleted words leave), the WAL written back and truncated
    /// (the rewrite ran with `secure_delete`, so freed pages were zeroed). On PostgreSQL the rows
    /// the rewrite replaced are vacuumed; the server's WAL and any backup keep older copies until
    /// they are recycled.
    pub fn scrub_leftovers(&mut self) -> Result<()> {
        on_db!(self, "overwrite what the rewrite replaced", {
            match self.db.backend() {
                Backend::Sqlite => self.db.execute_batch(
                    "INSERT INTO message_fts (message_fts) VALUES ('optimize'); PRAGMA wal_checkpoint(TRUNCATE);",
                ),
                Backend::Postgres => self.db.execute_batch(
                    "VACUUM messages, message_search, message_vectors, compactions, trims, drafts, sessions, \
                     memory_entities, memory_observations, memory_relations, memory_notes",
                ),
            }
        })
    }
}

/// Rewrites `session`'s records inside `tx`, counting in `out`.
fn rewrite(tx: &Tx<'_>, session: &str, scrub: Scrub<'_>, out: &mut Redacted) -> Result<()> {
    let corrupt = |e: serde_json::Error| Error::Corrupt { table: "messages", message: e.to_string() };
    // The session's own messages (a fork's inherited ones are its parent's, redacted with it).
    let rows: Vec<(i64, u64, String)> = tx.query_vec(
        "SELECT id, seq, parts FROM messages WHERE session_id = ?1 ORDER BY seq",
        params![session],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let rows_seq: std::collections::HashMap<i64, u64> = rows.iter().map(|(id, seq, _)| (*id, *seq)).collect();
    let mut changed: Vec<(i64, Vec<Part>)> = Vec::new();
    for (id, _, parts) in rows {
        let parts: Vec<Part> = serde_json::from_str(&parts).map_err(corrupt)?;
        if let Some(redacted) = scrub.parts(&parts) {
            changed.push((id, redacted));
        }
    }
    out.messages = changed.len() as u64;
    if !changed.is_empty() {
        if tx.backend() == Backend::Sqlite {
            // Freed space is zeroed, so the old text does not stay in the file's free pages.
            tx.execute_batch("PRAGMA secure_delete = ON")?;
        }
        let trigger = lift_append_only(tx)?;
        let history =
            tx.query_opt("SELECT 1 FROM vector_indexes WHERE corpus = 'history' AND enabled = 1", params![], |r| {
                r.get::<i64>(0)
            })?;
        for (id, parts) in &changed {
            let json = serde_json::to_string(parts).map_err(corrupt)?;
            tx.execute("UPDATE messages SET parts = ?2 WHERE id = ?1", params![id, json])?;
            match tx.backend() {
                Backend::Sqlite => tx.execute("DELETE FROM message_fts WHERE rowid = ?1", params![id])?,
                Backend::Postgres => tx.execute("DELETE FROM message_search WHERE message_id = ?1", params![id])?,
            };
            super::history::index(tx, *id, &super::history::index_text(parts))?;
            tx.execute("DELETE FROM message_vectors WHERE message_id = ?1", params![id])?;
            if history.is_some() {
                tx.execute(
                    "INSERT INTO embed_queue (corpus, item, queued_at) VALUES ('history', ?1, ?2) \
                     ON CONFLICT (corpus, item) DO NOTHING",
                    params![id, now_ms()],
                )?;
            }
        }
        if let Some(sql) = trigger {
            tx.execute_batch(&sql)?;
        }
    }
    // The title, the compactions' texts, the trims' replacements and the draft.
    let mut records = 0;
    let title: Option<String> = tx.query_value("SELECT title FROM sessions WHERE id = ?1", params![session])?;
    if let Some(t) = title.as_deref().and_then(|t| owned(scrub.title(t))) {
        tx.execute("UPDATE sessions SET title = ?2 WHERE id = ?1", params![session, t])?;
        records += 1;
    }
    let compactions: Vec<(i64, CompactionTexts)> = tx.query_vec(
        "SELECT id, summary, instructions, error FROM compactions WHERE session_id = ?1",
        params![session],
        |r| Ok((r.get(0)?, [r.get(1)?, r.get(2)?, r.get(3)?])),
    )?;
    for (id, [summary, instructions, error]) in compactions {
        let redo = |t: &Option<String>| t.as_deref().and_then(|t| owned(scrub.text(t)));
        let (s, i, e) = (redo(&summary), redo(&instructions), redo(&error));
        if s.is_some() || i.is_some() || e.is_some() {
            tx.execute(
                "UPDATE compactions SET summary = ?2, instructions = ?3, error = ?4 WHERE id = ?1",
                params![id, s.or(summary), i.or(instructions), e.or(error)],
            )?;
            records += 1;
        }
    }
    let trims: Vec<(i64, u64, u32, String)> =
        tx.query_vec("SELECT id, seq, part, replacement FROM trims WHERE session_id = ?1", params![session], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    for (id, seq, part, replacement) in trims {
        if let Some(r) = owned(scrub.text(&replacement)) {
            tx.execute("UPDATE trims SET replacement = ?2, new_size = ?3 WHERE id = ?1", params![id, r, r.len()])?;
            records += 1;
        }
        // A trimmed result this rewrite changed: the trim records its size as it now is (what an
        // export says, and an import checks).
        let rewritten = changed.iter().find(|(row, _)| rows_seq.get(row) == Some(&seq));
        if let Some((_, parts)) = rewritten
            && let Some(Part::ToolResult { content, .. }) = parts.get(part as usize)
        {
            tx.execute("UPDATE trims SET original_size = ?2 WHERE id = ?1", params![id, content.len()])?;
        }
    }
    let draft: Option<String> =
        tx.query_opt("SELECT text FROM drafts WHERE session_id = ?1", params![session], |r| r.get(0))?;
    if let Some(d) = draft.as_deref().and_then(|d| owned(scrub.text(d))) {
        tx.execute("UPDATE drafts SET text = ?2 WHERE session_id = ?1", params![session, d])?;
        records += 1;
    }
    out.records = records;
    Ok(())
}

/// Lets `tx` replace messages' parts: SQLite's trigger is dropped until the caller runs the SQL
/// returned (in the same transaction, so no other writer ever sees it gone); PostgreSQL's allows
/// the rewrite while `seshat.rewriting` is set for this transaction.
fn lift_append_only(tx: &Tx<'_>) -> Result<Option<String>> {
    match tx.backend() {
        Backend::Sqlite => {
            let sql: String = tx.query_value(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1",
                params![SQLITE_APPEND_ONLY],
            )?;
            tx.execute_batch(&format!("DROP TRIGGER {SQLITE_APPEND_ONLY}"))?;
            Ok(Some(format!("{sql};")))
        }
        Backend::Postgres => {
            tx.execute_batch("SET LOCAL seshat.rewriting = 'on'")?;
            Ok(None)
        }
    }
}
