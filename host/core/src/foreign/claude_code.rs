//! Claude Code's session files: one JSON object per line, `user`/`assistant`/`system` records
//! linked by `parentUuid` into a tree (a rewind starts a branch; the session is the branch that
//! ends at the last record), with subagents' records marked `isSidechain`. The README lists the
//! records and fields read.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use super::{AgentCompaction, Converted, Item, Tool, millis, push};
use crate::conversation::{Part, Role, Usage};
use crate::store::CompactionTrigger;

/// The records that take part in the conversation tree.
fn is_chained(r: &Value) -> bool {
    matches!(r["type"].as_str(), Some("user" | "assistant" | "system")) && r["uuid"].is_string()
}

/// Reads one file: its main session and one session per subagent (sidechain) in it.
pub(super) fn read(file: &Path, text: &str) -> Vec<Converted> {
    let mut records: Vec<Value> = Vec::new();
    let mut unreadable = 0usize;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => records.push(v),
            _ => unreadable += 1,
        }
    }
    let Some(session_id) = records.iter().find_map(|r| r["sessionId"].as_str()).map(str::to_string) else {
        return Vec::new();
    };
    // Groups: the main conversation, and each subagent's (by agent id, else the file's sidechain).
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    let mut title = None;
    for (i, r) in records.iter().enumerate() {
        if is_chained(r) {
            let key = if r["isSidechain"].as_bool() == Some(true) {
                format!("{session_id}/agent-{}", r["agentId"].as_str().unwrap_or("sidechain"))
            } else {
                session_id.clone()
            };
            groups.entry(key).or_default().push(i);
        } else if r["type"] == "summary" {
            title = r["summary"].as_str().map(str::to_string);
        } else {
            *others.entry(r["type"].as_str().unwrap_or("untyped").to_string()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (source_id, members) in groups {
        let mut c = Converted::new(Tool::ClaudeCode, source_id.clone(), file);
        c.provider = Some("anthropic".into());
        if source_id == session_id {
            c.title.clone_from(&title);
            for (what, n) in &others {
                *c.skipped.entry(what.clone()).or_default() += n;
            }
            if unreadable > 0 {
                c.skipped.insert("unreadable line".into(), unreadable);
            }
        }
        let chain = chain(&records, &members);
        let off_chain = members.len() - chain.len();
        if off_chain > 0 {
            c.skipped.insert("another branch".into(), off_chain);
        }
        convert(&mut c, chain.iter().map(|&i| &records[i]));
        out.push(c);
    }
    out
}

/// The records of the branch ending at the group's last record, root first: each record's
/// `parentUuid` (or, after a compaction boundary, its `logicalParentUuid`) is followed back.
fn chain(records: &[Value], members: &[usize]) -> Vec<usize> {
    let by_uuid: HashMap<&str, usize> =
        members.iter().filter_map(|&i| records[i]["uuid"].as_str().map(|u| (u, i))).collect();
    let mut out = Vec::new();
    let mut at = members.last().copied();
    let mut seen = std::collections::HashSet::new();
    while let Some(i) = at {
        if !seen.insert(i) {
            break;
        }
        out.push(i);
        let r = &records[i];
        let parent = r["parentUuid"].as_str().or_else(|| r["logicalParentUuid"].as_str());
        at = parent.and_then(|p| by_uuid.get(p).copied());
    }
    out.reverse();
    out
}

/// Text blocks' text (a string content is one block).
fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    }
}

