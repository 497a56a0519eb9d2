//! `sessions export` / `sessions import`: one session as JSON Lines.
//!
//! The first line is the session (with the format's version), then its messages in seq order,
//! then its compactions, its trims, its pins and its retractions, each line tagged by `record`.
//! Exports of format 1 (no version, no pins or retractions) still import. Export is deterministic, so export → import into an empty
//! database → export gives the same bytes. Import validates every line and reference inside one
//! transaction: malformed input names the line and field and writes nothing.

use std::io::{BufRead, Write};

use rusqlite::{Transaction, TransactionBehavior, params};
use serde::Serialize;

use super::messages::{insert_compaction, insert_message, insert_trim};
use super::model::{Compaction, Message, SessionInfo, Trim};
use super::pins::Retracted;
use super::{Error, Result, Store};
use crate::conversation::{NewMessage, Part};

/// The export format this binary writes: 2 added pins, retractions and this field.
pub const EXPORT_FORMAT: u32 = 2;

/// One line of an export.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum Record {
    Session {
        format_version: u32,
        #[serde(flatten)]
        session: SessionInfo,
    },
    Message(Message),
    Compaction(Compaction),
    Trim(Trim),
    Pin(PinRecord),
    Retraction(RetractionRecord),
}

/// A pinned message.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PinRecord {
    seq: u64,
    created_at: i64,
}

/// An undo: the compaction or trims it retracted, by position in the export.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RetractionRecord {
    undone: Retracted,
    created_at: i64,
}

impl Store {
    /// Writes the full record of a session (messages, compactions, trims) as JSON Lines.
    pub fn export(&self, session: &str, out: &mut dyn Write) -> Result<()> {
        let info = self.session(session)?;
        let io = |source| Error::Io { action: "cannot write export of", path: self.path.clone(), source };
        let mut write = |record: &Record| -> Result<()> {
            serde_json::to_writer(&mut *out, record).map_err(|e| io(e.into()))?;
            out.write_all(b"\n").map_err(io)
        };
        write(&Record::Session { format_version: EXPORT_FORMAT, session: info })?;
        for m in self.messages_from(session, 1)? {
            write(&Record::Message(m))?;
        }
        for c in self.compactions(session)? {
            write(&Record::Compaction(c))?;
        }
        for t in self.trims(session)? {
            write(&Record::Trim(t))?;
        }
        let pinned_at = self.pin_times(session)?;
        for (seq, created_at) in pinned_at {
            write(&Record::Pin(PinRecord { seq, created_at }))?;
        }
        for (undone, created_at) in self.retractions(session)? {
            write(&Record::Retraction(RetractionRecord { undone, created_at }))?;
        }
        out.flush().map_err(io)
    }

    /// Imports one exported session. With `new_id` the session gets a fresh id; otherwise an id
    /// already present is refused. Returns the imported session's id. All or nothing.
    pub fn import(&mut self, input: &mut dyn BufRead, new_id: bool) -> Result<String> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = Importer::default().run(&tx, input, new_id)?;
        tx.commit()?;
        Ok(id)
    }
}

#[derive(Default)]
struct Importer {
    id: String,
    session_line: usize,
    declared_count: u64,
    messages: Vec<Message>,
    last_line: usize,
    /// Row ids of the compactions and trims imported so far, in order (retractions name them).
    compactions: Vec<i64>,
    trims: Vec<i64>,
}

fn invalid(line: usize, message: impl Into<String>) -> Error {
    Error::InvalidImport { line, message: message.into() }
}

impl Importer {
    fn run(mut self, tx: &Transaction<'_>, input: &mut dyn BufRead, new_id: bool) -> Result<String> {
        let mut buf = String::new();
        let mut line = 0;
        loop {
            buf.clear();
            line += 1;
            let n = input.read_line(&mut buf).map_err(|e| invalid(line, format!("cannot read input: {e}")))?;
            if n == 0 {
                break;
            }
            if buf.trim().is_empty() {
                continue;
            }
            self.last_line = line;
            let record = parse(line, &buf)?;
            self.apply(tx, line, record, new_id)?;
        }
        if self.id.is_empty() {
            return Err(invalid(1, "expected a `session` record, found no input"));
        }
        if self.messages.len() as u64 != self.declared_count {
            return Err(invalid(
                self.session_line,
                format!(
                    "field `message_count` is {} but {} message records follow",
                    self.declared_count,
                    self.messages.len()
                ),
            ));
        }
        Ok(self.id)
    }

