//! Kinds of content and how densely real tokenizers count them: the estimate's prior.
//!
//! Four characters a token holds for English prose on every tokenizer Seshat meets, and fails on
//! what coding agents produce: logs, identifiers and numbers, code and JSON cost up to twice as
//! many tokens. The estimate classifies each line and weighs its characters by its kind's
//! density — real tokens per four characters — so an uncalibrated estimate undercounts rarely
//! and by little.
//!
//! The densities are measured, not guessed: `cargo bench -p seshat-cli --bench tokens` counts
//! the repository's prose, code and JSON and generated logs and identifiers with the BPE ranks
//! `tiktoken-rs` ships (BENCHMARKS.md, "Token estimate against real tokenizers", 2026-12-04), and
//! each prior is set so the densest of `o200k_base`, `cl100k_base` and `r50k_base` (GPT-2's, the
//! densest that runs here, close to small local models' 49k-entry vocabularies) counts at most a
//! few percent more than the estimate. GPT-2's ranks spend a token on every space of a line's
//! indentation: that is what made code 1.71× and pretty-printed JSON 2.30× of four characters a
//! token, so indentation is its own kind (a token a character), and the rest of a line is weighed
//! by its kind — code 1.4, logs 1.9, JSON 1.1 (compact JSON counts 0.95–0.98×), identifiers and
//! numbers 2.0. Prose stays at 1.0 (1.02× on OpenAI's tokenizers, 1.05× on llama-cpp-python's
//! SmolLM2 per the machine notes, 1.13× on GPT-2's): the estimate's long-standing meaning for
//! text, which the calibration from real counts corrects where a model counts more. OpenAI's
//! tokenizers (and llama 3's, built like them) count code and JSON at about the four-characters
//! rate, so there the prior runs high: safe — compaction comes earlier than it must — and a
//! calibration never lowers it, since one scale for every kind learnt on code would undercount
//! prose. Counting with the model's own tokenizer, where that can be done, is what removes it.

/// What a line of text is, as far as tokenizers are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ContentKind {
    /// Words and sentences.
    Prose,
    /// Source code.
    Code,
    /// Logs and tool output: timestamps, levels, counters, durations.
    Logs,
    /// JSON.
    Json,
    /// Hashes, ids, versions, paths and figures.
    Identifiers,
    /// A line's leading whitespace (indented code, pretty-printed JSON): GPT-2-style tokenizers
    /// spend a token on each space, others one on a run.
    Indentation,
}

impl ContentKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ContentKind; 6] = [
        ContentKind::Prose,
        ContentKind::Code,
        ContentKind::Logs,
        ContentKind::Json,
        ContentKind::Identifiers,
        ContentKind::Indentation,
    ];

    /// The prior: real tokens per four characters, in hundredths (see the module's note).
    pub const fn prior_hundredths(self) -> u64 {
        match self {
            ContentKind::Prose => 100,
            ContentKind::Code => 140,
            ContentKind::Logs => 190,
            ContentKind::Json => 110,
            ContentKind::Identifiers => 200,
            ContentKind::Indentation => 400,
        }
    }

    /// Its name, as reports and benchmarks print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ContentKind::Prose => "prose",
            ContentKind::Code => "code",
            ContentKind::Logs => "logs",
            ContentKind::Json => "json",
            ContentKind::Identifiers => "identifiers",
            ContentKind::Indentation => "indentation",
        }
    }

    /// The kind of one line (without its line break).
    pub fn of_line(line: &str) -> ContentKind {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return ContentKind::Prose;
        }
        // A code fence is a few tokens of markup.
        if let Some(rest) = trimmed.strip_prefix("```") {
            return if rest.chars().all(char::is_alphanumeric) { ContentKind::Prose } else { ContentKind::Code };
        }
        // A heading, a comment, a list item or a quote is read by what follows its marker.
        let marked = ["#", "//", "- ", "* ", "> "].iter().find_map(|m| {
            let rest = trimmed.strip_prefix(m)?.trim_start_matches(['#', '/', '!']);
            rest.starts_with(' ').then(|| rest.trim_start())
        });
        if let Some(rest) = marked {
            return if rest.is_empty() { ContentKind::Prose } else { ContentKind::of_line(rest) };
        }
        let (mut letters, mut digits, mut symbols, mut spaces, mut quotes, mut total) = (0, 0, 0, 0, 0, 0usize);
        for c in trimmed.chars() {
            total += 1;
            match c {
                c if c.is_alphabetic() => letters += 1,
                c if c.is_ascii_digit() => digits += 1,
                ' ' | '\t' => spaces += 1,
                '"' => quotes += 1,
                '{' | '}' | '[' | ']' | '(' | ')' | ';' | '=' | '<' | '>' | '&' | '|' | '*' | '/' | '\\' | '#'
                | '$' | '_' | ':' | '-' | '+' | '%' | '@' | '!' | '^' | '~' | '`' => symbols += 1,
                _ => {}
            }
        }
        let first = trimmed.as_bytes()[0];
        // JSON: a structural opening with quoted keys.
        if matches!(first, b'{' | b'[' | b'"') && quotes * 10 >= total && trimmed.contains("\":") {
            return ContentKind::Json;
        }
        // Identifiers and numbers: figures dominate (hashes, ids, sizes, versions).
        if digits * 100 >= total * 30 {
            return if spaces * 100 >= total * 8 && letters * 100 >= total * 25 && is_log_line(trimmed) {
                ContentKind::Logs
            } else {
                ContentKind::Identifiers
            };
        }
        if is_log_line(trimmed) {
            return ContentKind::Logs;
        }
        // Code: operators and brackets. (A line's indentation is its own kind, weighed apart.)
        if symbols * 100 >= total * 12 {
            return ContentKind::Code;
        }
        // Digits among words (figures in a tool's report).
        if digits * 100 >= total * 12 {
            return ContentKind::Logs;
        }
        ContentKind::Prose
    }
}

