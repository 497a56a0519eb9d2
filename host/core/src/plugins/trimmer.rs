//! Trimmer plugins: metadata in, edits out. The host validates every edit and applies them.

use serde::Serialize;

use super::bindings::v0_1::trimmer::seshat::plugin::{trim_host, trim_types};
use super::bindings::{Versioned, v0_1, v0_2, v0_3, v0_4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::sandbox::State;
use super::{PluginKind, Result};
use crate::conversation::Role;

/// What a trimmer sees of one part: no content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrimPart {
    /// The part's kind, as in [`crate::conversation::Part::kind`].
    pub kind: &'static str,
    /// Content size in bytes (after earlier trims).
    pub bytes: u64,
    /// Estimated tokens.
    pub tokens: u64,
}

/// What a trimmer sees of one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimMessage {
    /// The message's seq.
    pub id: u64,
    /// Who wrote it.
    pub role: Role,
    /// Its parts.
    pub parts: Vec<TrimPart>,
    /// Estimated tokens of the whole message.
    pub tokens: u64,
    /// Whether it must not be trimmed.
    pub protected: bool,
}

/// Where the request stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimBudget {
    /// Estimated tokens now.
    pub current_tokens: u64,
    /// Aim for this.
    pub target_tokens: u64,
    /// Compaction starts above this.
    pub threshold_tokens: u64,
    /// The usable window.
    pub window_tokens: u64,
    /// Options from the user's config, a JSON object.
    pub extra: String,
}

/// An edit a trimmer proposed and the host validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TrimEdit {
    /// Keep `head` and `tail` bytes with a placeholder between.
    HeadTail {
        /// The message's seq.
        message: u64,
        /// The part index.
        part: u32,
        /// Bytes kept from the start.
        head: u64,
        /// Bytes kept from the end.
        tail: u64,
    },
    /// Replace the content.
    Replace {
        /// The message's seq.
        message: u64,
        /// The part index.
        part: u32,
        /// The new content.
        text: String,
    },
    /// Keep whole lines (0.2.0): `(start, end)` line ranges, 0-based, end exclusive, sorted and
    /// disjoint; a placeholder stands for each run of lines cut.
    KeepLines {
        /// The message's seq.
        message: u64,
        /// The part index.
        part: u32,
        /// The line ranges kept.
        lines: Vec<(u32, u32)>,
    },
}

impl TrimEdit {
    /// The message and part the edit applies to.
    pub fn target(&self) -> (u64, u32) {
        match self {
            TrimEdit::HeadTail { message, part, .. }
            | TrimEdit::Replace { message, part, .. }
            | TrimEdit::KeepLines { message, part, .. } => (*message, *part),
        }
    }

    /// The content after the edit. Head and tail are snapped inward to character boundaries and
    /// joined by a placeholder that names the original size, and with `recall` (the history
    /// tools are offered) how to read the original back, when that fits in what was cut.
    pub fn apply(&self, content: &str, recall: bool) -> String {
        match self {
            TrimEdit::Replace { text, .. } => text.clone(),
            TrimEdit::HeadTail { head, tail, .. } => {
                let len = content.len();
                let (h, t) = crate::outcomes::head_tail_cut(content, *head, *tail);
                let (message, removed) = (self.target().0, t - h);
                let with_recall = recall_placeholder(len, removed, message);
                let placeholder =
                    if recall && with_recall.len() < removed { with_recall } else { placeholder(len, removed) };
                format!("{}{placeholder}{}", &content[..h], &content[t..])
            }
            TrimEdit::KeepLines { message, lines, .. } => keep_lines(content, lines, *message, recall),
        }
    }

    /// [`TrimEdit::apply`], checked against the content it applies to: a keep-lines edit's ranges
    /// must lie within the content's lines and its result be shorter than the content. The error
    /// names the rule broken.
    pub fn checked_apply(&self, content: &str, recall: bool) -> std::result::Result<String, String> {
        let TrimEdit::KeepLines { message, part, lines } = self else { return Ok(self.apply(content, recall)) };
        let count = crate::outcomes::line_ranges(content).len();
        if let Some(&(_, end)) = lines.last()
            && end as usize > count
        {
            return Err(format!(
                "a keep-lines edit of message {message} part {part} keeps lines up to {end}, but the content has {count} lines"
            ));
        }
        let after = self.apply(content, recall);
        if after.len() >= content.len() {
            return Err(format!(
                "a keep-lines edit of message {message} part {part} does not shorten it: the lines kept and the \
                 placeholders take {} bytes of {} (keep fewer lines)",
                after.len(),
                content.len()
            ));
        }
        Ok(after)
    }
}

