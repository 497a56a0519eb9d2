//! Sessions: create, find by id prefix, list, delete, and the compaction-breaker fields.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};

use super::{Error, Result, Store, now_ms};
use super::{NewSession, SessionInfo};
use crate::conversation::Usage;

/// The shortest prefix `sessions list` shows.
pub const MIN_SHORT_ID: usize = 8;

/// Up to this many ids, [`Store::short_ids`] probes each id's neighbours instead of reading all.
const NEIGHBOUR_LOOKUPS_UP_TO: usize = 256;

/// Which sessions [`Store::list_sessions`] returns.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this project's sessions; `None` for every project.
    pub project: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

pub(super) const SESSION_COLUMNS: &str = "id, title, project, provider, model, context_window, \
     created_at, updated_at, message_count, input_tokens, output_tokens, cache_read_tokens, \
     cache_creation_tokens, context_tokens, compaction_failures, auto_compact_disabled, metadata, parent_id, \
     fork_seq";

pub(super) fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionInfo> {
    let metadata: String = row.get(16)?;
    Ok(SessionInfo {
        id: row.get(0)?,
        title: row.get(1)?,
        project: row.get(2)?,
        provider: row.get(3)?,
        model: row.get(4)?,
        context_window: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        message_count: row.get(8)?,
        totals: Usage {
            input_tokens: row.get(9)?,
            output_tokens: row.get(10)?,
            cache_read_tokens: row.get(11)?,
            cache_creation_tokens: row.get(12)?,
            context_tokens: None,
        },
        context_tokens: row.get(13)?,
        compaction_failures: row.get(14)?,
        auto_compact_disabled: row.get(15)?,
        metadata: serde_json::from_str(&metadata)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(16, rusqlite::types::Type::Text, Box::new(e)))?,
        parent_id: row.get(17)?,
        fork_seq: row.get(18)?,
    })
}

