//! What a store redacts: the rules (built in, with the user's patterns), the allow-list, the
//! projects it is off for — and the rewriting of a message's parts with it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use regex::Regex;
use seshat_protocol::conversation::{NewMessage, Part};

use super::{Error, Finding, Redactor};

/// A pattern of the user's: credentials of a kind the built-in rules do not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The rule's id, shown in placeholders (`[secret:ID:…]`).
    pub id: String,
    /// The regular expression (Rust's `regex` syntax); its first group is the secret when it has
    /// one, else the whole match.
    pub regex: String,
}

/// What a [`Policy`] is made from (the `[redaction]` settings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spec {
    /// Redact at all (on unless turned off).
    pub enabled: bool,
    /// Patterns of the user's, beside the built-in rules.
    pub patterns: Vec<Pattern>,
    /// Regular expressions: a found credential one of them matches is left as it is.
    pub allow: Vec<String>,
    /// Project keys whose sessions, memory and documents are stored unredacted.
    pub off_projects: Vec<String>,
}

impl Spec {
    /// Redaction on, with the built-in rules only.
    pub fn on() -> Self {
        Spec { enabled: true, ..Spec::default() }
    }
}

#[derive(Debug)]
enum Rules {
    /// The built-in rules, compiled on first need.
    Builtin,
    /// The built-in rules with the user's patterns.
    Own(Redactor),
}

#[derive(Debug)]
struct Inner {
    rules: Rules,
    allow: Vec<Regex>,
    off_projects: Vec<String>,
}

/// What a store redacts; cheap to clone. The default redacts with the built-in rules everywhere.
#[derive(Debug, Clone)]
pub struct Policy {
    inner: Option<Arc<Inner>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { inner: Some(Arc::new(Inner { rules: Rules::Builtin, allow: Vec::new(), off_projects: Vec::new() })) }
    }
}

impl Policy {
    /// Nothing redacted.
    pub fn off() -> Self {
        Policy { inner: None }
    }

    /// The policy `spec` describes; an error names a pattern or allow-list entry that is not a
    /// regular expression.
    pub fn new(spec: &Spec) -> Result<Self, Error> {
        if !spec.enabled {
            return Ok(Policy::off());
        }
        // An id goes into placeholders, which must be told from any text (`[secret:ID:HASH]`).
        if let Some(p) = spec.patterns.iter().find(|p| {
            p.id.is_empty() || !p.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        }) {
            return Err(Error::Pattern {
                id: p.id.clone(),
                message: "its id must be lower-case letters, digits and `-` (it is written in placeholders)".into(),
            });
        }
        let rules = if spec.patterns.is_empty() {
            Rules::Builtin
        } else {
            let patterns: Vec<(String, String)> =
                spec.patterns.iter().map(|p| (p.id.clone(), p.regex.clone())).collect();
            Rules::Own(Redactor::with_patterns(&patterns)?)
        };
        let allow = spec
            .allow
            .iter()
            .map(|a| Regex::new(a).map_err(|e| Error::Pattern { id: format!("allow: {a}"), message: e.to_string() }))
            .collect::<Result<_, _>>()?;
        Ok(Policy { inner: Some(Arc::new(Inner { rules, allow, off_projects: spec.off_projects.clone() })) })
    }

    /// Whether anything is redacted at all.
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The rules for text of `project`, keyed by `key`; `None` when the policy is off or off for
    /// that project.
    pub fn for_project<'p>(&'p self, project: &str, key: &'p [u8]) -> Result<Option<Scrub<'p>>, Error> {
        let Some(inner) = &self.inner else { return Ok(None) };
        if inner.off_projects.iter().any(|p| p == project) {
            return Ok(None);
        }
        let redactor = match &inner.rules {
            Rules::Builtin => Redactor::builtin()?,
            Rules::Own(r) => r,
        };
        Ok(Some(Scrub { redactor, allow: &inner.allow, key, counts: None }))
    }
}

/// The rules in force for one write, with the store's key: rewrites texts and messages.
#[derive(Clone, Copy)]
pub struct Scrub<'p> {
    redactor: &'p Redactor,
    allow: &'p [Regex],
    key: &'p [u8],
    /// Where the credentials replaced are counted, by rule, when they are.
    counts: Option<&'p RefCell<BTreeMap<String, u64>>>,
}

impl std::fmt::Debug for Scrub<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Scrub").field("allow", &self.allow.len()).finish_non_exhaustive()
    }
}

