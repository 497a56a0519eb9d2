//! Memory that expires: an entity or a note written with a time to live (or in a scope that has
//! one by default, `[memory.ttl]`) leaves the memory context, search and reads once it has passed,
//! and the retention work purges it.

use std::collections::BTreeMap;

use crate::store::db::params;
use crate::store::now_ms;

use super::{Error, Memory, Result, Scope, name_key};

/// How long memory written in each scope is kept when a write names no time: `[memory.ttl]`
/// (`project = "90d"`, `"team:infra" = "30d"`), in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ttls {
    by_scope: BTreeMap<Scope, i64>,
}

impl Ttls {
    /// The times to live of `[memory.ttl]`: each key a scope (`user`, `project`, `cross`,
    /// `team:NAME`), each value an age (`30d`); what is wrong otherwise, naming the key.
    pub fn parse(table: &BTreeMap<String, String>) -> std::result::Result<Ttls, String> {
        let mut by_scope = BTreeMap::new();
        for (key, age) in table {
            let scope = Scope::parse(key).ok_or_else(|| {
                format!("[memory.ttl] `{key}` is not a scope: use user, project, cross or \"team:NAME\"")
            })?;
            let ms = crate::config::parse_age(age).map_err(|e| format!("[memory.ttl] {key}: {e}"))?;
            by_scope.insert(scope, ms);
        }
        Ok(Ttls { by_scope })
    }

    /// How long memory written in `scope` is kept (`None`: until it is deleted).
    pub fn of(&self, scope: &Scope) -> Option<i64> {
        self.by_scope.get(scope).copied()
    }
}

impl Memory<'_> {
    /// Has the entity `name` (in `scope`, else looked up as the tools look names up) expire `ttl`
    /// milliseconds from now, or never (`None`). Returns its name as stored and when it expires.
    pub fn expire_entity(
        &mut self,
        name: &str,
        ttl: Option<i64>,
        scope: Option<&Scope>,
    ) -> Result<(String, Option<i64>)> {
        on_memory_db!(self, "set when an entity expires", {
            let places = self.lookup_order(self.db, scope)?;
            let now = now_ms();
            let tx = self.db.transaction()?;
            let stmt = "SELECT id, name FROM memory_entities WHERE scope = ?1 AND project = ?2 AND name_key = ?3 \
                 AND deleted_by IS NULL AND owner = ?4 AND (expires_at IS NULL OR expires_at > ?5)";
            let key = name_key(name);
            let mut found = None;
            for place in &places {
                if let Some(hit) =
                    tx.query_opt(stmt, params![place.kind(), place.project, key, place.owner, now], |r| {
                        Ok((r.get::<i64>(0)?, r.get::<String>(1)?))
                    })?
                {
                    Memory::check_write(&tx, &self.user, place)?;
                    found = Some(hit);
                    break;
                }
            }
            let (id, stored) = found.ok_or_else(|| Error::EntityNotFound(name.to_string()))?;
            let at = ttl.map(|ttl| now.saturating_add(ttl));
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            super::versions::baseline(&tx, &[id], now)?;
            tx.execute("UPDATE memory_entities SET expires_at = ?2 WHERE id = ?1", params![id, at])?;
            super::versions::record(&tx, &[id], "expiry", source, now)?;
            tx.commit_at("memory")?;
            Ok((stored, at))
        })
    }
}
