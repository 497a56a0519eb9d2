//! Appending messages and reading them back, with the compaction and trim records beside them.

use super::db::{Backend, Db, Row, Tx, params};

use super::redaction_key::Redacting;
use super::{Compaction, CompactionStatus, CompactionTrigger, Message, PluginRef, Trim};
use super::{Error, Result, Store, now_ms};
use crate::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use crate::redaction::Scrub;

/// Longest automatic title, in characters.
const TITLE_CHARS: usize = 80;

pub(super) const MESSAGE_COLUMNS: &str = "seq, role, parts, usage, status, created_at";

/// A message row of `session` read back; a row that cannot be (written by something other than
/// Seshat) is an error naming the session, the message's seq and the column.
pub(super) fn message_from_row(session: &str, row: &Row<'_>) -> Result<Message> {
    let seq: Option<u64> = row.get(0).ok();
    let bad = |column: &'static str, message: String| Error::CorruptMessage {
        session: session.to_string(),
        seq,
        column,
        message,
    };
    let role: String = row.get(1).map_err(|e| bad("role", e.to_string()))?;
    let parts: String = row.get(2).map_err(|e| bad("parts", e.to_string()))?;
    let usage: Option<String> = row.get(3).map_err(|e| bad("usage", e.to_string()))?;
    let status: String = row.get(4).map_err(|e| bad("status", e.to_string()))?;
    Ok(Message {
        seq: seq.ok_or_else(|| bad("seq", "not a message number".into()))?,
        role: Role::parse(&role).ok_or_else(|| bad("role", format!("unknown role `{role}`")))?,
        parts: serde_json::from_str(&parts).map_err(|e| bad("parts", e.to_string()))?,
        usage: usage.map(|u| serde_json::from_str(&u)).transpose().map_err(|e| bad("usage", e.to_string()))?,
        status: MessageStatus::parse(&status).ok_or_else(|| bad("status", format!("unknown status `{status}`")))?,
        created_at: row.get(5).map_err(|e| bad("created_at", e.to_string()))?,
    })
}

pub(super) const COMPACTION_COLUMNS: &str = "trigger, tokens_before, tokens_after, through_seq, \
     first_kept_seq, pinned_seq, summary, model, status, error, created_at, instructions, plugin, plugin_sha256";

pub(super) fn compaction_from_row(row: &Row<'_>) -> Result<Compaction> {
    let trigger: String = row.get(0)?;
    let status: String = row.get(8)?;
    Ok(Compaction {
        trigger: if trigger == "manual" { CompactionTrigger::Manual } else { CompactionTrigger::Auto },
        tokens_before: row.get(1)?,
        tokens_after: row.get(2)?,
        through_seq: row.get(3)?,
        first_kept_seq: row.get(4)?,
        pinned_seq: row.get(5)?,
        summary: row.get(6)?,
        model: row.get(7)?,
        status: if status == "ok" { CompactionStatus::Ok } else { CompactionStatus::Failed },
        error: row.get(9)?,
        created_at: row.get(10)?,
        instructions: row.get(11)?,
        plugin: plugin_ref(row.get(12)?, row.get(13)?),
    })
}

/// The plugin columns of a record (migration 0007): both or neither.
fn plugin_ref(id: Option<String>, sha256: Option<String>) -> Option<PluginRef> {
    Some(PluginRef { id: id?, sha256: sha256? })
}

pub(super) const TRIM_COLUMNS: &str =
    "seq, part, original_size, new_size, replacement, created_at, plugin, plugin_sha256";

pub(super) fn trim_from_row(row: &Row<'_>) -> Result<Trim> {
    Ok(Trim {
        seq: row.get(0)?,
        part: row.get(1)?,
        original_size: row.get(2)?,
        new_size: row.get(3)?,
        replacement: row.get(4)?,
        created_at: row.get(5)?,
        plugin: plugin_ref(row.get(6)?, row.get(7)?),
    })
}

/// A title from the first line of a user message's text (at most 80 characters, `…` when cut):
/// what an untitled session is named after.
pub fn title_from(parts: &[Part]) -> Option<String> {
    let text = parts.iter().find_map(|p| match p {
        Part::Text { text } => Some(text.as_str()),
        _ => None,
    })?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    Some(title)
}

/// Inserts one message at `seq` inside an open transaction.
pub(super) fn insert_message(tx: &Tx<'_>, session: &str, seq: u64, msg: &NewMessage, at: i64) -> Result<()> {
    insert_encoded(tx, session, seq, Encoded::of(msg)?, at)
}

