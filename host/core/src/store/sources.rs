//! Sessions brought in from other agents (`seshat sessions import --from …`): found again by
//! their source's id, so importing the same session again appends only what its file gained.
//! The source is kept in the session's metadata (`metadata.source`: tool, id, file, and how much
//! of the conversion has been written).

use rusqlite::OptionalExtension;

use super::Compaction;
use super::{Result, Store};
use crate::conversation::NewMessage;

impl Store {
    /// The session brought in from `tool`'s session `id`, with its `metadata.source`.
    pub(crate) fn find_source(&self, tool: &str, id: &str) -> Result<Option<(String, serde_json::Value)>> {
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

    /// Continues a session brought in before with what its source gained, and records the
    /// source's new position, all in one transaction: a process killed halfway leaves the session
    /// and its position as they were, so the next import appends the same items again once.
    /// `release` names a session that gives the source up (a fork now follows it): its
    /// `metadata.source` becomes `metadata.source_followed_by`, in the same transaction.
    pub(crate) fn continue_source(
        &mut self,
        session: &str,
        items: &[SourceItem],
        source: &serde_json::Value,
        release: Option<&str>,
    ) -> Result<()> {
        on_db!(self, "continue an imported session", {
            let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for item in items {
                match item {
                    SourceItem::Messages { messages, times } => {
                        super::messages::append_in(&tx, session, messages, times)?;
                    }
                    SourceItem::Compaction(compaction) => {
                        super::messages::compaction_in(&tx, session, compaction)?;
                    }
                }
            }
            tx.execute(
                "UPDATE sessions SET metadata = json_set(metadata, '$.source', json(?2)) WHERE id = ?1",
                rusqlite::params![session, source.to_string()],
            )?;
            if let Some(old) = release {
                tx.execute(
                    "UPDATE sessions SET metadata = json_set(json_remove(metadata, '$.source'), \
                     '$.source_followed_by', ?2) WHERE id = ?1",
                    rusqlite::params![old, session],
                )?;
            }
            crate::crash_point::commit(tx, "import")?;
            Ok(())
        })
    }
}

/// One thing a source gained since it was last brought in.
#[derive(Debug, Clone)]
pub enum SourceItem {
    /// Messages in a row, each written at its time in `times` (unix milliseconds), appended
    /// together.
    Messages {
        /// The messages.
        messages: Vec<NewMessage>,
        /// When each was written.
        times: Vec<i64>,
    },
    /// A compaction; its `through_seq` is the session's message count at that point.
    Compaction(Compaction),
}
