//! The history tools: how the agent gets back what compaction took out of its view. The originals
//! are never changed, so `history_search` finds them through the history index and `history_read`
//! returns them as they were written, whatever summaries and trims now stand for them.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::conversation::Part;
use crate::store::{HISTORY_RANGE_MAX, HistoryScope, Message, Store};
use crate::tool::{ToolDef, ToolOutput};

/// `history_search`'s name.
pub(crate) const SEARCH: &str = "history_search";
/// `history_read`'s name.
pub(crate) const READ: &str = "history_read";
/// `context_status`'s name.
pub(crate) const STATUS: &str = "context_status";
/// Matches `history_search` returns unless asked for fewer or more.
pub(crate) const SEARCH_DEFAULT_LIMIT: usize = 8;
/// The most matches one `history_search` returns.
pub(crate) const SEARCH_MAX_LIMIT: usize = 30;
/// The most text one `history_read` returns, in bytes; the rest is read on with `offset`.
pub const READ_MAX_BYTES: usize = 16_000;

/// The tools' definitions.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            SEARCH,
            "Search this session's full history, including everything compaction summarised or \
                trimmed away: the original messages, tool calls and tool outputs. Use it when the summary or a trimmed \
                output lacks a detail you need (an error line, a value, a decision, what the user asked). Words match \
                in any case and word form; an identifier or path (`TF123-K45`, `src/a.rs:42`) matches exactly and \
                ranks first. Returns the best matches with their seq and a snippet; read one with history_read.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words, identifiers or paths to look for"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT,
                        "description": format!("At most this many matches (default {SEARCH_DEFAULT_LIMIT})")}
                },
                "required": ["query"]
            }),
        )
        .titled("Search the session history")
        .read_only(),
        ToolDef::new(
            READ,
            "Read original messages of this session by seq, exactly as they were written (before any \
                summary or trim): one with `seq`, or a range with `from` and `to`. Long text is cut at 16,000 bytes; \
                the answer says where, and `offset` reads on from there.",
            json!({
                "type": "object",
                "properties": {
                    "seq": {"type": "integer", "minimum": 1, "description": "One message's seq"},
                    "from": {"type": "integer", "minimum": 1, "description": "First seq of a range"},
                    "to": {"type": "integer", "minimum": 1, "description": "Last seq of a range"},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read on from"}
                }
            }),
        )
        .titled("Read original messages")
        .read_only(),
        ToolDef::new(
            STATUS,
            "How full your context window is and what compaction took out of your view: the window, the \
                tokens the last request used, the marks where compaction runs and what it aims for, which messages \
                are now a summary, which tool outputs are shortened, and how to read any of them back exactly.",
            json!({"type": "object", "properties": {}}),
        )
        .titled("Context window status")
        .read_only(),
    ]
}

