//! The lines of a long output that stand out from its own repeated shapes, whatever words they
//! use: a benchmark's one regression among a few hundred timings, the one line a successful run
//! printed differently.
//!
//! Each line's **template** is its words with what varies from line to line made variables: a
//! word holding a digit (counters, timestamps, durations, versions, ids), a path, a long hex or
//! mixed id. A log is mostly a few templates repeated; a line whose template occurs once in an
//! output made of repeated templates is **novel**. No list of words decides: the output's own
//! shapes do.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

/// The least lines an output needs for its shapes to say anything.
const MIN_LINES: usize = 12;
/// At most this many novel lines are worth naming; more, and the output is not made of repeated
/// shapes (prose, a listing of distinct items).
const MAX_NOVEL: usize = 8;

/// `line`'s template: its words, lower-cased, with each variable word as `#` (a digit in it),
/// `/` (a path) or `@` (a long id of letters and digits).
pub fn template(line: &str) -> String {
    let mut out = String::new();
    for word in
        line.split(|c: char| c.is_whitespace() || matches!(c, '=' | ',' | ';' | '(' | ')' | '[' | ']' | '"' | '\''))
    {
        let word = word.trim_matches(|c: char| matches!(c, ':' | '.' | '!' | '?'));
        if word.is_empty() {
            continue;
        }
        let shape = if word.bytes().any(|b| b.is_ascii_digit()) {
            "#"
        } else if word.contains('/') || word.contains('\\') {
            "/"
        } else if word.len() >= 16 && word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            "@"
        } else {
            ""
        };
        if !out.is_empty() {
            out.push(' ');
        }
        if shape.is_empty() {
            out.extend(word.chars().flat_map(char::to_lowercase));
        } else {
            out.push_str(shape);
        }
    }
    out
}

/// The novel lines of `text` (split into `lines`), as line indexes in order: those whose
/// template occurs once, in an output where most lines share their template with others. Empty
/// when the output is short, or is not made of repeated shapes.
pub fn novel_lines(text: &str, lines: &[Range<usize>]) -> Vec<usize> {
    let filled: Vec<usize> = (0..lines.len()).filter(|&i| !text[lines[i].clone()].trim().is_empty()).collect();
    if filled.len() < MIN_LINES {
        return Vec::new();
    }
    let templates: Vec<String> = filled.iter().map(|&i| template(&text[lines[i].clone()])).collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &templates {
        *counts.entry(t.as_str()).or_default() += 1;
    }
    let repeated: usize = counts.values().filter(|&&c| c > 1).sum();
    // Made of repeated shapes: at least three lines in four share a template with another.
    if repeated * 4 < filled.len() * 3 {
        return Vec::new();
    }
    // A run's opening lines (its command, its banner, its platform) are how it started, not how
    // it went: they are no outcome, however unlike the rest.
    let opening = filled[(filled.len() / 20).max(2)];
    let novel: Vec<usize> = filled
        .iter()
        .zip(&templates)
        .filter(|&(&i, t)| i >= opening && counts[t.as_str()] == 1)
        .map(|(&i, _)| i)
        .collect();
    if novel.len() > MAX_NOVEL { Vec::new() } else { novel }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn novel(text: &str) -> Vec<usize> {
        novel_lines(text, &crate::line_ranges(text))
    }

    #[test]
    fn what_varies_is_a_variable() {
        assert_eq!(
            template("2026-12-07T06:01:02Z INFO step 14: compiled crate_3 in 412 ms"),
            "# info step # compiled # in # ms"
        );
        assert_eq!(template("wrote target/release/app (4.1 MiB)"), "wrote / # mib");
        assert_eq!(template("request a1b2c3d4e5f6a7b8c9d0 done"), "request # done");
        assert_eq!(template("session deadbeefcafebabefeedface ok"), "session @ ok");
    }

    #[test]
    fn a_line_unlike_the_rest_of_a_repetitive_log_is_novel_whatever_its_words() {
        let mut lines: Vec<String> =
            (0..200).map(|i| alloc::format!("bench case_{i} ... {} ns/iter (+/- {})", 100 + i, i % 7)).collect();
        lines[117] = "the median of the tail moved from 12 to 19, beyond the band".into();
        let text = lines.join("\n");
        assert_eq!(novel(&text), alloc::vec![117]);
    }

    #[test]
    fn a_runs_opening_lines_are_no_outcome() {
        let mut lines: Vec<String> = alloc::vec!["$ pytest -q tests/".into(), "platform linux -- Python 3.11".into()];
        lines.extend((0..60).map(|i| alloc::format!("tests/test_{i}.py::case PASSED [{i}%]")));
        lines[30] = "the cache served 40 of 41 lookups from disk".into();
        assert_eq!(novel(&lines.join("\n")), alloc::vec![30]);
    }

    #[test]
    fn prose_and_short_outputs_have_no_novel_lines() {
        let prose =
            "The build ran.\nIt compiled everything.\nThen the tests passed.\nNothing else happened.\n".repeat(2);
        assert!(novel(&prose).is_empty(), "too short");
        let (names, verbs, places) = (
            ["ann", "bob", "cid", "dee", "eve", "fay", "gus"],
            ["walked", "drove", "flew", "rode", "sailed"],
            ["rome", "oslo", "lima", "kyiv", "bern", "riga", "baku", "doha", "lome", "male", "suva"],
        );
        let distinct: Vec<String> =
            (0..40).map(|i| alloc::format!("{} {} to {}", names[i % 7], verbs[i % 5], places[i % 11])).collect();
        assert!(novel(&distinct.join("\n")).is_empty(), "no repeated shapes");
    }
}
