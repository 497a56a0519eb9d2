//! A summariser that calls no model: it extracts, by rule, what a summary must keep — the lines
//! holding a significant word of the user's instructions for this compaction, the constraints
//! and preferences the user stated, the user's requests, the assistant's decisions (a replaced
//! one only as what replaced it), the outcome of each tool call (from the lines that carry it,
//! not its first line) and the open items. Each section gets its share of the output budget, so
//! none is cut off because another ran long; within a section the most specific items (those
//! naming identifiers, requests and rules) win, and duplicates are dropped. Useful offline, and
//! proof that the summary policy is swappable.

use std::collections::HashMap;
use std::fmt::Write as _;

use seshat_plugin_sdk::decisions::{REPLACES, dropped_names, has, has_word, identifiers};
use seshat_plugin_sdk::outcomes;
use seshat_plugin_sdk::summariser::{Error, Part, Role, Summariser, SummaryRequest, instruction_words, words_of};

/// Longest line kept from any one message.
const LINE: usize = 240;

/// Longest tool-call arguments quoted with an outcome.
const ARGS: usize = 80;

/// The sections, in output order, with their share (percent) of the output budget. A section
/// needing less than its share leaves the rest to the others.
const SECTIONS: [(&str, usize); 7] = [
    ("Earlier", 10),
    ("As asked", 10),
    ("Constraints and preferences", 14),
    ("User requests", 18),
    ("Decisions", 16),
    ("Tool outcomes", 22),
    ("Open items", 10),
];
const EARLIER: usize = 0;
const ASKED: usize = 1;
const CONSTRAINTS: usize = 2;
const REQUESTS: usize = 3;
const DECISIONS: usize = 4;
const OUTCOMES: usize = 5;
const OPEN: usize = 6;

const DECISION: &[&str] = &[
    "decid",
    "will ",
    "chose",
    "going to",
    "going with",
    "settled on",
    "we'll",
    "let's",
    "plan",
    "use ",
    "instead",
    "because",
    " it is ",
    "goes to",
    "moves to",
];
const OPEN_WORDS: &[&str] =
    &["todo", "next", "remaining", "not yet", "still", "blocked", "unresolved", "later", "fail"];
const RULE_WORDS: &[&str] =
    &["never", "always", "must", "don't", "dont", "do not", "prefer", "avoid", "only use", "make sure", "shall not"];
const ASK_WORDS: &[&str] = &["please", "need", "want", "should", "add", "fix", "implement", "write", "make", "track"];
/// One candidate line of a section.
struct Item {
    text: String,
    /// Higher is kept first when the section is over its share.
    priority: u32,
    /// Position in the conversation (previous summary first).
    order: usize,
}

fn clip(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max { line } else { format!("{}…", line.chars().take(max).collect::<String>()) }
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    // A `.` ends a sentence only before a space or the end (not in `v0.1` or `src/a.rs`).
    let mut out = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let end = match c {
            b'\n' | b'!' | b'?' => true,
            b'.' => b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()),
            _ => false,
        };
        if end {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out.into_iter().map(str::trim).filter(|s| !s.is_empty())
}

fn priority(line: &str, base: u32) -> u32 {
    let lower = line.to_lowercase();
    base + 4 * u32::from(!identifiers(line).is_empty()) + 2 * u32::from(has(&lower, ASK_WORDS))
}

/// The items of an earlier summary in this plugin's format, by section; anything else whole.
fn parse_previous(previous: &str, sections: &mut [Vec<Item>]) {
    let mut current: Option<usize> = None;
    let mut foreign = String::new();
    for line in previous.lines() {
        let t = line.trim();
        if let Some(title) = t.strip_suffix(':')
            && let Some(i) = SECTIONS.iter().position(|(name, _)| *name == title)
        {
            current = Some(i);
            continue;
        }
        match (current, t.strip_prefix("- ")) {
            (Some(i), Some(item)) => {
                let order = sections[i].len();
                sections[i].push(Item { text: item.to_string(), priority: priority(item, 1), order });
            }
            _ if t.is_empty() => {}
            _ => {
                foreign.push_str(t);
                foreign.push('\n');
            }
        }
    }
    if !foreign.trim().is_empty() {
        sections[EARLIER].push(Item { text: clip(&foreign, 4 * LINE), priority: 1, order: 0 });
    }
}