impl<'p> Scrub<'p> {
    /// The same rules, counting each credential they replace in `counts` (by rule).
    pub fn counting<'c>(self, counts: &'c RefCell<BTreeMap<String, u64>>) -> Scrub<'c>
    where
        'p: 'c,
    {
        Scrub { counts: Some(counts), ..self }
    }

    /// The credentials in `text` that the allow-list does not let through.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        let mut found = self.redactor.find(text);
        if !self.allow.is_empty() {
            found.retain(|f| !self.allow.iter().any(|a| a.is_match(&text[f.start..f.end])));
        }
        found
    }

    /// `text` with each credential replaced by its placeholder.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let found = self.find(text);
        if let Some(counts) = self.counts {
            let mut counts = counts.borrow_mut();
            for f in &found {
                *counts.entry(f.rule.clone()).or_default() += 1;
            }
        }
        super::replace(text, &found, self.key)
    }

    /// A session's title: [`Scrub::text`], and a title cut short (ending in `…`) loses its last
    /// word when that is long enough to be the start of a credential the cut made unrecognisable.
    pub fn title<'t>(&self, title: &'t str) -> Cow<'t, str> {
        let text = self.text(title);
        let Some(body) = text.strip_suffix('…') else { return text };
        let last = body.rsplit(char::is_whitespace).next().unwrap_or(body);
        if last.chars().count() < 8 || last.ends_with(']') {
            return text;
        }
        Cow::Owned(format!("{}…", body[..body.len() - last.len()].trim_end()))
    }

    /// A tool call's arguments, kept JSON when they are: the text is redacted as a whole (a rule
    /// whose keyword is a key, `"api_key": "…"`, sees it beside its value), then each decoded
    /// string, where an escape could have hidden a credential from the first pass.
    pub fn json<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let whole = self.text(text);
        if !whole.contains('\\') && matches!(whole, Cow::Borrowed(_)) {
            return whole;
        }
        // (A replacement that left no JSON is kept all the same: no credential is stored.)
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&whole) else { return whole };
        if !self.value(&mut value) {
            return whole;
        }
        serde_json::to_string(&value).map_or(whole, Cow::Owned)
    }

    /// Redacts each string of `value`; whether any changed.
    fn value(&self, value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(s) => match self.text(s) {
                Cow::Owned(o) => {
                    *s = o;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            // Every string is visited (no stop at the first change).
            serde_json::Value::Array(items) => items.iter_mut().map(|v| self.value(v)).filter(|c| *c).count() > 0,
            serde_json::Value::Object(map) => map.values_mut().map(|v| self.value(v)).filter(|c| *c).count() > 0,
            _ => false,
        }
    }

    /// `parts` with their credentials replaced, or `None` when none held one. A thinking part
    /// that changes loses its provider signature (which covered the text as it was).
    pub fn parts(&self, parts: &[Part]) -> Option<Vec<Part>> {
        let mut out: Option<Vec<Part>> = None;
        for (i, part) in parts.iter().enumerate() {
            let changed =
                match part {
                    Part::Text { text } => owned(self.text(text)).map(|text| Part::Text { text }),
                    Part::ToolCall { id, name, arguments } => owned(self.json(arguments))
                        .map(|arguments| Part::ToolCall { id: id.clone(), name: name.clone(), arguments }),
                    Part::ToolResult { call_id, content, is_error } => owned(self.text(content))
                        .map(|content| Part::ToolResult { call_id: call_id.clone(), content, is_error: *is_error }),
                    Part::Thinking { text, .. } => {
                        owned(self.text(text)).map(|text| Part::Thinking { text, signature: None })
                    }
                    Part::RedactedThinking { .. } => None,
                };
            if let Some(p) = changed {
                out.get_or_insert_with(|| parts[..i].to_vec()).push(p);
            } else if let Some(o) = out.as_mut() {
                o.push(part.clone());
            }
        }
        out
    }

    /// `message` with its parts redacted (borrowed when nothing was found).
    pub fn message<'m>(&self, message: &'m NewMessage) -> Cow<'m, NewMessage> {
        match self.parts(&message.parts) {
            None => Cow::Borrowed(message),
            Some(parts) => {
                Cow::Owned(NewMessage { role: message.role, parts, usage: message.usage, status: message.status })
            }
        }
    }
}

/// The text when it was changed (owned), else `None`.
pub(crate) fn owned(text: Cow<'_, str>) -> Option<String> {
    match text {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    }
}
