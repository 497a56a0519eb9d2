//! Forks and rewinds (migration 0011). A fork is a new session whose history is its parent's up
//! to a seq (read through [`super::lineage`], never copied) and whose live view starts as the
//! parent's was at that seq: the records that shaped it then (compactions, trims, retractions,
//! pins, rewinds, each dated by `made_seq`) are copied to the fork, later ones are not. A rewind
//! is a record hiding a session's messages from a seq on from its live view; nothing is deleted.

use super::db::{Db, params};
use serde::Serialize;

use super::{Error, Result, SessionInfo, Store, now_ms};
use crate::conversation::Part;

/// What [`Store::fork`] made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Forked {
    /// The new session.
    pub session: SessionInfo,
    /// The parent's seq the fork's history ends at (its own messages follow).
    pub at: u64,
    /// The seq asked for, when it fell inside a tool exchange and the fork moved to its start.
    pub moved_from: Option<u64>,
}

/// What [`Store::rewind`] or [`Store::undo_rewind`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Rewound {
    /// The first message hidden from (or, undone, given back to) the live view.
    pub from_seq: u64,
    /// The last.
    pub through_seq: u64,
    /// Compactions retracted because they summarised a hidden message (given back when undone).
    pub retracted_compactions: u64,
    /// The seq asked for, when it fell inside a tool exchange and the rewind moved to its start.
    pub moved_from: Option<u64>,
}

pub use seshat_protocol::records::Rewind;

impl Store {
    /// The latest seq at or before `at` that does not cut a tool exchange: no call at or before
    /// it has its result after it.
    pub(super) fn exchange_boundary(&self, session: &str, mut at: u64) -> Result<u64> {
        loop {
            let next = self.messages_between(session, at + 1, at + 1)?;
            let mut moved = at;
            for part in next.iter().flat_map(|m| m.parts.iter()) {
                if let Part::ToolResult { call_id, .. } = part
                    && let Some(call) = super::messages::call_seq(&self.db, session, call_id, at + 1)?
                {
                    moved = moved.min(call - 1);
                }
            }
            if moved == at {
                return Ok(at);
            }
            at = moved;
        }
    }

    /// Forks `parent` at seq `at` (its last message when `None`): a new session in the same
    /// project with the same provider and model, whose history is the parent's up to `at` and
    /// whose live view is exactly the parent's as it was then. Named, `at` is a message the fork
    /// continues after: when a rewind hides it, the fork continues from the rewound branch (the
    /// rewind is not the fork's); without `at`, the fork is the session as it is now. A seq
    /// inside a tool exchange moves to the exchange's start (said in [`Forked::moved_from`]).
    /// Cheap whatever the parent's size: the messages are read from the parent, only the view's
    /// records are copied.
    pub fn fork(&mut self, parent: &str, at: Option<u64>, title: Option<&str>) -> Result<Forked> {
        on_db!(self, "fork a session", {
            self.immediate(|store| {
                let info = store.session(parent)?;
                let named = at.is_some();
                let asked = at.unwrap_or(info.message_count);
                if asked > info.message_count {
                    return Err(Error::SeqOutOfRange { session: parent.into(), seq: asked, last: info.message_count });
                }
                let at = store.exchange_boundary(parent, asked)?;
                let id = ulid::Ulid::generate().to_string();
                let now = now_ms();
                let title = match (title, store.scrub(&info.project)?) {
                    (Some(t), Some(s)) => Some(s.title(t).into_owned()),
                    (t, _) => t.map(str::to_string),
                };
                let tx = &store.db;
                tx.execute(
                    "INSERT INTO sessions (id, title, project, provider, model, context_window, created_at, updated_at, \
                     message_count, metadata, parent_id, fork_seq, owner) \
                     SELECT ?1, coalesce(?2, title), project, provider, model, context_window, ?3, ?3, ?4, metadata, id, ?4, \
                     owner FROM sessions WHERE id = ?5 AND owner = ?6",
                    params![id, title, now, at, parent, store.user],
                )?;
                copy_records(tx, parent, &id, at, named)?;
                Ok(Forked { session: store.session(&id)?, at, moved_from: (at != asked).then_some(asked) })
            })
        })
    }