/// Drops duplicates (the same text, case and spacing aside), keeping the latest.
fn dedupe(items: &mut Vec<Item>) {
    let key = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        last.insert(key(&it.text), i);
    }
    let mut i = 0;
    items.retain(|it| {
        let keep = last.get(&key(&it.text)) == Some(&i);
        i += 1;
        keep
    });
}

/// A decision that names (by an identifier) an earlier one, or what it drops, and says it
/// replaces it takes its place: the earlier one goes, and the newer line says what it replaced.
fn supersede(items: &mut Vec<Item>) {
    let mut i = 0;
    while i < items.len() {
        let lower = items[i].text.to_lowercase();
        if has(&lower, REPLACES) {
            let ids: Vec<String> = identifiers(&items[i].text).into_iter().map(str::to_string).collect();
            let names = dropped_names(&lower);
            // An earlier decision shares an identifier with the replacement, or names what the
            // replacement drops — whatever the wording ("switch from A to B", "instead of A",
            // "drop A").
            let replaced: Vec<usize> = (0..i)
                .filter(|&j| {
                    identifiers(&items[j].text).iter().any(|x| ids.iter().any(|y| y == x)) || {
                        let earlier = items[j].text.to_lowercase();
                        names.iter().any(|n| has_word(&earlier, n))
                    }
                })
                .collect();
            for &j in replaced.iter().rev() {
                let old = items.remove(j);
                i -= 1;
                let newer = &mut items[i];
                // The old identifiers are on the newer line already; otherwise say what went.
                if !identifiers(&old.text).iter().any(|x| newer.text.contains(x)) {
                    newer.text = format!("{} (replaces: {})", newer.text, clip(&old.text, LINE / 2));
                }
            }
        }
        i += 1;
    }
}

/// The items kept within `room` characters: the highest priority first (the latest among
/// equals), shown in conversation order.
fn within(items: &[Item], room: usize) -> Vec<&Item> {
    let mut by_rank: Vec<&Item> = items.iter().collect();
    by_rank.sort_by_key(|it| (std::cmp::Reverse(it.priority), std::cmp::Reverse(it.order)));
    let mut used = 0;
    let mut kept: Vec<&Item> = Vec::new();
    for it in by_rank {
        let cost = it.text.chars().count() + 3;
        if used + cost <= room {
            used += cost;
            kept.push(it);
        }
    }
    kept.sort_by_key(|it| it.order);
    kept
}

/// Each section's room: its share of `budget`, and what others leave unused shared among those
/// that want more.
fn rooms(sections: &[Vec<Item>], budget: usize) -> Vec<usize> {
    let want: Vec<usize> = sections
        .iter()
        .enumerate()
        .map(|(i, items)| {
            let body: usize = items.iter().map(|it| it.text.chars().count() + 3).sum();
            if body == 0 { 0 } else { body + SECTIONS[i].0.len() + 3 }
        })
        .collect();
    let mut room: Vec<usize> = (0..sections.len()).map(|i| want[i].min(budget * SECTIONS[i].1 / 100)).collect();
    // Hand out what is left, in rounds, to the sections still short.
    for _ in 0..4 {
        let spare = budget.saturating_sub(room.iter().sum());
        let short: Vec<usize> = (0..sections.len()).filter(|&i| room[i] < want[i]).collect();
        if spare == 0 || short.is_empty() {
            break;
        }
        let weight: usize = short.iter().map(|&i| SECTIONS[i].1).sum();
        for &i in &short {
            room[i] = want[i].min(room[i] + spare * SECTIONS[i].1 / weight.max(1));
        }
    }
    room
}

struct Extractive;

