//! Finding credentials in text and putting a placeholder in their place: the rules (see
//! [`rules`]) and the replacement. A placeholder says which rule found what was there and
//! carries a keyed hash of it (`[secret:aws-access-token:3f9a0c12]`), so the same secret is
//! recognised across messages without being revealed; the key is the caller's (a store keeps its
//! own and never lets it out).

mod policy;
mod rules;

pub(crate) use policy::owned;
pub use policy::{Pattern, Policy, Scrub, Spec};

use std::borrow::Cow;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// What went wrong setting redaction up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A pattern of the user's does not compile.
    #[error("the redaction pattern `{id}` cannot be used: {message}")]
    Pattern {
        /// The pattern's id.
        id: String,
        /// What is wrong with it.
        message: String,
    },
    /// The built-in rules do not load (a broken build).
    #[error("the built-in redaction rules do not load: {0}")]
    Builtin(String),
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Pattern { .. } => "invalid_config",
            Error::Builtin(_) => "internal_error",
        }
    }
}

/// One credential found: which rule found it, and where it is (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id (`aws-access-token`, `url-password`, …).
    pub rule: String,
    /// Its first byte in the text.
    pub start: usize,
    /// The byte after its last.
    pub end: usize,
}

/// The rules, compiled, with the keywords that decide which of them run on a text.
#[derive(Debug)]
pub struct Redactor {
    rules: rules::Rules,
    /// Every rule's keywords, for one pass over the text (ignoring case).
    keywords: aho_corasick::AhoCorasick,
    /// The rules each keyword (by its index in `keywords`) lets run.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: they always run.
    always: Vec<usize>,
    /// Per rule: whether it reads the whole text (its matches may run over lines, or it has no
    /// keywords), else the lines around its keywords.
    whole: Vec<bool>,
}

/// The regions of `text` made of the line holding each of `places` with the line before and the
/// line after, joined where they touch (byte offsets, on line boundaries).
fn around(text: &str, places: &[usize]) -> Vec<(usize, usize)> {
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = |at: usize| text[at..].find('\n').map_or(text.len(), |i| at + i);
    let mut regions: Vec<(usize, usize)> = Vec::new();
    for &at in places {
        let start = line_start(at);
        let from = if start == 0 { 0 } else { line_start(start - 1) };
        let end = line_end(at);
        let to = if end >= text.len() { text.len() } else { line_end(end + 1) };
        match regions.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => regions.push((from, to)),
        }
    }
    regions
}

impl Redactor {
    /// The built-in rules (gitleaks' and Seshat's own), compiled once per process.
    pub fn builtin() -> Result<&'static Redactor, Error> {
        static BUILTIN: OnceLock<Result<Redactor, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| rules::Rules::builtin().and_then(|r| Redactor::from_rules(r).map_err(|e| e.to_string())))
            .as_ref()
            .map_err(|e| Error::Builtin(e.clone()))
    }

    /// The built-in rules and `patterns` of the user's (an id and a regular expression each).
    pub fn with_patterns(patterns: &[(String, String)]) -> Result<Redactor, Error> {
        let mut rules = rules::Rules::builtin().map_err(Error::Builtin)?;
        rules.extra(patterns).map_err(|(id, e)| Error::Pattern { id, message: e.to_string() })?;
        Redactor::from_rules(rules)
    }

    fn from_rules(rules: rules::Rules) -> Result<Redactor, Error> {
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (i, rule) in rules.rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                always.push(i);
            }
            for k in &rule.keywords {
                match words.iter().position(|w| w == k) {
                    Some(at) => keyword_rules[at].push(i),
                    None => {
                        words.push(k.clone());
                        keyword_rules.push(vec![i]);
                    }
                }
            }
        }
        let keywords = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&words)
            .map_err(|e| Error::Builtin(format!("the rules' keywords: {e}")))?;
        let whole = rules.rules.iter().map(|r| r.keywords.is_empty() || r.spans_lines()).collect();
        Ok(Redactor { rules, keywords, keyword_rules, always, whole })
    }

    /// The credentials in `text`, in order, overlapping ones joined (the first rule's id kept).
    ///
    /// A rule runs only when one of its keywords is in the text; one whose matches stay on a line
    /// runs on the lines around its keywords' places (the line before and after too), so a long
    /// text where a common word wakes a rule a few times is not read whole by it.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        let rules = &self.rules.rules;
        // Per rule: woken at all, and where its keywords are (for the rules that stay on a line).
        let mut woken = vec![false; rules.len()];
        let mut places: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
        for i in &self.always {
            woken[*i] = true;
        }
        for m in self.keywords.find_overlapping_iter(text) {
            for &i in &self.keyword_rules[m.pattern().as_usize()] {
                woken[i] = true;
                if !self.whole[i] {
                    places[i].push(m.start());
                }
            }
        }
        let mut found: Vec<Finding> = Vec::new();
        for (i, rule) in rules.iter().enumerate().filter(|(i, _)| woken[*i]) {
            let Some(regex) = rule.regex() else { continue };
            let regions = if self.whole[i] || places[i].is_empty() {
                vec![(0, text.len())]
            } else {
                places[i].sort_unstable();
                around(text, &places[i])
            };
            for (from, to) in regions {
                let part = &text[from..to];
                for caps in regex.captures_iter(part) {
                    if let Some((start, end)) = rule.secret(part, &caps, self.rules.global()) {
                        found.push(Finding { rule: rule.id.clone(), start: from + start, end: from + end });
                    }
                }
            }
        }
        // A placeholder is never a credential (a rule for passwords in URLs would take one).
        if text.contains("[secret:") {
            static PLACEHOLDER: OnceLock<regex::Regex> = OnceLock::new();
            let placeholder = PLACEHOLDER.get_or_init(|| {
                regex::Regex::new(r"\[secret:[a-z0-9-]+:[0-9a-f]{8}\]").expect("the placeholder's pattern")
            });
            let spans: Vec<(usize, usize)> = placeholder.find_iter(text).map(|m| (m.start(), m.end())).collect();
            found.retain(|f| !spans.iter().any(|&(start, end)| start <= f.start && f.end <= end));
        }
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut joined: Vec<Finding> = Vec::with_capacity(found.len());
        for f in found {
            match joined.last_mut() {
                Some(last) if f.start < last.end => last.end = last.end.max(f.end),
                _ => joined.push(f),
            }
        }
        joined
    }

    /// `text` with each credential replaced by its placeholder (keyed by `key`), and what was
    /// found; the text itself when nothing was.
    pub fn redact<'t>(&self, text: &'t str, key: &[u8]) -> (Cow<'t, str>, Vec<Finding>) {
        let found = self.find(text);
        (replace(text, &found, key), found)
    }
}

/// `text` with each of `found` replaced by its placeholder (keyed by `key`); the text itself when
/// nothing was found.
fn replace<'t>(text: &'t str, found: &[Finding], key: &[u8]) -> Cow<'t, str> {
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        out.push_str(&placeholder(&f.rule, &text[f.start..f.end], key));
        at = f.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The placeholder of `secret` found by `rule`: the rule and 8 hex digits of an HMAC-SHA256 of
/// the secret under `key` (the same secret, the same placeholder; nothing of it recoverable).
pub fn placeholder(rule: &str, secret: &str, key: &[u8]) -> String {
    let tag = hmac_sha256(key, secret.as_bytes());
    format!("[secret:{rule}:{:02x}{:02x}{:02x}{:02x}]", tag[0], tag[1], tag[2], tag[3])
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

#[cfg(test)]
mod tests;
