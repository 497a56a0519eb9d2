//! Where a session's messages live (migration 0011). A fork's history is its parent's up to the
//! fork's seq, read from the parent (never copied), then its own messages; a fork of a fork adds
//! a segment. Every read of a session's messages by seq goes through [`lineage`], so a fork reads
//! as one session.

use rusqlite::{Connection, OptionalExtension, params};

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
pub(super) fn lineage(conn: &Connection, session: &str) -> Result<Vec<Segment>> {
    let mut stmt = conn.prepare_cached("SELECT parent_id, fork_seq FROM sessions WHERE id = ?1")?;
    let mut out = Vec::new();
    let (mut current, mut through) = (session.to_string(), OPEN);
    loop {
        let (parent, fork_seq): (Option<String>, Option<u64>) = stmt
            .query_row([&current], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
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
pub(super) fn owner(conn: &Connection, session: &str, seq: u64) -> Result<Option<Segment>> {
    Ok(lineage(conn, session)?.into_iter().find(|s| s.holds(seq)))
}

/// `segments` as a query binds them for [`in_lineage`]: the session's id when it is not a fork
/// (the common case, matched by one comparison), else JSON `[[session, after, through], …]`.
pub(super) fn key(segments: &[Segment]) -> String {
    match segments {
        [only] => only.session.clone(),
        _ => {
            let rows: Vec<(&str, u64, u64)> =
                segments.iter().map(|s| (s.session.as_str(), s.after, s.through)).collect();
            serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into())
        }
    }
}

/// SQL matching a message `m` inside the lineage bound at `?{n}` ([`key`]), or any message when
/// it is NULL.
pub(super) fn in_lineage(n: usize) -> String {
    format!(
        "(?{n} IS NULL OR m.session_id = ?{n} OR (substr(?{n}, 1, 1) = '[' AND EXISTS (SELECT 1 FROM json_each(?{n}) l \
         WHERE m.session_id = l.value ->> 0 AND m.seq > l.value ->> 1 AND m.seq <= l.value ->> 2)))"
    )
}

/// The forks made directly of `session`: (id, fork seq), oldest first.
pub(super) fn children(conn: &Connection, session: &str) -> Result<Vec<(String, u64)>> {
    let mut stmt =
        conn.prepare_cached("SELECT id, fork_seq FROM sessions WHERE parent_id = ?1 ORDER BY created_at, id")?;
    let rows = stmt.query_map(params![session], |r| Ok((r.get(0)?, r.get::<_, Option<u64>>(1)?.unwrap_or(0))))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
