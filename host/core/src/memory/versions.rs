//! Every change to an entity is a version: the entity as it stood after the change (name, type,
//! current observations, whether deleted), who made it and when, kept in `memory_versions`. An
//! entity written before versions were kept gets its state as found recorded first (`existing`),
//! so the first change made to it can be reverted too.

use std::collections::HashSet;

use serde::Deserialize;

use crate::store::db::{Backend, Db, Tx, ids_in, params};

use super::graph::json_ids;
use super::{Error, Memory, Place, Result, Scope, name_key};
use crate::store::now_ms;
pub use seshat_protocol::memory::{EntityVersion, Undone};

/// The state a version holds, as stored.
#[derive(Debug, Deserialize)]
struct State {
    name: String,
    #[serde(rename = "entityType")]
    entity_type: String,
    observations: Vec<String>,
    #[serde(default)]
    deleted: bool,
}

/// SQL making each entity's state as JSON text (`e` the entity).
fn state_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "json_object('name', e.name, 'entityType', e.entity_type, 'observations', \
             json(coalesce((SELECT json_group_array(content) FROM (SELECT content FROM memory_observations o \
             WHERE o.entity_id = e.id AND o.deleted_by IS NULL AND o.valid_until IS NULL ORDER BY o.id)), '[]')), \
             'deleted', json(CASE WHEN e.deleted_by IS NULL THEN 'false' ELSE 'true' END))"
        }
        _ => {
            "json_build_object('name', e.name, 'entityType', e.entity_type, 'observations', \
             coalesce((SELECT json_agg(o.content ORDER BY o.id) FROM memory_observations o \
             WHERE o.entity_id = e.id AND o.deleted_by IS NULL AND o.valid_until IS NULL), CAST('[]' AS json)), \
             'deleted', e.deleted_by IS NOT NULL)::text"
        }
    }
}

/// Records the state of each of `ids` as a new version made by `change`, in one statement.
pub(super) fn record(tx: &Tx<'_>, ids: &[i64], change: &str, source: i64, now: i64) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    tx.execute(
        &format!(
            "INSERT INTO memory_versions (entity_id, version, change, state, source_id, created_at) \
             SELECT e.id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.entity_id = e.id), 0) + 1, \
             ?2, {}, ?3, ?4 FROM memory_entities e WHERE e.id IN {}",
            state_sql(tx.backend()),
            ids_in(tx.backend(), 1)
        ),
        params![json_ids(ids), change, source, now],
    )?;
    Ok(())
}

/// Records the state of each of `ids` that has no version yet (written before versions were
/// kept) as its first, `existing`: called before a change, so the change can be reverted.
pub(super) fn baseline(tx: &Tx<'_>, ids: &[i64], now: i64) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    tx.execute(
        &format!(
            "INSERT INTO memory_versions (entity_id, version, change, state, source_id, created_at) \
             SELECT e.id, 1, 'existing', {}, NULL, ?2 FROM memory_entities e WHERE e.id IN {} \
             AND NOT EXISTS (SELECT 1 FROM memory_versions v WHERE v.entity_id = e.id)",
            state_sql(tx.backend()),
            ids_in(tx.backend(), 1)
        ),
        params![json_ids(ids), now],
    )?;
    Ok(())
}

