//! Letting history go: the caller's sessions not written to for longer than their retention,
//! and their own memory not changed for longer than its, purged. A session is deleted as
//! [`Store::delete_session`] deletes one (its messages, index rows, vectors and draft, one
//! transaction each; a fork of it first takes its own copy of what it read from it).

use serde::Serialize;

use super::db::params;
use super::{Result, Store};

/// A session purged (or, on a dry run, that would be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PurgedSession {
    /// Its id.
    pub id: String,
    /// Its project key.
    pub project: String,
    /// Its messages.
    pub messages: u64,
    /// When it was last written to (unix milliseconds).
    pub updated_at: i64,
}

/// What a purge removed (or, on a dry run, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Purged {
    /// The sessions.
    pub sessions: Vec<PurgedSession>,
    /// Memory entities (with their observations).
    pub entities: u64,
    /// Memory relations.
    pub relations: u64,
    /// Notes.
    pub notes: u64,
    /// Nothing was deleted.
    pub dry_run: bool,
}

impl Purged {
    /// A purge of `sessions` alone.
    pub fn of_sessions(sessions: Vec<PurgedSession>, dry_run: bool) -> Self {
        Purged { sessions, dry_run, ..Purged::default() }
    }

    /// Adds what another purge (a team's memory) removed.
    pub fn add(&mut self, other: &Purged) {
        self.sessions.extend(other.sessions.iter().cloned());
        self.entities += other.entities;
        self.relations += other.relations;
        self.notes += other.notes;
    }
}

/// The memory tables a purge reads, each with the column that dates a row.
const MEMORY: [(&str, &str); 3] =
    [("memory_entities", "updated_at"), ("memory_relations", "created_at"), ("memory_notes", "updated_at")];

impl Store {
    /// Purges the caller's sessions last written to before `before` (unix milliseconds) — of
    /// `project`, or of every project — one transaction each, oldest first.
    pub fn purge_sessions(&mut self, project: Option<&str>, before: i64, dry_run: bool) -> Result<Vec<PurgedSession>> {
        self.purge_where(|p| (project.is_none_or(|only| only == p)).then_some(before), dry_run)
    }

    /// Applies retention at `now` (unix milliseconds) to what the caller owns: each session whose
    /// project's `sessions` age (milliseconds; `None`, kept) it outlived, then the memory of their
    /// own scopes (user and cross under the empty project key, each project's under its key)
    /// that outlived its `memory` age, in one transaction.
    pub fn expire(
        &mut self,
        sessions: &dyn Fn(&str) -> Option<i64>,
        memory: &dyn Fn(&str) -> Option<i64>,
        now: i64,
        dry_run: bool,
    ) -> Result<Purged> {
        let purged = self.purge_where(|project| sessions(project).map(|age| now.saturating_sub(age)), dry_run)?;
        let mut out = Purged { sessions: purged, dry_run, ..Purged::default() };
        on_db!(self, "purge memory", {
            let tx = self.db.transaction()?;
            let places: Vec<String> = tx.query_vec(
                "SELECT DISTINCT project FROM memory_entities WHERE owner = ?1 AND scope <> 'team' \
                 UNION SELECT DISTINCT project FROM memory_relations WHERE owner = ?1 AND scope <> 'team' \
                 UNION SELECT DISTINCT project FROM memory_notes WHERE owner = ?1 AND scope <> 'team'",
                params![self.user],
                |r| r.get(0),
            )?;
            let (entities, notes) = expired(&tx, Some(&self.user), now, dry_run)?;
            out.entities += entities;
            out.notes += notes;
            for project in places {
                let Some(age) = memory(&project) else { continue };
                let before = now.saturating_sub(age);
                for (i, (table, dated)) in MEMORY.iter().enumerate() {
                    let rule =
                        format!("FROM {table} WHERE owner = ?1 AND scope <> 'team' AND project = ?2 AND {dated} < ?3");
                    let n: u64 =
                        tx.query_value(&format!("SELECT count(*) {rule}"), params![self.user, project, before])?;
                    if !dry_run && n > 0 {
                        tx.execute(&format!("DELETE {rule}"), params![self.user, project, before])?;
                    }
                    *[&mut out.entities, &mut out.relations, &mut out.notes][i] += n;
                }
            }
            if !dry_run {
                tx.commit_at("purge")?;
            }
            Ok(out)
        })
    }