/// A message ready for its row: the parts as stored JSON and its history-index text. Made apart
/// from the insert so that an import can let go of the decoded parts before SQLite copies the row.
pub(super) struct Encoded {
    pub role: Role,
    pub status: MessageStatus,
    pub parts: String,
    pub usage: Option<String>,
    pub index_text: String,
}

impl Encoded {
    pub(super) fn of(msg: &NewMessage) -> Result<Self> {
        let corrupt = |e: serde_json::Error| Error::Corrupt { table: "messages", message: e.to_string() };
        Ok(Encoded {
            role: msg.role,
            status: msg.status,
            parts: serde_json::to_string(&msg.parts).map_err(corrupt)?,
            usage: msg.usage.map(|u| serde_json::to_string(&u)).transpose().map_err(corrupt)?,
            index_text: super::history::index_text(&msg.parts),
        })
    }
}

/// Parts larger than this are inserted without SQLite re-checking that they are a JSON array
/// (the `CHECK` of migration 0001): they were just written by `serde_json` from a `Vec<Part>`,
/// and `json_valid` plus `json_type` would parse the whole text twice, holding twice its size.
const UNCHECKED_PARTS_BYTES: usize = 1 << 20;

/// Inserts the row and its index entry. SQLite copies what is bound, so the encoded parts are
/// dropped once bound, and the bindings cleared after the insert: a cached statement would
/// otherwise keep the last row's copy alive.
pub(super) fn insert_encoded(tx: &Tx<'_>, session: &str, seq: u64, msg: Encoded, at: i64) -> Result<()> {
    let Encoded { role, status, parts, usage, index_text } = msg;
    let id = match &**tx {
        Db::Sqlite(conn) => {
            let huge = parts.len() > UNCHECKED_PARTS_BYTES && parts.starts_with('[') && parts.ends_with(']');
            if huge {
                conn.pragma_update(None, "ignore_check_constraints", true)?;
            }
            let inserted = insert_row(conn, session, seq, (role, status, parts, usage), at);
            if huge {
                conn.pragma_update(None, "ignore_check_constraints", false)?;
            }
            inserted?;
            conn.last_insert_rowid()
        }
        Db::Postgres(_) => tx.query_value(
            "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            params![session, seq, role.as_str(), parts, usage, status.as_str(), at],
        )?,
    };
    // The history index, in the same transaction (messages never change, so neither does this).
    super::history::index(tx, id, &index_text)
}

/// Inserts a message's row into a SQLite file, letting go of the parts once SQLite has its copy.
fn insert_row(
    conn: &rusqlite::Connection,
    session: &str,
    seq: u64,
    (role, status, parts, usage): (Role, MessageStatus, String, Option<String>),
    at: i64,
) -> Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    insert.raw_bind_parameter(1, session)?;
    insert.raw_bind_parameter(2, seq)?;
    insert.raw_bind_parameter(3, role.as_str())?;
    insert.raw_bind_parameter(4, &parts)?;
    drop(parts);
    insert.raw_bind_parameter(5, usage)?;
    insert.raw_bind_parameter(6, status.as_str())?;
    insert.raw_bind_parameter(7, at)?;
    let inserted = insert.raw_execute();
    insert.clear_bindings();
    inserted?;
    Ok(())
}

/// Whether the session holds a tool call with this id in a message before `before` (a seq).
/// Calls are looked for from there back, so the usual case (the call just before its result)
/// reads a few rows; only an orphan reads them all.
pub(super) fn has_call(conn: &Db, session: &str, call_id: &str, before: u64) -> Result<bool> {
    Ok(call_seq(conn, session, call_id, before)?.is_some())
}

/// The seq of the message before `before` holding the tool call with this id (see [`has_call`]).
pub(super) fn call_seq(db: &Db, session: &str, call_id: &str, before: u64) -> Result<Option<u64>> {
    // The id as it is written in the stored JSON; only a message holding it is decoded.
    let needle =
        serde_json::to_string(call_id).map_err(|e| Error::Corrupt { table: "messages", message: e.to_string() })?;
    let mut found = None;
    for segment in super::lineage::lineage(db, session)?.iter().rev() {
        let last = before.saturating_sub(1).min(segment.through);
        if last <= segment.after {
            continue;
        }
        db.for_each(
            "SELECT parts, seq FROM messages WHERE session_id = ?1 AND seq <= ?2 AND seq > ?3 AND role = 'assistant' \
             ORDER BY seq DESC",
            params![segment.session, last, segment.after],
            |row| {
                let parts: String = row.get(0)?;
                if !parts.contains(&needle) {
                    return Ok(true);
                }
                let parts: Vec<Part> = serde_json::from_str(&parts)
                    .map_err(|e| Error::Corrupt { table: "messages", message: e.to_string() })?;
                if parts.iter().any(|p| p.tool_call_id() == Some(call_id)) {
                    found = Some(row.get(1)?);
                    return Ok(false);
                }
                Ok(true)
            },
        )?;
        if found.is_some() {
            break;
        }
    }
    Ok(found)
}

