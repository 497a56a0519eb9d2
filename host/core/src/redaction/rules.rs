//! The rules: gitleaks' default rule set (`gitleaks.toml`, v8.30.1, commit 83d9cd6, MIT licence in
//! `LICENSE-gitleaks`, <https://github.com/gitleaks/gitleaks>), read as gitleaks reads it, and
//! Seshat's own for what it has no rule for (a password in a URL, a `.env` line).
//!
//! A rule runs only when one of its keywords is in the text (ignoring case); each match's secret is
//! the group the rule names, else its first non-empty group, else the whole match; a secret the
//! allow-lists name (gitleaks' global one, the rule's own) or of too little entropy is not one.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

/// gitleaks' rules, as committed.
const GITLEAKS: &str = include_str!("gitleaks.toml");

/// The largest compiled form of one rule's regex (some of gitleaks' are large).
const REGEX_SIZE: usize = 64 << 20;

#[derive(Debug, Deserialize)]
struct File {
    allowlist: Option<Allowlist>,
    #[serde(default)]
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Allowlist {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    /// Paths and commits say nothing of a text without a file: an allow-list made only of them is
    /// left out.
    #[serde(default)]
    paths: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleSpec {
    id: String,
    regex: Option<String>,
    #[serde(default)]
    secret_group: usize,
    #[serde(default)]
    entropy: f64,
    #[serde(default)]
    keywords: Vec<String>,
    /// A rule that looks at file paths only (or whose regex needs a file type): never run on text.
    path: Option<String>,
    /// Seshat's own: the rule's matches stay on one line whatever its pattern's anchors say.
    #[serde(default)]
    one_line: bool,
    #[serde(default)]
    allowlists: Vec<Allowlist>,
}

/// What an allow-list's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// An allow-list, compiled.
#[derive(Debug)]
pub(super) struct Allow {
    all: bool,
    target: Target,
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
}

/// One rule, compiled.
#[derive(Debug)]
pub(super) struct Rule {
    /// Its id (`aws-access-token`): what a placeholder and a refusal name.
    pub(super) id: String,
    /// Its pattern (Rust's syntax), compiled the first time a text holds one of its keywords:
    /// most texts need a few rules of the hundreds, and compiling them all costs seconds.
    pattern: String,
    regex: std::sync::OnceLock<Option<Regex>>,
    secret_group: usize,
    entropy: f64,
    /// Lower-case; empty: the rule always runs.
    pub(super) keywords: Vec<String>,
    /// Its matches stay on one line (see [`Rule::spans_lines`]).
    one_line: bool,
    allows: Vec<Allow>,
}

/// Every rule and the allow-list that covers them all.
#[derive(Debug)]
pub(super) struct Rules {
    pub(super) rules: Vec<Rule>,
    global: Allow,
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    build(&from_go(pattern))
}

/// A pattern in Rust's syntax, compiled.
fn build(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(REGEX_SIZE).dfa_size_limit(REGEX_SIZE).build()
}

/// A Go (RE2) pattern as Rust's `regex` reads it: RE2 takes a `{` that starts no repetition
/// (`{\d+}`, `{{`) as a literal brace, where `regex` refuses it; such a brace is escaped.
fn from_go(pattern: &str) -> String {
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 8);
    let (mut class, mut i) = (false, 0);
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\\' => {
                // An escape and what it escapes, as they are (never the middle of a UTF-8 char).
                let next = pattern[i + 1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&pattern[i..i + 1 + next]);
                i += 1 + next;
                continue;
            }
            b'[' if !class => class = true,
            b']' if class => class = false,
            b'{' if !class && !repetition(&pattern[i..]) => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = pattern[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&pattern[i..i + len]);
        i += len;
    }
    out
}

/// Whether `rest` (starting at a `{`) is a counted repetition: `{n}`, `{n,}` or `{n,m}`.
fn repetition(rest: &str) -> bool {
    let Some(end) = rest.find('}') else { return false };
    let inner = &rest[1..end];
    let (low, high) = inner.split_once(',').unwrap_or((inner, "0"));
    !low.is_empty() && low.bytes().all(|b| b.is_ascii_digit()) && high.bytes().all(|b| b.is_ascii_digit())
}

impl Allow {
    fn compile(spec: Allowlist) -> Result<Option<Allow>, regex::Error> {
        if spec.regexes.is_empty() && spec.stopwords.is_empty() {
            return Ok(None);
        }
        // An AND of a path and a regex can never hold for text without a path.
        let all = spec.condition.as_deref().is_some_and(|c| c.eq_ignore_ascii_case("and"));
        if all && !spec.paths.is_empty() {
            return Ok(None);
        }
        let target = match spec.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        };
        Ok(Some(Allow {
            all,
            target,
            regexes: spec.regexes.iter().map(|r| compile(r)).collect::<Result<_, _>>()?,
            stopwords: spec.stopwords.into_iter().map(|w| w.to_lowercase()).collect(),
        }))
    }

    /// Whether this allow-list lets `secret` (found as `matched`, on `line`) through.
    fn allows(&self, secret: &str, matched: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let lower = secret.to_lowercase();
        let by_regex = (!self.regexes.is_empty()).then(|| self.regexes.iter().any(|r| r.is_match(target)));
        let by_word = (!self.stopwords.is_empty()).then(|| self.stopwords.iter().any(|w| lower.contains(w.as_str())));
        let checks: Vec<bool> = [by_regex, by_word].into_iter().flatten().collect();
        if self.all { !checks.is_empty() && checks.iter().all(|c| *c) } else { checks.iter().any(|c| *c) }
    }
}

/// Shannon entropy of `text`, in bits per character (as gitleaks counts it, by byte).
pub(super) fn entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[b as usize] += 1;
    }
    let n = text.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

