//! Sessions: create, find by id prefix, list, delete, and the compaction-breaker fields.

use std::collections::HashMap;

use super::db::{Db, Row, Tx, params};
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

pub(super) fn session_from_row(row: &Row<'_>) -> Result<SessionInfo> {
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
            .map_err(|e| Error::Corrupt { table: "sessions", message: format!("metadata: {e}") })?,
        parent_id: row.get(17)?,
        fork_seq: row.get(18)?,
    })
}

/// Refuses `session` unless `user` owns it ([`Error::SessionNotFound`], as for a session that
/// does not exist: another user's ids reveal nothing). Every operation on one session makes this
/// check in the transaction or snapshot it works in, before it reads or writes anything else.
pub(super) fn owned(db: &Db, session: &str, user: &str) -> Result<()> {
    db.query_opt("SELECT 1 FROM sessions WHERE id = ?1 AND owner = ?2", params![session, user], |r| r.get::<i64>(0))?
        .map(|_| ())
        .ok_or_else(|| Error::SessionNotFound(session.to_string()))
}

impl Store {
    /// Who owns the session `id`, whoever the caller is (`None`: no such session). For an
    /// operator's work across users (a merge); never answered to a network client.
    pub(crate) fn session_holder(&self, id: &str) -> Result<Option<String>> {
        on_db!(self, "read a session's owner", {
            self.db.query_opt("SELECT owner FROM sessions WHERE id = ?1", params![id], |r| r.get(0))
        })
    }

    /// Creates a session, owned by the caller, and returns it.
    pub fn create_session(&mut self, new: NewSession) -> Result<SessionInfo> {
        on_db!(self, "create a session", {
            let id = ulid::Ulid::generate().to_string();
            let now = now_ms();
            let metadata = new.metadata.unwrap_or_else(|| serde_json::json!({}));
            let title = match (&new.title, self.scrub(&new.project)?) {
                (Some(t), Some(s)) => Some(s.title(t).into_owned()),
                (t, _) => t.clone(),
            };
            let tx = self.db.transaction()?;
            tx.execute(
                "INSERT INTO sessions (id, project, provider, model, context_window, created_at, \
                 updated_at, metadata, title, owner) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9)",
                params![
                    id,
                    new.project,
                    new.provider,
                    new.model,
                    new.context_window,
                    now,
                    metadata.to_string(),
                    title,
                    self.user
                ],
            )?;
            tx.commit()?;
            self.session(&id)
        })
    }