/// `content` with only the `lines` ranges kept and a placeholder for each run cut: the first
/// names the original size (and with `recall` how to read it back), the others how many lines
/// went. Ranges past the end are clipped (the caller checked them).
fn keep_lines(content: &str, lines: &[(u32, u32)], message: u64, recall: bool) -> String {
    // Each line's bytes with its `\n`.
    let spans: Vec<std::ops::Range<usize>> =
        crate::outcomes::line_ranges(content).into_iter().map(|r| r.start..(r.end + 1).min(content.len())).collect();
    let n = spans.len();
    let mut out = String::with_capacity(content.len() / 2);
    let mut next = 0usize;
    let mut first_gap = true;
    let mut gap = |out: &mut String, from: usize, to: usize| {
        if from >= to {
            return;
        }
        let bytes = spans[to - 1].end - spans[from].start;
        let count = to - from;
        let what = if count == 1 { "1 line".to_string() } else { format!("{count} lines") };
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if first_gap {
            first_gap = false;
            if recall {
                out.push_str(&format!(
                    "[… {what} ({bytes} bytes) of {} bytes trimmed by Seshat; history_read {{\"seq\": {message}}} has them all …]\n",
                    content.len()
                ));
            } else {
                out.push_str(&format!("[… {what} ({bytes} bytes) of {} bytes trimmed by Seshat …]\n", content.len()));
            }
        } else {
            out.push_str(&format!("[… {what} trimmed …]\n"));
        }
    };
    for &(start, end) in lines {
        let (start, end) = ((start as usize).min(n), (end as usize).min(n));
        gap(&mut out, next, start);
        if start < end {
            out.push_str(&content[spans[start].start..spans[end - 1].end]);
        }
        next = end.max(next);
    }
    gap(&mut out, next, n);
    out
}

/// The longest [`placeholder`] can be, in bytes: a head-tail edit must leave room for it.
pub(crate) const PLACEHOLDER_MAX_BYTES: u64 = 96;

/// The stable text standing for what a head-tail trim removed.
pub fn placeholder(original: usize, removed: usize) -> String {
    format!("\n[… {removed} of {original} bytes trimmed by Seshat …]\n")
}

/// [`placeholder`] naming the tool that reads the original back (used when the history tools are
/// offered and it fits in what was cut).
pub(crate) fn recall_placeholder(original: usize, removed: usize, message: u64) -> String {
    format!("\n[… {removed} of {original} bytes trimmed by Seshat; history_read {{\"seq\": {message}}} has them …]\n")
}

/// Serves a trimmer's `read-part` requests: (message seq, part index) → current content.
type PartReader = Box<dyn FnMut(u64, u32) -> Option<String> + Send>;

/// Host context of a trimmer call: where `read-part` gets content from.
#[derive(Default)]
pub(crate) struct TrimHost {
    reader: Option<PartReader>,
}

impl trim_host::Host for State<TrimHost> {
    fn read_part(&mut self, message: u64, part: u32) -> Option<String> {
        self.host_time(|h| h.reader.as_mut().and_then(|read| read(message, part)))
    }
}

impl v0_2::trimmer::seshat::plugin::trim_host::Host for State<TrimHost> {
    fn read_part(&mut self, message: u64, part: u32) -> Option<String> {
        trim_host::Host::read_part(self, message, part)
    }
}

impl v0_3::trimmer::seshat::plugin::trim_host::Host for State<TrimHost> {
    fn read_part(&mut self, message: u64, part: u32) -> Option<String> {
        trim_host::Host::read_part(self, message, part)
    }
}

impl v0_4::trimmer::seshat::plugin::trim_host::Host for State<TrimHost> {
    fn read_part(&mut self, message: u64, part: u32) -> Option<String> {
        trim_host::Host::read_part(self, message, part)
    }
}

impl trim_types::Host for State<TrimHost> {}

impl v0_2::trimmer::seshat::plugin::trim_types::Host for State<TrimHost> {}

versioned_kind! {
    /// Trimmers: metadata in, edits out; the host serves their `read-part`.
    Trimmer: PluginKind::Trimmer, host TrimHost,
    v0_1 (v0_1::trimmer::Trimmer, v0_1::trimmer::TrimmerPre<State<TrimHost>>),
    v0_2 (v0_2::trimmer::Trimmer, v0_2::trimmer::TrimmerPre<State<TrimHost>>),
    v0_3 (v0_3::trimmer::Trimmer, v0_3::trimmer::TrimmerPre<State<TrimHost>>),
    v0_4 (v0_4::trimmer::Trimmer, v0_4::trimmer::TrimmerPre<State<TrimHost>>)
}