    /// Purges `team`'s memory not changed for `age` milliseconds before `now`, in one
    /// transaction: for a member with read-write access, or an admin.
    pub fn expire_team(&mut self, team: &str, age: i64, now: i64, dry_run: bool) -> Result<Purged> {
        on_db!(self, "purge a team's memory", {
            let tx = self.db.transaction()?;
            if !super::owners::is_admin(&tx, &self.user)? {
                super::owners::check_team_write(&tx, &self.user, team)?;
            }
            let before = now.saturating_sub(age);
            let mut out = Purged { dry_run, ..Purged::default() };
            let (entities, notes) = expired(&tx, Some(team), now, dry_run)?;
            out.entities += entities;
            out.notes += notes;
            for (i, (table, dated)) in MEMORY.iter().enumerate() {
                let rule = format!("FROM {table} WHERE owner = ?1 AND scope = 'team' AND {dated} < ?2");
                let n: u64 = tx.query_value(&format!("SELECT count(*) {rule}"), params![team, before])?;
                if !dry_run && n > 0 {
                    tx.execute(&format!("DELETE {rule}"), params![team, before])?;
                }
                *[&mut out.entities, &mut out.relations, &mut out.notes][i] += n;
            }
            if !dry_run {
                tx.commit_at("purge")?;
            }
            Ok(out)
        })
    }

    /// Purges the memory of every user and team whose time to live had passed at `now` (unix
    /// milliseconds), in one transaction: the operator's work (an admin's). Returns what went.
    pub fn purge_expired_memory(&mut self, now: i64) -> Result<Purged> {
        on_db!(self, "purge expired memory", {
            let tx = self.db.transaction()?;
            if !super::owners::is_admin(&tx, &self.user)? {
                return Err(super::Error::Refused(
                    "purging every user's expired memory is an admin's work: run it as the operator".into(),
                ));
            }
            let (entities, notes) = expired(&tx, None, now, false)?;
            tx.commit_at("purge")?;
            Ok(Purged { entities, notes, ..Purged::default() })
        })
    }

    /// Deletes each of the caller's sessions last written to before the time `before` gives
    /// for its project (`None`: kept), oldest first.
    fn purge_where(&mut self, before: impl Fn(&str) -> Option<i64>, dry_run: bool) -> Result<Vec<PurgedSession>> {
        let all: Vec<PurgedSession> = on_db!(self, "list sessions to purge", {
            self.db.query_vec(
                "SELECT id, project, message_count, updated_at FROM sessions WHERE owner = ?1 ORDER BY updated_at, id",
                params![self.user],
                |r| Ok(PurgedSession { id: r.get(0)?, project: r.get(1)?, messages: r.get(2)?, updated_at: r.get(3)? }),
            )
        })?;
        let mut out = Vec::new();
        for s in all {
            if before(&s.project).is_none_or(|cutoff| s.updated_at >= cutoff) {
                continue;
            }
            if !dry_run {
                match self.delete_session(&s.id) {
                    // Deleted meanwhile (another process purging): nothing left to do.
                    Err(super::Error::SessionNotFound(_)) => continue,
                    other => other?,
                }
            }
            out.push(s);
        }
        Ok(out)
    }
}

/// Counts (and unless `dry_run` deletes) the entities and notes of `owner` (every owner's when
/// `None`) whose time to live had passed at `now`: (entities, notes).
fn expired(tx: &super::db::Tx<'_>, owner: Option<&str>, now: i64, dry_run: bool) -> Result<(u64, u64)> {
    let mut counts = [0u64; 2];
    if !dry_run {
        // The relations of an expired entity go with it (a new entity of its name starts afresh).
        tx.execute(
            "DELETE FROM memory_relations WHERE EXISTS (SELECT 1 FROM memory_entities e WHERE e.expires_at <= ?1 \
             AND (CAST(?2 AS TEXT) IS NULL OR e.owner = ?2) AND e.owner = memory_relations.owner \
             AND e.scope = memory_relations.scope AND e.project = memory_relations.project \
             AND (e.name_key = memory_relations.from_key OR e.name_key = memory_relations.to_key))",
            params![now, owner],
        )?;
    }
    for (i, table) in ["memory_entities", "memory_notes"].iter().enumerate() {
        let rule = format!("FROM {table} WHERE expires_at <= ?1 AND (CAST(?2 AS TEXT) IS NULL OR owner = ?2)");
        counts[i] = tx.query_value(&format!("SELECT count(*) {rule}"), params![now, owner])?;
        if !dry_run && counts[i] > 0 {
            tx.execute(&format!("DELETE {rule}"), params![now, owner])?;
        }
    }
    Ok((counts[0], counts[1]))
}
