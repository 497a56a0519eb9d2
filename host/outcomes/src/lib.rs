//! The lines of a tool's output that carry its outcome: errors, failures, panics, warnings, test
//! summaries, what a successful run ended with (figures with units, files written, versions, its
//! last line), `path:line` locations and `key: value` results — and, whatever their words, the
//! lines that stand out from the output's own repeated shapes ([`novelty`]).
//!
//! A long output (a 300-line test log, a build, a grep) is mostly what it is made of; what an
//! agent needs later is the few lines that say how it ended. Trimmers keep them beside a head and
//! a tail, summarisers quote them instead of the first line, and the host carries them into
//! summary requests. Free of bindings (and of anything but `core` and `alloc`): the host and every guest depend on
//! this one crate.

#![no_std]

extern crate alloc;

pub mod decisions;
pub mod lasting;
pub mod novelty;
pub mod trim;

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

/// What makes a line an outcome, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// An error, failure, panic, exception or abort.
    Error,
    /// A test run's summary (`test result: …`, `12 passed`, `Ran 40 tests`).
    Summary,
    /// A `key: value` result whose value has a number (`p99_ms: 412`).
    Measure,
    /// A warning or deprecation.
    Warning,
    /// What a successful run ended with: a figure with its unit (`12,400 req/s`, `p99 18.4ms`,
    /// `4.1 MiB`), something written or built (`wrote 14 files`, `Finished release`), a version,
    /// or, in an output with no other outcome, its last line.
    Result,
    /// A `path:line` location (`src/a.rs:42`).
    Location,
    /// A line unlike the rest of its output: its template (its words, what varies made a
    /// variable) occurs once in an output made of repeated shapes ([`novelty`]), whatever words
    /// it uses.
    Novel,
}

impl Kind {
    /// How much a line of this kind says about the outcome (higher is more).
    pub fn weight(self) -> u8 {
        match self {
            Kind::Error => 6,
            Kind::Summary => 5,
            Kind::Measure => 4,
            Kind::Warning => 3,
            Kind::Result | Kind::Novel => 2,
            Kind::Location => 1,
        }
    }
}

/// Which outcome words a line holds, in one pass over its words.
#[derive(Default)]
struct Words {
    error: bool,
    summary: bool,
    warning: bool,
    /// A word saying something was made or finished (`wrote`, `built`, `finished`, …).
    made: bool,
}

fn scan_words(line: &str) -> Words {
    let mut found = Words::default();
    let mut buf = [0u8; 10];
    let b = line.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if !word(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && word(b[i]) {
            i += 1;
        }
        let w = &b[start..i];
        // Every keyword is 4 to 10 letters long.
        if w.len() < 4 || w.len() > 10 || !w[0].is_ascii_alphabetic() {
            continue;
        }
        for (to, c) in buf.iter_mut().zip(w) {
            *to = c.to_ascii_lowercase();
        }
        match &buf[..w.len()] {
            b"error" | b"errors" | b"failed" | b"failure" | b"failures" | b"fail" | b"panic" | b"panicked"
            | b"fatal" | b"exception" | b"traceback" | b"abort" | b"aborted" | b"assertion" | b"segfault"
            | b"crashed" | b"denied" | b"refused" | b"timeout" | b"unresolved" | b"undefined" => found.error = true,
            b"passed" | b"passing" | b"succeeded" | b"skipped" | b"ignored" => found.summary = true,
            b"warning" | b"warnings" | b"warn" | b"deprecated" => found.warning = true,
            b"wrote" | b"written" | b"writes" | b"created" | b"built" | b"generated" | b"saved" | b"installed"
            | b"published" | b"deployed" | b"finished" | b"completed" | b"done" | b"uploaded" | b"compiled"
            | b"released" | b"produced" | b"exported" | b"throughput" | b"version" | b"total" => found.made = true,
            _ => {}
        }
    }
    found
}