/// A loaded trimmer, ready to call.
pub struct TrimmerPlugin {
    handle: Handle<Trimmer>,
}

shared_accessors!(TrimmerPlugin);

impl TrimmerPlugin {
    /// Asks the trimmer for edits; `read_part` serves its requests for content. The answer is
    /// validated against `messages`: any invalid edit rejects the whole answer.
    pub fn trim(
        &mut self,
        messages: &[TrimMessage],
        budget: &TrimBudget,
        read_part: impl FnMut(u64, u32) -> Option<String> + Send + 'static,
    ) -> Result<Vec<TrimEdit>> {
        let history = to_meta(messages);
        let wit_budget = trim_types::Budget {
            current_tokens: budget.current_tokens,
            target_tokens: budget.target_tokens,
            threshold_tokens: budget.threshold_tokens,
            window_tokens: budget.window_tokens,
            extra: budget.extra.clone(),
        };
        let edits = self.handle.call(|store, bindings| {
            store.data_mut().host_mut().reader = Some(Box::new(read_part));
            let result = match bindings {
                Versioned::V0_1(b) => b
                    .seshat_plugin_trim()
                    .call_trim(&mut *store, &history, &wit_budget)
                    .map(|r| r.map(|edits| edits.into_iter().map(from_wit).collect::<Vec<_>>())),
                Versioned::V0_2(b) => b
                    .seshat_plugin_trim()
                    .call_trim(&mut *store, &to_v0_2(history), &budget_v0_2(&wit_budget))
                    .map(|r| r.map(|edits| edits.into_iter().map(from_wit_v0_2).collect::<Vec<_>>())),
                // 0.3.0's and 0.4.0's trim types are 0.2.0's.
                Versioned::V0_3(b) => b
                    .seshat_plugin_trim()
                    .call_trim(&mut *store, &to_v0_2(history), &budget_v0_2(&wit_budget))
                    .map(|r| r.map(|edits| edits.into_iter().map(from_wit_v0_2).collect::<Vec<_>>())),
                Versioned::V0_4(b) => b
                    .seshat_plugin_trim()
                    .call_trim(&mut *store, &to_v0_2(history), &budget_v0_2(&wit_budget))
                    .map(|r| r.map(|edits| edits.into_iter().map(from_wit_v0_2).collect::<Vec<_>>())),
            };
            store.data_mut().host_mut().reader = None;
            result
        })?;
        validate(&edits, messages).map_err(|message| self.handle.invalid(message))?;
        Ok(edits)
    }
}

/// The metadata as columns (see the `history` record in the WIT).
fn to_meta(messages: &[TrimMessage]) -> trim_types::History {
    let parts = messages.iter().map(|m| m.parts.len()).sum();
    let mut h = trim_types::History {
        message_ids: Vec::with_capacity(messages.len()),
        message_roles: Vec::with_capacity(messages.len()),
        message_tokens: Vec::with_capacity(messages.len()),
        message_protected: Vec::with_capacity(messages.len()),
        part_messages: Vec::with_capacity(parts),
        part_indexes: Vec::with_capacity(parts),
        part_kinds: Vec::with_capacity(parts),
        part_bytes: Vec::with_capacity(parts),
        part_tokens: Vec::with_capacity(parts),
    };
    for m in messages {
        h.message_ids.push(m.id);
        h.message_roles.push(match m.role {
            Role::System => 0,
            Role::User => 1,
            Role::Assistant => 2,
            Role::Tool => 3,
        });
        h.message_tokens.push(m.tokens);
        h.message_protected.push(u8::from(m.protected));
        for (i, p) in m.parts.iter().enumerate() {
            h.part_messages.push(m.id);
            h.part_indexes.push(i as u32);
            h.part_kinds.push(match p.kind {
                "tool_call" => 1,
                "tool_result" => 2,
                "thinking" => 3,
                "redacted_thinking" => 4,
                _ => 0,
            });
            h.part_bytes.push(p.bytes);
            h.part_tokens.push(p.tokens);
        }
    }
    h
}

/// The same metadata in 0.2.0's types (identical fields, moved over; 0.2.0's trim types are its
/// own).
fn to_v0_2(h: trim_types::History) -> v0_2::trimmer::seshat::plugin::trim_types::History {
    v0_2::trimmer::seshat::plugin::trim_types::History {
        message_ids: h.message_ids,
        message_roles: h.message_roles,
        message_tokens: h.message_tokens,
        message_protected: h.message_protected,
        part_messages: h.part_messages,
        part_indexes: h.part_indexes,
        part_kinds: h.part_kinds,
        part_bytes: h.part_bytes,
        part_tokens: h.part_tokens,
    }
}

