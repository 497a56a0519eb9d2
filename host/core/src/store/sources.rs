//! Sessions brought in from other agents (`seshat sessions import --from …`): found again by
//! their source's id, so importing the same session again appends only what its file gained.
//! The source is kept in the session's metadata (`metadata.source`: tool, id, file, and how much
//! of the conversion has been written).

use super::Compaction;
use super::db::{Backend, params};
use super::{Result, Store};
use crate::conversation::NewMessage;

impl Store {
    /// The caller's session brought in from `tool`'s session `id`, with its `metadata.source`.
    pub(crate) fn find_source(&self, tool: &str, id: &str) -> Result<Option<(String, serde_json::Value)>> {
        on_db!(self, "find an imported session", {
            let sql = match self.db.backend() {
                Backend::Sqlite => {
                    "SELECT id, json_extract(metadata, '$.source') FROM sessions \
                     WHERE json_extract(metadata, '$.source.tool') = ?1 AND json_extract(metadata, '$.source.id') = ?2 \
                     AND owner = ?3 ORDER BY created_at LIMIT 1"
                }
                Backend::Postgres => {
                    "SELECT id, CAST(metadata AS json) ->> 'source' FROM sessions \
                     WHERE CAST(metadata AS json) -> 'source' ->> 'tool' = ?1 \
                     AND CAST(metadata AS json) -> 'source' ->> 'id' = ?2 AND owner = ?3 ORDER BY created_at LIMIT 1"
                }
            };
            let found: Option<(String, String)> =
                self.db.query_opt(sql, params![tool, id, self.user], |r| Ok((r.get(0)?, r.get(1)?)))?;
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
            let tx = self.db.transaction()?;
            super::sessions::owned(&tx, session, &self.user)?;
            if let Some(old) = release {
                super::sessions::owned(&tx, old, &self.user)?;
            }
            for item in items {
                match item {
                    SourceItem::Messages { messages, times } => {
                        let redacting = super::redaction_key::Redacting { policy: &self.redaction, key: &self.key };
                        super::messages::append_in(&tx, &self.user, redacting, session, messages, times)?;
                    }
                    SourceItem::Compaction(compaction) => {
                        let redacting = super::redaction_key::Redacting { policy: &self.redaction, key: &self.key };
                        super::messages::compaction_in(&tx, &self.user, redacting, session, compaction)?;
                    }
                }
            }
            let through: u64 =
                tx.query_value("SELECT message_count FROM sessions WHERE id = ?1", super::db::params![session])?;
            super::sessions::update_metadata(&tx, session, |m| {
                m.insert("source".into(), source.clone());
                m.insert(super::FOREIGN_THROUGH.into(), through.into());
            })?;
            if let Some(old) = release {
                super::sessions::update_metadata(&tx, old, |m| {
                    m.remove("source");
                    m.insert("source_followed_by".into(), session.into());
                })?;
            }
            tx.commit_at("import")?;
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