    fn apply(&mut self, tx: &Transaction<'_>, line: usize, record: Record, new_id: bool) -> Result<()> {
        match record {
            Record::Session { session: s, .. } => {
                if !self.id.is_empty() {
                    return Err(invalid(line, "a second `session` record: import one session per file"));
                }
                self.session_line = line;
                self.declared_count = s.message_count;
                self.id = if new_id { ulid::Ulid::generate().to_string() } else { valid_id(line, &s.id)? };
                let exists: bool =
                    tx.query_row("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)", [&self.id], |r| r.get(0))?;
                if exists {
                    return Err(Error::SessionExists(self.id.clone()));
                }
                if !s.metadata.is_object() {
                    return Err(invalid(line, "field `metadata`: expected a JSON object"));
                }
                tx.execute(
                    "INSERT INTO sessions (id, title, project, provider, model, context_window, created_at, \
                     updated_at, message_count, input_tokens, output_tokens, cache_read_tokens, \
                     cache_creation_tokens, context_tokens, compaction_failures, auto_compact_disabled, metadata) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                    params![
                        self.id,
                        s.title,
                        s.project,
                        s.provider,
                        s.model,
                        s.context_window,
                        s.created_at,
                        s.updated_at,
                        s.message_count,
                        s.totals.input_tokens,
                        s.totals.output_tokens,
                        s.totals.cache_read_tokens,
                        s.totals.cache_creation_tokens,
                        s.context_tokens,
                        s.compaction_failures,
                        s.auto_compact_disabled,
                        s.metadata.to_string()
                    ],
                )?;
            }
            _ if self.id.is_empty() => {
                return Err(invalid(line, "expected a `session` record first"));
            }
            Record::Message(m) => {
                let expected = self.messages.len() as u64 + 1;
                if m.seq != expected {
                    return Err(invalid(line, format!("field `seq`: expected {expected}, found {}", m.seq)));
                }
                let new = NewMessage { role: m.role, parts: m.parts.clone(), usage: m.usage, status: m.status };
                insert_message(tx, &self.id, m.seq, &new, m.created_at)?;
                self.messages.push(m);
            }
            Record::Compaction(c) => {
                let count = self.messages.len() as u64;
                let check = |field: &str, v: Option<u64>, max: u64| match v {
                    Some(v) if v == 0 || v > max => {
                        Err(invalid(line, format!("field `{field}`: {v} is outside 1..={max}")))
                    }
                    _ => Ok(()),
                };
                check("through_seq", Some(c.through_seq), count)?;
                check("first_kept_seq", c.first_kept_seq, c.through_seq + 1)?;
                check("pinned_seq", c.pinned_seq, c.through_seq)?;
                insert_compaction(tx, &self.id, &c).map_err(|e| invalid(line, e.to_string()))?;
                self.compactions.push(tx.last_insert_rowid());
            }
            Record::Trim(t) => {
                let content = self
                    .messages
                    .get((t.seq as usize).wrapping_sub(1))
                    .and_then(|m| m.parts.get(t.part as usize))
                    .and_then(|p| match p {
                        Part::ToolResult { content, .. } => Some(content),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        invalid(
                            line,
                            format!("fields `seq`/`part`: message {} part {} is not a tool result", t.seq, t.part),
                        )
                    })?;
                if t.original_size != content.len() as u64 {
                    return Err(invalid(
                        line,
                        format!("field `original_size`: the tool result has {} bytes", content.len()),
                    ));
                }
                if t.new_size != t.replacement.len() as u64 || t.new_size >= t.original_size {
                    return Err(invalid(
                        line,
                        "field `new_size`: must be the replacement's length and smaller than `original_size`",
                    ));
                }
                insert_trim(tx, &self.id, &t)?;
                self.trims.push(tx.last_insert_rowid());
            }
            Record::Pin(p) => {
                let count = self.messages.len() as u64;
                if p.seq == 0 || p.seq > count {
                    return Err(invalid(line, format!("field `seq`: {} is outside 1..={count}", p.seq)));
                }
                tx.execute(
                    "INSERT INTO pins (session_id, seq, created_at) VALUES (?1, ?2, ?3)",
                    params![self.id, p.seq, p.created_at],
                )
                .map_err(|e| invalid(line, e.to_string()))?;
            }
            Record::Retraction(r) => {
                let pick = |ids: &[i64], n: u64, what: &str| {
                    (n as usize).checked_sub(1).and_then(|i| ids.get(i)).copied().ok_or_else(|| {
                        invalid(
                            line,
                            format!("field `undone`: there is no {what} {n} before this line ({})", ids.len()),
                        )
                    })
                };
                match r.undone {
                    Retracted::Compaction { number } => {
                        let id = pick(&self.compactions, number, "compaction")?;
                        tx.execute(
                            "INSERT INTO retractions (session_id, compaction_id, created_at) VALUES (?1, ?2, ?3)",
                            params![self.id, id, r.created_at],
                        )?;
                    }
                    Retracted::Trims { first, last } => {
                        let (a, b) = (pick(&self.trims, first, "trim")?, pick(&self.trims, last, "trim")?);
                        if a > b {
                            return Err(invalid(line, "field `undone`: `first` comes after `last`"));
                        }
                        tx.execute(
                            "INSERT INTO retractions (session_id, first_trim, last_trim, created_at) \
                             VALUES (?1, ?2, ?3, ?4)",
                            params![self.id, a, b, r.created_at],
                        )?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Parses one line, naming the field at fault. The `record` tag is read first and the rest is
/// decoded as that record's type, so errors carry the path inside it.
fn parse(line: usize, text: &str) -> Result<Record> {
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| invalid(line, clean(&e)))?;
    let tag = match value.as_object_mut().and_then(|o| o.remove("record")) {
        Some(serde_json::Value::String(tag)) => tag,
        Some(_) => return Err(invalid(line, "field `record`: expected a string")),
        None => {
            return Err(invalid(
                line,
                "missing field `record` (session, message, compaction, trim, pin or retraction)",
            ));
        }
    };
    fn decode<T: serde::de::DeserializeOwned>(line: usize, value: serde_json::Value) -> Result<T> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let inner = clean(e.inner());
            if path == "." { invalid(line, inner) } else { invalid(line, format!("field `{path}`: {inner}")) }
        })
    }
    Ok(match tag.as_str() {
        "session" => {
            let format_version = match value.as_object_mut().and_then(|o| o.remove("format_version")) {
                None => 1,
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=u64::from(EXPORT_FORMAT)).contains(&n) => n as u32,
                    Some(n) => {
                        return Err(invalid(
                            line,
                            format!(
                                "field `format_version`: {n} is newer than the {EXPORT_FORMAT} this seshat reads; \
                                 upgrade seshat to import it"
                            ),
                        ));
                    }
                    None => return Err(invalid(line, "field `format_version`: expected a number")),
                },
            };
            Record::Session { format_version, session: decode(line, value)? }
        }
        "message" => Record::Message(decode(line, value)?),
        "compaction" => Record::Compaction(decode(line, value)?),
        "trim" => Record::Trim(decode(line, value)?),
        "pin" => Record::Pin(decode(line, value)?),
        "retraction" => Record::Retraction(decode(line, value)?),
        other => {
            return Err(invalid(
                line,
                format!(
                    "field `record`: unknown record `{other}` (expected session, message, compaction, trim, pin or \
                     retraction)"
                ),
            ));
        }
    })
}

/// serde_json's message without its " at line 1 column N" suffix (noise on a one-line record).
fn clean(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.split(" at line ").next().unwrap_or(&text).to_string()
}

fn valid_id(line: usize, id: &str) -> Result<String> {
    ulid::Ulid::from_string(id)
        .map(|u| u.to_string())
        .map_err(|_| invalid(line, format!("field `id`: `{id}` is not a session id (a 26-character ULID)")))
}