fn budget_v0_2(b: &trim_types::Budget) -> v0_2::trimmer::seshat::plugin::trim_types::Budget {
    v0_2::trimmer::seshat::plugin::trim_types::Budget {
        current_tokens: b.current_tokens,
        target_tokens: b.target_tokens,
        threshold_tokens: b.threshold_tokens,
        window_tokens: b.window_tokens,
        extra: b.extra.clone(),
    }
}

fn from_wit_v0_2(e: v0_2::trimmer::seshat::plugin::trim_types::Edit) -> TrimEdit {
    use v0_2::trimmer::seshat::plugin::trim_types::Edit;
    match e {
        Edit::HeadTail(h) => TrimEdit::HeadTail { message: h.message, part: h.part, head: h.head, tail: h.tail },
        Edit::Replace(r) => TrimEdit::Replace { message: r.message, part: r.part, text: r.text },
        Edit::KeepLines(k) => TrimEdit::KeepLines {
            message: k.message,
            part: k.part,
            lines: k.lines.into_iter().map(|r| (r.start, r.end)).collect(),
        },
    }
}

fn from_wit(e: trim_types::Edit) -> TrimEdit {
    match e {
        trim_types::Edit::HeadTail(h) => {
            TrimEdit::HeadTail { message: h.message, part: h.part, head: h.head, tail: h.tail }
        }
        trim_types::Edit::Replace(r) => TrimEdit::Replace { message: r.message, part: r.part, text: r.text },
    }
}

/// Checks every edit: an existing, unprotected message; an existing tool-result part; strictly
/// shorter content; at most one edit per part.
pub fn validate(edits: &[TrimEdit], messages: &[TrimMessage]) -> std::result::Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(edits.len());
    let by_id: std::collections::HashMap<u64, &TrimMessage> = messages.iter().map(|m| (m.id, m)).collect();
    for (i, edit) in edits.iter().enumerate() {
        let (message, part) = edit.target();
        let msg =
            by_id.get(&message).ok_or_else(|| {
            format!("edit {i} names message {message}, which it was not given: edits may name only the messages of the history")
        })?;
        if msg.protected {
            return Err(format!(
                "edit {i} trims message {message}, which is protected: the latest two user turns and pinned messages \
                 may not be trimmed"
            ));
        }
        let p = msg.parts.get(part as usize).ok_or_else(|| {
            format!("edit {i} names part {part} of message {message}, which has {} parts", msg.parts.len())
        })?;
        if p.kind != "tool_result" {
            return Err(format!("edit {i} trims a {} part; only tool results may be trimmed", p.kind));
        }
        let shorter = match edit {
            TrimEdit::HeadTail { head, tail, .. } => {
                head.saturating_add(*tail).saturating_add(PLACEHOLDER_MAX_BYTES) < p.bytes
            }
            TrimEdit::Replace { text, .. } => (text.len() as u64) < p.bytes,
            TrimEdit::KeepLines { lines, .. } => {
                let mut end = 0;
                for (k, &(s, e)) in lines.iter().enumerate() {
                    if s >= e || (k > 0 && s < end) {
                        return Err(format!(
                            "edit {i} (keep-lines) of message {message} part {part}: range {k} is {s}..{e}; ranges \
                             must be non-empty, sorted and disjoint"
                        ));
                    }
                    end = e;
                }
                !lines.is_empty()
            }
        };
        if !shorter {
            let rule = match edit {
                TrimEdit::HeadTail { head, tail, .. } => format!(
                    "a head-tail edit must keep fewer bytes than the part has, counting the placeholder: head {head} + \
                     tail {tail} + up to {PLACEHOLDER_MAX_BYTES} for the placeholder is not below {}",
                    p.bytes
                ),
                TrimEdit::Replace { text, .. } => {
                    format!(
                        "a replacement must be shorter than the part: {} bytes is not below {}",
                        text.len(),
                        p.bytes
                    )
                }
                TrimEdit::KeepLines { .. } => "a keep-lines edit must keep at least one line range".to_string(),
            };
            return Err(format!("edit {i} does not shorten message {message} part {part} ({} bytes): {rule}", p.bytes));
        }
        if !seen.insert((message, part)) {
            return Err(format!("edit {i} edits message {message} part {part} a second time: one edit per part"));
        }
    }
    Ok(())
}