/// A `path:line` token: a name with a `.` or `/` followed by `:` and digits.
fn has_location(line: &str) -> bool {
    let b = line.as_bytes();
    (1..b.len()).any(|i| {
        b[i] == b':'
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            && b[i - 1].is_ascii_alphanumeric()
            && line[..i]
                .rsplit(|c: char| c.is_whitespace() || c == '(' || c == '\'')
                .next()
                .is_some_and(|token| token.contains('.') || token.contains('/'))
    })
}

/// `key: value` where the key is a short identifier and the value starts with a number.
fn is_measure(line: &str) -> bool {
    let t = line.trim_start();
    let Some((key, value)) = t.split_once(':') else { return false };
    !key.is_empty()
        && key.len() <= 48
        && key.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
        && value.starts_with(' ')
        && value
            .split_whitespace()
            .next()
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains(':'))
}

/// Units a figure of a result is given in (after the number, with or without a space).
const UNITS: &[&str] = &[
    "req/s", "ops/s", "rps", "qps", "tok/s", "mb/s", "mib/s", "gb/s", "ms", "µs", "us", "ns", "s", "min", "kib", "mib",
    "gib", "kb", "mb", "gb", "b", "bytes", "%", "files", "lines", "tests", "rows", "items", "records", "requests",
    "errors", "warnings", "crates", "packages", "modules", "chunks", "tokens",
];

/// A figure with its unit: digits (with `,` `.` `_` inside), an optional space, then a unit that
/// ends there (`12,400 req/s`, `18.4ms`, `4.1 MiB`, `14 files`).
fn has_figure_with_unit(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len()
            && (b[j].is_ascii_digit()
                || (matches!(b[j], b',' | b'.' | b'_') && b.get(j + 1).is_some_and(u8::is_ascii_digit)))
        {
            j += 1;
        }
        let rest = line[j..].strip_prefix(' ').unwrap_or(&line[j..]);
        let found = UNITS.iter().any(|u| {
            rest.len() >= u.len()
                && rest.is_char_boundary(u.len())
                && rest[..u.len()].eq_ignore_ascii_case(u)
                && !rest[u.len()..].starts_with(|c: char| c.is_alphanumeric())
        });
        if found {
            return true;
        }
        i = j.max(i + 1);
    }
    false
}

/// A version: `v1.4.2`, `1.4.2`, `2.0` beside the word `version`.
fn has_version(line: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '@' | '=')).any(|token| {
        let t = token.strip_prefix('v').unwrap_or(token);
        let parts: Vec<&str> = t.split('.').collect();
        parts.len() >= 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
    })
}

/// What kind of outcome `line` carries, if any.
pub fn kind(line: &str) -> Option<Kind> {
    let words = scan_words(line);
    if words.error {
        // "0 failed" in a summary is not an error.
        let zero_failed = line.contains(" 0 failed") || line.contains("0 errors");
        return Some(if zero_failed { Kind::Summary } else { Kind::Error });
    }
    if words.summary && line.bytes().any(|c| c.is_ascii_digit()) || line.trim_start().starts_with("test result:") {
        return Some(Kind::Summary);
    }
    if words.warning {
        return Some(Kind::Warning);
    }
    // A progress line (`Compiling serde v1.0.0`, `Downloaded 3 crates`) is how a run went on.
    const PROGRESS: &[&str] = &[
        "Compiling",
        "Checking",
        "Downloading",
        "Downloaded",
        "Fetching",
        "Updating",
        "Resolving",
        "Running",
        "Locking",
    ];
    let progress = PROGRESS.iter().any(|p| line.trim_start().starts_with(p));
    if !progress
        && (words.made && (line.bytes().any(|c| c.is_ascii_digit()) || line.contains('/'))
            || has_figure_with_unit(line)
            || has_version(line))
    {
        return Some(Kind::Result);
    }
    // Both of the rest need a `:`.
    if !line.as_bytes().contains(&b':') {
        return None;
    }
    if is_measure(line) {
        return Some(Kind::Measure);
    }
    if has_location(line) {
        return Some(Kind::Location);
    }
    None
}

