//! The knowledge graph's operations. Each public method is one `BEGIN IMMEDIATE` transaction.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::store::db::{Db, Tx, ids_in, params};

use super::{Error, Memory, Place, Result, Scope, name_key};
use crate::store::now_ms;
pub use seshat_protocol::memory::{Deletion, Entity, Graph, NewEntity, ObservationAdds, Relation, RelationSpec};

fn begin(db: &mut Db) -> Result<Tx<'_>> {
    Ok(db.transaction()?)
}

/// The live entity with `key` in the first of `places` that has one, for a change by `user`:
/// (id, name, scope). Found in a team scope, the change needs read-write access to the team.
fn find(tx: &Tx<'_>, user: &str, places: &[Place], key: &str) -> Result<Option<(i64, String, Scope)>> {
    let stmt = "SELECT id, name FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
         AND deleted_by IS NULL AND owner = ?4";
    for place in places {
        if let Some((id, name)) =
            tx.query_opt(stmt, params![place.kind(), place.project, key, place.owner], |r| Ok((r.get(0)?, r.get(1)?)))?
        {
            Memory::check_write(tx, user, place)?;
            return Ok(Some((id, name, place.scope.clone())));
        }
    }
    Ok(None)
}

/// Entities whose search-index rows one call rebuilds: each is staged (taken out of the indexes)
/// before its observations change, and all are put back by one statement at the end.
///
/// One statement matters: once an FTS5 table has been written in a transaction, SQLite opens a
/// statement savepoint on it for every later statement that could abort part-way, and FTS5
/// writes its pending terms out as a new segment at each savepoint. Re-indexing entity by entity
/// therefore wrote one segment per entity and spent most of a 100-entity call merging them.
#[derive(Default)]
struct Staging {
    ids: Vec<i64>,
}

impl Staging {
    /// Takes live entities out of the indexes (in one statement) until [`Staging::finish`].
    fn stage(&mut self, tx: &Tx<'_>, entities: &[i64]) -> Result<()> {
        let new: Vec<i64> = entities.iter().copied().filter(|id| !self.ids.contains(id)).collect();
        if !new.is_empty() {
            tx.execute(
                &format!("UPDATE memory_entities SET staged = 1 WHERE id IN {}", ids_in(tx.backend(), 1)),
                params![json_ids(&new)],
            )?;
            self.ids.extend(new);
        }
        Ok(())
    }

    /// Records an entity written as staged (inserted or revived).
    fn inserted(&mut self, entity: i64) {
        if !self.ids.contains(&entity) {
            self.ids.push(entity);
        }
    }

    /// Indexes every staged entity again, in one statement.
    fn finish(self, tx: &Tx<'_>, now: i64) -> Result<()> {
        if !self.ids.is_empty() {
            tx.execute(
                &format!(
                    "UPDATE memory_entities SET staged = 0, updated_at = ?2 WHERE id IN {}",
                    ids_in(tx.backend(), 1)
                ),
                params![json_ids(&self.ids), now],
            )?;
        }
        Ok(())
    }
}

