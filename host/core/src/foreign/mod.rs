//! Sessions of other agents — Claude Code and Codex CLI — brought into Seshat, so their history
//! can be resumed, searched, compacted and used to try a plugin (`seshat plugins test`).
//!
//! Neither format is documented by its maker; each reader (`claude_code`, `codex`) follows the
//! records and fields listed in the README, read from their public source and published
//! descriptions. A reader never fails on a record it does not know: it counts it by type and
//! goes on. What it makes is one [`Converted`] per session; [`bring_in`] writes it into the store
//! — a new session through the ordinary import (with `--repair`'s repairs), or, when the same
//! source session was imported before, only what the file gained since.

mod claude_code;
mod codex;
mod wire;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use crate::store::{self, Compaction, CompactionStatus, CompactionTrigger, ImportOptions, SourceItem, Store};

/// Errors bringing sessions in.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {cause}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The path holds no session file of this tool.
    #[error("{path} holds no {tool} session (no .jsonl file with its records): {hint}")]
    Empty {
        /// The path.
        path: PathBuf,
        /// The tool.
        tool: Tool,
        /// Where that tool keeps its sessions.
        hint: &'static str,
    },
    /// A file could not be read as outside input (not a regular file, say).
    #[error(transparent)]
    Input(crate::input::Error),
    /// Writing into the store failed.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// A session brought in before no longer says how much of its source it holds.
    #[error(
        "session {session} was imported from {file}, but its record of how much of that file it holds \
         (metadata.source) is not what Seshat writes: nothing was appended, since appending from the start \
         would store its messages twice. Import the file as a new session, or delete session {session} first"
    )]
    SourceUnreadable {
        /// The session.
        session: String,
        /// The source file.
        file: String,
    },
}

impl Error {
    /// A stable code.
    pub fn code(&self) -> &str {
        match self {
            Error::Io { .. } => "io",
            Error::Empty { .. } => "no_sessions",
            Error::Input(crate::input::Error::NotRegular { .. }) => "not_a_regular_file",
            Error::Input(_) => "io",
            Error::Store(e) => e.code(),
            Error::SourceUnreadable { .. } => "source_unreadable",
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The agents whose sessions Seshat reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// Anthropic's Claude Code (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`).
    Codex,
}

impl Tool {
    /// Its name on the command line and in session metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::ClaudeCode => "claude-code",
            Tool::Codex => "codex",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Tool::ClaudeCode => "Claude Code keeps them under ~/.claude/projects/<project>/",
            Tool::Codex => "Codex keeps them under ~/.codex/sessions/",
        }
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "claude-code" => Ok(Tool::ClaudeCode),
            "codex" => Ok(Tool::Codex),
            _ => Err(format!("unknown source `{s}`: expected claude-code or codex")),
        }
    }
}

/// One thing of a converted session, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A message, with when it was written (unix milliseconds).
    Message(NewMessage, i64),
    /// The agent compacted its context here: everything before is replaced by its summary.
    Compaction(AgentCompaction),
}

/// An agent's compaction, as its files record it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCompaction {
    /// The agent's summary.
    pub summary: String,
    /// Whether the user asked for it.
    pub trigger: CompactionTrigger,
    /// The context's size before, when the agent recorded it.
    pub tokens_before: u64,
    /// When (unix milliseconds).
    pub created_at: i64,
}

impl AgentCompaction {
    /// Its compaction record when written after message `through`: the live view resumes at the
    /// next message and starts with the agent's summary.
    fn record(&self, through: u64) -> Compaction {
        Compaction {
            trigger: self.trigger,
            tokens_before: self.tokens_before,
            tokens_after: Some(crate::window::estimate_text(&self.summary)),
            through_seq: through,
            first_kept_seq: Some(through + 1),
            pinned_seq: None,
            summary: Some(self.summary.clone()),
            model: None,
            status: CompactionStatus::Ok,
            error: None,
            created_at: self.created_at,
            instructions: None,
            plugin: None,
        }
    }
}