/// The byte ranges of `text`'s lines (without their `\n`), in order.
pub fn line_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            out.push(start..i);
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// The outcome lines of `text` worth keeping: `(line index, kind)`, strongest first, then in
/// order. A kind making up more than a quarter of the lines (a grep's hits, a log's timings) is
/// what the output is made of, not how it ended, and is left out (errors never are). An output
/// with no such line ended with its last non-empty line: that line is its [`Kind::Result`],
/// whatever it says (a benchmark's figures, a build's artefact, `done`), never its first.
pub fn outcome_lines(text: &str) -> Vec<(usize, Kind)> {
    outcome_lines_in(text, &line_ranges(text))
}

/// [`outcome_lines`] over `text`'s [`line_ranges`], already split.
fn outcome_lines_in(text: &str, lines: &[Range<usize>]) -> Vec<(usize, Kind)> {
    let mut found: Vec<(usize, Kind)> =
        lines.iter().enumerate().filter_map(|(i, r)| kind(&text[r.clone()]).map(|k| (i, k))).collect();
    let count = |k: Kind| found.iter().filter(|(_, x)| *x == k).count();
    let common: Vec<Kind> = [Kind::Summary, Kind::Result, Kind::Warning, Kind::Measure, Kind::Location]
        .into_iter()
        .filter(|&k| count(k) * 4 > lines.len().max(8))
        .collect();
    found.retain(|(_, k)| !common.contains(k));
    let last = lines.iter().rposition(|r| !text[r.clone()].trim().is_empty());
    if let Some(last) = last.filter(|_| found.is_empty()) {
        found.push((last, Kind::Result));
    }
    // Beside what the rules found, what stands out from the output's own repeated shapes.
    for i in novelty::novel_lines(text, lines) {
        if !found.iter().any(|&(k, _)| k == i) {
            found.push((i, Kind::Novel));
        }
    }
    found.sort_by_key(|&(i, k)| (core::cmp::Reverse(k.weight()), i));
    found
}

/// Bytes of the head and tail [`keep`] aims for, as shares of its budget.
const HEAD_SHARE: usize = 35;
const TAIL_SHARE: usize = 25;
/// Longest outcome line kept (a longer one is not a line a reader needs whole).
const LINE_MAX: usize = 400;

/// How to shorten a tool result to about a budget of bytes: [`shorten`]'s answer, which a
/// trimmer turns into its edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shorten {
    /// Keep these line ranges ([`keep`]).
    Lines(Vec<Range<usize>>),
    /// Keep this many bytes from the start and from the end (the lines are too few or too long).
    HeadTail {
        /// Bytes kept from the start.
        head: u64,
        /// Bytes kept from the end.
        tail: u64,
    },
}

/// Bytes a head-tail placeholder may take (the host's rule: head and tail leave this much).
const PLACEHOLDER: u64 = 96;

/// How to bring `content` to about `budget` bytes keeping its outcome: its lines by [`keep`], or
/// when whole lines cannot do it a head (two thirds) and a tail (one third). `None` when it is
/// already within the budget.
pub fn shorten(content: &str, budget: u64) -> Option<Shorten> {
    if content.len() as u64 <= budget + PLACEHOLDER {
        return None;
    }
    Some(match keep(content, usize::try_from(budget).unwrap_or(usize::MAX)) {
        Some(ranges) => Shorten::Lines(ranges),
        None => Shorten::HeadTail { head: budget * 2 / 3, tail: budget / 3 },
    })
}

