//! Project keys that change: rows written under a project's old key (its directory's path, from
//! before keys travelled between machines) brought under its new one.

use super::db::params;
use super::{Result, Store};

/// The tables whose rows carry a project key, with the columns that make a row unique besides it
/// (a row that would collide with one already under the new key stays under the old).
const KEYED: &[(&str, &str)] = &[
    ("sessions", ""),
    ("memory_entities", "scope, name_key"),
    ("memory_relations", "scope, from_key, to_key, relation_type"),
    ("memory_notes", "scope, key"),
    ("documents", "scope, path"),
];

impl Store {
    /// Brings the caller's sessions, memory and documents stored under project key `old` under
    /// `new`, in one transaction; returns how many rows moved. A memory row or document already
    /// present under `new` (the same name, key or path) keeps the old key rather than collide.
    /// Reads first and writes only when something is stored under `old`.
    pub fn adopt_project(&mut self, old: &str, new: &str) -> Result<u64> {
        on_db!(self, "move rows to the project's key", {
            if old == new {
                return Ok(0);
            }
            let any = KEYED
                .iter()
                .map(|(table, _)| format!("SELECT 1 FROM {table} WHERE project = ?1 AND owner = ?2"))
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let found: Option<i64> =
                self.db.query_opt(&format!("SELECT 1 WHERE EXISTS ({any})"), params![old, self.user], |r| r.get(0))?;
            if found.is_none() {
                return Ok(0);
            }
            let tx = self.db.transaction()?;
            let mut moved = 0;
            for (table, unique) in KEYED {
                let clash = if unique.is_empty() {
                    String::new()
                } else {
                    let same: Vec<String> = unique.split(", ").map(|c| format!("n.{c} = {table}.{c}")).collect();
                    format!(
                        " AND NOT EXISTS (SELECT 1 FROM {table} n WHERE n.project = ?2 AND n.owner = ?3 AND {})",
                        same.join(" AND ")
                    )
                };
                moved += tx.execute(
                    &format!("UPDATE {table} SET project = ?2 WHERE project = ?1 AND owner = ?3{clash}"),
                    params![old, new, self.user],
                )? as u64;
            }
            tx.commit()?;
            Ok(moved)
        })
    }
}