/// One session as read from another agent's files, in Seshat's terms.
#[derive(Debug, Clone)]
pub struct Converted {
    /// Whose it is.
    pub tool: Tool,
    /// The agent's id of the session (a subagent's: the parent's id, `/`, the agent's).
    pub source_id: String,
    /// The file it was read from.
    pub file: PathBuf,
    /// A title, when the agent wrote one.
    pub title: Option<String>,
    /// The working directory, as the agent wrote it.
    pub cwd: Option<String>,
    /// The provider, when known.
    pub provider: Option<String>,
    /// The model last used.
    pub model: Option<String>,
    /// The model's window, when the agent recorded it.
    pub context_window: Option<u64>,
    /// Messages and compactions, in order.
    pub items: Vec<Item>,
    /// The agent versions that wrote the records.
    pub versions: BTreeSet<String>,
    /// Records not brought in, counted by what they were (`meta`, `command`, a record type …).
    pub skipped: BTreeMap<String, usize>,
}

impl Converted {
    fn new(tool: Tool, source_id: String, file: &Path) -> Self {
        Converted {
            tool,
            source_id,
            file: file.to_path_buf(),
            title: None,
            cwd: None,
            provider: None,
            model: None,
            context_window: None,
            items: Vec::new(),
            versions: BTreeSet::new(),
            skipped: BTreeMap::new(),
        }
    }

    fn skip(&mut self, what: impl Into<String>) {
        *self.skipped.entry(what.into()).or_default() += 1;
    }

    /// The messages only.
    fn messages(&self) -> impl Iterator<Item = (&NewMessage, i64)> {
        self.items.iter().filter_map(|i| if let Item::Message(m, t) = i { Some((m, *t)) } else { None })
    }
}

/// What [`read`] found in a file or directory.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Found {
    /// The sessions, in the files' order.
    pub sessions: Vec<Converted>,
    /// Files in a directory that were not read (not regular files), with why.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Reads every session of `tool` in `path`: a session file, or a directory searched for `.jsonl`
/// files (sorted, so the order is stable). Only regular files are read; a record (line) longer
/// than `max_record_bytes` or not valid UTF-8 is left out and counted, naming its file and line,
/// and the rest is read.
pub fn read(tool: Tool, path: &Path, max_record_bytes: usize) -> Result<Found> {
    let named = !path.is_dir();
    let files = if named {
        vec![path.to_path_buf()]
    } else {
        let mut files = Vec::new();
        walk(path, &mut files)?;
        files.sort();
        files
    };
    let mut found = Found::default();
    for file in &files {
        let (text, left_out) = match read_records(file, max_record_bytes) {
            Ok(read) => read,
            Err(crate::input::Error::NotRegular { kind, .. }) if !named => {
                found.skipped.push((file.clone(), format!("a {kind}, not a regular file")));
                continue;
            }
            Err(e) => return Err(Error::Input(e)),
        };
        let sessions = match tool {
            Tool::ClaudeCode => claude_code::read(file, &text),
            Tool::Codex => codex::read(file, &text),
        };
        found.sessions.extend(sessions.into_iter().filter(|c| !c.items.is_empty()).map(|mut c| {
            for why in &left_out {
                c.skip(why.clone());
            }
            isolate_orphans(c)
        }));
    }
    if found.sessions.is_empty() {
        return Err(Error::Empty { path: path.to_path_buf(), tool, hint: tool.hint() });
    }
    Ok(found)
}