/// Refuses messages that would break the session's structure: a message without parts, or a
/// tool result that answers no earlier call (in the session or earlier in `messages`).
fn check_structure(tx: &Tx<'_>, session: &str, messages: &[NewMessage]) -> Result<()> {
    let mut batch_calls: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (index, msg) in messages.iter().enumerate() {
        let invalid = |message: String| Error::InvalidMessage { index, message };
        if msg.parts.is_empty() {
            return Err(invalid("field `parts`: a message needs at least one part".into()));
        }
        for (p, part) in msg.parts.iter().enumerate() {
            if let Part::ToolResult { call_id, .. } = part
                && !batch_calls.contains(call_id.as_str())
                && !has_call(tx, session, call_id, u64::MAX >> 1)?
            {
                return Err(invalid(format!(
                    "field `parts[{p}].call_id`: `{call_id}` answers no earlier tool_call in session {session} (a \
                     tool result must follow the assistant message that made the call)"
                )));
            }
        }
        batch_calls.extend(msg.parts.iter().filter_map(Part::tool_call_id));
    }
    Ok(())
}

/// What an append stored: each message's seq, and its parts as stored where redaction changed
/// them.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    pub(crate) seqs: Vec<u64>,
    pub(crate) redacted: Vec<Option<Vec<Part>>>,
}