impl Summariser for Extractive {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        let mut sections: Vec<Vec<Item>> = (0..SECTIONS.len()).map(|_| Vec::new()).collect();
        if let Some(previous) = &request.previous_summary {
            parse_previous(previous, &mut sections);
        }
        let base = sections.iter().map(Vec::len).sum::<usize>();
        let mut order = base;
        let mut next = || {
            order += 1;
            order
        };
        // Lines holding the words of the user's instructions (all of them when there are one or
        // two, else any two), from any text or tool output.
        let words = instruction_words(&request);
        let need = words.len().min(2);
        let mut calls: HashMap<String, (String, String)> = HashMap::new();
        for m in &request.messages {
            for p in &m.parts {
                if need > 0 {
                    let text = match p {
                        Part::Text(t) => t.as_str(),
                        Part::ToolResult(r) => r.content.as_str(),
                        _ => "",
                    };
                    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                        let here: Vec<String> = words_of(line).collect();
                        if words.iter().filter(|w| here.contains(w)).count() >= need {
                            let text = clip(line, LINE);
                            sections[ASKED].push(Item { priority: priority(&text, 1), text, order: next() });
                        }
                    }
                }
                match (m.role, p) {
                    (Role::User, Part::Text(t)) => {
                        let lower = t.to_lowercase();
                        if has(&lower, RULE_WORDS) {
                            // A rule is kept as said, sentence by sentence when it is long.
                            for s in sentences(t) {
                                let l = s.to_lowercase();
                                let section = if has(&l, RULE_WORDS) { CONSTRAINTS } else { REQUESTS };
                                let text = clip(s, LINE);
                                sections[section].push(Item { priority: priority(&text, 2), text, order: next() });
                            }
                        } else {
                            let text = clip(t, LINE);
                            sections[REQUESTS].push(Item { priority: priority(&text, 1), text, order: next() });
                        }
                    }
                    (Role::Assistant, Part::Text(t)) => {
                        for s in sentences(t) {
                            let lower = s.to_lowercase();
                            let section = if has(&lower, OPEN_WORDS) {
                                OPEN
                            } else if has(&lower, DECISION) || has(&lower, REPLACES) {
                                DECISIONS
                            } else {
                                continue;
                            };
                            let text = clip(s, LINE);
                            sections[section].push(Item { priority: priority(&text, 1), text, order: next() });
                        }
                    }
                    (_, Part::ToolCall(c)) => {
                        calls.insert(c.id.clone(), (c.name.clone(), clip(&c.arguments, ARGS)));
                    }
                    (_, Part::ToolResult(r)) => {
                        let (name, args) =
                            calls.get(&r.call_id).cloned().unwrap_or_else(|| ("tool".into(), String::new()));
                        let status = if r.is_error { "failed" } else { "ok" };
                        // The strongest two outcome lines: its errors, its summary, what a
                        // successful run ended with (its last line at least) — never its first
                        // log line.
                        let found = outcomes::outcome_lines(&r.content);
                        let lines = outcomes::line_ranges(&r.content);
                        let (said, weight) = if found.is_empty() {
                            ("(no output)".to_string(), 0)
                        } else {
                            let mut picked: Vec<(usize, outcomes::Kind)> = found.iter().take(2).copied().collect();
                            picked.sort_by_key(|(i, _)| *i);
                            let said: Vec<String> =
                                picked.iter().map(|(i, _)| clip(&r.content[lines[*i].clone()], LINE)).collect();
                            (said.join(" | "), u32::from(found[0].1.weight()))
                        };
                        let text = format!("{name}({args}) {status}: {said}");
                        let priority = priority(&said, weight + 2 * u32::from(r.is_error));
                        sections[OUTCOMES].push(Item { text, priority, order: next() });
                    }
                    _ => {}
                }
            }
        }
        supersede(&mut sections[DECISIONS]);
        for items in &mut sections {
            dedupe(items);
        }
        // Within the requested size (about four characters a token), less the headings.
        let budget = (request.max_tokens as usize * 4).saturating_sub(64);
        let room = rooms(&sections, budget);
        let mut out = String::new();
        for (i, items) in sections.iter().enumerate() {
            let kept = within(items, room[i].saturating_sub(SECTIONS[i].0.len() + 3));
            if kept.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{}:", SECTIONS[i].0);
            for it in kept {
                let _ = writeln!(out, "- {}", it.text);
            }
            out.push('\n');
        }
        if out.trim().is_empty() {
            out = "(nothing to keep from the earlier messages)".into();
        }
        Ok(out.trim_end().to_string())
    }
}

seshat_plugin_sdk::export_summariser!(Extractive);