/// A session file's records as text, one per line, without the ones that are too long or not
/// UTF-8 (their lines stay, empty, so line numbers hold); and what was left out, naming each line.
fn read_records(file: &Path, limit: usize) -> std::result::Result<(String, Vec<String>), crate::input::Error> {
    use crate::input::{Line, describe_limit, next_line, skip_line};
    let io = |cause| crate::input::Error::Io { action: "cannot read", path: file.to_path_buf(), cause };
    let mut input = std::io::BufReader::new(crate::input::open_regular(file)?);
    let (mut text, mut left_out, mut bytes) = (String::new(), Vec::new(), Vec::new());
    for line in 1.. {
        match next_line(&mut input, &mut bytes, limit.max(1)).map_err(io)? {
            Line::End => break,
            Line::TooLong => {
                skip_line(&mut input).map_err(io)?;
                left_out.push(format!("record longer than {} ({}:{line})", describe_limit(limit), file.display()));
            }
            Line::Read => match std::str::from_utf8(&bytes) {
                Ok(record) => {
                    text.push_str(record.trim_end_matches(['\n', '\r']));
                }
                Err(_) => left_out.push(format!("record not valid UTF-8 ({}:{line})", file.display())),
            },
        }
        text.push('\n');
    }
    Ok((text, left_out))
}

/// Moves tool results whose call is nowhere before them into a message of their own, after the
/// answered ones beside them, so the import's repair keeps exactly them out of the live view.
/// Also gives an untitled session its first request's title, by the store's own rule.
fn isolate_orphans(mut c: Converted) -> Converted {
    let mut calls: HashSet<String> = HashSet::new();
    let mut items = Vec::with_capacity(c.items.len());
    for item in std::mem::take(&mut c.items) {
        match item {
            Item::Message(m, at) if m.role == Role::Tool => {
                let (answered, orphans): (Vec<Part>, Vec<Part>) = m
                    .parts
                    .iter()
                    .cloned()
                    .partition(|p| !matches!(p, Part::ToolResult { call_id, .. } if !calls.contains(call_id)));
                if answered.is_empty() || orphans.is_empty() {
                    items.push(Item::Message(m, at));
                } else {
                    items.push(Item::Message(NewMessage { parts: answered, ..m.clone() }, at));
                    items.push(Item::Message(NewMessage { parts: orphans, ..m }, at));
                }
            }
            Item::Message(m, at) => {
                for p in &m.parts {
                    if let Part::ToolCall { id, .. } = p {
                        calls.insert(id.clone());
                    }
                }
                items.push(Item::Message(m, at));
            }
            other => items.push(other),
        }
    }
    c.items = items;
    if c.title.is_none() {
        let title = c.messages().find(|(m, _)| m.role == Role::User).and_then(|(m, _)| store::title_from(&m.parts));
        c.title = title;
    }
    c
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|cause| Error::Io { path: dir.to_path_buf(), cause })?;
    for entry in entries {
        let path = entry.map_err(|cause| Error::Io { path: dir.to_path_buf(), cause })?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

/// An ISO 8601 timestamp as unix milliseconds.
fn millis(text: Option<&str>) -> Option<i64> {
    text?.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond())
}

/// What bringing one session in did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Whose session.
    pub tool: Tool,
    /// The agent's id of it.
    pub source_id: String,
    /// The file read.
    pub file: PathBuf,
    /// The Seshat session.
    pub session: String,
    /// `imported` (new), `appended` (the file grew), `forked` (the file grew while the session
    /// went on in Seshat: what the file gained went into a fork at the point where the two
    /// diverge) or `unchanged`.
    pub outcome: &'static str,
    /// With `forked`: the session forked from and the last message both share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<(String, u64)>,
    /// Messages written now.
    pub messages: usize,
    /// Compaction records written now.
    pub compactions: usize,
    /// Tool results whose call is nowhere before them: kept out of the live view (a new
    /// session) or left out (appended to one).
    pub orphans: usize,
    /// Calls never answered, given a synthetic error result.
    pub synthetic: usize,
    /// Records not brought in, by what they were.
    pub skipped: BTreeMap<String, usize>,
    /// The agent versions that wrote the file.
    pub versions: BTreeSet<String>,
}

