//! What a turn's answer has streamed so far, kept while it streams by the process holding the
//! session's claim: a process killed mid-answer (SIGKILL, a lost machine) leaves its draft, and
//! whoever claims the session next stores it as an interrupted answer, as Ctrl-C would have.

use super::db::params;
use super::{Result, Store, now_ms};

/// What of a streaming answer can be judged yet: all of it but a last word still arriving that
/// is long enough to be the start of a credential (a rule would not know it until it is whole),
/// and what follows a private key block whose end line has not arrived whole.
fn settled(text: &str) -> &str {
    let start = text.rfind(char::is_whitespace).map_or(0, |i| i + text[i..].chars().next().map_or(1, char::len_utf8));
    let mut end = if text.len() - start >= 8 { start } else { text.len() };
    if let Some(begin) = text[..end].rfind("-----BEGIN") {
        let ended = text[begin..end].find("-----END").is_some_and(|at| text[begin + at + 8..end].contains("-----"));
        if !ended {
            end = begin;
        }
    }
    &text[..end]
}

impl Store {
    /// Keeps `text` as the session's draft: what the answer that began after message `after` has
    /// streamed so far (replacing the draft before it). Another user's session gets none.
    pub fn save_draft(&self, session: &str, after: u64, text: &str) -> Result<()> {
        on_db!(self, "keep the answer's draft", {
            let project: Option<String> = self.db.query_opt(
                "SELECT project FROM sessions WHERE id = ?1 AND owner = ?2",
                params![session, self.user],
                |r| r.get(0),
            )?;
            let Some(project) = project else { return Ok(()) };
            // The whole text so far is redacted each time: a secret split across two streamed
            // pieces is whole in it.
            let text = match self.scrub(&project)? {
                Some(s) => s.text(settled(text)),
                None => std::borrow::Cow::Borrowed(text),
            };
            self.db.execute(
                "INSERT INTO drafts (session_id, after, text, updated_at) \
                 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1 AND owner = ?5) \
                 ON CONFLICT (session_id) DO UPDATE SET after = excluded.after, text = excluded.text, \
                 updated_at = excluded.updated_at",
                params![session, after, text, now_ms(), self.user],
            )?;
            Ok(())
        })
    }

    /// Removes the session's draft (its answer is stored).
    pub fn clear_draft(&self, session: &str) -> Result<()> {
        on_db!(self, "remove the answer's draft", {
            self.db.execute(
                "DELETE FROM drafts WHERE session_id = ?1 AND EXISTS (SELECT 1 FROM sessions WHERE id = ?1 AND owner = ?2)",
                params![session, self.user],
            )?;
            Ok(())
        })
    }

    /// Takes the session's draft away: its text when no message was stored after the one its
    /// answer began after (the answer never was), `None` otherwise or when there is none. A read
    /// only when there is none (as before every turn but one after a kill).
    pub fn take_draft(&self, session: &str) -> Result<Option<String>> {
        on_db!(self, "take the answer's draft", {
            let draft: Option<(u64, String, u64)> = self.db.query_opt(
                "SELECT d.after, d.text, s.message_count FROM drafts d JOIN sessions s ON s.id = d.session_id \
                 WHERE d.session_id = ?1 AND s.owner = ?2",
                params![session, self.user],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let Some((after, text, count)) = draft else { return Ok(None) };
            // Only the claim's holder takes it, so nothing writes it meanwhile.
            self.db.execute("DELETE FROM drafts WHERE session_id = ?1", params![session])?;
            Ok((count == after && !text.is_empty()).then_some(text))
        })
    }
}
