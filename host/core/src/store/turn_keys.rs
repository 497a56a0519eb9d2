//! Idempotency keys of turns: a turn's user message stored with the key its client chose, so a
//! request sent again after an ambiguous failure (the connection dropped before the turn's outcome
//! arrived) finds the exchange it began instead of storing it twice.

use super::db::params;
use super::{Error, Message, Result, Store, now_ms};
use crate::conversation::{NewMessage, Role};

/// The longest idempotency key, in bytes.
pub const MAX_TURN_KEY_BYTES: usize = 255;

/// What [`Store::append_request`] did with a keyed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// The user's message was stored now, as this seq.
    Stored(u64),
    /// A request with the same key and text was stored before, as this seq; nothing was stored.
    Repeated(u64),
}

/// A new idempotency key for a turn's request: unique, 26 characters (a ULID).
pub fn new_turn_key() -> String {
    ulid::Ulid::generate().to_string()
}

impl Store {
    /// The seq of the request stored with `key` in `session` before, when one was (a read: what
    /// [`Store::append_request`] would find).
    pub fn turn_key_seq(&self, session: &str, key: &str) -> Result<Option<u64>> {
        on_db!(self, "look a turn's idempotency key up", {
            self.db.query_opt(
                "SELECT k.seq FROM turn_keys k JOIN sessions s ON s.id = k.session_id \
                 WHERE k.session_id = ?1 AND k.key = ?2 AND s.owner = ?3",
                params![session, key, self.user],
                |r| r.get(0),
            )
        })
    }

    /// Stores the user's `text` as the session's next message, recording `key` with it in the same
    /// transaction — unless a request with `key` was stored in the session before, when nothing is
    /// stored and its seq is returned. The same key with another text is refused
    /// ([`Error::TurnKeyReused`]); so is a key that is empty or longer than
    /// [`MAX_TURN_KEY_BYTES`].
    pub fn append_request(&mut self, session: &str, key: &str, text: &str) -> Result<Request> {
        if key.is_empty() || key.len() > MAX_TURN_KEY_BYTES || key.chars().any(char::is_control) {
            return Err(Error::InvalidTurnKey(format!(
                "an idempotency key is 1 to {MAX_TURN_KEY_BYTES} bytes without control characters; this one has {} \
                 bytes",
                key.len()
            )));
        }
        on_db!(self, "store the turn's request", {
            // Twice at most: a concurrent request with the same key may store it between this
            // transaction's look and its insert, and then the second look finds it.
            for _ in 0..2 {
                let tx = self.db.row_locked_transaction()?;
                let seen: Option<u64> = tx.query_opt(
                    "SELECT k.seq FROM turn_keys k JOIN sessions s ON s.id = k.session_id \
                     WHERE k.session_id = ?1 AND k.key = ?2 AND s.owner = ?3",
                    params![session, key, self.user],
                    |r| r.get(0),
                )?;
                if let Some(seq) = seen {
                    drop(tx);
                    let stored = self.messages_between(session, seq, seq)?.pop();
                    let asked = NewMessage::text(Role::User, text);
                    // What was stored of the request is what redaction made of it.
                    let project = self.session(session)?.project;
                    let asked = match self.scrub(&project)? {
                        Some(s) => s.message(&asked).into_owned(),
                        None => asked,
                    };
                    let same = stored.as_ref().is_some_and(|m| m.role == Role::User && m.parts == asked.parts);
                    if !same {
                        return Err(Error::TurnKeyReused { session: session.to_string(), key: key.to_string(), seq });
                    }
                    return Ok(Request::Repeated(seq));
                }
                let redacting = super::redaction_key::Redacting { policy: &self.redaction, key: &self.key };
                let appended = super::messages::append_in(
                    &tx,
                    &self.user,
                    redacting,
                    session,
                    &[NewMessage::text(Role::User, text)],
                    &[],
                )?;
                let seq = appended.seqs[0];
                let added = tx.execute(
                    "INSERT INTO turn_keys (session_id, key, seq, created_at) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (session_id, key) DO NOTHING",
                    params![session, key, seq, now_ms()],
                )?;
                if added == 1 {
                    tx.commit_at("append")?;
                    return Ok(Request::Stored(seq));
                }
            }
            Err(Error::Refused(format!(
                "another request with idempotency key `{key}` was being stored in session {session} meanwhile: \
                 send it again"
            )))
        })
    }

    /// The exchange that followed the user's message `seq`: the messages after it up to the next
    /// user message (or the session's end), in order.
    pub fn answers_to(&self, session: &str, seq: u64) -> Result<Vec<Message>> {
        on_db!(self, "read the turn's answers", {
            super::sessions::owned(&self.db, session, &self.user)?;
            let after = self.messages_from(session, seq + 1)?;
            // (Context hooks added after the request belongs to its exchange.)
            Ok(after
                .into_iter()
                .skip_while(|m| m.role == Role::User && m.status == crate::conversation::MessageStatus::Synthetic)
                .take_while(|m| m.role != Role::User)
                .collect())
        })
    }
}