/// Where a converted session's source stands in its Seshat session's metadata (`source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
struct Source {
    tool: String,
    id: String,
    file: String,
    /// Messages and compactions of the conversion already written.
    messages: usize,
    compactions: usize,
    /// The session's message count once they were written (absent in records written before
    /// it was kept). Informational: whether the session went on in Seshat is read from its
    /// messages on every import, never from this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stored: Option<u64>,
    /// What of the file was not brought in so far, by kind (an append reports only what is new).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    skipped: BTreeMap<String, usize>,
}

/// Writes `c` into the store: a new session, or only what is new when the same source session
/// was brought in before (found by its source id). `project` turns the agent's working
/// directory into a project key.
pub fn bring_in(store: &mut Store, c: &Converted, project: impl Fn(&str) -> String) -> Result<Report> {
    let mut report = Report {
        tool: c.tool,
        source_id: c.source_id.clone(),
        file: c.file.clone(),
        session: String::new(),
        outcome: "imported",
        messages: 0,
        compactions: 0,
        orphans: 0,
        synthetic: 0,
        skipped: c.skipped.clone(),
        versions: c.versions.clone(),
        forked_from: None,
    };
    let messages = c.messages().count();
    let compactions = c.items.len() - messages;
    let source = Source {
        tool: c.tool.as_str().into(),
        id: c.source_id.clone(),
        file: c.file.display().to_string(),
        messages,
        compactions,
        stored: None,
        skipped: c.skipped.clone(),
    };
    if let Some((session, before)) = store.find_source(c.tool.as_str(), &c.source_id)? {
        let before: Source = serde_json::from_value(before)
            .map_err(|_| Error::SourceUnreadable { session: session.clone(), file: source.file.clone() })?;
        report.session.clone_from(&session);
        // What the file had already left out was reported when it was; say only what is new.
        report.skipped = source
            .skipped
            .iter()
            .map(|(k, n)| (k.clone(), n.saturating_sub(before.skipped.get(k).copied().unwrap_or(0))))
            .filter(|(_, n)| *n > 0)
            .collect();
        append_new(store, &session, c, &before, &source, &mut report)?;
        report.outcome = if report.forked_from.is_some() {
            "forked"
        } else if report.messages + report.compactions == 0 {
            "unchanged"
        } else {
            "appended"
        };
        return Ok(report);
    }
    let export = export_lines(c, &source, &project);
    let imported = store
        .import(&mut export.as_bytes(), ImportOptions { new_id: true, repair: true, ..ImportOptions::default() })?;
    report.session = imported.id;
    report.messages = messages;
    report.compactions = compactions;
    // A conversion never holds a message without parts (`push` drops them): the import's repair
    // finds none to keep out.
    debug_assert_eq!(imported.empty, 0, "a converted message without parts");
    report.orphans = imported.orphans;
    report.synthetic = imported.synthetic;
    let stored = Source { stored: Some(store.session(&report.session)?.message_count), ..source };
    store.continue_source(&report.session, &[], &serde_json::to_value(&stored).expect("a source serialises"), None)?;
    Ok(report)
}

