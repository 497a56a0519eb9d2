//! Key/value notes (`seshat memory --action set`), and clearing a scope with a backup first.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Error, Memory, Result, Scope};
use crate::store::db::params;
use crate::store::now_ms;
pub use seshat_protocol::memory::Note;

impl Memory<'_> {
    /// Sets a note (replacing the value of an existing key), kept as long as the scope's
    /// [`Ttls`](super::Ttls) say.
    pub fn set_note(&mut self, scope: Scope, key: &str, value: &str) -> Result<Note> {
        self.set_note_for(scope, key, value, None)
    }

    /// [`Memory::set_note`], kept `ttl` milliseconds from now (default: the scope's, else forever).
    pub fn set_note_for(&mut self, scope: Scope, key: &str, value: &str, ttl: Option<i64>) -> Result<Note> {
        on_memory_db!(self, "set a note", {
            super::check_label("set", "note key", key)?;
            let place = self.place(&scope)?;
            self.clean_one(&place, key)?;
            let value = self.clean_one(&place, value)?.into_owned();
            let value = value.as_str();
            let now = now_ms();
            let expires_at = ttl.or_else(|| self.ttls.of(&scope)).map(|ttl| now.saturating_add(ttl));
            let tx = self.db.transaction()?;
            Memory::check_write(&tx, &self.user, &place)?;
            let source = super::provenance::record(&tx, &self.user, &self.writer, now)?;
            tx.execute(
                "INSERT INTO memory_notes (scope, project, key, value, updated_at, owner, source_id, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (owner, scope, project, key) \
                 DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, \
                 source_id = excluded.source_id, expires_at = excluded.expires_at",
                params![place.kind(), place.project, key, value, now, place.owner, source, expires_at],
            )?;
            let source =
                if self.detail.sources { super::provenance::load(&tx, &[source])?.remove(&source) } else { None };
            tx.commit_at("memory")?;
            Ok(Note { key: key.into(), value: value.into(), scope, updated_at: now, source, expires_at })
        })
    }

    /// The notes of one scope, most recently set first.
    pub fn notes(&mut self, scope: &Scope) -> Result<Vec<Note>> {
        on_memory_db!(self, "read notes", {
            let place = self.visible(self.db, Some(scope))?.remove(0);
            self.place_notes(&place)
        })
    }

    /// The notes of one place that have not expired, most recently set first.
    fn place_notes(&self, place: &super::Place) -> Result<Vec<Note>> {
        let rows: Vec<(Note, Option<i64>)> = self.db.query_vec(
            "SELECT key, value, updated_at, expires_at, source_id FROM memory_notes WHERE scope = ?1 AND project = ?2 \
             AND owner = ?3 AND (expires_at IS NULL OR expires_at > ?4) ORDER BY updated_at DESC, key",
            params![place.kind(), place.project, place.owner, now_ms()],
            |r| {
                let note = Note {
                    key: r.get(0)?,
                    value: r.get(1)?,
                    scope: place.scope.clone(),
                    updated_at: r.get(2)?,
                    expires_at: r.get(3)?,
                    source: None,
                };
                Ok((note, r.get(4)?))
            },
        )?;
        if !self.detail.sources {
            return Ok(rows.into_iter().map(|r| r.0).collect());
        }
        let sources = super::provenance::load(self.db, &rows.iter().filter_map(|r| r.1).collect::<Vec<_>>())?;
        Ok(rows
            .into_iter()
            .map(|(mut note, source)| {
                note.source = source.and_then(|s| sources.get(&s).cloned());
                note
            })
            .collect())
    }

    /// Notes whose key or value contains `query` (ignoring case), in the scopes reads cover or
    /// in `only`.
    pub fn search_notes(&mut self, query: &str, only: Option<&Scope>) -> Result<Vec<Note>> {
        on_memory_db!(self, "search notes", {
            let needle = query.trim().to_lowercase();
            let mut found = Vec::new();
            if needle.is_empty() {
                return Ok(found);
            }
            for place in self.visible(self.db, only)? {
                let notes = self.place_notes(&place)?;
                found.extend(
                    notes
                        .into_iter()
                        .filter(|n| n.key.to_lowercase().contains(&needle) || n.value.to_lowercase().contains(&needle)),
                );
            }
            Ok(found)
        })
    }

    /// Removes everything in a scope (notes, entities, observations, relations, tombstones
    /// included) after writing it all as JSON Lines to a new file in `backup_dir`. Returns the
    /// backup's path and how many records it holds.
    pub fn clear(&mut self, scope: &Scope, backup_dir: &Path) -> Result<(PathBuf, usize)> {
        on_memory_db!(self, "clear memory", {
            let place = self.place(scope)?;
            let tx = self.db.transaction()?;
            Memory::check_write(&tx, &self.user, &place)?;
            let mut lines: Vec<String> = Vec::new();
            let p = params![place.kind(), place.project, place.owner];
            lines.extend(tx.query_vec(
                "SELECT key, value, updated_at FROM memory_notes WHERE scope = ?1 AND project = ?2 AND owner = ?3 \
                 ORDER BY id",
                p,
                |r| {
                    Ok(serde_json::json!({"record": "note", "key": r.get::<String>(0)?, "value": r.get::<String>(1)?,
                        "updated_at": r.get::<i64>(2)?})
                    .to_string())
                },
            )?);
            let entities: Vec<(i64, String, String, bool)> = tx.query_vec(
                "SELECT id, name, entity_type, deleted_by IS NOT NULL FROM memory_entities \
                 WHERE scope = ?1 AND project = ?2 AND owner = ?3 ORDER BY id",
                p,
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            for (id, name, entity_type, deleted) in entities {
                let observations = tx.query_vec(
                    "SELECT content, deleted_by IS NOT NULL FROM memory_observations WHERE entity_id = ?1 ORDER BY id",
                    params![id],
                    |r| Ok(serde_json::json!({"content": r.get::<String>(0)?, "deleted": r.get::<bool>(1)?})),
                )?;
                lines.push(
                    serde_json::json!({"record": "entity", "name": name, "entityType": entity_type,
                        "deleted": deleted, "observations": observations})
                    .to_string(),
                );
            }
            lines.extend(tx.query_vec(
                "SELECT from_name, to_name, relation_type, deleted_by IS NOT NULL FROM memory_relations \
                 WHERE scope = ?1 AND project = ?2 AND owner = ?3 ORDER BY id",
                p,
                |r| {
                    Ok(serde_json::json!({"record": "relation", "from": r.get::<String>(0)?, "to": r.get::<String>(1)?,
                        "relationType": r.get::<String>(2)?, "deleted": r.get::<bool>(3)?})
                    .to_string())
                },
            )?);
            let label = place.scope.to_string().replace(':', "-");
            // Whose and a unique id: two users (or two clears) at once never pick the same file.
            let path = backup_dir.join(format!("memory-{label}-{}-{}.jsonl", place.owner, ulid::Ulid::generate()));
            let io = |cause| Error::Io { path: path.clone(), cause };
            private_dir(backup_dir).map_err(|cause| Error::Io { path: backup_dir.to_path_buf(), cause })?;
            let mut file = private_file(&path).map_err(io)?;
            for line in &lines {
                writeln!(file, "{line}").map_err(io)?;
            }
            file.sync_all().map_err(io)?;
            tx.execute("DELETE FROM memory_notes WHERE scope = ?1 AND project = ?2 AND owner = ?3", p)?;
            tx.execute("DELETE FROM memory_relations WHERE scope = ?1 AND project = ?2 AND owner = ?3", p)?;
            tx.execute("DELETE FROM memory_entities WHERE scope = ?1 AND project = ?2 AND owner = ?3", p)?;
            tx.commit_at("memory")?;
            Ok((path, lines.len()))
        })
    }
}

/// Creates `dir` (and its parents) readable by the user only, and makes it so if it exists: a
/// backup holds what the database holds.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Creates a new file at `path` that only the user may read or write (0600, whatever the umask).
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}
