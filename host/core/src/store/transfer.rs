//! `sessions export` / `sessions import`: one session as JSON Lines.
//!
//! The first line is the session (with the format's version), then its messages in seq order,
//! then its compactions, its trims, its pins, its retractions and its rewinds, each line tagged by
//! `record`. A fork's export holds its whole history (the inherited messages too) and names its
//! parent and fork point on the session line; imported, it is a session of its own that remembers
//! where it came from (`metadata.forked_from`). Exports of format 1 (no version, no pins or
//! retractions) and 2 (no lineage, no rewinds) still import. Export is deterministic, so export → import into an empty
//! database → export gives the same bytes. Import validates every line and reference inside one
//! transaction: malformed input names the line and field and writes nothing.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};

use super::db::{Tx, params};
use serde::{Deserialize, Serialize};

use super::messages::{Encoded, insert_compaction, insert_encoded, insert_trim};
use super::pins::Retracted;
use super::{Compaction, Message, SessionInfo, Trim};
use super::{Error, Result, Store};
use crate::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
pub use seshat_protocol::methods::Imported;

/// The export format this binary writes: 2 added pins, retractions and this field; 3 the
/// session's lineage (`parent_id`, `fork_seq`) and rewinds.
pub(crate) const EXPORT_FORMAT: u32 = 3;

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
    Rewind(RewindRecord),
}

/// A rewind in force: messages `from_seq..=through_seq` are out of the live view.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RewindRecord {
    from_seq: u64,
    through_seq: u64,
    created_at: i64,
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
        on_db!(self, "export a session", {
            let info = self.session(session)?;
            let io = |cause| Error::Io {
                action: "cannot write export of",
                path: std::path::PathBuf::from(self.location.to_string()),
                cause,
            };
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
            for r in self.live_rewinds(session)? {
                write(&Record::Rewind(RewindRecord {
                    from_seq: r.from_seq,
                    through_seq: r.through_seq,
                    created_at: r.created_at,
                }))?;
            }
            out.flush().map_err(io)
        })
    }

    /// Imports one exported session (see [`ImportOptions`]). All or nothing: on any error nothing
    /// was written.
    pub fn import(&mut self, input: &mut dyn BufRead, options: ImportOptions) -> Result<Imported> {
        on_db!(self, "import a session", {
            let owner = self.user.clone();
            let redacting = Some(super::redaction_key::Redacting { policy: &self.redaction, key: &self.key });
            let tx = self.db.transaction()?;
            let imported = Importer { options, owner, redacting, ..Importer::default() }.run(&tx, input)?;
            tx.commit_at("import")?;
            Ok(imported)
        })
    }
}

/// How [`Store::import`] treats its input.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Give the session a fresh id; otherwise an id already present is refused.
    pub new_id: bool,
    /// Accept a broken structure instead of refusing it: tool results that answer no earlier call
    /// and messages without parts are kept in the full history but left out of the live view,
    /// and calls that were never answered get a synthetic error result.
    pub repair: bool,
    /// The longest record (line) read; a longer one fails the import, naming its line (default
    /// [`crate::input::DEFAULT_MAX_RECORD_BYTES`]).
    pub max_record_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions { new_id: false, repair: false, max_record_bytes: crate::input::DEFAULT_MAX_RECORD_BYTES }
    }
}

/// The text of the result a repaired import gives a call that was never answered.
pub fn unanswered_text(name: &str) -> String {
    format!("[no result: the `{name}` call was never answered (given this result when the session was imported)]")
}

#[derive(Default)]
struct Importer<'a> {
    options: ImportOptions,
    /// What the store redacts, and the imported session's project.
    redacting: Option<super::redaction_key::Redacting<'a>>,
    project: String,
    /// Who the imported session belongs to (the store's caller).
    owner: String,
    id: String,
    session_line: usize,
    declared_count: u64,
    /// Messages imported so far.
    count: u64,
    last_created_at: i64,
    /// The size of every tool result imported, by (seq, part): what trims are checked against.
    results: HashMap<(u64, u32), u64>,
    /// The sizes of tool results redaction changed, as stored.
    stored_sizes: HashMap<(u64, u32), u64>,
    /// Every call so far (id and tool name) in order, and the ids answered.
    calls: Vec<(String, String)>,
    call_ids: HashSet<String>,
    answered: HashSet<String>,
    orphans: usize,
    empty: usize,
    /// Row ids of the compactions and trims imported so far, in order (retractions name them).
    compactions: Vec<i64>,
    trims: Vec<i64>,
}

/// A record's time: unix milliseconds, never before 1970.
fn timestamp(line: usize, field: &str, ms: i64) -> Result<()> {
    if ms < 0 {
        return Err(invalid(line, format!("field `{field}`: {ms} is before 1970; give unix milliseconds (0 or more)")));
    }
    Ok(())
}