/// The converted session as a Seshat export, for the ordinary import.
fn export_lines(c: &Converted, source: &Source, project: &impl Fn(&str) -> String) -> String {
    let mut totals = Usage::default();
    let mut context = None;
    for (m, _) in c.messages() {
        if let Some(u) = m.usage {
            totals.input_tokens += u.input_tokens;
            totals.output_tokens += u.output_tokens;
            totals.cache_read_tokens += u.cache_read_tokens;
            totals.cache_creation_tokens += u.cache_creation_tokens;
            context = u.context_tokens.or(context);
        }
    }
    let times: Vec<i64> = c.messages().map(|(_, t)| t).collect();
    let first = times.first().copied().unwrap_or_else(store::now_ms);
    let last = times.last().copied().unwrap_or(first);
    let mut lines = vec![serde_json::json!({
        "record": "session",
        "format_version": 2,
        "id": ulid::Ulid::generate().to_string(),
        "title": c.title,
        "project": c.cwd.as_deref().map_or_else(|| format!("/{}", c.tool), project),
        "provider": c.provider,
        "model": c.model,
        "context_window": c.context_window,
        "context_tokens": context,
        "created_at": first,
        "updated_at": last,
        "message_count": times.len(),
        "totals": {
            "input_tokens": totals.input_tokens,
            "output_tokens": totals.output_tokens,
            "cache_read_tokens": totals.cache_read_tokens,
            "cache_creation_tokens": totals.cache_creation_tokens,
        },
        // (`foreign_through`: the usage reported up to here was the other agent's requests'.)
        "metadata": { "source": source, "foreign_through": times.len() },
    })];
    // Messages and compactions as the export writes them: the store's records with their tag.
    let tagged = |tag: &str, record: serde_json::Value| {
        let mut line = serde_json::json!({ "record": tag });
        if let (Some(line), serde_json::Value::Object(fields)) = (line.as_object_mut(), record) {
            line.extend(fields);
        }
        line
    };
    let mut seq = 0u64;
    let mut compactions = Vec::new();
    for item in &c.items {
        match item {
            Item::Message(m, at) => {
                seq += 1;
                let message = store::Message {
                    seq,
                    role: m.role,
                    parts: m.parts.clone(),
                    usage: m.usage,
                    status: m.status,
                    created_at: *at,
                };
                lines.push(tagged("message", serde_json::to_value(&message).expect("a message serialises")));
            }
            Item::Compaction(agent) => {
                let record = serde_json::to_value(agent.record(seq)).expect("a compaction serialises");
                compactions.push(tagged("compaction", record));
            }
        }
    }
    lines.extend(compactions);
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out
}