/// A tool result's content: a string, or text blocks (other blocks named).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_string(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `text` without its `<system-reminder>` blocks (Claude Code's injected context).
fn without_reminders(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<system-reminder>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</system-reminder>") {
            Some(end) => rest = &rest[start + end + "</system-reminder>".len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

/// What Claude Code writes as a user message when the user stops an answer (`…]` or
/// `… for tool use]` follows).
const INTERRUPTED_MARKER: &str = "[Request interrupted by user";

/// An image the user gave, as a placeholder naming its type and size (the bytes are not kept).
fn image_placeholder(block: &Value) -> String {
    let source = &block["source"];
    let kind = source["media_type"].as_str().unwrap_or("image");
    match source["data"].as_str() {
        Some(data) => format!("[image: {kind}, {} KiB]", (data.len() * 3 / 4).div_ceil(1024)),
        None => format!("[image: {kind}]"),
    }
}

/// Whether a user text is a slash command or its output rather than a request.
fn is_command(text: &str) -> bool {
    [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<bash-input>",
        "<bash-stdout>",
    ]
    .iter()
    .any(|tag| text.trim_start().starts_with(tag))
}

fn usage(u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let (input, read, created) = (n("input_tokens"), n("cache_read_input_tokens"), n("cache_creation_input_tokens"));
    Some(Usage {
        input_tokens: input,
        output_tokens: n("output_tokens"),
        cache_read_tokens: read,
        cache_creation_tokens: created,
        context_tokens: Some(input + read + created),
    })
}

fn convert<'a>(c: &mut Converted, chain: impl Iterator<Item = &'a Value>) {
    let mut boundary: Option<(CompactionTrigger, u64)> = None;
    // The message id of the assistant message last written (lines of one message share it).
    let mut assistant_id: Option<String> = None;
    for r in chain {
        let at = millis(r["timestamp"].as_str()).unwrap_or(0);
        if let Some(v) = r["version"].as_str() {
            c.versions.insert(v.to_string());
        }
        if c.cwd.is_none() {
            c.cwd = r["cwd"].as_str().map(str::to_string);
        }
        match r["type"].as_str() {
            Some("system") => {
                if r["subtype"] == "compact_boundary" {
                    let meta = &r["compactMetadata"];
                    let trigger =
                        if meta["trigger"] == "manual" { CompactionTrigger::Manual } else { CompactionTrigger::Auto };
                    boundary = Some((trigger, meta["preTokens"].as_u64().unwrap_or(0)));
                } else {
                    c.skip(format!("system {}", r["subtype"].as_str().unwrap_or("record")));
                }
                assistant_id = None;
            }
            Some("user") => {
                assistant_id = None;
                let content = &r["message"]["content"];
                if r["isCompactSummary"].as_bool() == Some(true) {
                    let summary =
                        blocks(content).iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n");
                    let (trigger, tokens_before) = boundary.take().unwrap_or((CompactionTrigger::Auto, 0));
                    c.items.push(Item::Compaction(AgentCompaction { summary, trigger, tokens_before, created_at: at }));
                    continue;
                }
                if r["isMeta"].as_bool() == Some(true) {
                    c.skip("meta");
                    continue;
                }
                let mut results = Vec::new();
                let mut texts = Vec::new();
                for b in blocks(content) {
                    match b["type"].as_str() {
                        Some("tool_result") => results.push(Part::ToolResult {
                            call_id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                            content: result_text(&b["content"]),
                            is_error: b["is_error"].as_bool().unwrap_or(false),
                        }),
                        Some("text") => texts.push(b["text"].as_str().unwrap_or_default().to_string()),
                        Some("image") => texts.push(image_placeholder(&b)),
                        Some(other) => texts.push(format!("[{other}]")),
                        None => {}
                    }
                }
                push(c, Role::Tool, results, None, at);
                let text = without_reminders(&texts.join("\n"));
                if text.is_empty() {
                    if !texts.is_empty() {
                        c.skip("system reminder");
                    }
                } else if is_command(&text) {
                    c.skip("command");
                } else if text.starts_with(INTERRUPTED_MARKER) {
                    // The user stopped the answer before it: that answer was interrupted; the
                    // marker is no request.
                    match c.items.iter_mut().rev().find_map(|i| match i {
                        Item::Message(m, _) if m.role == Role::Assistant => Some(m),
                        _ => None,
                    }) {
                        Some(answer) => answer.status = crate::conversation::MessageStatus::Interrupted,
                        None => c.skip("interruption marker"),
                    }
                } else {
                    push(c, Role::User, vec![Part::Text { text }], None, at);
                }
            }
            Some("assistant") => {
                let message = &r["message"];
                if let Some(model) = message["model"].as_str().filter(|m| !m.starts_with('<')) {
                    c.model = Some(model.to_string());
                }
                let mut parts = Vec::new();
                for b in blocks(&message["content"]) {
                    match b["type"].as_str() {
                        Some("text") => {
                            let text = b["text"].as_str().unwrap_or_default();
                            if !text.is_empty() {
                                parts.push(Part::Text { text: text.to_string() });
                            }
                        }
                        Some("thinking") => parts.push(Part::Thinking {
                            text: b["thinking"].as_str().unwrap_or_default().to_string(),
                            signature: b["signature"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
                        }),
                        Some("redacted_thinking") => parts
                            .push(Part::RedactedThinking { data: b["data"].as_str().unwrap_or_default().to_string() }),
                        Some("tool_use") => parts.push(Part::ToolCall {
                            id: b["id"].as_str().unwrap_or_default().to_string(),
                            name: b["name"].as_str().unwrap_or_default().to_string(),
                            arguments: b["input"].to_string(),
                        }),
                        Some(other) => c.skip(format!("assistant {other} block")),
                        None => {}
                    }
                }
                let id = message["id"].as_str().map(str::to_string);
                let same = id.is_some() && id == assistant_id;
                let u = usage(&message["usage"]);
                // One message split over several lines: its parts join, its usage (repeated on
                // each line, complete on the last) counts once.
                if same && let Some(Item::Message(last, _)) = c.items.last_mut() {
                    last.parts.extend(parts);
                    if u.is_some() {
                        last.usage = u;
                    }
                } else if !parts.is_empty() {
                    // A new message, even right after another assistant message.
                    c.items.push(Item::Message(
                        crate::conversation::NewMessage {
                            role: Role::Assistant,
                            parts,
                            usage: u,
                            status: crate::conversation::MessageStatus::Complete,
                        },
                        at,
                    ));
                }
                if !same {
                    assistant_id = id;
                }
            }
            _ => {}
        }
    }
}