    /// Rewinds `session` to before message `to`: messages `to..` leave the live view (a record;
    /// nothing is deleted) and new messages append after them. Compactions that summarised a
    /// hidden message are retracted with it. A seq inside a tool exchange moves to the exchange's
    /// start. `check` sees the resulting view inside the transaction (the caller's window check)
    /// and refuses it by returning an error.
    pub fn rewind(&mut self, session: &str, to: u64, check: impl FnOnce(&Store) -> Result<()>) -> Result<Rewound> {
        on_db!(self, "rewind a session", {
            self.immediate(|store| {
                let count = store.session(session)?.message_count;
                if to == 0 || to > count {
                    return Err(Error::SeqOutOfRange { session: session.into(), seq: to, last: count });
                }
                let from = store.exchange_boundary(session, to - 1)? + 1;
                if store.rewinds_in_force(session)?.iter().any(|r| r.from_seq <= from && count <= r.through_seq) {
                    return Err(Error::NothingToRewind(session.into()));
                }
                let tx = &store.db;
                let now = now_ms();
                // The compactions in force that summarised a message the rewind hides.
                let compactions: Vec<i64> = tx.query_vec(
                    &format!(
                        "SELECT c.id FROM compactions c WHERE c.session_id = ?1 AND c.status = 'ok' \
                         AND coalesce(c.first_kept_seq, c.through_seq + 1) > ?2 AND {}",
                        super::pins::LIVE_COMPACTION
                    ),
                    params![session, from],
                    |r| r.get(0),
                )?;
                let mut retractions: Vec<i64> = Vec::new();
                for c in &compactions {
                    retractions.push(tx.query_value(
                        "INSERT INTO retractions (session_id, compaction_id, created_at) VALUES (?1, ?2, ?3) RETURNING id",
                        params![session, c, now],
                    )?);
                }
                tx.execute(
                    "INSERT INTO rewinds (session_id, from_seq, through_seq, created_at, retractions) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![session, from, count, now, serde_json::to_string(&retractions).unwrap_or_default()],
                )?;
                // The size the provider last reported is no longer the view's.
                tx.execute(
                    "UPDATE sessions SET updated_at = ?2, context_tokens = NULL WHERE id = ?1",
                    params![session, now],
                )?;
                check(store)?;
                Ok(Rewound {
                    from_seq: from,
                    through_seq: count,
                    retracted_compactions: compactions.len() as u64,
                    moved_from: (from != to).then_some(to),
                })
            })
        })
    }

