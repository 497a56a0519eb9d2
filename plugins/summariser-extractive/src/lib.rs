//! A summariser that calls no model: it extracts, by rule, the user's requests, the assistant's
//! decisions, the outcome of each tool call and the open items — and first of all, the lines that
//! hold a significant word of the user's instructions for this compaction. Useful offline, and
//! proof that the summary policy is swappable.

use std::collections::HashMap;
use std::fmt::Write as _;

use seshat_plugin_sdk::summariser::{Error, Part, Role, Summariser, SummaryRequest, instruction_words, words_of};

/// Longest line kept from any one message.
const LINE: usize = 240;

/// Most lines kept for the user's instructions.
const ASKED: usize = 40;

struct Extractive;

fn clip(text: &str) -> String {
    let line = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    if line.chars().count() <= LINE { line } else { format!("{}…", line.chars().take(LINE).collect::<String>()) }
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '\n', '!', '?']).map(str::trim).filter(|s| !s.is_empty())
}

const DECISION: &[&str] = &["decid", "will ", "chose", "going to", "plan", "use ", "instead", "because"];
const OPEN: &[&str] = &["todo", "next", "remaining", "not yet", "still", "blocked", "unresolved", "later", "fail"];

impl Summariser for Extractive {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        let (mut requests, mut decisions, mut outcomes, mut open) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut calls: HashMap<String, (String, String)> = HashMap::new();
        // Lines holding the words of the user's instructions (all of them when there are one or
        // two, else any two), from any text or tool output.
        let words = instruction_words(&request);
        let need = words.len().min(2);
        let mut asked: Vec<String> = Vec::new();
        for m in &request.messages {
            for p in &m.parts {
                let text = match p {
                    Part::Text(t) => t.as_str(),
                    Part::ToolResult(r) => r.content.as_str(),
                    _ => continue,
                };
                for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    if asked.len() >= ASKED || need == 0 {
                        break;
                    }
                    let here: Vec<String> = words_of(line).collect();
                    if words.iter().filter(|w| here.contains(w)).count() >= need {
                        let line = clip(line);
                        if !asked.contains(&line) {
                            asked.push(line);
                        }
                    }
                }
            }
        }
        for m in &request.messages {
            for p in &m.parts {
                match (m.role, p) {
                    (Role::User, Part::Text(t)) => requests.push(clip(t)),
                    (Role::Assistant, Part::Text(t)) => {
                        for s in sentences(t) {
                            let lower = s.to_lowercase();
                            if OPEN.iter().any(|k| lower.contains(k)) {
                                open.push(clip(s));
                            } else if DECISION.iter().any(|k| lower.contains(k)) {
                                decisions.push(clip(s));
                            }
                        }
                    }
                    (_, Part::ToolCall(c)) => {
                        calls.insert(c.id.clone(), (c.name.clone(), clip(&c.arguments)));
                    }
                    (_, Part::ToolResult(r)) => {
                        let (name, args) = calls.get(&r.call_id).cloned().unwrap_or_else(|| ("tool".into(), String::new()));
                        let first = r.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("(empty)");
                        let status = if r.is_error { "failed" } else { "ok" };
                        outcomes.push(format!("{name}({args}) {status}: {}", clip(first)));
                    }
                    _ => {}
                }
            }
        }
        let mut out = String::new();
        if let Some(previous) = &request.previous_summary {
            let _ = writeln!(out, "Earlier:\n{}\n", previous.trim());
        }
        for (title, items) in [
            ("As asked", &asked),
            ("User requests", &requests),
            ("Decisions", &decisions),
            ("Tool outcomes", &outcomes),
            ("Open items", &open),
        ] {
            if !items.is_empty() {
                let _ = writeln!(out, "{title}:");
                for i in items {
                    let _ = writeln!(out, "- {i}");
                }
                out.push('\n');
            }
        }
        if out.trim().is_empty() {
            out = "(nothing to keep from the earlier messages)".into();
        }
        // Stay within the requested size (about four characters a token).
        let max = request.max_tokens as usize * 4;
        if out.chars().count() > max {
            out = out.chars().take(max).collect();
        }
        Ok(out.trim_end().to_string())
    }
}

seshat_plugin_sdk::export_summariser!(Extractive);