impl Store {
    /// Creates a session and returns it.
    pub fn create_session(&mut self, new: NewSession) -> Result<SessionInfo> {
        on_db!(self, "create a session", {
            let id = ulid::Ulid::generate().to_string();
            let now = now_ms();
            let metadata = new.metadata.unwrap_or_else(|| serde_json::json!({}));
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO sessions (id, project, provider, model, context_window, created_at, \
                 updated_at, metadata, title) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)",
                params![
                    id,
                    new.project,
                    new.provider,
                    new.model,
                    new.context_window,
                    now,
                    metadata.to_string(),
                    new.title
                ],
            )?;
            tx.commit()?;
            self.session(&id)
        })
    }

    /// The session with exactly this id.
    pub fn session(&self, id: &str) -> Result<SessionInfo> {
        on_db!(self, "read a session", {
            self.conn
                .query_row(&format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"), [id], session_from_row)
                .optional()?
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))
        })
    }

    /// Resolves a full id or any unique prefix of one (case-insensitive) to the full id.
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        on_db!(self, "find the session", {
            let wanted = prefix.trim().to_ascii_uppercase();
            if wanted.is_empty() || !wanted.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(Error::SessionNotFound(prefix.to_string()));
            }
            // Ids are upper-case Crockford base32, so every id with this prefix sorts in
            // [prefix, prefix + '~').
            let mut stmt = self
                .conn
                .prepare_cached("SELECT id FROM sessions WHERE id >= ?1 AND id < ?1 || '~' ORDER BY id LIMIT 6")?;
            let found: Vec<String> = stmt.query_map([&wanted], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            match found.len() {
                0 => Err(Error::SessionNotFound(prefix.to_string())),
                1 => Ok(found.into_iter().next().unwrap_or_default()),
                _ => Err(Error::AmbiguousSession { prefix: prefix.to_string(), candidates: found }),
            }
        })
    }

    /// Sessions, most recently updated first.
    pub fn list_sessions(&self, filter: &ListFilter) -> Result<Vec<SessionInfo>> {
        on_db!(self, "list sessions", {
            let limit = filter.limit.map_or(-1, |l| l as i64);
            let rows = match &filter.project {
                Some(project) => {
                    let mut stmt = self.conn.prepare_cached(&format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions WHERE project = ?1 \
                     ORDER BY updated_at DESC, id DESC LIMIT ?2"
                    ))?;
                    stmt.query_map(params![project, limit], session_from_row)?.collect::<rusqlite::Result<Vec<_>>>()?
                }
                None => {
                    let mut stmt = self.conn.prepare_cached(&format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?1"
                    ))?;
                    stmt.query_map(params![limit], session_from_row)?.collect::<rusqlite::Result<Vec<_>>>()?
                }
            };
            Ok(rows)
        })
    }

    /// The most recently updated session of a project (what `chat --continue` resumes).
    pub fn latest_session(&self, project: &str) -> Result<Option<SessionInfo>> {
        on_db!(self, "find the latest session", {
            let filter = ListFilter { project: Some(project.to_string()), limit: Some(1) };
            Ok(self.list_sessions(&filter)?.into_iter().next())
        })
    }

    /// For each of `ids`, the shortest prefix (at least [`MIN_SHORT_ID`] characters) that no
    /// other session in the database shares.
    pub fn short_ids(&self, ids: &[&str]) -> Result<Vec<String>> {
        on_db!(self, "shorten session ids", {
            // A short list looks up each id's two neighbours in the index; a long one reads every id
            // once.
            if ids.len() <= NEIGHBOUR_LOOKUPS_UP_TO {
                let mut before =
                    self.conn.prepare_cached("SELECT id FROM sessions WHERE id < ?1 ORDER BY id DESC LIMIT 1")?;
                let mut after =
                    self.conn.prepare_cached("SELECT id FROM sessions WHERE id > ?1 ORDER BY id LIMIT 1")?;
                return ids
                    .iter()
                    .map(|id| {
                        let b: Option<String> = before.query_row([id], |r| r.get(0)).optional()?;
                        let a: Option<String> = after.query_row([id], |r| r.get(0)).optional()?;
                        let shared = b.map_or(0, |b| common_prefix(id, &b)).max(a.map_or(0, |a| common_prefix(id, &a)));
                        Ok(short(id, shared))
                    })
                    .collect();
            }
            // One pass over the sorted ids, remembering each wanted id's neighbours (nothing else is
            // copied out of SQLite).
            let wanted: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            let mut near: Vec<(usize, usize)> = vec![(0, 0); ids.len()];
            let mut stmt = self.conn.prepare_cached("SELECT id FROM sessions ORDER BY id")?;
            let mut rows = stmt.query([])?;
            let mut previous = String::new();
            let mut pending: Option<usize> = None;
            while let Some(row) = rows.next()? {
                let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
                if let Some(i) = pending.take() {
                    near[i].1 = common_prefix(ids[i], id);
                }
                if let Some(&i) = wanted.get(id) {
                    near[i].0 = common_prefix(id, &previous);
                    pending = Some(i);
                }
                previous.clear();
                previous.push_str(id);
            }
            Ok(ids.iter().zip(near).map(|(id, (before, after))| short(id, before.max(after))).collect())
        })
    }

    /// Deletes a session with its messages, compactions and trims. The only way an original
    /// message is ever removed. Its forks stay whole: each first takes its own copy of the
    /// messages it read from this session (indexed for search, with their vectors).
    pub fn delete_session(&mut self, id: &str) -> Result<()> {
        on_db!(self, "delete a session", {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            for (child, _) in super::lineage::children(&tx, id)? {
                adopt(&tx, &child)?;
            }
            let n = tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
            tx.commit()?;
            if n == 0 {
                return Err(Error::SessionNotFound(id.to_string()));
            }
            Ok(())
        })
    }

    /// Records which model and window a session uses from now on. When the provider or model
    /// changes, `metadata.model_since` becomes the seq of the last message written before the
    /// change: only later messages may pass reasoning back to the model.
    pub(crate) fn set_session_model(
        &mut self,
        id: &str,
        provider: Option<&str>,
        model: Option<&str>,
        context_window: Option<u64>,
    ) -> Result<()> {
        on_db!(self, "record the session's model", {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute(
                "UPDATE sessions SET metadata = CASE WHEN provider IS NOT ?2 OR model IS NOT ?3 \
             THEN json_set(metadata, '$.model_since', message_count) ELSE metadata END, \
             provider = ?2, model = ?3, context_window = ?4, updated_at = ?5 WHERE id = ?1",
                params![id, provider, model, context_window, now_ms()],
            )?;
            tx.commit()?;
            if n == 0 {
                return Err(Error::SessionNotFound(id.to_string()));
            }
            Ok(())
        })
    }

    /// Records how a model's real token counts compare with Seshat's estimate in this session
    /// (`metadata.calibration.<model>`: real / estimated, from usage or a refusal's figure) and,
    /// when given, its factors by kind of content (`metadata.calibration_kinds.<model>`, a JSON
    /// object), in one write.
    pub(crate) fn set_calibration(
        &mut self,
        id: &str,
        model: &str,
        ratio: f64,
        kinds: Option<&serde_json::Value>,
    ) -> Result<()> {
        on_db!(self, "record the calibration", {
            let n = self.conn.execute(
                "UPDATE sessions SET metadata = CASE WHEN ?4 IS NULL \
                 THEN json_set(metadata, '$.calibration.' || json_quote(?2), ?3) \
                 ELSE json_set(metadata, '$.calibration.' || json_quote(?2), ?3, \
                 '$.calibration_kinds.' || json_quote(?2), json(?4)) END WHERE id = ?1",
                params![id, model, ratio, kinds.map(serde_json::Value::to_string)],
            )?;
            if n == 0 {
                return Err(Error::SessionNotFound(id.to_string()));
            }
            Ok(())
        })
    }
}