/// The lines of `text` to keep within about `budget` bytes: a head, a tail and, in the rest of
/// the budget, the outcome lines (strongest first); what they leave widens the head, then the
/// tail. Returns sorted, disjoint `start..end` ranges
/// of line indexes, or `None` when keeping whole lines cannot shorten the text within the
/// budget (few, long lines): cut it by bytes instead.
pub fn keep(text: &str, budget: usize) -> Option<Vec<Range<usize>>> {
    let lines = line_ranges(text);
    let n = lines.len();
    if n < 8 || text.len() <= budget {
        return None;
    }
    let len = |i: usize| lines[i].len() + 1;
    let mut kept = alloc::vec![false; n];
    let mut used = 0;
    // The head: whole lines within its share (at least the first line if it fits the budget).
    let mut i = 0;
    while i < n && (used + len(i) <= budget * HEAD_SHARE / 100 || i == 0 && len(0) <= budget / 2) {
        kept[i] = true;
        used += len(i);
        i += 1;
    }
    // The tail, from the end.
    let mut j = n;
    let tail_room = budget * TAIL_SHARE / 100;
    let mut tail = 0;
    while j > i + 1 && tail + len(j - 1) <= tail_room {
        j -= 1;
        kept[j] = true;
        tail += len(j);
    }
    used += tail;
    // Outcome lines, strongest first, as long as they fit.
    for (k, _) in outcome_lines_in(text, &lines) {
        if !kept[k] && len(k) <= LINE_MAX && used + len(k) <= budget {
            kept[k] = true;
            used += len(k);
        }
    }
    // What is left widens the head, then the tail.
    while i < n && !kept[i] && used + len(i) <= budget {
        kept[i] = true;
        used += len(i);
        i += 1;
    }
    while j > i && !kept[j - 1] && used + len(j - 1) <= budget {
        j -= 1;
        kept[j] = true;
        used += len(j);
    }
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (k, &keep) in kept.iter().enumerate() {
        if !keep {
            continue;
        }
        match ranges.last_mut() {
            Some(r) if r.end == k => r.end = k + 1,
            _ => ranges.push(k..k + 1),
        }
    }
    let all_kept = ranges.len() == 1 && ranges[0] == (0..n);
    if ranges.is_empty() || all_kept || used >= text.len() { None } else { Some(ranges) }
}

/// `text`'s lines in `ranges` (sorted line ranges, as [`keep`] gives), each followed by `\n`, and
/// where `n` lines were left out (after the last range too), the line `gap(n)` gives, if any.
pub fn stitch(text: &str, ranges: &[Range<usize>], mut gap: impl FnMut(usize) -> Option<String>) -> String {
    let lines = line_ranges(text);
    let mut out = String::new();
    let mut next = 0;
    for r in ranges.iter().chain(core::iter::once(&(lines.len()..lines.len()))) {
        if r.start > next
            && let Some(g) = gap(r.start - next)
        {
            out.push_str(&g);
            out.push('\n');
        }
        for line in &lines[r.start..r.end] {
            out.push_str(&text[line.clone()]);
            out.push('\n');
        }
        next = r.end;
    }
    out
}

