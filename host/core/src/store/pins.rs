//! Pins and retractions (migration 0006): records beside the originals that change only the live
//! view. A pin keeps a message verbatim in every view; a retraction undoes the latest compaction or
//! trim pass without touching it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::db::{Backend, Db, params};
use super::{Error, Result, Store, now_ms};
use crate::conversation::Part;

/// What one undo retracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retracted {
    /// A compaction (its summary and cut no longer apply).
    Compaction {
        /// The compaction's position among the session's compactions, oldest first, from 1.
        number: u64,
    },
    /// A trim pass: the trims recorded together, by position among the session's trims from 1.
    Trims {
        /// The first trim of the pass.
        first: u64,
        /// The last trim of the pass.
        last: u64,
    },
}

/// SQL matching a live (not retracted) compaction `c`.
pub(super) const LIVE_COMPACTION: &str = "NOT EXISTS (SELECT 1 FROM retractions r WHERE r.compaction_id = c.id)";
/// SQL matching a live (not retracted) trim `t`.
pub(super) const LIVE_TRIM: &str = "NOT EXISTS (SELECT 1 FROM retractions r WHERE r.session_id = t.session_id \
     AND t.id BETWEEN r.first_trim AND r.last_trim)";

/// The seqs of the messages a pin of `seq` covers: the message, and the other side of every tool
/// exchange it takes part in (a call's results, a result's call and that call's other results),
/// so that a pin never splits a pair.
pub(super) fn pair_closure(tx: &Db, session: &str, seq: u64) -> Result<BTreeSet<u64>> {
    let segments = super::lineage::lineage(tx, session)?;
    let parts_of = |seq: u64| -> Result<Option<Vec<Part>>> {
        let Some(owner) = segments.iter().find(|s| s.holds(seq)) else { return Ok(None) };
        let parts: Option<String> = tx.query_opt(
            "SELECT parts FROM messages WHERE session_id = ?1 AND seq = ?2",
            params![owner.session, seq],
            |r| r.get(0),
        )?;
        parts
            .map(|p| serde_json::from_str(&p).map_err(|e| Error::Corrupt { table: "messages", message: e.to_string() }))
            .transpose()
    };
    // The messages that mention a call id, as its call or as a result.
    let holders = match tx.backend() {
        Backend::Sqlite => {
            "SELECT m.seq FROM messages m, json_each(m.parts) p WHERE m.session_id = ?1 AND m.seq > ?3 AND m.seq <= ?4 \
             AND (p.value ->> '$.id' = ?2 AND p.value ->> '$.type' = 'tool_call' \
                  OR p.value ->> '$.call_id' = ?2 AND p.value ->> '$.type' = 'tool_result')"
        }
        Backend::Postgres => {
            "SELECT m.seq FROM messages m, json_array_elements(CAST(m.parts AS json)) p \
             WHERE m.session_id = ?1 AND m.seq > ?3 AND m.seq <= ?4 \
             AND (p ->> 'id' = ?2 AND p ->> 'type' = 'tool_call' \
                  OR p ->> 'call_id' = ?2 AND p ->> 'type' = 'tool_result')"
        }
    };
    let mut out = BTreeSet::new();
    let mut todo = vec![seq];
    while let Some(seq) = todo.pop() {
        if !out.insert(seq) {
            continue;
        }
        let parts = parts_of(seq)?.ok_or(Error::NoSuchMessage { session: session.to_string(), seq })?;
        for id in parts.iter().filter_map(|p| p.tool_call_id().or_else(|| p.answered_call_id())) {
            for segment in &segments {
                todo.extend(tx.query_vec(
                    holders,
                    params![segment.session, id, segment.after, segment.through],
                    |r| r.get::<u64>(0),
                )?);
            }
        }
    }
    Ok(out)
}

impl Store {
    /// The pinned seqs of a session, in order.
    pub fn pins(&self, session: &str) -> Result<Vec<u64>> {
        on_db!(self, "read the pins", {
            super::sessions::owned(&self.db, session, &self.user)?;
            self.pinned(session)
        })
    }

    /// [`Store::pins`] for a session its caller already checked is the user's.
    pub(super) fn pinned(&self, session: &str) -> Result<Vec<u64>> {
        self.db.query_vec(
            "SELECT seq FROM pins WHERE session_id = ?1 AND removed_seq IS NULL ORDER BY seq",
            params![session],
            |r| r.get(0),
        )
    }

