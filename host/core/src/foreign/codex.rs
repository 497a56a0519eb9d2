//! Codex CLI's rollout files: one `{timestamp, type, payload}` object per line — `session_meta`
//! first, then `turn_context`, `response_item`, `compacted` and `event_msg` records (files of
//! early versions hold the meta and the response items bare). The README lists the records and
//! fields read.

use std::path::Path;

use serde_json::Value;

use super::{AgentCompaction, Converted, Item, Tool, millis, push};
use crate::conversation::{Part, Role, Usage};
use crate::store::CompactionTrigger;

/// The user messages Codex writes itself: context, not requests.
const INJECTED: &[(&str, &str)] = &[
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# AGENTS.md instructions", "user_instructions"),
];

/// Reads one rollout file.
pub(super) fn read(file: &Path, text: &str) -> Vec<Converted> {
    let mut c = Converted::new(Tool::Codex, String::new(), file);
    c.provider = Some("openai".into());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            c.skip("unreadable line");
            continue;
        };
        let at = millis(v["timestamp"].as_str()).unwrap_or(0);
        // Early files: the meta bare on the first line, response items bare after it.
        let (kind, payload) = match (v["type"].as_str(), v.get("payload")) {
            (Some(kind), Some(payload)) => (kind.to_string(), payload.clone()),
            (None, None) if v["id"].is_string() && c.source_id.is_empty() => ("session_meta".into(), v.clone()),
            (Some(_), None) => ("response_item".into(), v.clone()),
            _ => {
                c.skip("untyped");
                continue;
            }
        };
        match kind.as_str() {
            "session_meta" => {
                let meta = payload.get("meta").unwrap_or(&payload);
                if let Some(id) = meta["id"].as_str() {
                    c.source_id = id.to_string();
                }
                c.cwd = meta["cwd"].as_str().map(str::to_string).or(c.cwd.take());
                if let Some(p) = meta["model_provider"].as_str() {
                    c.provider = Some(p.to_string());
                }
                if let Some(v) = meta["cli_version"].as_str() {
                    c.versions.insert(v.to_string());
                }
            }
            "turn_context" => {
                if let Some(m) = payload["model"].as_str() {
                    c.model = Some(m.to_string());
                }
                if c.cwd.is_none() {
                    c.cwd = payload["cwd"].as_str().map(str::to_string);
                }
            }
            "response_item" => item(&mut c, &payload, at),
            "compacted" => {
                let mut summary = payload["message"].as_str().unwrap_or_default().to_string();
                if summary.trim().is_empty() {
                    // A remote compaction: the history it left, as text.
                    summary = payload["replacement_history"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|i| i["content"].as_array().into_iter().flatten())
                        .filter_map(|b| b["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n");
                }
                if summary.trim().is_empty() {
                    c.skip("compacted without a readable summary");
                } else {
                    c.items.push(Item::Compaction(AgentCompaction {
                        summary,
                        trigger: CompactionTrigger::Auto,
                        tokens_before: 0,
                        created_at: at,
                    }));
                }
            }
            "event_msg" => match payload["type"].as_str() {
                Some("token_count") => token_count(&mut c, &payload["info"]),
                Some(other) => c.skip(format!("event_msg {other}")),
                None => c.skip("event_msg"),
            },
            other => c.skip(other.to_string()),
        }
    }
    if c.source_id.is_empty() {
        c.source_id = file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    }
    vec![c]
}

/// The text of a message's content items (`input_text`, `output_text`; others named).
fn texts(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| match b["type"].as_str() {
            Some("input_text" | "output_text" | "text") => b["text"].as_str().map(str::to_string),
            Some(other) => Some(format!("[{other}]")),
            None => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool output: a string, content items, or (older files) `{content, success}`.
fn output(v: &Value) -> (String, bool) {
    match v {
        Value::String(s) => (s.clone(), false),
        Value::Array(_) => (texts(v), false),
        Value::Object(o) => (
            o.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
            o.get("success").and_then(Value::as_bool) == Some(false),
        ),
        _ => (String::new(), false),
    }
}

fn item(c: &mut Converted, p: &Value, at: i64) {
    let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    match p["type"].as_str() {
        Some("message") => {
            let text = texts(&p["content"]);
            match p["role"].as_str() {
                Some("user") => {
                    if let Some((_, what)) = INJECTED.iter().find(|(tag, _)| text.trim_start().starts_with(tag)) {
                        c.skip(*what);
                    } else if !text.trim().is_empty() {
                        push(c, Role::User, vec![Part::Text { text }], None, at);
                    }
                }
                Some("assistant") => {
                    if !text.is_empty() {
                        push(c, Role::Assistant, vec![Part::Text { text }], None, at);
                    }
                }
                Some(role) => c.skip(format!("{role} message")),
                None => c.skip("message"),
            }
        }
        Some("reasoning") => {
            let summary = p["summary"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let mut parts = Vec::new();
            if !summary.is_empty() {
                parts.push(Part::Thinking { text: summary, signature: None });
            }
            // Kept opaque: passed back only to the model that wrote it, never to another.
            if let Some(data) = p["encrypted_content"].as_str().filter(|d| !d.is_empty()) {
                parts.push(Part::RedactedThinking { data: data.to_string() });
            }
            push(c, Role::Assistant, parts, None, at);
        }
        Some("function_call") => {
            let call = Part::ToolCall { id: s("call_id"), name: s("name"), arguments: s("arguments") };
            push(c, Role::Assistant, vec![call], None, at);
        }
        Some("custom_tool_call") => {
            let call = Part::ToolCall { id: s("call_id"), name: s("name"), arguments: s("input") };
            push(c, Role::Assistant, vec![call], None, at);
        }
        Some("local_shell_call") => {
            let id = p["call_id"].as_str().or(p["id"].as_str()).unwrap_or_default().to_string();
            let call = Part::ToolCall { id, name: "local_shell".into(), arguments: p["action"].to_string() };
            push(c, Role::Assistant, vec![call], None, at);
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let (content, is_error) = output(&p["output"]);
            push(c, Role::Tool, vec![Part::ToolResult { call_id: s("call_id"), content, is_error }], None, at);
        }
        Some(other) => c.skip(format!("response_item {other}")),
        None => c.skip("response_item"),
    }
}

/// A `token_count` event: the last call's usage goes to the latest assistant message that has
/// none, and the model's window is noted.
fn token_count(c: &mut Converted, info: &Value) {
    if let Some(w) = info["model_context_window"].as_u64() {
        c.context_window = Some(w);
    }
    let last = &info["last_token_usage"];
    if !last.is_object() {
        return;
    }
    let n = |k: &str| last[k].as_u64().unwrap_or(0);
    let (input, cached) = (n("input_tokens"), n("cached_input_tokens"));
    let usage = Usage {
        input_tokens: input.saturating_sub(cached),
        output_tokens: n("output_tokens"),
        cache_read_tokens: cached,
        cache_creation_tokens: 0,
        context_tokens: Some(input),
    };
    let target = c.items.iter_mut().rev().find_map(|i| match i {
        Item::Message(m, _) if m.role == Role::Assistant => Some(m),
        _ => None,
    });
    if let Some(m) = target
        && m.usage.is_none()
    {
        m.usage = Some(usage);
    }
}