/// Appends `messages` to `user`'s `session` inside the open transaction `tx` (see
/// [`Store::append_at`]), each redacted as the session's project requires.
pub(super) fn append_in(
    tx: &Tx<'_>,
    user: &str,
    redacting: Redacting<'_>,
    session: &str,
    messages: &[NewMessage],
    times: &[i64],
) -> Result<Appended> {
    let now = now_ms();
    // The next seq is assigned under a lock on the session's row (PostgreSQL; a SQLite file has
    // one writer at a time): concurrent appenders get consecutive seqs, never the same one.
    let (count, has_title, project): (u64, bool, String) = tx
        .query_opt(&session_row(tx, "message_count, title IS NOT NULL, project"), params![session, user], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .ok_or_else(|| Error::SessionNotFound(session.to_string()))?;
    check_structure(tx, session, messages)?;
    let scrub = redacting.scrub(tx, &project)?;
    let mut title = None;
    let mut totals = Usage::default();
    let mut context = None;
    let mut out = Appended { seqs: Vec::with_capacity(messages.len()), redacted: Vec::with_capacity(messages.len()) };
    for (i, original) in messages.iter().enumerate() {
        let seq = count + 1 + i as u64;
        let msg = match &scrub {
            Some(s) => s.message(original),
            None => std::borrow::Cow::Borrowed(original),
        };
        insert_message(tx, session, seq, &msg, times.get(i).copied().unwrap_or(now))?;
        if !has_title && title.is_none() && msg.role == Role::User {
            title = title_from(&msg.parts);
        }
        if let Some(u) = msg.usage {
            totals.input_tokens += u.input_tokens;
            totals.output_tokens += u.output_tokens;
            totals.cache_read_tokens += u.cache_read_tokens;
            totals.cache_creation_tokens += u.cache_creation_tokens;
            context = u.context_tokens.or(context);
        }
        out.seqs.push(seq);
        out.redacted.push(match msg {
            std::borrow::Cow::Owned(m) => Some(m.parts),
            std::borrow::Cow::Borrowed(_) => None,
        });
    }
    tx.execute(
        "UPDATE sessions SET message_count = ?2, updated_at = ?3, title = coalesce(title, ?4), \
     input_tokens = input_tokens + ?5, output_tokens = output_tokens + ?6, \
     cache_read_tokens = cache_read_tokens + ?7, cache_creation_tokens = cache_creation_tokens + ?8, \
     context_tokens = coalesce(?9, context_tokens) WHERE id = ?1",
        params![
            session,
            count + messages.len() as u64,
            now,
            title,
            totals.input_tokens,
            totals.output_tokens,
            totals.cache_read_tokens,
            totals.cache_creation_tokens,
            context
        ],
    )?;
    Ok(out)
}

/// SQL reading `columns` of the session `?1` if the user `?2` owns it, its row locked until the
/// transaction ends where the backend locks rows (PostgreSQL).
fn session_row(tx: &Tx<'_>, columns: &str) -> String {
    let lock = if tx.backend() == Backend::Postgres { " FOR UPDATE" } else { "" };
    format!("SELECT {columns} FROM sessions WHERE id = ?1 AND owner = ?2{lock}")
}

/// Records `compaction` in `user`'s `session` inside the open transaction `tx` (see
/// [`Store::record_compaction`]).
pub(super) fn compaction_in(
    tx: &Tx<'_>,
    user: &str,
    redacting: Redacting<'_>,
    session: &str,
    compaction: &Compaction,
) -> Result<u32> {
    let (count, project): (u64, String) = tx
        .query_opt(&session_row(tx, "message_count, project"), params![session, user], |r| Ok((r.get(0)?, r.get(1)?)))?
        .ok_or_else(|| Error::SessionNotFound(session.to_string()))?;
    if count != compaction.through_seq {
        return Err(Error::Conflict { session: session.into(), expected: compaction.through_seq, found: count });
    }
    insert_compaction(tx, session, compaction, redacting.scrub(tx, &project)?.as_ref())?;
    let failures: u32 = tx.query_row(
        "UPDATE sessions SET compaction_failures = \
     CASE WHEN ?2 = 'ok' AND CAST(?4 AS TEXT) IS NULL THEN 0 ELSE compaction_failures + 1 END, \
     context_tokens = CASE WHEN ?2 = 'ok' AND CAST(?5 AS BIGINT) IS NOT NULL THEN CAST(?5 AS BIGINT) \
     ELSE context_tokens END, \
     updated_at = ?3 WHERE id = ?1 RETURNING compaction_failures",
        params![session, status_str(compaction.status), now_ms(), compaction.error, compaction.tokens_after],
        |r| r.get(0),
    )?;
    Ok(failures)
}

impl Store {
    /// Appends messages to a session in one transaction and returns their seqs. When this returns,
    /// the messages survive a crash of the process.
    pub fn append(&mut self, session: &str, messages: &[NewMessage]) -> Result<Vec<u64>> {
        self.append_at(session, messages, &[])
    }

    /// [`Store::append`], each message written at the time given for it in `times` (unix
    /// milliseconds; now for those past its end): a session brought in from elsewhere keeps its
    /// timestamps.
    pub(crate) fn append_at(&mut self, session: &str, messages: &[NewMessage], times: &[i64]) -> Result<Vec<u64>> {
        Ok(self.append_redacted(session, messages, times)?.seqs)
    }

    /// [`Store::append_at`], saying which messages redaction changed (their parts as stored).
    pub(crate) fn append_redacted(
        &mut self,
        session: &str,
        messages: &[NewMessage],
        times: &[i64],
    ) -> Result<Appended> {
        // Refused before SQLite copies anything: beyond its 1 GB limit it fails only after minutes
        // of work and several times the message's size in memory.
        for (index, m) in messages.iter().enumerate() {
            let bytes: usize = m.parts.iter().map(Part::text_bytes).sum();
            if bytes > super::MAX_MESSAGE_BYTES {
                return Err(Error::MessageTooLarge { index, bytes, limit: super::MAX_MESSAGE_BYTES });
            }
        }
        let redacting = Redacting { policy: &self.redaction, key: &self.key };
        let result = (|| {
            let tx = self.db.row_locked_transaction()?;
            let appended = append_in(&tx, &self.user, redacting, session, messages, times)?;
            tx.commit_at("append")?;
            Ok(appended)
        })();
        result.map_err(|e: Error| e.at(&self.location, "append messages"))
    }

    /// Every message of the session as appended, in order (nothing compacted or trimmed).
    pub fn full_history(&self, session: &str) -> Result<Vec<Message>> {
        on_db!(self, "read the full history", {
            self.session(session)?;
            self.messages_from(session, 1)
        })
    }

    /// Messages with `seq >= from`, in order (a fork's inherited ones from its ancestors).
    /// For a session its caller already checked is the user's.
    pub(super) fn messages_from(&self, session: &str, from: u64) -> Result<Vec<Message>> {
        self.messages_between(session, from, super::lineage::OPEN)
    }

    /// Messages with `from <= seq <= to`, in order, wherever in the session's lineage they live.
    /// For a session its caller already checked is the user's.
    pub(super) fn messages_between(&self, session: &str, from: u64, to: u64) -> Result<Vec<Message>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq >= ?2 AND seq <= ?3 ORDER BY seq"
        );
        let mut out = Vec::new();
        for segment in super::lineage::lineage(&self.db, session)? {
            let (low, high) = (from.max(segment.after + 1), to.min(segment.through));
            if low > high {
                continue;
            }
            let segment_id = segment.session.clone();
            let rows =
                self.db.query_vec(&sql, params![segment.session, low, high], |r| message_from_row(&segment_id, r));
            out.extend(rows?);
        }
        Ok(out)
    }

    /// One message by seq (a fork's inherited one from its ancestor).
    pub fn message(&self, session: &str, seq: u64) -> Result<Option<Message>> {
        on_db!(self, "read a message", {
            super::sessions::owned(&self.db, session, &self.user)?;
            Ok(self.messages_between(session, seq, seq)?.pop())
        })
    }

    /// Every compaction record of the session, oldest first.
    pub fn compactions(&self, session: &str) -> Result<Vec<Compaction>> {
        on_db!(self, "read the compactions", {
            super::sessions::owned(&self.db, session, &self.user)?;
            self.db.query_vec(
                &format!("SELECT {COMPACTION_COLUMNS} FROM compactions WHERE session_id = ?1 ORDER BY id"),
                params![session],
                compaction_from_row,
            )
        })
    }

    /// Every trim record of the session, oldest first.
    pub fn trims(&self, session: &str) -> Result<Vec<Trim>> {
        on_db!(self, "read the trims", {
            super::sessions::owned(&self.db, session, &self.user)?;
            self.db.query_vec(
                &format!("SELECT {TRIM_COLUMNS} FROM trims WHERE session_id = ?1 ORDER BY id"),
                params![session],
                trim_from_row,
            )
        })
    }

    /// Records a compaction, but only if the session's history still ends at
    /// `compaction.through_seq` (otherwise [`Error::Conflict`] and nothing is written). A success
    /// resets the session's failure counter; a failure increments it, and so does a success that
    /// carries an `error` (a summary that is used but freed too little). Returns the counter after.
    pub fn record_compaction(&mut self, session: &str, compaction: &Compaction) -> Result<u32> {
        on_db!(self, "record a compaction", {
            let tx = self.db.transaction()?;
            let redacting = Redacting { policy: &self.redaction, key: &self.key };
            let failures = compaction_in(&tx, &self.user, redacting, session, compaction)?;
            tx.commit_at("compaction")?;
            Ok(failures)
        })
    }

    /// Records trims of tool results. Each names a message and a part, which must be a tool result
    /// whose original content is longer than the replacement. All or none.
    pub fn record_trims(&mut self, session: &str, trims: &[(u64, u32, String)]) -> Result<Vec<Trim>> {
        self.record_trims_by(session, trims, None)
    }

    /// [`Store::record_trims`], naming the trimmer that proposed them.
    pub fn record_trims_by(
        &mut self,
        session: &str,
        trims: &[(u64, u32, String)],
        plugin: Option<&PluginRef>,
    ) -> Result<Vec<Trim>> {
        on_db!(self, "record trims", {
            let now = now_ms();
            let tx = self.db.transaction()?;
            super::sessions::owned(&tx, session, &self.user)?;
            let project: String = tx.query_value("SELECT project FROM sessions WHERE id = ?1", params![session])?;
            let redacting = Redacting { policy: &self.redaction, key: &self.key };
            let scrub = redacting.scrub(&tx, &project)?;
            let mut out = Vec::with_capacity(trims.len());
            for (seq, part, replacement) in trims {
                let original_size = tool_result_size(&tx, session, *seq, *part)?;
                let trim = Trim {
                    seq: *seq,
                    part: *part,
                    original_size,
                    new_size: replacement.len() as u64,
                    replacement: replacement.clone(),
                    created_at: now,
                    plugin: plugin.cloned(),
                };
                if trim.new_size >= original_size {
                    return Err(Error::InvalidTrim {
                        seq: *seq,
                        part: *part,
                        reason: format!(
                            "the replacement ({} bytes) is not shorter than the original ({original_size})",
                            trim.new_size
                        ),
                    });
                }
                insert_trim(&tx, session, &trim, scrub.as_ref())?;
                out.push(trim);
            }
            tx.execute("UPDATE sessions SET updated_at = ?2 WHERE id = ?1", params![session, now])?;
            tx.commit_at("trims")?;
            Ok(out)
        })
    }

    /// Sets the failed-compaction counter (manual compaction clears it) and the flag that turns
    /// summarising off for the session.
    pub fn set_compaction_state(&mut self, session: &str, failures: u32, auto_compact_disabled: bool) -> Result<()> {
        on_db!(self, "record the compaction state", {
            let tx = self.db.transaction()?;
            let n = tx.execute(
                "UPDATE sessions SET compaction_failures = ?2, auto_compact_disabled = ?3 WHERE id = ?1 AND owner = ?4",
                params![session, failures, auto_compact_disabled, self.user],
            )?;
            tx.commit()?;
            if n == 0 {
                return Err(Error::SessionNotFound(session.to_string()));
            }
            Ok(())
        })
    }
}