/// Entity ids as a JSON array, for `json_each`.
pub(super) fn json_ids(ids: &[i64]) -> String {
    format!("[{}]", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

/// Adds observations to a staged entity (reviving tombstoned ones). A `fresh` entity (just
/// inserted, with no observations yet) skips the lookups.
fn add_observations(tx: &Tx<'_>, entity: i64, contents: &[String], now: i64, fresh: bool) -> Result<Vec<String>> {
    let mut added = Vec::new();
    let mut seen = HashSet::new();
    for content in contents {
        if content.trim().is_empty() || !seen.insert(content.as_str()) {
            continue;
        }
        if fresh {
            tx.execute(
                "INSERT INTO memory_observations (entity_id, content, created_at) VALUES (?1, ?2, ?3)",
                params![entity, content, now],
            )?;
            added.push(content.clone());
            continue;
        }
        let existing: Option<Option<i64>> = tx.query_opt(
            "SELECT deleted_by FROM memory_observations WHERE entity_id = ?1 AND content = ?2",
            params![entity, content],
            |r| r.get(0),
        )?;
        match existing {
            Some(None) => {}
            Some(Some(_)) => {
                tx.execute(
                    "UPDATE memory_observations SET deleted_by = NULL WHERE entity_id = ?1 AND content = ?2",
                    params![entity, content],
                )?;
                added.push(content.clone());
            }
            None => {
                tx.execute(
                    "INSERT INTO memory_observations (entity_id, content, created_at) VALUES (?1, ?2, ?3)",
                    params![entity, content, now],
                )?;
                added.push(content.clone());
            }
        }
    }
    Ok(added)
}

fn new_deletion(tx: &Tx<'_>, user: &str, origin: &str, summary: &str, now: i64) -> Result<i64> {
    Ok(tx.query_value(
        "INSERT INTO memory_deletions (origin, summary, created_at, owner) VALUES (?1, ?2, ?3, ?4) RETURNING id",
        params![origin, summary, now, user],
    )?)
}

/// Loads entities by id, in the given order, with their live observations.
pub(super) fn load_entities(conn: &Db, ids: &[i64]) -> Result<Vec<Entity>> {
    let entity = "SELECT name, entity_type, scope, owner FROM memory_entities WHERE id = ?1";
    let obs = "SELECT content FROM memory_observations WHERE entity_id = ?1 AND deleted_by IS NULL ORDER BY id";
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let (name, entity_type, scope, owner): (String, String, String, String) =
            conn.query_row(entity, params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        let observations = conn.query_vec(obs, params![id], |r| r.get(0))?;
        let scope = Scope::from_parts(&scope, &owner).unwrap_or(Scope::Cross);
        out.push(Entity { name, entity_type, observations, scope });
    }
    Ok(out)
}

/// Live relations in `places` whose two ends are both among `keys`.
pub(super) fn relations_among(conn: &Db, places: &[Place], keys: &HashSet<String>) -> Result<Vec<Relation>> {
    let stmt = "SELECT from_name, from_key, to_name, to_key, relation_type FROM memory_relations \
         WHERE scope = ?1 AND project = ?2 AND deleted_by IS NULL AND from_key = ?3 AND owner = ?4 ORDER BY id";
    let mut out = Vec::new();
    for place in places {
        for key in keys {
            let rows = conn.query_vec(stmt, params![place.kind(), place.project, key, place.owner], |r| {
                Ok((r.get::<String>(0)?, r.get::<String>(2)?, r.get::<String>(3)?, r.get::<String>(4)?))
            })?;
            for (from, to, to_key, relation_type) in rows {
                if keys.contains(&to_key) {
                    out.push(Relation { from, to, relation_type, scope: place.scope.clone() });
                }
            }
        }
    }
    Ok(out)
}

impl Memory<'_> {
    /// Creates entities in `scope` (default: the project, else cross). An entity that already
    /// exists there (same name under case folding) gets the new observations merged in — unlike the
    /// reference server, which silently skips it. Returns each entity as it now is.
    pub fn create_entities(&mut self, entities: &[NewEntity], scope: Option<&Scope>) -> Result<Vec<Entity>> {
        on_memory_db!(self, "create entities", {
            let place = self.place(&scope.cloned().unwrap_or_else(|| self.default_graph_scope()))?;
            let now = now_ms();
            if entities.iter().any(|e| e.name.trim().is_empty()) {
                return Err(Error::InvalidArguments {
                    tool: "create_entities".into(),
                    message: "an entity `name` is empty".into(),
                });
            }
            for e in entities {
                super::check_label("create_entities", "entity name", &e.name)?;
                super::check_label("create_entities", "entity type", &e.entity_type)?;
            }
            // What is stored of each entity's observations (names and types are labels: refused in
            // a team scope if they hold a credential, else kept).
            let mut cleaned: Vec<NewEntity> = Vec::with_capacity(entities.len());
            for e in entities {
                let labels = [e.name.clone(), e.entity_type.clone()];
                self.clean(&place, &labels)?;
                let observations = self.clean(&place, &e.observations)?.into_owned();
                cleaned.push(NewEntity { observations, ..e.clone() });
            }
            let entities = &cleaned[..];
            let keys: Vec<String> = entities.iter().map(|e| name_key(&e.name)).collect();
            let tx = begin(self.db)?;
            Memory::check_write(&tx, &self.user, &place)?;
            // Each name's entity as the call starts: (id, deleted_by).
            let mut existing: Vec<Option<(i64, Option<i64>)>> = Vec::with_capacity(keys.len());
            let lookup = "SELECT id, deleted_by FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                 AND owner = ?4";
            for key in &keys {
                existing.push(tx.query_opt(lookup, params![place.kind(), place.project, key, place.owner], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?);
            }
            // Live entities that get observations leave the indexes together, before any write.
            let live: Vec<i64> =
                existing.iter().filter_map(|found| found.and_then(|(id, gone)| gone.is_none().then_some(id))).collect();
            let mut staging = Staging::default();
            staging.stage(&tx, &live)?;
            // Names already written by this call (a name can come twice, in other case).
            let mut written: HashMap<&str, i64> = HashMap::new();
            let mut ids = Vec::new();
            let mut out: Vec<Entity> = Vec::new();
            for ((e, key), found) in entities.iter().zip(&keys).zip(existing) {
                let (id, fresh) = match written.get(key.as_str()).map(|&id| (id, None)).or(found) {
                    Some((id, None)) => (id, false),
                    Some((id, Some(_))) => {
                        // A deleted entity of that name comes back (staged) with the new content.
                        tx.execute(
                            "UPDATE memory_entities SET name = ?2, entity_type = ?3, deleted_by = NULL, staged = 1, \
                         updated_at = ?4 WHERE id = ?1",
                            params![id, e.name.trim(), e.entity_type, now],
                        )?;
                        staging.inserted(id);
                        (id, false)
                    }
                    None => {
                        let id: i64 = tx.query_value(
                            "INSERT INTO memory_entities (scope, project, name, name_key, entity_type, staged, \
                             created_at, updated_at, owner) VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?7) RETURNING id",
                            params![place.kind(), place.project, e.name.trim(), key, e.entity_type, now, place.owner],
                        )?;
                        staging.inserted(id);
                        (id, true)
                    }
                };
                written.insert(key, id);
                let added = add_observations(&tx, id, &e.observations, now, fresh)?;
                match ids.iter().position(|&known| known == id) {
                    Some(i) => out[i] = load_entities(&tx, &[id])?.remove(0),
                    None if fresh => {
                        ids.push(id);
                        out.push(Entity {
                            name: e.name.trim().into(),
                            entity_type: e.entity_type.clone(),
                            observations: added,
                            scope: place.scope.clone(),
                        });
                    }
                    None => {
                        ids.push(id);
                        out.push(load_entities(&tx, &[id])?.remove(0));
                    }
                }
            }
            staging.finish(&tx, now)?;
            tx.commit_at("memory")?;
            Ok(out)
        })
    }

    /// Adds observations to existing entities. An unknown entity is an error and nothing is
    /// written (as in the reference server).
    pub fn add_observations(
        &mut self,
        adds: &[(String, Vec<String>)],
        scope: Option<&Scope>,
    ) -> Result<Vec<ObservationAdds>> {
        on_memory_db!(self, "add observations", {
            let places = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = begin(self.db)?;
            let mut found = Vec::with_capacity(adds.len());
            for (name, _) in adds {
                found.push(
                    find(&tx, &self.user, &places, &name_key(name))?
                        .ok_or_else(|| Error::EntityNotFound(name.clone()))?,
                );
            }
            let mut staging = Staging::default();
            staging.stage(&tx, &found.iter().map(|f| f.0).collect::<Vec<_>>())?;
            let mut out = Vec::new();
            for ((_, contents), (id, found_name, scope)) in adds.iter().zip(found) {
                let place = places.iter().find(|p| p.scope == scope).cloned().unwrap_or_else(|| Place {
                    scope,
                    project: String::new(),
                    owner: self.user.clone(),
                });
                let contents = super::redact::clean_in(&tx, self.redacting, &place, contents)?;
                let added = add_observations(&tx, id, &contents, now, false)?;
                out.push(ObservationAdds { entity_name: found_name, added_observations: added });
            }
            staging.finish(&tx, now)?;
            tx.commit_at("memory")?;
            Ok(out)
        })
    }

    /// Creates relations in `scope` (default: the project, else cross). An existing relation is
    /// not stored twice. Returns the relations that are new.
    pub fn create_relations(&mut self, relations: &[RelationSpec], scope: Option<&Scope>) -> Result<Vec<Relation>> {
        on_memory_db!(self, "create relations", {
            let place = self.place(&scope.cloned().unwrap_or_else(|| self.default_graph_scope()))?;
            let now = now_ms();
            let tx = begin(self.db)?;
            Memory::check_write(&tx, &self.user, &place)?;
            // Both ends must exist in the scope the relations go to: a relation to nothing would be
            // reported as created and never shown.
            let mut missing: Vec<String> = Vec::new();
            {
                let exists = "SELECT 1 FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                     AND deleted_by IS NULL AND owner = ?4";
                for r in relations {
                    if r.from.trim().is_empty() || r.to.trim().is_empty() || r.relation_type.trim().is_empty() {
                        return Err(Error::InvalidArguments {
                            tool: "create_relations".into(),
                            message: "`from`, `to` and `relationType` must not be empty".into(),
                        });
                    }
                    super::check_label("create_relations", "relation type", &r.relation_type)?;
                    for end in [r.from.trim(), r.to.trim()] {
                        let key = name_key(end);
                        let known = tx
                            .query_opt(exists, params![place.kind(), place.project, key, place.owner], |_| Ok(()))?
                            .is_some();
                        if !known && !missing.iter().any(|m| name_key(m) == key) {
                            missing.push(end.to_string());
                        }
                    }
                }
            }
            if !missing.is_empty() {
                return Err(Error::RelationEndsMissing { names: missing, scope: place.scope.to_string() });
            }
            let mut out = Vec::new();
            for r in relations {
                let (fk, tk) = (name_key(&r.from), name_key(&r.to));
                let existing: Option<Option<i64>> = tx.query_opt(
                    "SELECT deleted_by FROM memory_relations WHERE scope = ?1 AND project = ?2 AND from_key = ?3 \
                     AND to_key = ?4 AND relation_type = ?5 AND owner = ?6",
                    params![place.kind(), place.project, fk, tk, r.relation_type, place.owner],
                    |row| row.get(0),
                )?;
                match existing {
                    Some(None) => continue,
                    Some(Some(_)) => {
                        tx.execute("UPDATE memory_relations SET deleted_by = NULL WHERE scope = ?1 AND project = ?2 AND from_key = ?3 \
                         AND to_key = ?4 AND relation_type = ?5 AND owner = ?6", params![place.kind(), place.project, fk, tk, r.relation_type, place.owner])?;
                    }
                    None => {
                        tx.execute("INSERT INTO memory_relations (scope, project, from_name, from_key, to_name, to_key, relation_type, created_at, owner) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", params![place.kind(), place.project, r.from.trim(), fk, r.to.trim(), tk, r.relation_type, now, place.owner])?;
                    }
                }
                out.push(Relation {
                    from: r.from.trim().into(),
                    to: r.to.trim().into(),
                    relation_type: r.relation_type.clone(),
                    scope: place.scope.clone(),
                });
            }
            tx.commit_at("memory")?;
            Ok(out)
        })
    }

    /// Deletes entities (tombstones) with the relations that touch them. Names that do not exist
    /// are not an error. Returns the deletion id (for restore) and how many entities it removed.
    pub fn delete_entities(&mut self, names: &[String], scope: Option<&Scope>) -> Result<(i64, usize)> {
        on_memory_db!(self, "delete entities", {
            let places = self.lookup_order(self.db, scope)?;
            let visible = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = begin(self.db)?;
            for place in &places {
                Memory::check_write(&tx, &self.user, place)?;
            }
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_entities",
                &format!("entities: {}", names.join(", ")),
                now,
            )?;
            let mut found = Vec::new();
            for name in names {
                let key = name_key(name);
                if let Some((id, _, _)) = find(&tx, &self.user, &places, &key)?
                    && !found.iter().any(|(known, _)| *known == id)
                {
                    found.push((id, key));
                }
            }
            // One statement per table, so the indexes write their deletions out once (see [`Staging`]).
            let ids = json_ids(&found.iter().map(|f| f.0).collect::<Vec<_>>());
            tx.execute(
                &format!(
                    "UPDATE memory_entities SET deleted_by = ?2, updated_at = ?3 WHERE id IN {}",
                    ids_in(tx.backend(), 1)
                ),
                params![ids, deletion, now],
            )?;
            // Their observations go with them (and come back with them on restore).
            tx.execute(
                &format!(
                    "UPDATE memory_observations SET deleted_by = ?2 WHERE entity_id IN {} AND deleted_by IS NULL",
                    ids_in(tx.backend(), 1)
                ),
                params![ids, deletion],
            )?;
            for (_, key) in &found {
                for place in &visible {
                    tx.execute(
                        "UPDATE memory_relations SET deleted_by = ?4 WHERE scope = ?1 AND project = ?2 \
                     AND (from_key = ?3 OR to_key = ?3) AND deleted_by IS NULL AND owner = ?5",
                        params![place.kind(), place.project, key, deletion, place.owner],
                    )?;
                }
            }
            let removed = found.len();
            tx.commit_at("memory")?;
            Ok((deletion, removed))
        })
    }

    /// Deletes observations (tombstones). Missing entities or observations are not an error.
    pub fn delete_observations(
        &mut self,
        deletions: &[(String, Vec<String>)],
        scope: Option<&Scope>,
    ) -> Result<(i64, usize)> {
        on_memory_db!(self, "delete observations", {
            let places = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = begin(self.db)?;
            for place in &places {
                Memory::check_write(&tx, &self.user, place)?;
            }
            let names: Vec<&str> = deletions.iter().map(|(n, _)| n.as_str()).collect();
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_observations",
                &format!("observations of: {}", names.join(", ")),
                now,
            )?;
            let mut found = Vec::new();
            for (name, contents) in deletions {
                if let Some((id, _, _)) = find(&tx, &self.user, &places, &name_key(name))? {
                    found.push((id, contents));
                }
            }
            let mut staging = Staging::default();
            staging.stage(&tx, &found.iter().map(|f| f.0).collect::<Vec<_>>())?;
            let mut removed = 0;
            for (id, contents) in found {
                for content in contents {
                    removed += tx.execute("UPDATE memory_observations SET deleted_by = ?3 WHERE entity_id = ?1 AND content = ?2 AND deleted_by IS NULL", params![id, content, deletion])?;
                }
            }
            staging.finish(&tx, now)?;
            tx.commit_at("memory")?;
            Ok((deletion, removed))
        })
    }

    /// Deletes relations (tombstones). Missing ones are not an error.
    pub fn delete_relations(&mut self, relations: &[RelationSpec], scope: Option<&Scope>) -> Result<(i64, usize)> {
        on_memory_db!(self, "delete relations", {
            let visible = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = begin(self.db)?;
            for place in &visible {
                Memory::check_write(&tx, &self.user, place)?;
            }
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_relations",
                &format!("{} relations", relations.len()),
                now,
            )?;
            let mut removed = 0;
            for r in relations {
                for place in &visible {
                    removed += tx.execute("UPDATE memory_relations SET deleted_by = ?6 WHERE scope = ?1 AND project = ?2 AND from_key = ?3 \
                         AND to_key = ?4 AND relation_type = ?5 AND deleted_by IS NULL AND owner = ?7", params![place.kind(), place.project, name_key(&r.from), name_key(&r.to), r.relation_type, deletion, place.owner])?;
                }
            }
            tx.commit_at("memory")?;
            Ok((deletion, removed))
        })
    }

    /// The named entities (in the visible scopes, or `scope`) and the relations among them.
    pub fn open_nodes(&mut self, names: &[String], scope: Option<&Scope>) -> Result<Graph> {
        on_memory_db!(self, "open nodes", {
            let places = self.visible(self.db, scope)?;
            let tx = begin(self.db)?;
            let mut ids = Vec::new();
            let mut keys = HashSet::new();
            let stmt = "SELECT id FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                 AND deleted_by IS NULL AND owner = ?4";
            for name in names {
                let key = name_key(name);
                for place in &places {
                    if let Some(id) =
                        tx.query_opt(stmt, params![place.kind(), place.project, key, place.owner], |r| r.get::<i64>(0))?
                        && !ids.contains(&id)
                    {
                        ids.push(id);
                        keys.insert(key.clone());
                    }
                }
            }
            let graph = Graph { entities: load_entities(&tx, &ids)?, relations: relations_among(&tx, &places, &keys)? };
            tx.commit_at("memory")?;
            Ok(graph)
        })
    }

    /// The whole visible graph (or one scope's), most recently updated entities first: at most
    /// `limit` entities after skipping `offset`. Returns the graph and whether more follow.
    pub fn read_graph(&mut self, scope: Option<&Scope>, offset: usize, limit: usize) -> Result<(Graph, bool)> {
        on_memory_db!(self, "read the graph", {
            let places = self.visible(self.db, scope)?;
            let tx = begin(self.db)?;
            let mut rows: Vec<(i64, i64, String)> = Vec::new();
            {
                let stmt = "SELECT id, updated_at, name_key FROM memory_entities WHERE owner = ?4 AND scope = ?1 \
                 AND project = ?2 AND deleted_by IS NULL ORDER BY updated_at DESC, id DESC LIMIT ?3";
                for place in &places {
                    let wanted = offset.saturating_add(limit).saturating_add(1).min(i64::MAX as usize) as i64;
                    let found = tx.query_vec(stmt, params![place.kind(), place.project, wanted, place.owner], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })?;
                    rows.extend(found);
                }
            }
            rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
            let cut = rows.len() > offset.saturating_add(limit);
            let rows: Vec<_> = rows.into_iter().skip(offset).take(limit).collect();
            let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let keys: HashSet<String> = rows.into_iter().map(|r| r.2).collect();
            let graph = Graph { entities: load_entities(&tx, &ids)?, relations: relations_among(&tx, &places, &keys)? };
            tx.commit_at("memory")?;
            Ok((graph, cut))
        })
    }

    /// Deletions that can still be restored, newest first.
    pub fn deletions(&mut self) -> Result<Vec<Deletion>> {
        on_memory_db!(self, "list deletions", {
            let stmt = "SELECT id, origin, summary, created_at FROM memory_deletions WHERE restored_at IS NULL \
                 AND owner = ?1 ORDER BY id DESC";
            Ok(self.db.query_vec(stmt, params![self.user], |r| {
                Ok(Deletion { id: r.get(0)?, origin: r.get(1)?, summary: r.get(2)?, created_at: r.get(3)? })
            })?)
        })
    }

    /// Brings back everything one delete call removed.
    pub fn restore(&mut self, deletion: i64) -> Result<Deletion> {
        on_memory_db!(self, "restore a deletion", {
            let now = now_ms();
            let tx = begin(self.db)?;
            let found: Option<Deletion> = tx.query_opt(
                "SELECT id, origin, summary, created_at FROM memory_deletions WHERE id = ?1 AND restored_at IS NULL \
                 AND owner = ?2",
                params![deletion, self.user],
                |r| Ok(Deletion { id: r.get(0)?, origin: r.get(1)?, summary: r.get(2)?, created_at: r.get(3)? }),
            )?;
            let found = found.ok_or(Error::NoSuchDeletion(deletion))?;
            // What it brings back into a team scope needs write access there now, whatever the
            // caller had when deleting.
            let teams: Vec<String> = tx.query_vec(
                "SELECT owner FROM memory_entities WHERE deleted_by = ?1 AND scope = 'team' \
                 UNION SELECT e.owner FROM memory_observations o JOIN memory_entities e ON e.id = o.entity_id \
                 WHERE o.deleted_by = ?1 AND e.scope = 'team' \
                 UNION SELECT owner FROM memory_relations WHERE deleted_by = ?1 AND scope = 'team'",
                params![deletion],
                |r| r.get(0),
            )?;
            for team in &teams {
                crate::store::owners::check_team_write(&tx, &self.user, team)?;
            }
            let entities: Vec<i64> = {
                let stmt = "SELECT DISTINCT entity_id FROM memory_observations WHERE deleted_by = ?1";
                tx.query_vec(stmt, params![deletion], |r| r.get(0))?
            };
            let mut staging = Staging::default();
            staging.stage(&tx, &entities)?;
            tx.execute("UPDATE memory_observations SET deleted_by = NULL WHERE deleted_by = ?1", params![deletion])?;
            staging.finish(&tx, now)?;
            tx.execute(
                "UPDATE memory_entities SET deleted_by = NULL, updated_at = ?2 WHERE deleted_by = ?1",
                params![deletion, now],
            )?;
            tx.execute("UPDATE memory_relations SET deleted_by = NULL WHERE deleted_by = ?1", params![deletion])?;
            tx.execute("UPDATE memory_deletions SET restored_at = ?2 WHERE id = ?1", params![deletion, now])?;
            tx.commit_at("memory")?;
            Ok(found)
        })
    }

    /// Counts of live entities per scope among the visible ones (for summaries).
    pub fn counts(&mut self) -> Result<BTreeMap<Scope, usize>> {
        on_memory_db!(self, "count memory", {
            let places = self.visible(self.db, None)?;
            let mut out = BTreeMap::new();
            for place in places {
                let n: i64 = self.db.query_row(
                    "SELECT count(*) FROM memory_entities WHERE scope = ?1 AND project = ?2 AND deleted_by IS NULL \
                     AND owner = ?3",
                    params![place.kind(), place.project, place.owner],
                    |r| r.get(0),
                )?;
                out.insert(place.scope, n as usize);
            }
            Ok(out)
        })
    }
}