    /// Undoes the latest rewind of `session` while no message was added after it: its messages
    /// come back to the live view, with the compactions it retracted. [`Error::NothingToRewind`]
    /// when there is none, [`Error::RewindSuperseded`] once a message was added after it (fork
    /// from the rewound messages instead).
    pub fn undo_rewind(&mut self, session: &str) -> Result<Rewound> {
        on_db!(self, "undo a rewind", {
            self.immediate(|store| {
                let count = store.session(session)?.message_count;
                let tx = &store.db;
                let latest: Option<(i64, u64, u64, String)> = tx.query_opt(
                    "SELECT id, from_seq, through_seq, retractions FROM rewinds \
                     WHERE session_id = ?1 AND undone_at IS NULL ORDER BY id DESC LIMIT 1",
                    params![session],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?;
                let Some((id, from, through, retractions)) = latest else {
                    return Err(Error::NothingToRewind(session.into()));
                };
                if through != count {
                    return Err(Error::RewindSuperseded { session: session.into(), from, through, last: count });
                }
                let retractions: Vec<i64> = serde_json::from_str(&retractions).unwrap_or_default();
                for r in &retractions {
                    // The rewind's own retractions, made with it at this very message count: gone
                    // with it, so a fork taken now never sees them.
                    tx.execute("DELETE FROM retractions WHERE id = ?1 AND session_id = ?2", params![r, session])?;
                }
                let now = now_ms();
                tx.execute("UPDATE rewinds SET undone_at = ?2 WHERE id = ?1", params![id, now])?;
                tx.execute(
                    "UPDATE sessions SET updated_at = ?2, context_tokens = NULL WHERE id = ?1",
                    params![session, now],
                )?;
                Ok(Rewound {
                    from_seq: from,
                    through_seq: through,
                    retracted_compactions: retractions.len() as u64,
                    moved_from: None,
                })
            })
        })
    }

    /// The rewinds in force in `session`, oldest first.
    pub fn live_rewinds(&self, session: &str) -> Result<Vec<Rewind>> {
        on_db!(self, "read the rewinds", {
            super::sessions::owned(&self.db, session, &self.user)?;
            self.rewinds_in_force(session)
        })
    }

    /// [`Store::live_rewinds`] of each of `sessions` (as listed), by id; a session without any is
    /// absent.
    pub fn live_rewinds_of(&self, sessions: &[SessionInfo]) -> Result<std::collections::BTreeMap<String, Vec<Rewind>>> {
        let mut rewinds = std::collections::BTreeMap::new();
        for s in sessions {
            let live = self.live_rewinds(&s.id)?;
            if !live.is_empty() {
                rewinds.insert(s.id.clone(), live);
            }
        }
        Ok(rewinds)
    }

    /// [`Store::live_rewinds`] for a session its caller already checked is the user's.
    pub(super) fn rewinds_in_force(&self, session: &str) -> Result<Vec<Rewind>> {
        self.db.query_vec(
            "SELECT from_seq, through_seq, created_at FROM rewinds WHERE session_id = ?1 AND undone_at IS NULL \
             ORDER BY id",
            params![session],
            |r| Ok(Rewind { from_seq: r.get(0)?, through_seq: r.get(1)?, created_at: r.get(2)? }),
        )
    }

    /// The seq of the `n`-th-last request the user typed in the session's live view (1: the
    /// latest), with its text; `None` when there are fewer. Tool results and summaries are not
    /// requests.
    pub fn nth_last_request(&self, session: &str, n: u64) -> Result<Option<(u64, String)>> {
        let view = self.live_view(session)?;
        let mut requests = view.entries.iter().rev().filter(|e| {
            e.role == crate::conversation::Role::User
                && e.origin != super::Origin::Summary
                // (Context the hooks added after a request is not one.)
                && e.status != crate::conversation::MessageStatus::Synthetic
                && e.parts.iter().any(|p| matches!(p, Part::Text { .. }))
        });
        Ok(requests.nth(n.saturating_sub(1) as usize).and_then(|e| {
            let text: Vec<&str> = e
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            e.seq.map(|seq| (seq, text.join("\n")))
        }))
    }

    /// The forks made directly of `session`: (id, the seq each was forked at), oldest first.
    pub fn forks(&self, session: &str) -> Result<Vec<(String, u64)>> {
        on_db!(self, "read the forks", {
            super::sessions::owned(&self.db, session, &self.user)?;
            super::lineage::children(&self.db, session)
        })
    }
}

/// A retraction as copied: id, compaction, first and last trim, created_at, made_seq.
type RetractionRow = (i64, Option<i64>, Option<i64>, Option<i64>, i64, u64);

/// Copies to `fork` the records of `parent` that shaped its live view at message count `at`:
/// those made then or before, with what they point at renumbered (a retraction's compaction and
/// trim range). Pins removed by then are copied as tombstones (a fork of the fork at an earlier
/// seq sees them as they were), pins removed later as live; a rewind undone is never copied,
/// nor, when `branch_at` (the caller named `at`), one that hides `at` itself (the fork continues
/// from its branch).
fn copy_records(tx: &Db, parent: &str, fork: &str, at: u64, branch_at: bool) -> Result<()> {
    use std::collections::HashMap;
    let mut compactions: HashMap<i64, i64> = HashMap::new();
    let ids: Vec<i64> = tx.query_vec(
        "SELECT id FROM compactions WHERE session_id = ?1 AND made_seq <= ?2 ORDER BY id",
        params![parent, at],
        |r| r.get(0),
    )?;
    for old in ids {
        let new: i64 = tx.query_value(
            "INSERT INTO compactions (session_id, trigger, tokens_before, tokens_after, through_seq, first_kept_seq, \
             pinned_seq, summary, model, status, error, created_at, instructions, plugin, plugin_sha256, made_seq) \
             SELECT ?1, trigger, tokens_before, tokens_after, through_seq, first_kept_seq, pinned_seq, summary, model, \
             status, error, created_at, instructions, plugin, plugin_sha256, made_seq FROM compactions WHERE id = ?2 \
             RETURNING id",
            params![fork, old],
        )?;
        compactions.insert(old, new);
    }
    // Trims in one statement (a long session has thousands): inserted in id order, so the n-th
    // copied is the copy of the n-th read — read only when a retraction names trims.
    let mapped: bool = tx.query_value(
        "SELECT EXISTS (SELECT 1 FROM retractions WHERE session_id = ?1 AND made_seq <= ?2 AND first_trim IS NOT NULL)",
        params![parent, at],
    )?;
    let old: Vec<i64> = if mapped {
        tx.query_vec(
            "SELECT id FROM trims WHERE session_id = ?1 AND made_seq <= ?2 ORDER BY id",
            params![parent, at],
            |r| r.get(0),
        )?
    } else {
        Vec::new()
    };
    tx.execute(
        "INSERT INTO trims (session_id, seq, part, original_size, new_size, replacement, created_at, plugin, \
         plugin_sha256, made_seq) SELECT ?1, seq, part, original_size, new_size, replacement, created_at, plugin, \
         plugin_sha256, made_seq FROM trims WHERE session_id = ?2 AND made_seq <= ?3 ORDER BY id",
        params![fork, parent, at],
    )?;
    let new: Vec<i64> = if mapped {
        tx.query_vec("SELECT id FROM trims WHERE session_id = ?1 ORDER BY id", params![fork], |r| r.get(0))?
    } else {
        Vec::new()
    };
    let trims: HashMap<i64, i64> = old.into_iter().zip(new).collect();
    // Asked to continue after `at`, a rewind made when `at` was the last message (it hides `at`
    // itself) is left behind: the fork continues from the rewound branch, so neither that rewind
    // nor the retractions it made are the fork's.
    let branch: Vec<String> = tx.query_vec(
        "SELECT retractions FROM rewinds WHERE session_id = ?1 AND through_seq = ?2 AND undone_at IS NULL \
         AND CAST(?3 AS BOOLEAN)",
        params![parent, at, branch_at],
        |r| r.get(0),
    )?;
    let branch: std::collections::HashSet<i64> =
        branch.iter().flat_map(|r| serde_json::from_str::<Vec<i64>>(r).unwrap_or_default()).collect();
    let rows: Vec<RetractionRow> = tx.query_vec(
        "SELECT id, compaction_id, first_trim, last_trim, created_at, made_seq FROM retractions \
         WHERE session_id = ?1 AND made_seq <= ?2 ORDER BY id",
        params![parent, at],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
    )?;
    for (_, compaction, first, last, created_at, made) in rows.into_iter().filter(|r| !branch.contains(&r.0)) {
        let map = |m: &HashMap<i64, i64>, id: Option<i64>| id.and_then(|i| m.get(&i).copied());
        tx.execute(
            "INSERT INTO retractions (session_id, compaction_id, first_trim, last_trim, created_at, made_seq) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![fork, map(&compactions, compaction), map(&trims, first), map(&trims, last), created_at, made],
        )?;
    }
    tx.execute(
        "INSERT INTO pins (session_id, seq, created_at, made_seq, removed_seq) \
         SELECT ?1, seq, created_at, made_seq, CASE WHEN removed_seq <= ?3 THEN removed_seq END FROM pins \
         WHERE session_id = ?2 AND made_seq <= ?3 ORDER BY id",
        params![fork, parent, at],
    )?;
    tx.execute(
        "INSERT INTO rewinds (session_id, from_seq, through_seq, made_seq, created_at) \
         SELECT ?1, from_seq, through_seq, made_seq, created_at FROM rewinds \
         WHERE session_id = ?2 AND made_seq <= ?3 AND (through_seq < ?3 OR NOT CAST(?4 AS BOOLEAN)) AND undone_at IS NULL \
         ORDER BY id",
        params![fork, parent, at, branch_at],
    )?;
    Ok(())
}

/// Dates `session`'s compactions, trims, retractions and pins by time (an import's, whose export
/// does not say at which message count each was made): the seq of the last message written at or
/// before each, never before the message it is about — as migration 0011 dated older records.
pub(super) fn date_by_time(tx: &Db, session: &str) -> Result<()> {
    let at = |table: &str| {
        format!(
            "coalesce((SELECT max(m.seq) FROM messages m WHERE m.session_id = {table}.session_id \
             AND m.created_at <= {table}.created_at), 0)"
        )
    };
    let later = |a: &str, b: String| format!("CASE WHEN {a} > {b} THEN {a} ELSE {b} END");
    let update = |table: &str, made: String| {
        tx.execute(&format!("UPDATE {table} SET made_seq = {made} WHERE session_id = ?1"), params![session])
    };
    update("compactions", later("through_seq", at("compactions")))?;
    update("trims", later("seq", at("trims")))?;
    update("pins", later("seq", at("pins")))?;
    update("retractions", at("retractions"))?;
    Ok(())
}