fn invalid(line: usize, message: impl Into<String>) -> Error {
    Error::InvalidImport { line, message: message.into(), repairable: false }
}

/// [`invalid`] for what breaks only the session's structure, which a repaired import keeps out
/// of the live view.
fn repairable(line: usize, message: impl std::fmt::Display) -> Error {
    Error::InvalidImport {
        line,
        message: format!("{message} (or import it repaired, to keep it out of the live view)"),
        repairable: true,
    }
}

/// Lines longer than this give their buffer back once parsed, so one huge line does not keep its
/// memory for the rest of the import.
const KEEP_LINE_BUFFER: usize = 1 << 20;

impl<'a> Importer<'a> {
    /// The rules in force for the imported session's text.
    fn scrub(&self, tx: &Tx<'_>) -> Result<Option<crate::redaction::Scrub<'a>>> {
        Ok(self.redacting.map(|r| r.scrub(tx, &self.project)).transpose()?.flatten())
    }

    fn run(mut self, tx: &Tx<'_>, input: &mut dyn BufRead) -> Result<Imported> {
        use crate::input::{Line, describe_limit, next_line};
        let limit = self.options.max_record_bytes.max(1);
        let mut bytes = Vec::new();
        let mut line = 0;
        loop {
            line += 1;
            match next_line(input, &mut bytes, limit).map_err(|e| invalid(line, format!("cannot read input: {e}")))? {
                Line::End => break,
                Line::Read => {}
                Line::TooLong => {
                    return Err(invalid(
                        line,
                        format!(
                            "the record is longer than {}, the largest an import reads (raise `max_record_mib` \
                             under [store] in config.toml to import it)",
                            describe_limit(limit)
                        ),
                    ));
                }
            }
            // A byte-order mark some editors put at the start of a file is not part of the record.
            let start = if line == 1 && bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
            let buf = std::str::from_utf8(&bytes[start..]).map_err(|e| {
                invalid(
                    line,
                    format!("the record is not valid UTF-8 (byte {} of the line)", start + e.valid_up_to() + 1),
                )
            })?;
            if buf.trim().is_empty() {
                continue;
            }
            let record = parse(line, buf)?;
            if bytes.capacity() > KEEP_LINE_BUFFER {
                bytes = Vec::new();
            }
            self.apply(tx, line, record)?;
        }
        if self.id.is_empty() {
            return Err(invalid(1, "expected a `session` record, found no input"));
        }
        if self.count != self.declared_count {
            return Err(invalid(
                self.session_line,
                format!("field `message_count` is {} but {} message records follow", self.declared_count, self.count),
            ));
        }
        let unanswered: Vec<&(String, String)> =
            self.calls.iter().filter(|(id, _)| !self.answered.contains(id)).collect();
        let synthetic = if self.options.repair && !unanswered.is_empty() {
            let parts = unanswered
                .iter()
                .map(|(id, name)| Part::ToolResult {
                    call_id: id.clone(),
                    content: unanswered_text(name),
                    is_error: true,
                })
                .collect();
            let msg = NewMessage { role: Role::Tool, parts, usage: None, status: MessageStatus::Synthetic };
            // (Written by Seshat from tool names: nothing to redact.)
            self.count += 1;
            insert_encoded(tx, &self.id, self.count, Encoded::of(&msg)?, self.last_created_at)?;
            tx.execute("UPDATE sessions SET message_count = ?2 WHERE id = ?1", params![self.id, self.count])?;
            unanswered.len()
        } else {
            0
        };
        super::branches::date_by_time(tx, &self.id)?;
        Ok(Imported { id: self.id, messages: self.count, orphans: self.orphans, empty: self.empty, synthetic })
    }

    /// Checks a message's structure, refusing (or, repairing, counting) what breaks it.
    fn check_message(&mut self, line: usize, m: &MessageLine) -> Result<()> {
        if m.parts.is_empty() {
            if !self.options.repair {
                return Err(repairable(line, "field `parts`: a message needs at least one part"));
            }
            self.empty += 1;
        }
        for (p, part) in m.parts.iter().enumerate() {
            match part {
                Part::ToolResult { call_id, content, .. } => {
                    if !self.call_ids.contains(call_id) {
                        if !self.options.repair {
                            return Err(repairable(
                                line,
                                format!(
                                    "field `parts[{p}].call_id`: `{call_id}` answers no earlier tool_call in the \
                                     session"
                                ),
                            ));
                        }
                        self.orphans += 1;
                    } else {
                        self.answered.insert(call_id.clone());
                    }
                    self.results.insert((m.seq, p as u32), content.len() as u64);
                }
                Part::ToolCall { id, name, .. } if self.call_ids.insert(id.clone()) => {
                    self.calls.push((id.clone(), name.clone()));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn apply(&mut self, tx: &Tx<'_>, line: usize, record: Incoming) -> Result<()> {
        let new_id = self.options.new_id;
        match record {
            Incoming::Session(s) => {
                if !self.id.is_empty() {
                    return Err(invalid(line, "a second `session` record: import one session per file"));
                }
                self.session_line = line;
                self.declared_count = s.message_count;
                self.id = if new_id { ulid::Ulid::generate().to_string() } else { valid_id(line, &s.id)? };
                let owner: Option<String> =
                    tx.query_opt("SELECT owner FROM sessions WHERE id = ?1", params![self.id], |r| r.get(0))?;
                match owner {
                    // The caller's own session: they know it, and choose (`new_id`).
                    Some(owner) if owner == self.owner => return Err(Error::SessionExists(self.id.clone())),
                    // Another user's: nothing says it exists; the import gets an id of its own.
                    Some(_) => self.id = ulid::Ulid::generate().to_string(),
                    None => {}
                }
                if !s.metadata.is_object() {
                    return Err(invalid(line, "field `metadata`: expected a JSON object"));
                }
                // A fork arrives whole: its lineage is remembered, not linked.
                let mut metadata = s.metadata.clone();
                if let (Some(parent), Some(at)) = (&s.parent_id, s.fork_seq) {
                    metadata["forked_from"] = serde_json::json!({"session": parent, "at": at});
                }
                timestamp(line, "created_at", s.created_at)?;
                timestamp(line, "updated_at", s.updated_at)?;
                self.project = s.project.clone();
                let scrub = self.scrub(tx)?;
                let title =
                    s.title.as_deref().map(|t| scrub.map_or_else(|| t.to_string(), |r| r.title(t).into_owned()));
                tx.execute(
                    "INSERT INTO sessions (id, title, project, provider, model, context_window, created_at, \
                     updated_at, message_count, input_tokens, output_tokens, cache_read_tokens, \
                     cache_creation_tokens, context_tokens, compaction_failures, auto_compact_disabled, metadata, owner) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                    params![
                        self.id,
                        title,
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
                        metadata.to_string(),
                        self.owner
                    ],
                )?;
            }
            _ if self.id.is_empty() => {
                return Err(invalid(line, "expected a `session` record first"));
            }
            Incoming::Message(m) => {
                let expected = self.count + 1;
                if m.seq != expected {
                    return Err(invalid(line, format!("field `seq`: expected {expected}, found {}", m.seq)));
                }
                self.check_message(line, &m)?;
                timestamp(line, "created_at", m.created_at)?;
                let (seq, created_at) = (m.seq, m.created_at);
                let mut new = NewMessage { role: m.role, parts: m.parts, usage: m.usage, status: m.status };
                if let Some(parts) = self.scrub(tx)?.and_then(|r| r.parts(&new.parts)) {
                    // Trims are checked against the sizes written in the file, and stored against
                    // the redacted results' (what an export of this store then says).
                    for (p, part) in parts.iter().enumerate() {
                        if let Part::ToolResult { content, .. } = part {
                            self.stored_sizes.insert((seq, p as u32), content.len() as u64);
                        }
                    }
                    new.parts = parts;
                }
                let encoded = Encoded::of(&new)?;
                // Only the encoded row stays while SQLite copies it (a huge line's memory, once).
                drop(new);
                insert_encoded(tx, &self.id, seq, encoded, created_at)?;
                self.count = seq;
                self.last_created_at = created_at;
            }
            Incoming::Compaction(c) => {
                let count = self.count;
                let check = |field: &str, v: Option<u64>, max: u64| match v {
                    Some(v) if v == 0 || v > max => {
                        Err(invalid(line, format!("field `{field}`: {v} is outside 1..={max}")))
                    }
                    _ => Ok(()),
                };
                check("through_seq", Some(c.through_seq), count)?;
                check("first_kept_seq", c.first_kept_seq, c.through_seq + 1)?;
                check("pinned_seq", c.pinned_seq, c.through_seq)?;
                let scrub = self.scrub(tx)?;
                let id =
                    insert_compaction(tx, &self.id, &c, scrub.as_ref()).map_err(|e| invalid(line, e.to_string()))?;
                self.compactions.push(id);
            }
            Incoming::Trim(t) => {
                let size = self.results.get(&(t.seq, t.part)).copied().ok_or_else(|| {
                    invalid(
                        line,
                        format!("fields `seq`/`part`: message {} part {} is not a tool result", t.seq, t.part),
                    )
                })?;
                if t.original_size != size {
                    return Err(invalid(line, format!("field `original_size`: the tool result has {size} bytes")));
                }
                if t.new_size != t.replacement.len() as u64 || t.new_size >= t.original_size {
                    return Err(invalid(
                        line,
                        "field `new_size`: must be the replacement's length and smaller than `original_size`",
                    ));
                }
                let mut t = t;
                if let Some(stored) = self.stored_sizes.get(&(t.seq, t.part)) {
                    t.original_size = *stored;
                }
                let id = insert_trim(tx, &self.id, &t, self.scrub(tx)?.as_ref())?;
                self.trims.push(id);
            }
            Incoming::Pin(p) => {
                timestamp(line, "created_at", p.created_at)?;
                let count = self.count;
                if p.seq == 0 || p.seq > count {
                    return Err(invalid(line, format!("field `seq`: {} is outside 1..={count}", p.seq)));
                }
                tx.execute(
                    "INSERT INTO pins (session_id, seq, created_at) VALUES (?1, ?2, ?3)",
                    params![self.id, p.seq, p.created_at],
                )
                .map_err(|e| invalid(line, e.to_string()))?;
            }
            Incoming::Rewind(r) => {
                timestamp(line, "created_at", r.created_at)?;
                let count = self.count;
                if r.from_seq == 0 || r.from_seq > r.through_seq || r.through_seq > count {
                    return Err(invalid(
                        line,
                        format!(
                            "fields `from_seq`/`through_seq`: {}..={} is not a range of messages within 1..={count}",
                            r.from_seq, r.through_seq
                        ),
                    ));
                }
                tx.execute(
                    "INSERT INTO rewinds (session_id, from_seq, through_seq, made_seq, created_at) \
                     VALUES (?1, ?2, ?3, ?3, ?4)",
                    params![self.id, r.from_seq, r.through_seq, r.created_at],
                )?;
            }
            Incoming::Retraction(r) => {
                timestamp(line, "created_at", r.created_at)?;
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

/// One parsed input line.
enum Incoming {
    Session(SessionInfo),
    Message(MessageLine),
    Compaction(Compaction),
    Trim(Trim),
    Pin(PinRecord),
    Retraction(RetractionRecord),
    Rewind(RewindRecord),
}

/// A `message` record as read: [`Message`]'s fields and its tag. Decoded straight from the line's
/// text (no intermediate JSON tree), so a huge message is held once.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageLine {
    #[serde(rename = "record")]
    _record: serde::de::IgnoredAny,
    seq: u64,
    role: Role,
    parts: Vec<Part>,
    #[serde(default)]
    usage: Option<Usage>,
    status: MessageStatus,
    created_at: i64,
}

/// Only a line's `record` tag (everything else skipped without being kept).
#[derive(Deserialize)]
struct Tag {
    record: Option<serde_json::Value>,
}

/// Parses one line, naming the field at fault. The `record` tag is read first and the rest is
/// decoded as that record's type, so errors carry the path inside it.
fn parse(line: usize, text: &str) -> Result<Incoming> {
    let tag: Tag = serde_json::from_str(text).map_err(|e| invalid(line, clean(&e)))?;
    let tag = match tag.record {
        Some(serde_json::Value::String(tag)) => tag,
        Some(_) => return Err(invalid(line, "field `record`: expected a string")),
        None => {
            return Err(invalid(
                line,
                "missing field `record` (session, message, compaction, trim, pin, retraction or rewind)",
            ));
        }
    };
    fn decode<'de, T: Deserialize<'de>, D: serde::Deserializer<'de, Error = serde_json::Error>>(
        line: usize,
        from: D,
    ) -> Result<T> {
        serde_path_to_error::deserialize(from).map_err(|e| {
            let path = e.path().to_string();
            let inner = clean(e.inner());
            if path == "." { invalid(line, inner) } else { invalid(line, format!("field `{path}`: {inner}")) }
        })
    }
    if tag == "message" {
        return Ok(Incoming::Message(decode(line, &mut serde_json::Deserializer::from_str(text))?));
    }
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| invalid(line, clean(&e)))?;
    if let Some(o) = value.as_object_mut() {
        o.remove("record");
    }
    Ok(match tag.as_str() {
        "session" => {
            match value.as_object_mut().and_then(|o| o.remove("format_version")) {
                None => {}
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=u64::from(EXPORT_FORMAT)).contains(&n) => {}
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
            }
            Incoming::Session(decode(line, value)?)
        }
        "compaction" => Incoming::Compaction(decode(line, value)?),
        "trim" => Incoming::Trim(decode(line, value)?),
        "pin" => Incoming::Pin(decode(line, value)?),
        "retraction" => Incoming::Retraction(decode(line, value)?),
        "rewind" => Incoming::Rewind(decode(line, value)?),
        other => {
            return Err(invalid(
                line,
                format!(
                    "field `record`: unknown record `{other}` (expected session, message, compaction, trim, pin, \
                     retraction or rewind)"
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
