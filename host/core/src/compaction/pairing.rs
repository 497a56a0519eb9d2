//! Pairing (pure): every tool result must follow its call, and every call needs a result, in
//! every request that leaves the machine. Checked on every outgoing request, not only after
//! compaction: interrupts and resumes break pairing too.

use std::collections::HashSet;

use crate::conversation::{Part, Role};

/// A message of an outgoing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    /// Its seq in the store, if it is stored.
    pub seq: Option<u64>,
    /// Role.
    pub role: Role,
    /// Content.
    pub parts: Vec<Part>,
}

/// What [`repair`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repair {
    /// Call ids of results dropped from the request because their call is not in it.
    pub dropped_orphans: Vec<String>,
    /// Calls that never got a result anywhere: each needs a synthetic result, stored.
    pub unanswered: Vec<(String, String)>,
}

impl Repair {
    /// Whether the request was already paired.
    pub fn is_clean(&self) -> bool {
        self.dropped_orphans.is_empty() && self.unanswered.is_empty()
    }
}

/// Makes a request valid: drops tool results whose call is not in it (from the request only), and
/// lists calls without a result that `answered` (every call id answered anywhere in the store)
/// does not contain — those really went unanswered. Calls answered in the store but missing here
/// are a bug in the caller's cut, not repaired silently: they are reported as unanswered too only
/// if the store has no answer.
pub fn repair(messages: &mut Vec<Msg>, answered_in_store: &HashSet<String>) -> Repair {
    let mut out = Repair::default();
    let mut calls_seen: HashSet<String> = HashSet::new();
    for m in messages.iter_mut() {
        m.parts.retain(|p| match p {
            Part::ToolResult { call_id, .. } if !calls_seen.contains(call_id) => {
                out.dropped_orphans.push(call_id.clone());
                false
            }
            _ => true,
        });
        calls_seen.extend(m.parts.iter().filter_map(Part::tool_call_id).map(str::to_string));
    }
    messages.retain(|m| !m.parts.is_empty());
    let answered_here: HashSet<&str> =
        messages.iter().flat_map(|m| m.parts.iter()).filter_map(Part::answered_call_id).collect();
    for m in messages.iter() {
        for p in &m.parts {
            if let Part::ToolCall { id, name, .. } = p
                && !answered_here.contains(id.as_str())
                && !answered_in_store.contains(id)
            {
                out.unanswered.push((id.clone(), name.clone()));
            }
        }
    }
    out
}

/// The synthetic result stored for a call that never got one.
pub fn synthetic_result(call_id: &str, name: &str) -> Part {
    Part::ToolResult {
        call_id: call_id.to_string(),
        content: format!("[interrupted: the `{name}` call never returned a result]"),
        is_error: true,
    }
}

/// Whether every result follows its call and every call has a result.
pub fn is_paired(messages: &[Msg]) -> bool {
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for m in messages {
        for p in &m.parts {
            match p {
                Part::ToolCall { id, .. } => {
                    calls.insert(id.clone());
                }
                Part::ToolResult { call_id, .. } => {
                    if !calls.contains(call_id) {
                        return false;
                    }
                    results.insert(call_id.clone());
                }
                _ => {}
            }
        }
    }
    calls == results
}

/// Puts every tool result right after the assistant message that made its call (all results of
/// one message together, in call order), as providers require. A no-op for a well-ordered
/// history; it repairs results stored late (a synthetic result appended after an interrupt).
pub fn arrange(messages: Vec<Msg>) -> Vec<Msg> {
    let mut results: std::collections::HashMap<String, (Part, Option<u64>)> = std::collections::HashMap::new();
    let mut stripped = Vec::with_capacity(messages.len());
    for mut m in messages {
        let seq = m.seq;
        m.parts.retain(|p| match p {
            Part::ToolResult { call_id, .. } => {
                results.entry(call_id.clone()).or_insert_with(|| (p.clone(), seq));
                false
            }
            _ => true,
        });
        if !m.parts.is_empty() {
            stripped.push(m);
        }
    }
    let mut out = Vec::with_capacity(stripped.len() * 2);
    for m in stripped {
        let answers: Vec<(Part, Option<u64>)> =
            m.parts.iter().filter_map(|p| results.remove(p.tool_call_id()?)).collect();
        out.push(m);
        if let Some(seq) = answers.first().map(|a| a.1) {
            out.push(Msg { seq, role: Role::Tool, parts: answers.into_iter().map(|a| a.0).collect() });
        }
    }
    out
}

/// Makes the request alternate as every chat template requires: two user messages in a row (a
/// summary and the request kept after it; a request whose answer was compacted away) become one,
/// their parts in order, and so do two assistant messages in a row. A merged message is no
/// longer a stored one (`seq` none), so its encoding is not cached under either's seq.
pub fn alternate(messages: Vec<Msg>) -> Vec<Msg> {
    let mut out: Vec<Msg> = Vec::with_capacity(messages.len());
    for m in messages {
        match out.last_mut() {
            Some(prev) if prev.role == m.role && matches!(m.role, Role::User | Role::Assistant) => {
                prev.seq = None;
                prev.parts.extend(m.parts);
            }
            _ => out.push(m),
        }
    }
    out
}

/// Whether no two user messages, and no two assistant messages, follow each other.
pub fn alternates(messages: &[Msg]) -> bool {
    messages.windows(2).all(|w| w[0].role != w[1].role || !matches!(w[0].role, Role::User | Role::Assistant))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, parts: Vec<Part>) -> Msg {
        Msg { seq: None, role, parts }
    }
    fn call(id: &str) -> Part {
        Part::ToolCall { id: id.into(), name: "read".into(), arguments: "{}".into() }
    }
    fn result(id: &str) -> Part {
        Part::ToolResult { call_id: id.into(), content: "ok".into(), is_error: false }
    }

    #[test]
    fn orphans_are_dropped_and_unanswered_calls_listed() {
        let mut m = vec![
            msg(Role::Tool, vec![result("gone")]),
            msg(Role::Assistant, vec![call("a"), call("b")]),
            msg(Role::Tool, vec![result("a")]),
        ];
        let r = repair(&mut m, &HashSet::new());
        assert_eq!(r.dropped_orphans, ["gone"]);
        assert_eq!(r.unanswered, [("b".to_string(), "read".to_string())]);
        assert_eq!(m.len(), 2, "an emptied message is removed");
        assert!(!is_paired(&m));
        assert!(!r.is_clean());
        let only_orphans = Repair { dropped_orphans: vec!["gone".into()], unanswered: vec![] };
        assert!(!only_orphans.is_clean());
        let mut paired = vec![msg(Role::Assistant, vec![call("a")]), msg(Role::Tool, vec![result("a")])];
        assert!(repair(&mut paired, &HashSet::new()).is_clean(), "nothing to repair");
    }

    #[test]
    fn calls_answered_in_the_store_are_not_given_synthetic_results() {
        let mut m = vec![msg(Role::Assistant, vec![call("a")])];
        let answered: HashSet<String> = ["a".to_string()].into();
        assert!(repair(&mut m, &answered).unanswered.is_empty());
    }
}
