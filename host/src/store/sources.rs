//! Sessions brought in from other agents (`seshat sessions import --from …`): found again by
//! their source's id, so importing the same session again appends only what its file gained.
//! The source is kept in the session's metadata (`metadata.source`: tool, id, file, and how much
//! of the conversion has been written).

use rusqlite::OptionalExtension;

use super::{Result, Store};

impl Store {
    /// The session brought in from `tool`'s session `id`, with its `metadata.source`.
    pub fn find_source(&self, tool: &str, id: &str) -> Result<Option<(String, serde_json::Value)>> {
        on_db!(self, "find an imported session", {
            let found: Option<(String, String)> = self
                .conn
                .prepare_cached(
                    "SELECT id, json_extract(metadata, '$.source') FROM sessions \
                     WHERE json_extract(metadata, '$.source.tool') = ?1 AND json_extract(metadata, '$.source.id') = ?2 \
                     ORDER BY created_at LIMIT 1",
                )?
                .query_row([tool, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            Ok(found.map(|(session, source)| (session, serde_json::from_str(&source).unwrap_or_default())))
        })
    }

    /// Replaces a session's `metadata.source`.
    pub fn set_source(&mut self, session: &str, source: &serde_json::Value) -> Result<()> {
        on_db!(self, "record an import's source", {
            self.conn.execute(
                "UPDATE sessions SET metadata = json_set(metadata, '$.source', json(?2)) WHERE id = ?1",
                rusqlite::params![session, source.to_string()],
            )?;
            Ok(())
        })
    }
}