/// The size in bytes of a tool result's original content.
fn tool_result_size(tx: &Tx<'_>, session: &str, seq: u64, part: u32) -> Result<u64> {
    let invalid = |reason: &str| Error::InvalidTrim { seq, part, reason: reason.to_string() };
    let owner = super::lineage::owner(tx, session, seq)?.ok_or_else(|| invalid("no such message"))?;
    let parts: String = tx
        .query_opt("SELECT parts FROM messages WHERE session_id = ?1 AND seq = ?2", params![owner.session, seq], |r| {
            r.get(0)
        })?
        .ok_or_else(|| invalid("no such message"))?;
    let parts: Vec<Part> =
        serde_json::from_str(&parts).map_err(|e| Error::Corrupt { table: "messages", message: e.to_string() })?;
    match parts.get(part as usize) {
        Some(Part::ToolResult { content, .. }) => Ok(content.len() as u64),
        Some(_) => Err(invalid("only tool results can be trimmed")),
        None => Err(invalid("no such part")),
    }
}

pub(super) fn status_str(s: CompactionStatus) -> &'static str {
    match s {
        CompactionStatus::Ok => "ok",
        CompactionStatus::Failed => "failed",
    }
}

/// Inserts a compaction record, returning its id.
pub(super) fn insert_compaction(tx: &Tx<'_>, session: &str, c: &Compaction, scrub: Option<&Scrub<'_>>) -> Result<i64> {
    let text = |t: &Option<String>| -> Option<String> {
        let t = t.as_deref()?;
        Some(scrub.map_or_else(|| t.to_string(), |s| s.text(t).into_owned()))
    };
    let (summary, instructions, error) = (text(&c.summary), text(&c.instructions), text(&c.error));
    let trigger = match c.trigger {
        CompactionTrigger::Auto => "auto",
        CompactionTrigger::Manual => "manual",
    };
    tx.query_value(
        "INSERT INTO compactions (session_id, trigger, tokens_before, tokens_after, through_seq, \
         first_kept_seq, pinned_seq, summary, model, status, error, created_at, instructions, plugin, \
         plugin_sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) RETURNING id",
        params![
            session,
            trigger,
            c.tokens_before,
            c.tokens_after,
            c.through_seq,
            c.first_kept_seq,
            c.pinned_seq,
            summary,
            c.model,
            status_str(c.status),
            error,
            c.created_at,
            instructions,
            c.plugin.as_ref().map(|p| &p.id),
            c.plugin.as_ref().map(|p| &p.sha256),
        ],
    )
}

/// Inserts a trim record, returning its id.
pub(super) fn insert_trim(tx: &Tx<'_>, session: &str, t: &Trim, scrub: Option<&Scrub<'_>>) -> Result<i64> {
    let replacement = scrub.map_or(std::borrow::Cow::Borrowed(t.replacement.as_str()), |s| s.text(&t.replacement));
    // Its size is what is stored (a placeholder is rarely the secret's length).
    let new_size = replacement.len() as u64;
    tx.query_value(
        "INSERT INTO trims (session_id, seq, part, original_size, new_size, replacement, created_at, plugin, \
         plugin_sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
        params![
            session,
            t.seq,
            t.part,
            t.original_size,
            new_size,
            replacement,
            t.created_at,
            t.plugin.as_ref().map(|p| &p.id),
            t.plugin.as_ref().map(|p| &p.sha256)
        ],
    )
}