/// The history tools as `seshat mcp` serves them to an agent outside Seshat: `history_search`
/// over the sessions of the connection's project (or every session, or one), each match naming
/// its session; `history_read` of a session named by id.
pub fn shared_definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            SEARCH,
            "Search the conversations Seshat keeps (its own and those imported from Claude Code and Codex) — every \
                message as it was written, tool calls and outputs included, whatever compaction later did — in this \
                project, or in every project with `all`, or in one session. Words match in any case and word form; an \
                identifier or path matches exactly and ranks first. Returns the best matches with their session and \
                seq; read one with history_read.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words, identifiers or paths to look for"},
                    "all": {"type": "boolean", "description": "Every project's sessions, not only this project's"},
                    "session": {"type": "string", "description": "Only this session (its id or a unique prefix)"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT,
                        "description": format!("At most this many matches (default {SEARCH_DEFAULT_LIMIT})")}
                },
                "required": ["query"]
            }),
        )
        .titled("Search past conversations")
        .read_only(),
        ToolDef::new(
            READ,
            "Read messages of a session Seshat keeps by seq, exactly as they were written: one with `seq`, or a range \
                with `from` and `to`. Long text is cut at 16,000 bytes; the answer says where, and `offset` reads on.",
            json!({
                "type": "object",
                "properties": {
                    "session": {"type": "string", "description": "The session (its id or a unique prefix, as history_search gives it)"},
                    "seq": {"type": "integer", "minimum": 1, "description": "One message's seq"},
                    "from": {"type": "integer", "minimum": 1, "description": "First seq of a range"},
                    "to": {"type": "integer", "minimum": 1, "description": "Last seq of a range"},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read on from"}
                },
                "required": ["session"]
            }),
        )
        .titled("Read a past conversation")
        .read_only(),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedSearchArgs {
    query: String,
    #[serde(default)]
    all: bool,
    session: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedReadArgs {
    session: String,
    seq: Option<u64>,
    from: Option<u64>,
    to: Option<u64>,
    offset: Option<usize>,
}

/// Runs a history tool as [`shared_definitions`] describes it, for an agent in `project`.
pub fn call_shared(store: &Store, project: &str, name: &str, args: &Value) -> ToolOutput {
    ToolOutput::from_text(run_shared(store, project, name, args))
}

fn run_shared(store: &Store, project: &str, name: &str, args: &Value) -> Result<String, String> {
    let parse_error = |e: serde_json::Error| format!("invalid arguments for {name}: {e}");
    match name {
        SEARCH => {
            let a: SharedSearchArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            if a.query.trim().is_empty() {
                return Err("invalid arguments for history_search: `query` is empty; give the words to look for".into());
            }
            let one = a.session.as_deref().map(|s| store.resolve(s).map_err(|e| e.to_string())).transpose()?;
            let scope = match (&one, a.all) {
                (Some(id), _) => HistoryScope::Session(id),
                (None, true) => HistoryScope::All,
                (None, false) => HistoryScope::Project(project),
            };
            let limit = a.limit.unwrap_or(SEARCH_DEFAULT_LIMIT).clamp(1, SEARCH_MAX_LIMIT);
            let hits = store.search_history(scope, &a.query, limit).map_err(|e| e.to_string())?;
            if hits.is_empty() {
                let where_ = if a.all || one.is_some() { "" } else { " of this project (`all` searches every one)" };
                return Ok(format!("No message{where_} matches `{}`. Try other words.", a.query.trim()));
            }
            let mut out = format!("{} matching messages, best first:\n", hits.len());
            for h in &hits {
                out.push_str(&format!(
                    "- session {} seq {} ({}): {}\n",
                    h.session_id,
                    h.seq,
                    h.role.as_str(),
                    h.snippet.replace('\n', " ")
                ));
            }
            out.push_str("Read one with history_read {\"session\": ID, \"seq\": N}.");
            Ok(out)
        }
        READ => {
            let a: SharedReadArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            let session = store.resolve(&a.session).map_err(|e| e.to_string())?;
            read(store, &session, &ReadArgs { seq: a.seq, from: a.from, to: a.to, offset: a.offset })
        }
        other => Err(format!("there is no history tool named `{other}`")),
    }
}

/// Whether `name` is one of the history tools.
pub fn is_history_tool(name: &str) -> bool {
    name == SEARCH || name == READ || name == STATUS
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    seq: Option<u64>,
    from: Option<u64>,
    to: Option<u64>,
    offset: Option<usize>,
}

/// Runs a history tool on `session`: the text for the model, or the error it reads.
pub fn call(store: &Store, session: &str, name: &str, args: &Value) -> ToolOutput {
    call_with(store, session, name, args, None)
}

/// [`call`], with `history_search` hybrid through `recall` when given (history embedded).
pub fn call_with(
    store: &Store,
    session: &str,
    name: &str,
    args: &Value,
    recall: Option<&mut crate::retrieval::Recall>,
) -> ToolOutput {
    ToolOutput::from_text(run(store, session, name, args, recall))
}

fn run(
    store: &Store,
    session: &str,
    name: &str,
    args: &Value,
    recall: Option<&mut crate::retrieval::Recall>,
) -> Result<String, String> {
    let parse_error = |e: serde_json::Error| format!("invalid arguments for {name}: {e}");
    match name {
        SEARCH => {
            let a: SearchArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            search(store, session, &a, recall)
        }
        READ => {
            let a: ReadArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            read(store, session, &a)
        }
        STATUS => {
            let _: StatusArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            status(store, session).map_err(|e| e.to_string())
        }
        other => Err(format!("there is no history tool named `{other}`")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusArgs {}

/// `context_status`: the window's use and what compaction took out of the view, from the store.
fn status(store: &Store, session: &str) -> crate::store::Result<String> {
    use crate::compaction::SeqRange;
    use crate::store::Origin;
    let info = store.session(session)?;
    let view = store.live_view(session)?;
    let mut out = String::new();
    match (info.context_window, info.context_tokens) {
        (Some(window), used) => {
            let marks = crate::window::Marks::new(window);
            let used = used.map_or("not measured yet".to_string(), |u| {
                format!("{u} tokens ({}%) in the last request", u * 100 / window.max(1))
            });
            out.push_str(&format!(
                "Context window: {window} tokens; used: {used}. Compaction runs when a request would pass {} tokens \
                 and brings it under {}.\n",
                marks.threshold, marks.target
            ));
        }
        (None, _) => out.push_str("Context window: unknown (no automatic compaction).\n"),
    }
    let in_view: std::collections::BTreeSet<u64> = view.entries.iter().filter_map(|e| e.seq).collect();
    let rewound: Vec<(u64, u64)> = store.live_rewinds(session)?.iter().map(|r| (r.from_seq, r.through_seq)).collect();
    let summarised = SeqRange::of(
        (1..=info.message_count).filter(|s| !in_view.contains(s) && !rewound.iter().any(|(a, b)| (a..=b).contains(&s))),
    );
    let list = |r: &[SeqRange]| r.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    match (&view.compaction, summarised.is_empty()) {
        (Some(c), false) => out.push_str(&format!(
            "Summarised: messages {} are out of your view, replaced by the summary at the start of it (the latest \
             made at message #{}{}).\n",
            list(&summarised),
            c.through_seq,
            c.model.as_deref().map_or(String::new(), |m| format!(" by {m}"))
        )),
        _ => out.push_str("Summarised: nothing; every message is in your view.\n"),
    }
    // One line per part, as it is now (a part trimmed again shows its latest trim).
    let mut latest: std::collections::BTreeMap<(u64, u32), (u64, u64)> = std::collections::BTreeMap::new();
    for e in view.entries.iter().filter(|e| e.origin != Origin::Summary) {
        for t in &e.trims {
            latest.insert((e.seq.unwrap_or_default(), t.part), (t.original_size, t.new_size));
        }
    }
    let trimmed: Vec<String> =
        latest.iter().map(|((seq, _), (before, after))| format!("#{seq} ({before} → {after} bytes)")).collect();
    if trimmed.is_empty() {
        out.push_str("Trimmed: no tool output in your view is shortened.\n");
    } else {
        out.push_str(&format!("Trimmed: {} tool outputs are shortened: {}.\n", trimmed.len(), trimmed.join(", ")));
    }
    if !rewound.is_empty() {
        let r: Vec<String> = rewound.iter().map(|(a, b)| format!("#{a}–#{b}")).collect();
        out.push_str(&format!("Rewound (not part of this conversation any more): {}.\n", r.join(", ")));
    }
    out.push_str(&format!(
        "Nothing was deleted: {READ} gives back any message exactly as written (one with `seq`, a range with `from` \
         and `to`), and {SEARCH} finds a detail in all of them."
    ));
    Ok(out)
}

fn search(
    store: &Store,
    session: &str,
    a: &SearchArgs,
    recall: Option<&mut crate::retrieval::Recall>,
) -> Result<String, String> {
    if a.query.trim().is_empty() {
        return Err("invalid arguments for history_search: `query` is empty; give the words to look for".into());
    }
    let limit = a.limit.unwrap_or(SEARCH_DEFAULT_LIMIT).clamp(1, SEARCH_MAX_LIMIT);
    let scope = HistoryScope::Session(session);
    let hits = match recall.filter(|r| r.history()) {
        Some(r) => r.search_history(scope, &a.query, limit).map(|(h, _)| h).map_err(|e| e.to_string())?,
        None => store.search_history(scope, &a.query, limit).map_err(|e| e.to_string())?,
    };
    if hits.is_empty() {
        return Ok(format!("No message of this session matches `{}`. Try other words.", a.query.trim()));
    }
    let mut out = format!("{} matching messages, best first:\n", hits.len());
    for h in &hits {
        out.push_str(&format!("- seq {} ({}): {}\n", h.seq, h.role.as_str(), h.snippet.replace('\n', " ")));
    }
    out.push_str("Read one with history_read {\"seq\": N}.");
    Ok(out)
}

fn read(store: &Store, session: &str, a: &ReadArgs) -> Result<String, String> {
    let count = store.session(session).map_err(|e| e.to_string())?.message_count;
    let (from, to) = match (a.seq, a.from, a.to) {
        (Some(seq), None, None) => (seq, seq),
        (None, Some(from), to) => (from, to.unwrap_or(from)),
        (None, None, Some(to)) => (to, to),
        _ => {
            return Err("invalid arguments for history_read: give either `seq`, or `from` (and `to`), not both".into());
        }
    };
    if from == 0 || from > to {
        return Err(format!("invalid arguments for history_read: the range {from}..{to} is empty; seqs start at 1"));
    }
    if from > count {
        return Err(format!("this session has {count} messages: there is no seq {from}"));
    }
    let to = to.min(count).min(from + HISTORY_RANGE_MAX - 1);
    let messages = store.history_range(session, from, to).map_err(|e| e.to_string())?;
    let text: String = messages.iter().map(render).collect::<Vec<_>>().join("\n");
    let offset = a.offset.unwrap_or(0);
    if offset > text.len() {
        return Err(format!("`offset` {offset} is past the end ({} bytes)", text.len()));
    }
    let start = text.floor_char_boundary(offset);
    let end = text.floor_char_boundary(start.saturating_add(READ_MAX_BYTES));
    let mut out = text[start..end].to_string();
    if end < text.len() {
        let mut next = json!({"offset": end});
        if from == to {
            next["seq"] = from.into();
        } else {
            next["from"] = from.into();
            next["to"] = to.into();
        }
        out.push_str(&format!(
            "\n[history_read: cut here, {} of {} bytes left; read on with history_read {next}]",
            text.len() - end,
            text.len()
        ));
    }
    Ok(out)
}

/// One original message as text: a header, then each part.
fn render(m: &Message) -> String {
    let mut out = format!("[seq {} · {}]\n", m.seq, m.role.as_str());
    for p in &m.parts {
        match p {
            Part::Text { text } => out.push_str(text),
            Part::ToolCall { id, name, arguments } => out.push_str(&format!("[tool call {id}: {name} {arguments}]")),
            Part::ToolResult { call_id, content, is_error } => {
                out.push_str(&format!("[result of {call_id}{}]\n{content}", if *is_error { ", an error" } else { "" }))
            }
            Part::Thinking { .. } | Part::RedactedThinking { .. } => out.push_str("[reasoning]"),
        }
        out.push('\n');
    }
    out
}