/// How many leading bytes two ids share.
/// Gives `child` its own copy of the messages it reads from its parent (the parent's segment of
/// its lineage), and makes it a fork of the parent's parent at that segment's start (or of
/// none): its history reads the same without the parent.
fn adopt(tx: &rusqlite::Transaction<'_>, child: &str) -> Result<()> {
    let segments = super::lineage::lineage(tx, child)?;
    let [.., from_parent, _] = segments.as_slice() else { return Ok(()) };
    let grandparent = segments.len().checked_sub(3).map(|i| segments[i].session.clone());
    let rows: Vec<(i64, String)> = tx
        .prepare("SELECT id, parts FROM messages WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq")?
        .query_map(params![from_parent.session, from_parent.after, from_parent.through], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut copy = tx.prepare(
        "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
         SELECT ?1, seq, role, parts, usage, status, created_at FROM messages WHERE id = ?2",
    )?;
    let mut index = tx.prepare("INSERT INTO message_fts (rowid, text) VALUES (?1, ?2)")?;
    let mut vector = tx.prepare(
        "INSERT INTO message_vectors (message_id, vector) SELECT ?1, vector FROM message_vectors WHERE message_id = ?2",
    )?;
    for (old, parts) in rows {
        copy.execute(params![child, old])?;
        let new = tx.last_insert_rowid();
        let parts: Vec<crate::conversation::Part> = serde_json::from_str(&parts)
            .map_err(|e| Error::Corrupt { table: "messages", message: format!("message {old}: {e}") })?;
        index.execute(params![new, super::history::index_text(&parts)])?;
        // The copy is queued for embedding like any new message (when history is embedded): its
        // original's vector, when it had one, makes that unnecessary.
        if vector.execute(params![new, old])? > 0 {
            tx.execute("DELETE FROM embed_queue WHERE corpus = 'history' AND item = ?1", [new])?;
        }
    }
    tx.execute(
        "UPDATE sessions SET parent_id = ?2, fork_seq = ?3 WHERE id = ?1",
        params![child, grandparent, grandparent.as_ref().map(|_| from_parent.after)],
    )?;
    Ok(())
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The prefix of `id` one longer than what it shares with a neighbour, at least [`MIN_SHORT_ID`].
fn short(id: &str, shared: usize) -> String {
    id[..(shared + 1).max(MIN_SHORT_ID).min(id.len())].to_string()
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    fn store_with(ids: &[String]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        for id in ids {
            store
                .conn
                .execute(
                    "INSERT INTO sessions (id, project, created_at, updated_at, metadata) VALUES (?1, '/p', 0, 0, '{}')",
                    [id],
                )
                .unwrap();
        }
        (dir, store)
    }

    #[test]
    fn short_ids_grow_past_shared_characters_on_both_paths() {
        let four: Vec<String> =
            ["AAAAAAAAAA1", "AAAAAAAAAA2", "AAAAAAAB00", "ZZZZZZZZZZZ"].iter().map(|s| s.to_string()).collect();
        let expected = ["AAAAAAAAAA1", "AAAAAAAAAA2", "AAAAAAAB", "ZZZZZZZZ"];
        let (_dir, store) = store_with(&four);
        let asked: Vec<&str> = four.iter().map(String::as_str).collect();
        assert_eq!(store.short_ids(&asked).unwrap(), expected, "neighbour lookups");

        // More ids than the neighbour lookups serve: the one-pass path must agree.
        let mut many = four.clone();
        many.extend((0..300).map(|i| format!("M{i:010}")));
        let (_dir, store) = store_with(&many);
        let asked: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(asked.len() > super::NEIGHBOUR_LOOKUPS_UP_TO);
        let shorts = store.short_ids(&asked).unwrap();
        assert_eq!(&shorts[..4], expected, "one pass");
        assert_eq!(shorts[4], "M0000000000", "ids sharing ten characters need eleven");
        assert_eq!(shorts.len(), many.len());
    }
}