    /// The session with exactly this id (the caller's).
    pub fn session(&self, id: &str) -> Result<SessionInfo> {
        on_db!(self, "read a session", {
            self.db
                .query_opt(
                    &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1 AND owner = ?2"),
                    params![id, self.user],
                    session_from_row,
                )?
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))
        })
    }

    /// Resolves a full id or any unique prefix of one (case-insensitive) to the full id, among the
    /// caller's sessions.
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        on_db!(self, "find the session", {
            let wanted = prefix.trim().to_ascii_uppercase();
            if wanted.is_empty() || !wanted.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(Error::SessionNotFound(prefix.to_string()));
            }
            // Ids are upper-case Crockford base32, so every id with this prefix sorts in
            // [prefix, prefix + '~').
            let found: Vec<String> = self.db.query_vec(
                "SELECT id FROM sessions WHERE id >= ?1 AND id < ?1 || '~' AND owner = ?2 ORDER BY id LIMIT 6",
                params![wanted, self.user],
                |r| r.get(0),
            )?;
            match found.len() {
                0 => Err(Error::SessionNotFound(prefix.to_string())),
                1 => Ok(found.into_iter().next().unwrap_or_default()),
                _ => Err(Error::AmbiguousSession { prefix: prefix.to_string(), candidates: found }),
            }
        })
    }

    /// The caller's sessions, most recently updated first.
    pub fn list_sessions(&self, filter: &ListFilter) -> Result<Vec<SessionInfo>> {
        on_db!(self, "list sessions", {
            let limit = filter.limit.map_or(i64::MAX, |l| l as i64);
            match &filter.project {
                Some(project) => self.db.query_vec(
                    &format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions WHERE owner = ?3 AND project = ?1 \
                         ORDER BY updated_at DESC, id DESC LIMIT ?2"
                    ),
                    params![project, limit, self.user],
                    session_from_row,
                ),
                None => self.db.query_vec(
                    &format!(
                        "SELECT {SESSION_COLUMNS} FROM sessions WHERE owner = ?2 \
                         ORDER BY updated_at DESC, id DESC LIMIT ?1"
                    ),
                    params![limit, self.user],
                    session_from_row,
                ),
            }
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
    /// other session of the caller's shares.
    pub fn short_ids(&self, ids: &[&str]) -> Result<Vec<String>> {
        on_db!(self, "shorten session ids", {
            // A short list looks up each id's two neighbours in the index; a long one reads every id
            // once.
            if ids.len() <= NEIGHBOUR_LOOKUPS_UP_TO {
                return ids
                    .iter()
                    .map(|id| {
                        let b: Option<String> = self.db.query_opt(
                            "SELECT id FROM sessions WHERE id < ?1 AND owner = ?2 ORDER BY id DESC LIMIT 1",
                            params![id, self.user],
                            |r| r.get(0),
                        )?;
                        let a: Option<String> = self.db.query_opt(
                            "SELECT id FROM sessions WHERE id > ?1 AND owner = ?2 ORDER BY id LIMIT 1",
                            params![id, self.user],
                            |r| r.get(0),
                        )?;
                        let shared = b.map_or(0, |b| common_prefix(id, &b)).max(a.map_or(0, |a| common_prefix(id, &a)));
                        Ok(short(id, shared))
                    })
                    .collect();
            }
            // One pass over the sorted ids, remembering each wanted id's neighbours.
            let wanted: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            let mut near: Vec<(usize, usize)> = vec![(0, 0); ids.len()];
            let mut previous = String::new();
            let mut pending: Option<usize> = None;
            self.db.for_each("SELECT id FROM sessions WHERE owner = ?1 ORDER BY id", params![self.user], |row| {
                let id: String = row.get(0)?;
                if let Some(i) = pending.take() {
                    near[i].1 = common_prefix(ids[i], &id);
                }
                if let Some(&i) = wanted.get(id.as_str()) {
                    near[i].0 = common_prefix(&id, &previous);
                    pending = Some(i);
                }
                previous = id;
                Ok(true)
            })?;
            Ok(ids.iter().zip(near).map(|(id, (before, after))| short(id, before.max(after))).collect())
        })
    }

    /// Deletes a session with its messages, compactions and trims. The only way an original
    /// message is ever removed. Its forks stay whole: each first takes its own copy of the
    /// messages it read from this session (indexed for search, with their vectors).
    pub fn delete_session(&mut self, id: &str) -> Result<()> {
        on_db!(self, "delete a session", {
            let tx = self.db.transaction()?;
            owned(&tx, id, &self.user)?;
            for (child, _) in super::lineage::children(&tx, id)? {
                adopt(&tx, &child)?;
            }
            let n = tx.execute("DELETE FROM sessions WHERE id = ?1 AND owner = ?2", params![id, self.user])?;
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
            let tx = self.db.transaction()?;
            let (old_provider, old_model, old_window, count): (Option<String>, Option<String>, Option<u64>, u64) = tx
                .query_opt(
                    "SELECT provider, model, context_window, message_count FROM sessions WHERE id = ?1 AND owner = ?2",
                    params![id, self.user],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            // Opened as it was (resumed only to look at it): nothing changes, not even when it was
            // last used, so `--continue` still opens the session the user last worked in.
            if old_provider.as_deref() == provider && old_model.as_deref() == model && old_window == context_window {
                return Ok(());
            }
            if old_provider.as_deref() != provider || old_model.as_deref() != model {
                update_metadata(&tx, id, |m| {
                    m.insert("model_since".into(), count.into());
                })?;
            }
            tx.execute(
                "UPDATE sessions SET provider = ?2, model = ?3, context_window = ?4, updated_at = ?5 WHERE id = ?1",
                params![id, provider, model, context_window, now_ms()],
            )?;
            tx.commit()
        })
    }

    /// Sets `metadata.<key>` of a session to `value`.
    pub(crate) fn set_metadata(&mut self, id: &str, key: &str, value: serde_json::Value) -> Result<()> {
        on_db!(self, "record the session's metadata", {
            let tx = self.db.transaction()?;
            owned(&tx, id, &self.user)?;
            update_metadata(&tx, id, |m| {
                m.insert(key.to_string(), value);
            })?;
            tx.commit()
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
            let tx = self.db.transaction()?;
            owned(&tx, id, &self.user)?;
            update_metadata(&tx, id, |m| {
                let mut set = |key: &str, value: serde_json::Value| {
                    let entry = m.entry(key).or_insert_with(|| serde_json::json!({}));
                    if !entry.is_object() {
                        *entry = serde_json::json!({});
                    }
                    if let Some(map) = entry.as_object_mut() {
                        map.insert(model.to_string(), value);
                    }
                };
                set("calibration", ratio.into());
                if let Some(kinds) = kinds {
                    set("calibration_kinds", kinds.clone());
                }
            })?;
            tx.commit()
        })
    }
}

/// Changes a session's metadata (a JSON object) in Rust inside the write transaction `tx`: the
/// same on both backends, and no update is lost as the transaction holds the write lock.
pub(super) fn update_metadata(
    tx: &Tx<'_>,
    id: &str,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Result<()> {
    let text: String = tx
        .query_opt("SELECT metadata FROM sessions WHERE id = ?1", params![id], |r| r.get(0))?
        .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
    let mut value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::Corrupt { table: "sessions", message: format!("metadata: {e}") })?;
    if !value.is_object() {
        value = serde_json::json!({});
    }
    if let Some(map) = value.as_object_mut() {
        change(map);
    }
    tx.execute("UPDATE sessions SET metadata = ?2 WHERE id = ?1", params![id, value.to_string()])?;
    Ok(())
}

/// Gives `child` its own copy of the messages it reads from its parent (the parent's segment of
/// its lineage), and makes it a fork of the parent's parent at that segment's start (or of
/// none): its history reads the same without the parent.
fn adopt(tx: &Tx<'_>, child: &str) -> Result<()> {
    let segments = super::lineage::lineage(tx, child)?;
    let [.., from_parent, _] = segments.as_slice() else { return Ok(()) };
    let grandparent = segments.len().checked_sub(3).map(|i| segments[i].session.clone());
    let rows: Vec<(i64, String)> = tx.query_vec(
        "SELECT id, parts FROM messages WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
        params![from_parent.session, from_parent.after, from_parent.through],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    for (old, parts) in rows {
        let new: i64 = tx.query_value(
            "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
             SELECT ?1, seq, role, parts, usage, status, created_at FROM messages WHERE id = ?2 RETURNING id",
            params![child, old],
        )?;
        let parts: Vec<crate::conversation::Part> = serde_json::from_str(&parts)
            .map_err(|e| Error::Corrupt { table: "messages", message: format!("message {old}: {e}") })?;
        super::history::index(tx, new, &super::history::index_text(&parts))?;
        // The copy is queued for embedding like any new message (when history is embedded): its
        // original's vector, when it had one, makes that unnecessary.
        let copied = tx.execute(
            "INSERT INTO message_vectors (message_id, vector) SELECT ?1, vector FROM message_vectors WHERE message_id = ?2",
            params![new, old],
        )?;
        if copied > 0 {
            tx.execute("DELETE FROM embed_queue WHERE corpus = 'history' AND item = ?1", params![new])?;
        }
    }
    tx.execute(
        "UPDATE sessions SET parent_id = ?2, fork_seq = ?3 WHERE id = ?1",
        params![child, grandparent, grandparent.as_ref().map(|_| from_parent.after)],
    )?;
    Ok(())
}

/// How many leading bytes two ids share.
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
                .db
                .execute(
                    "INSERT INTO sessions (id, project, created_at, updated_at, metadata) VALUES (?1, '/p', 0, 0, '{}')",
                    crate::store::db::params![id],
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
