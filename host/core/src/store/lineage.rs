//! Where a session's messages live (migration 0011). A fork's history is its parent's up to the
//! fork's seq, read from the parent (never copied), then its own messages; a fork of a fork adds
//! a segment. Every read of a session's messages by seq goes through [`lineage`], so a fork reads
//! as one session.

use super::db::{Backend, Db, params};
use super::{Error, Result};

/// The seqs `after + 1 ..= through` of a session's history, stored under `session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Segment {
    /// The session whose rows hold these messages.
    pub session: String,
    /// The last seq before the segment (0 for the first).
    pub after: u64,
    /// The segment's last seq ([`OPEN`] for the session's own, which grows).
    pub through: u64,
}

/// The `through` of a session's own segment: it has no end.
pub(super) const OPEN: u64 = i64::MAX as u64;

impl Segment {
    /// Whether `seq` lies in this segment.
    pub fn holds(&self, seq: u64) -> bool {
        seq > self.after && seq <= self.through
    }
}

/// The segments of `session`'s history, oldest first: its ancestors' up to each fork point, then
/// its own. [`Error::SessionNotFound`] when the session does not exist.
pub(super) fn lineage(db: &Db, session: &str) -> Result<Vec<Segment>> {
    let mut out = Vec::new();
    let (mut current, mut through) = (session.to_string(), OPEN);
    loop {
        let (parent, fork_seq): (Option<String>, Option<u64>) = db
            .query_opt("SELECT parent_id, fork_seq FROM sessions WHERE id = ?1", params![current], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .ok_or_else(|| Error::SessionNotFound(current.clone()))?;
        // A fork of a fork taken inside the parent's inherited part reads none of the parent's
        // own messages: a segment never starts after its end.
        let after = if parent.is_some() { fork_seq.unwrap_or(0).min(through) } else { 0 };
        out.push(Segment { session: current.clone(), after, through });
        match parent {
            Some(p) if out.len() < 10_000 => {
                through = after;
                current = p;
            }
            _ => break,
        }
    }
    out.reverse();
    Ok(out)
}

/// The segment of `session`'s history that holds `seq`, if any.
pub(super) fn owner(db: &Db, session: &str, seq: u64) -> Result<Option<Segment>> {
    Ok(lineage(db, session)?.into_iter().find(|s| s.holds(seq)))
}

/// `segments` as a query binds them for [`in_lineage`]. On SQLite: the session's id when it is
/// not a fork (the common case, matched by one comparison), else JSON
/// `[[session, after, through], …]`; on PostgreSQL always the JSON, as objects
/// (`[{"s": session, "a": after, "t": through}, …]`), read by `jsonb_to_recordset`.
pub(super) fn key(backend: Backend, segments: &[Segment]) -> String {
    let json = |value: serde_json::Value| value.to_string();
    match (backend, segments) {
        (Backend::Sqlite, [only]) => only.session.clone(),
        (Backend::Sqlite, _) => {
            json(segments.iter().map(|s| serde_json::json!([s.session, s.after, s.through])).collect())
        }
        (_, _) => {
            json(segments.iter().map(|s| serde_json::json!({"s": s.session, "a": s.after, "t": s.through})).collect())
        }
    }
}

/// SQL matching a message `m` inside the lineage bound at `?{n}` ([`key`]), or any message when
/// it is NULL.
pub(super) fn in_lineage(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!(
            "(?{n} IS NULL OR m.session_id = ?{n} OR (substr(?{n}, 1, 1) = '[' AND EXISTS (SELECT 1 FROM json_each(?{n}) l \
             WHERE m.session_id = l.value ->> 0 AND m.seq > l.value ->> 1 AND m.seq <= l.value ->> 2)))"
        ),
        _ => format!(
            "(CAST(?{n} AS text) IS NULL OR EXISTS (SELECT 1 FROM jsonb_to_recordset(CAST(?{n} AS jsonb)) \
             AS l(s text, a bigint, t bigint) WHERE m.session_id = l.s AND m.seq > l.a AND m.seq <= l.t))"
        ),
    }
}

/// The forks made directly of `session`: (id, fork seq), oldest first.
pub(super) fn children(db: &Db, session: &str) -> Result<Vec<(String, u64)>> {
    db.query_vec(
        "SELECT id, fork_seq FROM sessions WHERE parent_id = ?1 ORDER BY created_at, id",
        params![session],
        |r| Ok((r.get(0)?, r.get::<Option<u64>>(1)?.unwrap_or(0))),
    )
}