/// A line that reads like a log: a timestamp, a level or a test-runner's marker up front.
fn is_log_line(trimmed: &str) -> bool {
    let b = trimmed.as_bytes();
    let timestamp = b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-';
    let bracketed = b.first() == Some(&b'[') && b.get(1).is_some_and(u8::is_ascii_digit);
    const LEVELS: [&str; 8] = ["INFO", "WARN", "ERROR", "DEBUG", "TRACE", "test ", "Compiling ", "Finished "];
    timestamp || bracketed || LEVELS.iter().any(|l| trimmed.starts_with(l))
}

/// Characters of `text` by kind, each line's break counted with it and its leading whitespace
/// as [`ContentKind::Indentation`].
pub fn characters_by_kind(text: &str) -> [u64; 6] {
    let mut by = [0u64; 6];
    let at = |kind: ContentKind| ContentKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
    for line in text.split_inclusive('\n') {
        let body = line.trim_start_matches([' ', '\t']);
        let indent = (line.len() - body.len()) as u64;
        by[at(ContentKind::Indentation)] += indent;
        let kind = ContentKind::of_line(body.trim_end_matches(['\n', '\r']));
        by[at(kind)] += body.chars().count() as u64;
    }
    by
}

/// The estimate of `text`: each line's characters over four, times its kind's prior (never zero
/// for non-empty text). Prose alone is `ceil(characters / 4)`, as it always was.
pub fn estimate(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    let weighted: u64 = characters_by_kind(text)
        .iter()
        .zip(ContentKind::ALL)
        .map(|(chars, kind)| chars * kind.prior_hundredths())
        .sum();
    weighted.div_ceil(400).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_told_apart() {
        let cases = [
            ("The build step writes the cache key to disk before the tests run.", ContentKind::Prose),
            ("## Install the tools", ContentKind::Prose),
            ("    // the cache key is written before the tests run", ContentKind::Prose),
            ("- a list item, in words", ContentKind::Prose),
            ("```rust", ContentKind::Prose),
            ("    let total = items.iter().map(|i| i.len()).sum::<usize>();", ContentKind::Code),
            ("fn apply(&mut self, ev: &Event) -> Result<(), Error> {", ContentKind::Code),
            ("[2026-12-03T10:22:31.123Z] INFO  worker-7 processed rows=4812/10000 in 231ms", ContentKind::Logs),
            ("test store::messages::append_7 ... ok", ContentKind::Logs),
            ("{\"run\":3,\"passed\":43,\"failed\":0,\"artefact\":\"target/release/worker\"}", ContentKind::Json),
            ("9e3779b97f4a7c15 01JFV000000000123456789 v3.14.2 1048576", ContentKind::Identifiers),
        ];
        for (line, kind) in cases {
            assert_eq!(ContentKind::of_line(line), kind, "{line}");
        }
    }

    #[test]
    fn prose_keeps_four_characters_a_token_and_dense_lines_cost_more() {
        let prose = "The build step writes the cache key to disk. ".repeat(20);
        assert_eq!(estimate(&prose), (prose.chars().count() as u64).div_ceil(4));
        let log = "[2026-12-03T10:22:31.123Z] INFO  worker-7 processed rows=4812/10000 in 231ms\n".repeat(20);
        let plain = (log.chars().count() as u64).div_ceil(4);
        assert_eq!(estimate(&log), (log.chars().count() as u64 * 190).div_ceil(400));
        assert!(estimate(&log) > plain);
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a"), 1);
    }
}
