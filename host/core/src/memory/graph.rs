//! The knowledge graph's operations. Each public method is one `BEGIN IMMEDIATE` transaction.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::store::db::{Db, Tx, ids_in, params};
pub use seshat_protocol::memory_tools::ObservationsToAdd;

use super::{Error, Memory, Place, Result, Scope, name_key};
use crate::store::now_ms;
pub use seshat_protocol::memory::{
    Conflict, Deletion, Entity, Graph, NewEntity, ObservationAdds, PastObservation, Relation, RelationSpec,
};

fn begin(db: &mut Db) -> Result<Tx<'_>> {
    Ok(db.transaction()?)
}

/// The live entity with `key` in the first of `places` that has one, for a change by `user`:
/// (id, name, scope). Found in a team scope, the change needs read-write access to the team.
fn find(tx: &Tx<'_>, user: &str, places: &[Place], key: &str) -> Result<Option<(i64, String, Scope)>> {
    let stmt = "SELECT id, name FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
         AND deleted_by IS NULL AND owner = ?4 AND (expires_at IS NULL OR expires_at > ?5)";
    let now = now_ms();
    for place in places {
        if let Some((id, name)) =
            tx.query_opt(stmt, params![place.kind(), place.project, key, place.owner, now], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
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
    /// Takes live entities out of the indexes (in one statement) until [`Staging::finish`]; an
    /// entity with no version yet gets its state as found recorded first.
    fn stage(&mut self, tx: &Tx<'_>, entities: &[i64], now: i64) -> Result<()> {
        let new: Vec<i64> = entities.iter().copied().filter(|id| !self.ids.contains(id)).collect();
        if !new.is_empty() {
            super::versions::baseline(tx, &new, now)?;
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

/// One write call's: when, its source, and whether it revives a replaced observation it
/// writes again (an import does not: the store it comes from may not know of the replacement).
#[derive(Clone, Copy)]
struct Write {
    now: i64,
    source: i64,
    revive_replaced: bool,
}

/// What adding observations to one entity did.
#[derive(Default)]
struct Added {
    /// The contents new to it (or current again).
    added: Vec<String>,
    /// Each content's observation id, in the order given (duplicates and blanks left out).
    ids: Vec<(String, i64)>,
    /// New contents that look like another value of an attribute it holds.
    conflicts: Vec<Conflict>,
}

/// Adds observations to a staged entity by the write `source` (reviving deleted or replaced
/// ones). A `fresh` entity (just inserted, with no observations yet) skips the lookups. A new
/// observation that gives another value to an attribute a current one (not among `replacing`)
/// holds is flagged as conflicting with it.
fn add_observations(
    tx: &Tx<'_>,
    entity: i64,
    contents: &[String],
    write: &Write,
    fresh: bool,
    replacing: &[i64],
) -> Result<Added> {
    let Write { now, source, revive_replaced } = *write;
    let mut out = Added::default();
    let mut seen = HashSet::new();
    let insert = "INSERT INTO memory_observations (entity_id, content, created_at, source_id) VALUES (?1, ?2, ?3, ?4) \
         RETURNING id";
    let current = if fresh { Vec::new() } else { super::validity::current(tx, entity)? };
    for content in contents {
        if content.trim().is_empty() || !seen.insert(content.as_str()) {
            continue;
        }
        if fresh {
            let id: i64 = tx.query_value(insert, params![entity, content, now, source])?;
            out.added.push(content.clone());
            out.ids.push((content.clone(), id));
            continue;
        }
        let existing: Option<(i64, Option<i64>, Option<i64>)> = tx.query_opt(
            "SELECT id, deleted_by, valid_until FROM memory_observations WHERE entity_id = ?1 AND content = ?2",
            params![entity, content],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let id = match existing {
            Some((id, None, None)) => {
                out.ids.push((content.clone(), id));
                continue;
            }
            // An import of a store that still holds what this one replaced leaves it replaced.
            Some((id, None, Some(_))) if !revive_replaced => {
                out.ids.push((content.clone(), id));
                continue;
            }
            Some((id, _, _)) => {
                tx.execute(
                    "UPDATE memory_observations SET deleted_by = NULL, valid_until = NULL, superseded_by = NULL, \
                     conflicts_with = NULL, source_id = ?2, created_at = ?3 WHERE id = ?1",
                    params![id, source, now],
                )?;
                id
            }
            None => tx.query_value(insert, params![entity, content, now, source])?,
        };
        out.added.push(content.clone());
        out.ids.push((content.clone(), id));
        if let Some((other, earlier)) = current
            .iter()
            .filter(|(other, _)| !replacing.contains(other))
            .find(|(_, earlier)| super::validity::contradicts(content, earlier))
        {
            tx.execute("UPDATE memory_observations SET conflicts_with = ?2 WHERE id = ?1", params![id, other])?;
            out.conflicts.push(Conflict { observation: content.clone(), contradicts: earlier.clone() });
        }
    }
    Ok(out)
}

fn new_deletion(tx: &Tx<'_>, user: &str, origin: &str, summary: &str, now: i64, source: i64) -> Result<i64> {
    Ok(tx.query_value(
        "INSERT INTO memory_deletions (origin, summary, created_at, owner, source_id) VALUES (?1, ?2, ?3, ?4, ?5) \
         RETURNING id",
        params![origin, summary, now, user, source],
    )?)
}

/// What a read returns of each entity beyond its current observations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Detail {
    /// Where it and each observation came from.
    pub sources: bool,
    /// The observations it no longer holds (replaced ones).
    pub history: bool,
    /// The observations it held at this time (Unix milliseconds) instead of now.
    pub as_of: Option<i64>,
}

/// Loads entities by id, in the given order, with their current observations (and what `detail`
/// asks for).
pub(crate) fn load_entities(conn: &Db, ids: &[i64], detail: Detail) -> Result<Vec<Entity>> {
    let entity = "SELECT name, entity_type, scope, owner, source_id, expires_at FROM memory_entities WHERE id = ?1";
    let obs = "SELECT id, content, source_id, valid_until, superseded_by, conflicts_with FROM memory_observations \
         WHERE entity_id = ?1 AND deleted_by IS NULL ORDER BY id";
    // As of a time: what had been written by then and was neither replaced nor deleted yet, as
    // current (what was replaced by then, as past).
    let obs_then = "SELECT o.id, o.content, o.source_id, CASE WHEN o.valid_until <= ?2 THEN o.valid_until END, \
         o.superseded_by, o.conflicts_with FROM memory_observations o \
         LEFT JOIN memory_deletions d ON d.id = o.deleted_by \
         WHERE o.entity_id = ?1 AND o.created_at <= ?2 AND (o.deleted_by IS NULL OR d.created_at > ?2) ORDER BY o.id";
    type Obs = (i64, String, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
    let mut loaded = Vec::with_capacity(ids.len());
    let mut source_ids = Vec::new();
    for id in ids {
        let (name, entity_type, scope, owner, source, expires_at): (
            String,
            String,
            String,
            String,
            Option<i64>,
            Option<i64>,
        ) = conn.query_row(entity, params![id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?;
        let row =
            |r: &crate::store::db::Row<'_>| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?));
        let observations: Vec<Obs> = match detail.as_of {
            None => conn.query_vec(obs, params![id], row)?,
            Some(then) => conn.query_vec(obs_then, params![id, then], row)?,
        };
        if detail.sources {
            source_ids.extend(source);
            source_ids.extend(observations.iter().filter_map(|o| o.2));
        }
        let scope = Scope::from_parts(&scope, &owner).unwrap_or(Scope::Cross);
        loaded.push((Entity::new(name, entity_type, Vec::new(), scope), source, expires_at, observations));
    }
    let sources = if detail.sources { super::provenance::load(conn, &source_ids)? } else { HashMap::new() };
    let source_of = |id: Option<i64>| id.and_then(|id| sources.get(&id).cloned());
    let mut out = Vec::with_capacity(loaded.len());
    for (mut e, source, expires_at, observations) in loaded {
        e.expires_at = expires_at;
        if detail.sources {
            e.source = source_of(source);
        }
        let content_of: HashMap<i64, &str> = observations.iter().map(|o| (o.0, o.1.as_str())).collect();
        for (_, content, source, valid_until, superseded_by, conflicts_with) in &observations {
            match valid_until {
                None => {
                    e.observations.push(content.clone());
                    if detail.sources {
                        e.observation_sources.push(source_of(*source));
                    }
                    if let Some(earlier) = conflicts_with.and_then(|c| content_of.get(&c)) {
                        let earlier_current = observations.iter().any(|o| o.1 == *earlier && o.3.is_none());
                        if earlier_current {
                            e.conflicts
                                .push(Conflict { observation: content.clone(), contradicts: earlier.to_string() });
                        }
                    }
                }
                Some(until) if detail.history => e.past_observations.push(PastObservation {
                    content: content.clone(),
                    valid_until: *until,
                    replaced_by: superseded_by.and_then(|s| content_of.get(&s)).map(|c| c.to_string()),
                    source: source_of(*source),
                }),
                Some(_) => {}
            }
        }
        out.push(e);
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
        self.create_entities_for(entities, scope, None)
    }

    /// [`Memory::create_entities`], each kept `ttl` milliseconds from now (default: the scope's
    /// [`Ttls`](super::Ttls), else forever): then it leaves the context and search.
    pub fn create_entities_for(
        &mut self,
        entities: &[NewEntity],
        scope: Option<&Scope>,
        ttl: Option<i64>,
    ) -> Result<Vec<Entity>> {
        on_memory_db!(self, "create entities", {
            let place = self.place(&scope.cloned().unwrap_or_else(|| self.default_graph_scope()))?;
            let now = now_ms();
            let expires = ttl.or_else(|| self.ttls.of(&place.scope)).map(|ttl| now.saturating_add(ttl));
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
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            // Each name's entity as the call starts: (id, deleted_by, expired).
            let mut existing: Vec<Option<(i64, Option<i64>, bool)>> = Vec::with_capacity(keys.len());
            let lookup = "SELECT id, deleted_by, coalesce(expires_at <= ?5, false) FROM memory_entities \
                 WHERE scope = ?1 AND project = ?2 AND name_key = ?3 AND owner = ?4";
            for key in &keys {
                let found = tx.query_opt(lookup, params![place.kind(), place.project, key, place.owner, now], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
                // An expired entity is gone, with its relations: the name starts afresh.
                if let Some((id, _, true)) = found {
                    tx.execute(
                        "DELETE FROM memory_relations WHERE scope = ?1 AND project = ?2 AND owner = ?3 \
                         AND (from_key = ?4 OR to_key = ?4)",
                        params![place.kind(), place.project, place.owner, key],
                    )?;
                    tx.execute("DELETE FROM memory_entities WHERE id = ?1", params![id])?;
                    existing.push(None);
                } else {
                    existing.push(found);
                }
            }
            // Live entities that get observations leave the indexes together, before any write.
            let live: Vec<i64> = existing
                .iter()
                .filter_map(|found| found.and_then(|(id, gone, _)| gone.is_none().then_some(id)))
                .collect();
            let mut staging = Staging::default();
            staging.stage(&tx, &live, now)?;
            // Names already written by this call (a name can come twice, in other case).
            let mut written: HashMap<&str, i64> = HashMap::new();
            let mut ids = Vec::new();
            let mut out: Vec<Entity> = Vec::new();
            let (mut created, mut changed) = (Vec::new(), Vec::new());
            for ((e, key), found) in entities.iter().zip(&keys).zip(existing) {
                let found = found.map(|(id, gone, _)| (id, gone));
                let (id, fresh) = match written.get(key.as_str()).map(|&id| (id, None)).or(found) {
                    Some((id, None)) => {
                        if ttl.is_some() {
                            tx.execute(
                                "UPDATE memory_entities SET expires_at = ?2 WHERE id = ?1",
                                params![id, expires],
                            )?;
                        }
                        (id, false)
                    }
                    Some((id, Some(_))) => {
                        // A deleted entity of that name comes back (staged) with the new content.
                        tx.execute(
                            "UPDATE memory_entities SET name = ?2, entity_type = ?3, deleted_by = NULL, staged = 1, \
                         updated_at = ?4, source_id = ?5, expires_at = ?6 WHERE id = ?1",
                            params![id, e.name.trim(), e.entity_type, now, source, expires],
                        )?;
                        staging.inserted(id);
                        created.push(id);
                        (id, false)
                    }
                    None => {
                        let id: i64 = tx.query_value(
                            "INSERT INTO memory_entities (scope, project, name, name_key, entity_type, staged, \
                             created_at, updated_at, owner, source_id, expires_at) \
                             VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?7, ?8, ?9) RETURNING id",
                            params![
                                place.kind(),
                                place.project,
                                e.name.trim(),
                                key,
                                e.entity_type,
                                now,
                                place.owner,
                                source,
                                expires
                            ],
                        )?;
                        staging.inserted(id);
                        created.push(id);
                        (id, true)
                    }
                };
                written.insert(key, id);
                let write = Write { now, source, revive_replaced: self.writer.kind != super::SourceKind::Import };
                let added = add_observations(&tx, id, &e.observations, &write, fresh, &[])?;
                if !fresh && !added.added.is_empty() && !created.contains(&id) && !changed.contains(&id) {
                    changed.push(id);
                }
                match ids.iter().position(|&known| known == id) {
                    Some(i) => out[i] = load_entities(&tx, &[id], self.detail)?.remove(0),
                    None if fresh && !self.detail.sources => {
                        ids.push(id);
                        let mut entity =
                            Entity::new(e.name.trim().into(), e.entity_type.clone(), added.added, place.scope.clone());
                        entity.expires_at = expires;
                        out.push(entity);
                    }
                    None => {
                        ids.push(id);
                        let mut entity = load_entities(&tx, &[id], self.detail)?.remove(0);
                        entity.conflicts = added.conflicts;
                        out.push(entity);
                    }
                }
            }
            staging.finish(&tx, now)?;
            super::versions::record(&tx, &created, "created", source, now)?;
            super::versions::record(&tx, &changed, "observed", source, now)?;
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
        let adds: Vec<ObservationsToAdd> = adds
            .iter()
            .map(|(name, contents)| ObservationsToAdd {
                entity_name: name.clone(),
                contents: contents.clone(),
                ..ObservationsToAdd::default()
            })
            .collect();
        self.add_observations_replacing(&adds, scope)
    }

    /// Adds observations to existing entities, each new one replacing the current observations
    /// its entry names in `replaces` (kept as history, out of search and the context). An unknown
    /// entity, or a replaced observation the entity does not hold, is an error and nothing is
    /// written.
    pub fn add_observations_replacing(
        &mut self,
        adds: &[ObservationsToAdd],
        scope: Option<&Scope>,
    ) -> Result<Vec<ObservationAdds>> {
        on_memory_db!(self, "add observations", {
            let places = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = begin(self.db)?;
            let mut found = Vec::with_capacity(adds.len());
            for add in adds {
                found.push(
                    find(&tx, &self.user, &places, &name_key(&add.entity_name))?
                        .ok_or_else(|| Error::EntityNotFound(add.entity_name.clone()))?,
                );
            }
            // The observations each entry replaces, as (id, content): each must be current.
            let mut replacing: Vec<Vec<(i64, String)>> = Vec::with_capacity(adds.len());
            for (add, (id, name, _)) in adds.iter().zip(&found) {
                let mut these = Vec::new();
                for old in &add.replaces {
                    match super::validity::current_match(&tx, *id, old)? {
                        Some(hit) => these.push(hit),
                        None => {
                            let current: Vec<String> =
                                super::validity::current(&tx, *id)?.into_iter().map(|c| c.1).collect();
                            return Err(Error::InvalidArguments {
                                tool: "add_observations".into(),
                                message: format!(
                                    "`replaces`: {name} holds no current observation `{old}` (nothing was written); \
                                     its current observations are: {}",
                                    if current.is_empty() {
                                        "none".to_string()
                                    } else {
                                        current.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                                    }
                                ),
                            });
                        }
                    }
                }
                replacing.push(these);
            }
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let mut staging = Staging::default();
            staging.stage(&tx, &found.iter().map(|f| f.0).collect::<Vec<_>>(), now)?;
            let mut out = Vec::new();
            let (mut observed, mut replaced) = (Vec::new(), Vec::new());
            for ((add, (id, found_name, scope)), replacing) in adds.iter().zip(found).zip(replacing) {
                let place = places.iter().find(|p| p.scope == scope).cloned().unwrap_or_else(|| Place {
                    scope,
                    project: String::new(),
                    owner: self.user.clone(),
                });
                let contents = super::redact::clean_in(&tx, self.redacting, &place, &add.contents)?;
                let ids: Vec<i64> = replacing.iter().map(|r| r.0).collect();
                let write = Write { now, source, revive_replaced: true };
                let added = add_observations(&tx, id, &contents, &write, false, &ids)?;
                // The first new observation that is not itself replaced stands in their place.
                let by = added.ids.iter().find(|(_, new)| !ids.contains(new)).map(|(_, new)| *new);
                let mut gone = Vec::new();
                if let Some(by) = by {
                    for (old, content) in &replacing {
                        tx.execute(
                            "UPDATE memory_observations SET valid_until = ?2, superseded_by = ?3 WHERE id = ?1",
                            params![old, now, by],
                        )?;
                        gone.push(content.clone());
                    }
                }
                if !gone.is_empty() {
                    replaced.push(id);
                } else if !added.added.is_empty() {
                    observed.push(id);
                }
                out.push(ObservationAdds {
                    entity_name: found_name,
                    added_observations: added.added,
                    replaced_observations: gone,
                    conflicts: added.conflicts,
                });
            }
            staging.finish(&tx, now)?;
            super::versions::record(&tx, &replaced, "replaced", source, now)?;
            super::versions::record(&tx, &observed, "observed", source, now)?;
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
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            // Both ends must exist in the scope the relations go to: a relation to nothing would be
            // reported as created and never shown.
            let mut missing: Vec<String> = Vec::new();
            {
                let exists = "SELECT 1 FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                     AND deleted_by IS NULL AND owner = ?4 AND (expires_at IS NULL OR expires_at > ?5)";
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
                            .query_opt(exists, params![place.kind(), place.project, key, place.owner, now], |_| Ok(()))?
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
                        tx.execute("UPDATE memory_relations SET deleted_by = NULL, source_id = ?7 WHERE scope = ?1 AND project = ?2 \
                         AND from_key = ?3 AND to_key = ?4 AND relation_type = ?5 AND owner = ?6", params![place.kind(), place.project, fk, tk, r.relation_type, place.owner, source])?;
                    }
                    None => {
                        tx.execute("INSERT INTO memory_relations (scope, project, from_name, from_key, to_name, to_key, relation_type, created_at, owner, source_id) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", params![place.kind(), place.project, r.from.trim(), fk, r.to.trim(), tk, r.relation_type, now, place.owner, source])?;
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
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_entities",
                &format!("entities: {}", names.join(", ")),
                now,
                source,
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
            let entity_ids: Vec<i64> = found.iter().map(|f| f.0).collect();
            super::versions::baseline(&tx, &entity_ids, now)?;
            let ids = json_ids(&entity_ids);
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
            super::versions::record(&tx, &entity_ids, "deleted", source, now)?;
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
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_observations",
                &format!("observations of: {}", names.join(", ")),
                now,
                source,
            )?;
            let mut found = Vec::new();
            for (name, contents) in deletions {
                if let Some((id, _, _)) = find(&tx, &self.user, &places, &name_key(name))? {
                    found.push((id, contents));
                }
            }
            let mut staging = Staging::default();
            staging.stage(&tx, &found.iter().map(|f| f.0).collect::<Vec<_>>(), now)?;
            let mut removed = 0;
            let mut forgot = Vec::new();
            for (id, contents) in found {
                let before = removed;
                for content in contents {
                    removed += tx.execute("UPDATE memory_observations SET deleted_by = ?3 WHERE entity_id = ?1 AND content = ?2 AND deleted_by IS NULL", params![id, content, deletion])?;
                }
                if removed > before && !forgot.contains(&id) {
                    forgot.push(id);
                }
            }
            staging.finish(&tx, now)?;
            super::versions::record(&tx, &forgot, "forgot", source, now)?;
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
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let deletion = new_deletion(
                &tx,
                &self.user,
                "memory_delete_relations",
                &format!("{} relations", relations.len()),
                now,
                source,
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
        self.open_nodes_with(names, scope, false)
    }

    /// [`Memory::open_nodes`], with the observations each entity no longer holds when `history`.
    pub fn open_nodes_with(&mut self, names: &[String], scope: Option<&Scope>, history: bool) -> Result<Graph> {
        on_memory_db!(self, "open nodes", {
            let places = self.visible(self.db, scope)?;
            let tx = begin(self.db)?;
            let mut ids = Vec::new();
            let mut keys = HashSet::new();
            let stmt = "SELECT id FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                 AND deleted_by IS NULL AND owner = ?4 AND (expires_at IS NULL OR expires_at > ?5)";
            let now = now_ms();
            for name in names {
                let key = name_key(name);
                for place in &places {
                    if let Some(id) =
                        tx.query_opt(stmt, params![place.kind(), place.project, key, place.owner, now], |r| {
                            r.get::<i64>(0)
                        })?
                        && !ids.contains(&id)
                    {
                        ids.push(id);
                        keys.insert(key.clone());
                    }
                }
            }
            let detail = Detail { history: history || self.detail.history, ..self.detail };
            let graph =
                Graph { entities: load_entities(&tx, &ids, detail)?, relations: relations_among(&tx, &places, &keys)? };
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
                let now_stmt = "SELECT id, updated_at, name_key FROM memory_entities WHERE owner = ?4 AND scope = ?1 \
                 AND project = ?2 AND deleted_by IS NULL AND (expires_at IS NULL OR expires_at > ?5) \
                 ORDER BY updated_at DESC, id DESC LIMIT ?3";
                // As of a time: written by then, neither deleted nor expired yet.
                let then_stmt = "SELECT e.id, e.updated_at, e.name_key FROM memory_entities e \
                 LEFT JOIN memory_deletions d ON d.id = e.deleted_by WHERE e.owner = ?4 AND e.scope = ?1 \
                 AND e.project = ?2 AND e.created_at <= ?5 AND (e.deleted_by IS NULL OR d.created_at > ?5) \
                 AND (e.expires_at IS NULL OR e.expires_at > ?5) ORDER BY e.updated_at DESC, e.id DESC LIMIT ?3";
                let (stmt, now) = match self.detail.as_of {
                    Some(then) => (then_stmt, then),
                    None => (now_stmt, now_ms()),
                };
                for place in &places {
                    let wanted = offset.saturating_add(limit).saturating_add(1).min(i64::MAX as usize) as i64;
                    let found =
                        tx.query_vec(stmt, params![place.kind(), place.project, wanted, place.owner, now], |r| {
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
            let graph = Graph {
                entities: load_entities(&tx, &ids, self.detail)?,
                relations: relations_among(&tx, &places, &keys)?,
            };
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
            let revived: Vec<i64> =
                tx.query_vec("SELECT id FROM memory_entities WHERE deleted_by = ?1", params![deletion], |r| r.get(0))?;
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            let mut staging = Staging::default();
            staging.stage(&tx, &entities, now)?;
            tx.execute("UPDATE memory_observations SET deleted_by = NULL WHERE deleted_by = ?1", params![deletion])?;
            staging.finish(&tx, now)?;
            tx.execute(
                "UPDATE memory_entities SET deleted_by = NULL, updated_at = ?2 WHERE deleted_by = ?1",
                params![deletion, now],
            )?;
            tx.execute("UPDATE memory_relations SET deleted_by = NULL WHERE deleted_by = ?1", params![deletion])?;
            tx.execute("UPDATE memory_deletions SET restored_at = ?2 WHERE id = ?1", params![deletion, now])?;
            let mut changed = entities;
            for id in revived {
                if !changed.contains(&id) {
                    changed.push(id);
                }
            }
            super::versions::record(&tx, &changed, "restored", source, now)?;
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
                     AND owner = ?3 AND (expires_at IS NULL OR expires_at > ?4)",
                    params![place.kind(), place.project, place.owner, now_ms()],
                    |r| r.get(0),
                )?;
                out.insert(place.scope, n as usize);
            }
            Ok(out)
        })
    }
}