    /// The pins of a session with when each was made, in seq order.
    pub(super) fn pin_times(&self, session: &str) -> Result<Vec<(u64, i64)>> {
        self.db.query_vec(
            "SELECT seq, created_at FROM pins WHERE session_id = ?1 AND removed_seq IS NULL ORDER BY seq",
            params![session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// Pins message `seq` and the other side of its tool exchanges, if `check` accepts the seqs
    /// that would then be pinned (the caller's budget check); returns the seqs newly pinned.
    pub fn pin(
        &mut self,
        session: &str,
        seq: u64,
        check: impl FnOnce(&Store, &[u64]) -> Result<()>,
    ) -> Result<Vec<u64>> {
        on_db!(self, "pin a message", {
            self.immediate(|store| {
                let tx = &store.db;
                super::sessions::owned(tx, session, &store.user)?;
                let covered = pair_closure(tx, session, seq)?;
                let now = now_ms();
                let mut added = Vec::new();
                for s in &covered {
                    if tx.execute(
                        "INSERT INTO pins (session_id, seq, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                        params![session, s, now],
                    )? > 0
                    {
                        added.push(*s);
                    }
                }
                check(store, &store.pinned(session)?)?;
                Ok(added)
            })
        })
    }

    /// Unpins message `seq` and the other side of its tool exchanges; returns the seqs unpinned.
    pub fn unpin(&mut self, session: &str, seq: u64) -> Result<Vec<u64>> {
        on_db!(self, "unpin a message", {
            self.immediate(|store| {
                super::sessions::owned(&store.db, session, &store.user)?;
                let covered = pair_closure(&store.db, session, seq)?;
                let mut removed = Vec::new();
                for s in &covered {
                    // A tombstone, so a fork made at an earlier seq still sees the pin.
                    if store.db.execute(
                        "UPDATE pins SET removed_seq = (SELECT message_count FROM sessions WHERE id = ?1) \
                         WHERE session_id = ?1 AND seq = ?2 AND removed_seq IS NULL",
                        params![session, s],
                    )? > 0
                    {
                        removed.push(*s);
                    }
                }
                Ok(removed)
            })
        })
    }

    /// What an undo would retract now: the latest live compaction or trim pass, whichever came
    /// last (a pass records its trims before its compaction); `None` when nothing is left.
    fn latest_retractable(&self, session: &str) -> Result<Option<(Option<i64>, i64, i64)>> {
        let tx = &self.db;
        let compaction: Option<(i64, i64)> = tx.query_opt(
            &format!(
                "SELECT c.id, c.created_at FROM compactions c WHERE c.session_id = ?1 AND c.status = 'ok' \
                 AND {LIVE_COMPACTION} ORDER BY c.id DESC LIMIT 1"
            ),
            params![session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let trim: Option<(i64, i64)> = tx.query_opt(
            &format!(
                "SELECT t.id, t.created_at FROM trims t WHERE t.session_id = ?1 AND {LIVE_TRIM} \
                 ORDER BY t.id DESC LIMIT 1"
            ),
            params![session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(match (compaction, trim) {
            (Some((c, c_at)), Some((_, t_at))) if c_at >= t_at => Some((Some(c), 0, 0)),
            (Some((c, _)), None) => Some((Some(c), 0, 0)),
            (_, Some((last, at))) => {
                // The pass: the live trims recorded at that moment, contiguous ids.
                let first: i64 = tx.query_row(
                    &format!(
                        "SELECT min(t.id) FROM trims t WHERE t.session_id = ?1 AND t.created_at = ?2 AND {LIVE_TRIM}"
                    ),
                    params![session, at],
                    |r| r.get(0),
                )?;
                Some((None, first, last))
            }
            (None, None) => None,
        })
    }

    /// Undoes the latest compaction or trim pass of a session with a retraction record, if
    /// `check` accepts the live view that results (the caller's window check); the originals and
    /// the retracted record stay. [`Error::NothingToUndo`] when there is nothing left to undo.
    pub fn retract_latest(&mut self, session: &str, check: impl FnOnce(&Store) -> Result<()>) -> Result<Retracted> {
        on_db!(self, "undo the latest compaction or trim", {
            self.immediate(|store| {
                super::sessions::owned(&store.db, session, &store.user)?;
                let Some((compaction, first, last)) = store.latest_retractable(session)? else {
                    return Err(Error::NothingToUndo(session.to_string()));
                };
                let tx = &store.db;
                let now = now_ms();
                let ordinal = |table: &str, id: i64| -> Result<u64> {
                    tx.query_value(
                        &format!("SELECT count(*) FROM {table} WHERE session_id = ?1 AND id <= ?2"),
                        params![session, id],
                    )
                };
                let retracted = match compaction {
                    Some(c) => {
                        tx.execute(
                            "INSERT INTO retractions (session_id, compaction_id, created_at) VALUES (?1, ?2, ?3)",
                            params![session, c, now],
                        )?;
                        Retracted::Compaction { number: ordinal("compactions", c)? }
                    }
                    None => {
                        tx.execute(
                            "INSERT INTO retractions (session_id, first_trim, last_trim, created_at) \
                         VALUES (?1, ?2, ?3, ?4)",
                            params![session, first, last, now],
                        )?;
                        Retracted::Trims { first: ordinal("trims", first)?, last: ordinal("trims", last)? }
                    }
                };
                tx.execute("UPDATE sessions SET updated_at = ?2 WHERE id = ?1", params![session, now])?;
                check(store)?;
                Ok(retracted)
            })
        })
    }

    /// Runs `f` inside one write transaction on this store's connection, so that `f` can read
    /// through the store what it has written so far: committed when `f` succeeds, rolled back when
    /// it fails.
    pub(super) fn immediate<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        self.db.begin_write()?;
        match f(self) {
            Ok(v) => {
                self.db.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.db.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// A session's retractions, oldest first, with when each was made.
    pub fn retractions(&self, session: &str) -> Result<Vec<(Retracted, i64)>> {
        on_db!(self, "read the undos", {
            super::sessions::owned(&self.db, session, &self.user)?;
            self.db.query_vec(
                "SELECT r.compaction_id, r.first_trim, r.last_trim, r.created_at, \
             (SELECT count(*) FROM compactions c WHERE c.session_id = r.session_id AND c.id <= r.compaction_id), \
             (SELECT count(*) FROM trims t WHERE t.session_id = r.session_id AND t.id <= r.first_trim), \
             (SELECT count(*) FROM trims t WHERE t.session_id = r.session_id AND t.id <= r.last_trim) \
             FROM retractions r WHERE r.session_id = ?1 ORDER BY r.id",
                params![session],
                |r| {
                    let compaction: Option<i64> = r.get(0)?;
                    let at: i64 = r.get(3)?;
                    Ok(match compaction {
                        Some(_) => (Retracted::Compaction { number: r.get(4)? }, at),
                        None => (Retracted::Trims { first: r.get(5)?, last: r.get(6)? }, at),
                    })
                },
            )
        })
    }
}
