//! Where memory rows come from: each write is recorded once in `memory_sources` (who it was made
//! for, and for an agent's or an extraction's write the session and message it was made at), and
//! every row it writes points at that record.

use std::collections::HashMap;

use crate::store::db::{Db, Tx, ids_in, params};

use super::Result;
pub use seshat_protocol::memory::{Source, SourceKind};

/// Who the writes of a [`Memory`](super::Memory) are recorded as made by.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Writer {
    /// Who.
    pub kind: SourceKind,
    /// The session whose agent or extraction writes.
    pub session: Option<String>,
    /// The message of that session the write is made at.
    pub seq: Option<u64>,
    /// The extraction plugin.
    pub plugin: Option<String>,
    /// A write recorded before (a proposal's, applied when approved): its rows point at it.
    pub(crate) recorded: Option<i64>,
}

impl Writer {
    /// A person (the CLI, a program's call to the service): the default.
    pub fn user() -> Self {
        Writer { kind: SourceKind::User, session: None, seq: None, plugin: None, recorded: None }
    }

    /// The agent of `session`, with a tool call made at message `seq`.
    pub fn agent(session: &str, seq: u64) -> Self {
        Writer {
            kind: SourceKind::Agent,
            session: Some(session.to_string()),
            seq: Some(seq),
            plugin: None,
            recorded: None,
        }
    }

    /// Another agent, through `seshat mcp`.
    pub fn mcp() -> Self {
        Writer { kind: SourceKind::Mcp, ..Writer::user() }
    }

    /// A merge or import of another store's memory.
    pub fn import() -> Self {
        Writer { kind: SourceKind::Import, ..Writer::user() }
    }

    /// The extraction plugin `plugin`, reading `session` at message `seq`.
    pub fn extraction(plugin: &str, session: &str, seq: u64) -> Self {
        Writer {
            kind: SourceKind::Extraction,
            session: Some(session.to_string()),
            seq: Some(seq),
            plugin: Some(plugin.to_string()),
            recorded: None,
        }
    }

    /// The write recorded as source `id` (a proposal's, applied by its approval).
    pub(crate) fn recorded(id: i64) -> Self {
        Writer { recorded: Some(id), ..Writer::user() }
    }
}

impl Default for Writer {
    fn default() -> Self {
        Writer::user()
    }
}

/// Records one write by `writer` for `user` at `now`; its id, for the rows it writes.
pub(crate) fn record(tx: &Tx<'_>, user: &str, writer: &Writer, now: i64) -> Result<i64> {
    if let Some(id) = writer.recorded {
        return Ok(id);
    }
    Ok(tx.query_value(
        "INSERT INTO memory_sources (kind, user_name, session, seq, plugin, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        params![writer.kind.as_str(), user, writer.session, writer.seq.map(|s| s as i64), writer.plugin, now],
    )?)
}

/// The sources with these ids.
pub(crate) fn load(db: &Db, ids: &[i64]) -> Result<HashMap<i64, Source>> {
    let mut wanted: Vec<i64> = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    /// id, kind, user, session, seq, plugin, when.
    type Row = (i64, String, String, Option<String>, Option<i64>, Option<String>, i64);
    let rows: Vec<Row> = db.query_vec(
        &format!(
            "SELECT id, kind, user_name, session, seq, plugin, created_at FROM memory_sources WHERE id IN {}",
            ids_in(db.backend(), 1)
        ),
        params![super::graph::json_ids(&wanted)],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, kind, user, session, seq, plugin, at)| {
            let kind = SourceKind::parse(&kind)?;
            Some((id, Source { kind, user, session, seq: seq.map(|s| s as u64), plugin, at }))
        })
        .collect())
}
