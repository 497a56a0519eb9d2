//! Team memory reviewed: a team scope that requires review (`teams.review`) keeps a member's
//! write to its memory as a proposal — the memory tool's name and arguments, who proposed it and
//! where — until one of its reviewers (or an admin) approves it, when it is applied through the
//! same tool as its proposer's write, or rejects it. Until then nothing of it is in the team's
//! memory, its context or its search.

use serde_json::Value;

use crate::store::db::{Db, params};
use crate::store::now_ms;

use super::{Error, Memory, Result, Scope, Writer};
pub use seshat_protocol::memory::Proposal;

/// The columns a proposal is read from.
const COLUMNS: &str = "id, team, tool, params, status, source_id, created_at, decided_by, decided_at, reason";

/// A proposal's row, its source still an id.
type Row = (Proposal, Option<i64>);

fn row(r: &crate::store::db::Row<'_>) -> crate::store::Result<Row> {
    let params: String = r.get(3)?;
    Ok((
        Proposal {
            id: r.get(0)?,
            team: r.get(1)?,
            tool: r.get(2)?,
            params: serde_json::from_str(&params).unwrap_or(Value::Null),
            status: r.get(4)?,
            source: None,
            created_at: r.get(6)?,
            decided_by: r.get(7)?,
            decided_at: r.get(8)?,
            reason: r.get(9)?,
        },
        r.get(5)?,
    ))
}

/// The proposals of `rows` with their sources.
fn with_sources(db: &Db, rows: Vec<Row>) -> Result<Vec<Proposal>> {
    let sources = super::provenance::load(db, &rows.iter().filter_map(|r| r.1).collect::<Vec<_>>())?;
    Ok(rows
        .into_iter()
        .map(|(mut p, source)| {
            p.source = source.and_then(|s| sources.get(&s).cloned());
            p
        })
        .collect())
}

impl Memory<'_> {
    /// Keeps the write `tool(params)` to `team`'s memory as a proposal by this memory's writer
    /// (the caller must be able to write the team); its id. `params` names the team's scope, so
    /// that its approval writes where it was meant to.
    pub(crate) fn propose(&mut self, team: &str, tool: &str, mut params: Value) -> Result<i64> {
        on_memory_db!(self, "propose a write to a team's memory", {
            if let Some(object) = params.as_object_mut() {
                object.insert("scope".into(), Value::String(Scope::Team(team.to_string()).to_string()));
            }
            let now = now_ms();
            let tx = self.db.transaction()?;
            crate::store::owners::check_team_write(&tx, &self.user, team)?;
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let id: i64 = tx.query_value(
                "INSERT INTO memory_proposals (team, tool, params, source_id, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                params![team, tool, params.to_string(), source, now],
            )?;
            tx.commit_at("memory")?;
            Ok(id)
        })
    }

    /// The proposals to the memory of the caller's teams that the caller decides (every team's
    /// for an admin, the teams they review otherwise) or made — of `team` only when named; the
    /// pending ones unless `all`. Oldest first.
    pub fn proposals(&mut self, team: Option<&str>, all: bool) -> Result<Vec<Proposal>> {
        on_memory_db!(self, "list memory proposals", {
            let admin = crate::store::owners::is_admin(self.db, &self.user)?;
            let rows: Vec<Row> = self.db.query_vec(
                &format!(
                    "SELECT {COLUMNS} FROM memory_proposals p WHERE (CAST(?1 AS TEXT) IS NULL OR p.team = ?1) \
                     AND (?3 OR p.status = 'pending') AND (?4 \
                     OR EXISTS (SELECT 1 FROM team_members m WHERE m.team = p.team AND m.user_name = ?2 \
                     AND m.reviewer = 1) \
                     OR EXISTS (SELECT 1 FROM memory_sources s WHERE s.id = p.source_id AND s.user_name = ?2)) \
                     ORDER BY p.id"
                ),
                params![team, self.user, all, admin],
                row,
            )?;
            with_sources(self.db, rows)
        })
    }

    /// Approves proposal `id`: its write is made as its proposer made it (their source, their
    /// arguments), and the proposal is marked approved by the caller. A reviewer's (or an
    /// admin's) act; a proposal already decided, or of a team the caller does not review, is
    /// [`Error::NoSuchProposal`].
    pub fn approve(&mut self, id: i64) -> Result<Proposal> {
        let (proposal, source) = self.decide(id, "approved", None)?;
        let mut applying = Memory {
            db: &mut *self.db,
            location: self.location,
            redacting: self.redacting,
            project: self.project.clone(),
            user: self.user.clone(),
            writer: source.map_or_else(Writer::user, Writer::recorded),
            detail: self.detail,
            ttls: self.ttls.clone(),
        };
        if let Err(e) = super::tools::run(&mut applying, &proposal.tool, &proposal.params, None) {
            // Not applied: it waits again.
            let undo = "UPDATE memory_proposals SET status = 'pending', decided_by = NULL, decided_at = NULL \
                 WHERE id = ?1";
            on_memory_db!(self, "approve a memory proposal", { Ok(self.db.execute(undo, params![id])?) })?;
            return Err(e);
        }
        Ok(proposal)
    }

    /// Rejects proposal `id` (with `reason`): nothing of it is written. A reviewer's act.
    pub fn reject(&mut self, id: i64, reason: Option<&str>) -> Result<Proposal> {
        Ok(self.decide(id, "rejected", reason)?.0)
    }

    /// Marks pending proposal `id` `status` by the caller, who must review its team (or be an
    /// admin); the proposal as decided and its source's id.
    fn decide(&mut self, id: i64, status: &str, reason: Option<&str>) -> Result<(Proposal, Option<i64>)> {
        on_memory_db!(self, "decide a memory proposal", {
            let now = now_ms();
            let tx = self.db.transaction()?;
            let admin = crate::store::owners::is_admin(&tx, &self.user)?;
            let changed = tx.execute(
                "UPDATE memory_proposals SET status = ?2, decided_by = ?3, decided_at = ?4, reason = ?5 \
                 WHERE id = ?1 AND status = 'pending' AND (?6 OR EXISTS (SELECT 1 FROM team_members m \
                 WHERE m.team = memory_proposals.team AND m.user_name = ?3 AND m.reviewer = 1))",
                params![id, status, self.user, now, reason, admin],
            )?;
            if changed == 0 {
                return Err(Error::NoSuchProposal(id));
            }
            let found: Row =
                tx.query_row(&format!("SELECT {COLUMNS} FROM memory_proposals WHERE id = ?1"), params![id], row)?;
            let source = found.1;
            let decided = with_sources(&tx, vec![found])?.remove(0);
            tx.commit_at("memory")?;
            Ok((decided, source))
        })
    }
}