/// Where a cut keeping the first `head` and the last `tail` bytes of `text` falls: the head's end
/// and the tail's start, snapped inward to character boundaries (the tail never starts before
/// the head ends). A head-tail trim and a transcript's cut of a long result both cut here.
pub fn head_tail_cut(text: &str, head: u64, tail: u64) -> (usize, usize) {
    let len = text.len();
    let h = text.floor_char_boundary(usize::try_from(head).unwrap_or(usize::MAX).min(len));
    let t = text.ceil_char_boundary(len.saturating_sub(usize::try_from(tail).unwrap_or(usize::MAX)).max(h));
    (h, t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn a_head_tail_cut_snaps_inward_and_never_crosses() {
        let text = "aé".repeat(10); // 30 bytes, `é` at odd offsets 1..3, 4..6, …
        assert_eq!(head_tail_cut(&text, 2, 2), (1, 28), "inside an é: the head ends before it, the tail starts after");
        assert_eq!(head_tail_cut(&text, 3, 3), (3, 27));
        assert_eq!(head_tail_cut(&text, 20, 20), (19, 19), "overlapping: the tail starts where the head ends");
        assert_eq!(head_tail_cut(&text, 100, 0), (30, 30));
    }

    #[test]
    fn kinds() {
        assert_eq!(kind("error[E0308]: mismatched types"), Some(Kind::Error));
        assert_eq!(kind("thread 'main' panicked at src/a.rs:3:9"), Some(Kind::Error));
        assert_eq!(kind("test a::b ... FAILED"), Some(Kind::Error));
        assert_eq!(kind("test result: ok. 4 passed; 0 failed; 0 ignored"), Some(Kind::Summary));
        assert_eq!(kind("warning: unused import"), Some(Kind::Warning));
        assert_eq!(kind("p99_latency_ms: 412"), Some(Kind::Measure));
        assert_eq!(kind("see src/lib.rs:42 for more"), Some(Kind::Location));
        assert_eq!(kind("   Compiling serde v1.0.0"), None);
        assert_eq!(kind("test a::b ... ok"), None);
        assert_eq!(kind("time: 12:30"), None, "a clock is not a measure");
    }

    #[test]
    fn keeps_the_failure_in_the_middle() {
        let mut lines: Vec<String> = (0..300).map(|i| format!("test t{i} ... ok")).collect();
        lines[150] = "test store::append ... FAILED".into();
        let text = lines.join("\n");
        let ranges = keep(&text, 1_800).expect("a long log is shortened by lines");
        assert!(ranges.iter().any(|r| r.contains(&150)), "{ranges:?}");
        assert!(ranges[0].start == 0 && ranges.last().unwrap().end == 300, "head and tail: {ranges:?}");
        let kept: usize = ranges.iter().flat_map(|r| r.clone()).map(|i| line_ranges(&text)[i].len() + 1).sum();
        assert!(kept <= 1_800, "{kept}");
    }

    #[test]
    fn few_long_lines_are_left_to_bytes() {
        let text = "x".repeat(10_000);
        assert_eq!(keep(&text, 1_800), None);
    }

    #[test]
    fn a_successful_run_keeps_what_it_ended_with() {
        assert_eq!(kind("throughput: 12,400 req/s, p99 18.4ms"), Some(Kind::Result));
        assert_eq!(kind("wrote 14 files to out/"), Some(Kind::Result));
        assert_eq!(kind("    Finished `release` profile [optimized] target(s) in 41.2s"), Some(Kind::Result));
        assert_eq!(kind("artefact target/release/worker: 4.1 MiB"), Some(Kind::Result));
        assert_eq!(kind("seshat-cli v0.3.1 (/work/main)"), Some(Kind::Result));
        assert_eq!(kind("ok, nothing else to say"), None);
        assert_eq!(kind("v2 of the plan"), None, "a short version-like word is no version");
        // A benchmark's noisy log, every line timed: the timings are what it is made of; the last
        // line, its result, is kept — not the first.
        let mut log: Vec<String> =
            (0..40).map(|i| format!("[10:00:{i:02}] batch {i} processed in {}ms", 200 + i)).collect();
        log.push("result: 12400 req/s, p99 18.4 ms over 40 batches".into());
        let text = log.join("\n");
        let found = outcome_lines(&text);
        assert_eq!(found.first(), Some(&(40, Kind::Result)), "{found:?}");
        assert!(!found.iter().any(|(i, _)| *i == 0), "the first log line is no outcome: {found:?}");
        // A failed run: its error, not its last line.
        let failed = "step 1\nstep 2\nerror: disk full\ncleaning up";
        assert_eq!(outcome_lines(failed), [(2, Kind::Error)]);
    }

    #[test]
    fn a_common_kind_is_not_an_outcome() {
        let text: String = (0..100).map(|i| format!("src/a.rs:{i}:fn f{i}()\n")).collect();
        assert_eq!(outcome_lines(&text), [(99, Kind::Result)], "a grep's hits: only how it ended, its last line");
    }
}