/// The entity named `key`: the live one in the first of `places` holding one, else a deleted one
/// in the first holding that: (id, name, scope).
fn find_any(db: &Db, places: &[Place], key: &str) -> Result<Option<(i64, String, Scope)>> {
    for deleted in [false, true] {
        let stmt = "SELECT id, name FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
             AND owner = ?4 AND (deleted_by IS NOT NULL) = ?5";
        for place in places {
            if let Some((id, name)) =
                db.query_opt(stmt, params![place.kind(), place.project, key, place.owner, deleted], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
            {
                return Ok(Some((id, name, place.scope.clone())));
            }
        }
    }
    Ok(None)
}

/// An entity's versions, oldest first.
fn versions_of(db: &Db, entity: i64) -> Result<Vec<EntityVersion>> {
    let rows: Vec<(i64, String, String, Option<i64>, i64)> = db.query_vec(
        "SELECT version, change, state, source_id, created_at FROM memory_versions WHERE entity_id = ?1 \
         ORDER BY version",
        params![entity],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    let sources = super::provenance::load(db, &rows.iter().filter_map(|r| r.3).collect::<Vec<_>>())?;
    let mut out = Vec::with_capacity(rows.len());
    for (version, change, state, source, at) in rows {
        let state: State = serde_json::from_str(&state).map_err(|e| Error::InvalidArguments {
            tool: "memory history".into(),
            message: format!("version {version} of the entity is not readable ({e}); the store may be damaged"),
        })?;
        out.push(EntityVersion {
            version: version as u32,
            change,
            source: source.and_then(|s| sources.get(&s).cloned()),
            at,
            name: state.name,
            entity_type: state.entity_type,
            observations: state.observations,
            deleted: state.deleted,
        });
    }
    Ok(out)
}

impl Memory<'_> {
    /// Every version of the entity `name` (in `scope`, else looked up as the tools look names
    /// up, a deleted one too), oldest first, with its name as stored and its scope.
    pub fn history(&mut self, name: &str, scope: Option<&Scope>) -> Result<(String, Scope, Vec<EntityVersion>)> {
        on_memory_db!(self, "read an entity's history", {
            // Looked up in the order a revert looks it up: the project, user, cross, then the teams.
            let mut places = self.visible(self.db, scope)?;
            places.sort_by_key(|p| match p.scope {
                Scope::Project => 0,
                Scope::User => 1,
                Scope::Cross => 2,
                Scope::Team(_) => 3,
            });
            let (id, found, scope) =
                find_any(self.db, &places, &name_key(name))?.ok_or_else(|| Error::EntityNotFound(name.to_string()))?;
            Ok((found, scope, versions_of(self.db, id)?))
        })
    }

    /// Brings the entity `name` back to version `to` — its name, type, current observations and
    /// whether it is deleted — as a new version. What it drops is kept as a deletion (restorable).
    /// Returns the version made and the entity as it now is.
    pub fn revert(&mut self, name: &str, to: u32, scope: Option<&Scope>) -> Result<(u32, super::Entity)> {
        on_memory_db!(self, "revert an entity", {
            let places = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = self.db.transaction()?;
            // Write access first: nobody learns which names a team they may not write holds.
            for place in &places {
                Memory::check_write(&tx, &self.user, place)?;
            }
            let (id, found, scope) =
                find_any(&tx, &places, &name_key(name))?.ok_or_else(|| Error::EntityNotFound(name.to_string()))?;
            let versions = versions_of(&tx, id)?;
            let latest = versions.last().map_or(0, |v| v.version);
            let Some(target) = versions.iter().find(|v| v.version == to) else {
                return Err(Error::NoSuchVersion { name: found, version: to, latest });
            };
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let deletion: i64 = tx.query_value(
                "INSERT INTO memory_deletions (origin, summary, created_at, owner, source_id) \
                 VALUES ('memory_revert', ?1, ?2, ?3, ?4) RETURNING id",
                params![format!("{found}: what version {to} did not hold"), now, self.user, source],
            )?;
            tx.execute("UPDATE memory_entities SET staged = 1 WHERE id = ?1", params![id])?;
            let current = super::validity::current(&tx, id)?;
            let wanted: HashSet<&str> = target.observations.iter().map(String::as_str).collect();
            let mut dropped = 0;
            for (obs, content) in &current {
                if !wanted.contains(content.as_str()) {
                    dropped += tx.execute(
                        "UPDATE memory_observations SET deleted_by = ?2 WHERE id = ?1",
                        params![obs, deletion],
                    )?;
                }
            }
            let held: HashSet<&str> = current.iter().map(|c| c.1.as_str()).collect();
            for content in &target.observations {
                if held.contains(content.as_str()) {
                    continue;
                }
                // The same observation back, still its writer's (an undo of that writer takes it).
                let revived = tx.execute(
                    "UPDATE memory_observations SET deleted_by = NULL, valid_until = NULL, superseded_by = NULL, \
                     conflicts_with = NULL WHERE entity_id = ?1 AND content = ?2",
                    params![id, content],
                )?;
                if revived == 0 {
                    tx.execute(
                        "INSERT INTO memory_observations (entity_id, content, created_at, source_id) \
                         VALUES (?1, ?2, ?3, ?4)",
                        params![id, content, now, source],
                    )?;
                }
            }
            // Deleted in that version: a tombstone of this revert's deletion (its relations with it).
            let gone = target.deleted.then_some(deletion);
            tx.execute(
                "UPDATE memory_entities SET name = ?2, entity_type = ?3, deleted_by = ?4, staged = 0, updated_at = ?5 \
                 WHERE id = ?1",
                params![id, target.name, target.entity_type, gone, now],
            )?;
            if target.deleted {
                let place = place_of(&places, &scope, &self.user);
                tx.execute(
                    "UPDATE memory_relations SET deleted_by = ?2 WHERE scope = ?3 AND project = ?4 AND owner = ?5 \
                     AND deleted_by IS NULL AND (from_key = ?1 OR to_key = ?1)",
                    params![name_key(&target.name), deletion, place.kind(), place.project, place.owner],
                )?;
            }
            if dropped == 0 && !target.deleted {
                tx.execute("DELETE FROM memory_deletions WHERE id = ?1", params![deletion])?;
            }
            record(&tx, &[id], &format!("reverted to {to}"), source, now)?;
            let entity = super::graph::load_entities(&tx, &[id], self.detail)?.remove(0);
            tx.commit_at("memory")?;
            Ok((latest + 1, entity))
        })
    }

    /// Takes back everything the agent of `session` wrote to the caller's memory: the
    /// observations, relations and (left empty) entities it added are deleted (one deletion,
    /// restorable), the observations it replaced are current again and its deletions are restored.
    pub fn undo_session(&mut self, session: &str) -> Result<Undone> {
        on_memory_db!(self, "undo a session's memory writes", {
            let now = now_ms();
            let tx = self.db.transaction()?;
            let sources: Vec<i64> = tx.query_vec(
                "SELECT id FROM memory_sources WHERE session = ?1 AND user_name = ?2 ORDER BY id",
                params![session, self.user],
                |r| r.get(0),
            )?;
            let mut out = Undone { session: session.to_string(), ..Undone::default() };
            if sources.is_empty() {
                return Ok(out);
            }
            let srcs = json_ids(&sources);
            let ids = ids_in(tx.backend(), 1);
            // The entities it touched, with the teams among their places (written to again now).
            let touched: Vec<(i64, String, String)> = tx.query_vec(
                &format!(
                    "SELECT DISTINCT e.id, e.scope, e.owner FROM memory_entities e WHERE e.source_id IN {ids} \
                     OR e.id IN (SELECT o.entity_id FROM memory_observations o WHERE o.source_id IN {ids}) \
                     OR e.id IN (SELECT o.entity_id FROM memory_observations o JOIN memory_observations n \
                       ON n.id = o.superseded_by WHERE n.source_id IN {ids}) ORDER BY e.id"
                ),
                params![srcs],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            // Its deletions, to restore.
            let deletions: Vec<i64> = tx.query_vec(
                &format!(
                    "SELECT id FROM memory_deletions WHERE restored_at IS NULL AND owner = ?2 AND source_id IN {ids} \
                     AND origin NOT IN ('memory_undo', 'memory_revert') ORDER BY id"
                ),
                params![srcs, self.user],
                |r| r.get(0),
            )?;
            // Every team it changes — the entities it touched, its relations, what its deletions
            // hold — needs write access now, checked before anything is written.
            let dels = json_ids(&deletions);
            let of_deletions = ids_in(tx.backend(), 2);
            let mut teams: HashSet<String> = touched.iter().filter(|t| t.1 == "team").map(|t| t.2.clone()).collect();
            teams.extend(tx.query_vec(
                &format!(
                    "SELECT owner FROM memory_relations WHERE scope = 'team' AND (source_id IN {ids} \
                     OR deleted_by IN {of_deletions}) \
                     UNION SELECT owner FROM memory_entities WHERE scope = 'team' AND deleted_by IN {of_deletions} \
                     UNION SELECT e.owner FROM memory_observations o JOIN memory_entities e ON e.id = o.entity_id \
                     WHERE e.scope = 'team' AND o.deleted_by IN {of_deletions}"
                ),
                params![srcs, dels],
                |r| r.get::<String>(0),
            )?);
            for team in teams {
                Memory::check_write(&tx, &self.user, &Place::team(team))?;
            }
            let entity_ids: Vec<i64> = touched.iter().map(|t| t.0).collect();
            baseline(&tx, &entity_ids, now)?;
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let deletion: i64 = tx.query_value(
                "INSERT INTO memory_deletions (origin, summary, created_at, owner, source_id) \
                 VALUES ('memory_undo', ?1, ?2, ?3, ?4) RETURNING id",
                params![format!("what session {session} wrote"), now, self.user, source],
            )?;
            tx.execute(
                &format!("UPDATE memory_entities SET staged = 1 WHERE id IN {ids}"),
                params![json_ids(&entity_ids)],
            )?;
            // What it replaced is current again (before what replaced it goes) — unless a later
            // write replaced its replacement in turn: that later value stands.
            out.observations_restored = tx.execute(
                &format!(
                    "UPDATE memory_observations SET valid_until = NULL, superseded_by = NULL WHERE deleted_by IS NULL \
                     AND superseded_by IN (SELECT n.id FROM memory_observations n WHERE n.source_id IN {ids} \
                     AND n.valid_until IS NULL AND (n.deleted_by IS NULL OR n.deleted_by IN {of_deletions}))"
                ),
                params![srcs, dels],
            )? as u64;
            out.observations_removed = tx.execute(
                &format!(
                    "UPDATE memory_observations SET deleted_by = ?2 WHERE deleted_by IS NULL AND source_id IN {ids}"
                ),
                params![srcs, deletion],
            )? as u64;
            out.relations_removed = tx.execute(
                &format!("UPDATE memory_relations SET deleted_by = ?2 WHERE deleted_by IS NULL AND source_id IN {ids}"),
                params![srcs, deletion],
            )? as u64;
            // The entities it created that hold nothing now, with the relations that touch them.
            let empty: Vec<(i64, String, String, String, String)> = tx.query_vec(
                &format!(
                    "SELECT e.id, e.name_key, e.scope, e.project, e.owner FROM memory_entities e \
                     WHERE e.deleted_by IS NULL AND e.source_id IN {ids} AND NOT EXISTS (SELECT 1 \
                     FROM memory_observations o WHERE o.entity_id = e.id AND o.deleted_by IS NULL)"
                ),
                params![srcs],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
            for (id, key, scope, project, owner) in &empty {
                tx.execute("UPDATE memory_entities SET deleted_by = ?2 WHERE id = ?1", params![id, deletion])?;
                out.relations_removed += tx.execute(
                    "UPDATE memory_relations SET deleted_by = ?5 WHERE scope = ?1 AND project = ?2 AND owner = ?3 \
                     AND (from_key = ?4 OR to_key = ?4) AND deleted_by IS NULL",
                    params![scope, project, owner, key, deletion],
                )? as u64;
            }
            out.entities_removed = empty.len() as u64;
            // Its deletions come back (what it had itself written stays gone, under the undo's).
            // The entities those deletions hold, out of the indexes until the end.
            let restored: Vec<i64> = if deletions.is_empty() {
                Vec::new()
            } else {
                tx.query_vec(
                    &format!(
                        "SELECT entity_id FROM memory_observations WHERE deleted_by IN {ids} \
                         UNION SELECT id FROM memory_entities WHERE deleted_by IN {ids}"
                    ),
                    params![json_ids(&deletions)],
                    |r| r.get(0),
                )?
            };
            baseline(&tx, &restored, now)?;
            tx.execute(
                &format!("UPDATE memory_entities SET staged = 1 WHERE id IN {ids}"),
                params![json_ids(&restored)],
            )?;
            let its_own = ids_in(tx.backend(), 2);
            for d in &deletions {
                for table in ["memory_observations", "memory_entities", "memory_relations"] {
                    tx.execute(
                        &format!(
                            "UPDATE {table} SET deleted_by = CASE WHEN source_id IN {its_own} THEN CAST(?3 AS BIGINT) END \
                             WHERE deleted_by = ?1"
                        ),
                        params![d, srcs, deletion],
                    )?;
                }
                tx.execute("UPDATE memory_deletions SET restored_at = ?2 WHERE id = ?1", params![d, now])?;
            }
            out.deletions_restored = deletions.len() as u64;
            let mut all = entity_ids.clone();
            all.extend(restored.into_iter().filter(|id| !entity_ids.contains(id)));
            tx.execute(
                &format!("UPDATE memory_entities SET staged = 0, updated_at = ?2 WHERE id IN {ids}"),
                params![json_ids(&all), now],
            )?;
            record(&tx, &all, &format!("undone: session {session}"), source, now)?;
            out.entities = tx.query_vec(
                &format!("SELECT name FROM memory_entities WHERE id IN {ids} ORDER BY id"),
                params![json_ids(&all)],
                |r| r.get(0),
            )?;
            let holds: bool = tx.query_value(
                "SELECT EXISTS (SELECT 1 FROM memory_observations WHERE deleted_by = ?1) \
                 OR EXISTS (SELECT 1 FROM memory_entities WHERE deleted_by = ?1) \
                 OR EXISTS (SELECT 1 FROM memory_relations WHERE deleted_by = ?1)",
                params![deletion],
            )?;
            if !holds {
                tx.execute("DELETE FROM memory_deletions WHERE id = ?1", params![deletion])?;
            } else {
                out.deletion = Some(deletion);
            }
            tx.commit_at("memory")?;
            Ok(out)
        })
    }
}

/// The place of `scope` among `places` (the caller's own place of it when not among them).
fn place_of(places: &[Place], scope: &Scope, user: &str) -> Place {
    places.iter().find(|p| &p.scope == scope).cloned().unwrap_or_else(|| Place {
        scope: scope.clone(),
        project: String::new(),
        owner: user.to_string(),
    })
}