/// Appends what the conversion holds beyond what `before` says was written: messages (tool
/// results answering no call of the session left out) and compactions, in order, and records
/// `now` as the source's position — in one transaction.
fn append_new(
    store: &mut Store,
    session: &str,
    c: &Converted,
    before: &Source,
    now: &Source,
    report: &mut Report,
) -> Result<()> {
    let history = store.full_history(session)?;
    let (mut messages, mut compactions) = (0usize, 0usize);
    let mut count = store.session(session)?.message_count;
    let mut session = session.to_string();
    // Where the session and the file part, read from their messages every time (never from what
    // an earlier import recorded, which an import that found nothing new cannot keep true).
    let aligned = align(&history, c);
    let mut already = aligned.file;
    // The session went on in Seshat past the last message it shares with the file, and the file
    // grew too: two branches of one conversation, which appending would interleave. What the
    // file gained goes into a fork at the last message both share, and the fork follows the file
    // from then on.
    let grown = c.messages().count() > aligned.file;
    let mut release = None;
    if aligned.own_after && grown && aligned.seq > 0 {
        let forked = store.fork(&session, Some(aligned.seq), None)?;
        report.forked_from = Some((session.clone(), forked.at));
        release = Some(session.clone());
        session = forked.session.id.clone();
        count = forked.at;
    } else if aligned.own_after {
        // Nothing new in the file (or nothing shared to fork at): the session's own messages
        // stay last, and none of the file's follow them.
        already = c.messages().count();
    }
    // The calls the session (or the fork, whose history is the session's up to `count`) holds.
    let mut calls: HashSet<String> = history
        .iter()
        .filter(|m| m.seq <= count)
        .flat_map(|m| &m.parts)
        .filter_map(|p| if let Part::ToolCall { id, .. } = p { Some(id.clone()) } else { None })
        .collect();
    let mut items = Vec::new();
    for item in &c.items {
        match item {
            Item::Message(m, at) => {
                messages += 1;
                if messages <= already {
                    continue;
                }
                let parts: Vec<Part> = m
                    .parts
                    .iter()
                    .filter(|p| match p {
                        Part::ToolResult { call_id, .. } if !calls.contains(call_id) => {
                            report.orphans += 1;
                            false
                        }
                        _ => true,
                    })
                    .cloned()
                    .collect();
                for p in &parts {
                    if let Part::ToolCall { id, .. } = p {
                        calls.insert(id.clone());
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                let message = NewMessage { parts, ..m.clone() };
                match items.last_mut() {
                    Some(SourceItem::Messages { messages, times }) => {
                        messages.push(message);
                        times.push(*at);
                    }
                    _ => items.push(SourceItem::Messages { messages: vec![message], times: vec![*at] }),
                }
                count += 1;
                report.messages += 1;
            }
            Item::Compaction(agent) => {
                compactions += 1;
                if compactions <= before.compactions {
                    continue;
                }
                items.push(SourceItem::Compaction(agent.record(count)));
                report.compactions += 1;
            }
        }
    }
    let now = Source { stored: Some(count), ..now.clone() };
    let source = serde_json::to_value(&now).expect("a source serialises");
    store.continue_source(&session, &items, &source, release.as_deref())?;
    report.session = session;
    Ok(())
}

/// Where a session brought in before and its source file part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Aligned {
    /// The last seq of the session that is one of the file's messages (0: none).
    seq: u64,
    /// How many of the file's messages the session holds up to there (counting those an append
    /// left out whole, their results answering no call).
    file: usize,
    /// The session has messages of its own after `seq` (written in Seshat, not read from the file).
    own_after: bool,
}

/// Walks the session's history and the file's messages side by side while they agree (the same
/// role and parts, or the parts an append keeps: results answering a call the session holds),
/// passing over the session's synthetic messages (results Seshat wrote for calls never answered)
/// and the file's messages an append leaves out whole.
fn align(history: &[store::Message], c: &Converted) -> Aligned {
    let file: Vec<&NewMessage> = c.messages().map(|(m, _)| m).collect();
    let mut calls: HashSet<&str> = HashSet::new();
    let (mut i, mut j, mut seq) = (0usize, 0usize, 0u64);
    loop {
        while history.get(i).is_some_and(|m| m.status == MessageStatus::Synthetic) {
            i += 1;
        }
        let (Some(here), Some(there)) = (history.get(i), file.get(j)) else { break };
        let kept: Vec<&Part> = there
            .parts
            .iter()
            .filter(|p| !matches!(p, Part::ToolResult { call_id, .. } if !calls.contains(call_id.as_str())))
            .collect();
        let same = here.role == there.role && (here.parts == there.parts || here.parts.iter().eq(kept.iter().copied()));
        if same {
            for p in &here.parts {
                if let Part::ToolCall { id, .. } = p {
                    calls.insert(id);
                }
            }
            seq = here.seq;
            i += 1;
            j += 1;
        } else if kept.is_empty() {
            j += 1;
        } else {
            break;
        }
    }
    let own_after = history[i..].iter().any(|m| m.status != MessageStatus::Synthetic);
    Aligned { seq, file: j, own_after }
}

/// Joins consecutive messages of one side: assistant parts into the assistant message before,
/// tool results into the tool message before. Readers push through this so one model turn is
/// one message, as Seshat writes them.
fn push(c: &mut Converted, role: Role, parts: Vec<Part>, usage: Option<Usage>, at: i64) {
    if parts.is_empty() {
        return;
    }
    if let Some(Item::Message(last, _)) = c.items.last_mut()
        && last.role == role
        && matches!(role, Role::Assistant | Role::Tool)
    {
        last.parts.extend(parts);
        if usage.is_some() {
            last.usage = usage;
        }
        return;
    }
    c.items.push(Item::Message(NewMessage { role, parts, usage, status: MessageStatus::Complete }, at));
}