impl Rule {
    /// The compiled regex (`None`, and said once, when it does not compile: a test compiles every
    /// built-in one).
    /// Whether a match may run over several lines (`(?s)`, `\n`, `[\s\S]`, line anchors): such a
    /// rule reads the whole text, the others the lines around their keywords.
    pub(super) fn spans_lines(&self) -> bool {
        !self.one_line && ["(?s", "\\s\\S", "\\n", "(?m", "\\r"].iter().any(|p| self.pattern.contains(p))
    }

    pub(super) fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| match build(&self.pattern) {
                Ok(regex) => Some(regex),
                Err(e) => {
                    tracing::warn!(rule = %self.id, "a redaction rule does not compile and is left out: {e}");
                    None
                }
            })
            .as_ref()
    }

    /// The secret of one match of this rule in `text` (the match's bounds), or `None` when the
    /// allow-lists or the entropy say it is not one: (start, end) of the secret in `text`.
    pub(super) fn secret(&self, text: &str, caps: &regex::Captures<'_>, global: &Allow) -> Option<(usize, usize)> {
        let whole = caps.get(0)?;
        let group = if self.secret_group > 0 {
            caps.get(self.secret_group)
        } else {
            (1..caps.len()).filter_map(|i| caps.get(i)).find(|m| !m.as_str().is_empty())
        };
        let found = group.unwrap_or(whole);
        let secret = found.as_str();
        if secret.is_empty() {
            return None;
        }
        let line_start = text[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[whole.end()..].find('\n').map_or(text.len(), |i| whole.end() + i);
        let line = &text[line_start..line_end];
        if global.allows(secret, whole.as_str(), line)
            || self.allows.iter().any(|a| a.allows(secret, whole.as_str(), line))
        {
            return None;
        }
        if self.entropy > 0.0 && entropy(secret) < self.entropy {
            return None;
        }
        // As gitleaks: a generic rule's secret holds a digit.
        if self.id.starts_with("generic") && !secret.bytes().any(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((found.start(), found.end()))
    }
}

/// Seshat's own rules, in gitleaks' form.
const OWN: &str = r#"
[[rules]]
id = "url-password"
regex = '''(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'"]{1,256}:([^\s/@'"]{1,256})@[^\s/@'"]'''
keywords = ["://"]
[[rules.allowlists]]
regexes = ['''^(?:\*+|x+|\.+|<[^>]*>|\$\{?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%|password|pass|secret|changeme)$''']

# A `NAME=value` line whose value looks made by a machine: long, of high entropy, mixing upper
# and lower case and digits (hashes, UUIDs, versions and names do not). A line may also end at an
# escaped `\n`: a file's text inside a JSON string (a tool's result) keeps its lines that way.
[[rules]]
id = "dotenv-value"
oneLine = true
regex = '''(?m)(?:^|\\n)[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]{1,63}[ \t]*=[ \t]*['"]?([A-Za-z0-9+/=_.~-]{16,512})['"]?[ \t]*(?:\\r)?(?:\\n|\r?$)'''
entropy = 3.5
keywords = ["="]
[[rules.allowlists]]
regexes = [
    '''^[0-9a-f]{40}$''',
    '''^[0-9a-f]{64}$''',
    '''^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$''',
    '''^[^0-9]+$''',
    '''^[^A-Z]+$''',
    '''^[^a-z]+$''',
]
"#;

impl Rules {
    /// gitleaks' rules and Seshat's own, compiled.
    pub(super) fn builtin() -> Result<Rules, String> {
        let gitleaks: File = toml::from_str(GITLEAKS).map_err(|e| format!("gitleaks.toml: {e}"))?;
        let own: File = toml::from_str(OWN).map_err(|e| format!("Seshat's rules: {e}"))?;
        let global = gitleaks
            .allowlist
            .map(Allow::compile)
            .transpose()
            .map_err(|e| format!("gitleaks' allow-list: {e}"))?
            .flatten()
            .unwrap_or(Allow { all: false, target: Target::Secret, regexes: Vec::new(), stopwords: Vec::new() });
        let mut rules = Vec::new();
        for spec in gitleaks.rules.into_iter().chain(own.rules) {
            if let Some(rule) = Rule::compile(spec).map_err(|e| format!("a rule's regex: {e}"))? {
                rules.push(rule);
            }
        }
        Ok(Rules { rules, global })
    }

    /// Rules of the user's (`[redaction] patterns`: an id and a regex each), compiled.
    pub(super) fn extra(&mut self, patterns: &[(String, String)]) -> Result<(), (String, regex::Error)> {
        for (id, pattern) in patterns {
            let regex = compile(pattern).map_err(|e| (id.clone(), e))?;
            self.rules.push(Rule {
                id: id.clone(),
                pattern: pattern.clone(),
                regex: std::sync::OnceLock::from(Some(regex)),
                secret_group: 0,
                entropy: 0.0,
                keywords: Vec::new(),
                one_line: false,
                allows: Vec::new(),
            });
        }
        Ok(())
    }

    /// The allow-list every rule is checked against.
    pub(super) fn global(&self) -> &Allow {
        &self.global
    }
}

impl Rule {
    fn compile(spec: RuleSpec) -> Result<Option<Rule>, regex::Error> {
        let Some(pattern) = spec.regex.filter(|_| spec.path.is_none()) else { return Ok(None) };
        Ok(Some(Rule {
            id: spec.id,
            pattern: from_go(&pattern),
            regex: std::sync::OnceLock::new(),
            secret_group: spec.secret_group,
            entropy: spec.entropy,
            keywords: spec.keywords.into_iter().map(|k| k.to_lowercase()).collect(),
            one_line: spec.one_line,
            allows: spec
                .allowlists
                .into_iter()
                .map(Allow::compile)
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect(),
        }))
    }
}
