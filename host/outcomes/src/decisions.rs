//! Decisions and what replaced them, whatever the wording: the words that say a choice was
//! replaced ("replaces", "switch from A to B", "instead of A", "no longer", "drop A", …), the
//! identifiers a line names, and the names a replacing sentence drops. The extractive summariser
//! supersedes its decisions with them; [`mark_replaced`] marks, in a transcript sent to a model,
//! each earlier line a later one replaces, so the model (and anything that reads the transcript
//! in part) sees it as replaced.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Words saying that a sentence replaces an earlier choice (lower case, matched anywhere).
pub const REPLACES: &[&str] = &[
    "replace",
    "supersede",
    "instead of",
    "no longer",
    "change of plan",
    "switch from",
    "switched from",
    "switching from",
    "switch to",
    "rather than",
    "drop ",
    "dropped",
    "dropping",
    "move from",
    "moved from",
    "migrate from",
    "abandon",
    "scrap",
    "revert",
    "not going with",
    "is out",
    "forget ",
];

/// Words that lead to what a replacing sentence drops: "switch from X", "instead of X", "drop X".
const DROPS: &[&str] = &[
    "from ",
    "instead of ",
    "rather than ",
    "drop ",
    "dropped ",
    "dropping ",
    "abandon ",
    "abandoned ",
    "scrap ",
    "scrapped ",
    "revert ",
    "reverted ",
    "replaces ",
    "replace ",
    "no longer use ",
    "no longer using ",
    "not going with ",
    "forget ",
];

/// Words skipped between such a lead and the name it introduces.
const FILLER: &[&str] = &["the", "a", "an", "our", "using", "use", "with", "plain", "old", "current"];

/// Words in capitals that are not identifiers.
const SHOUTED: &[&str] = &["ERROR", "FAILED", "WARNING", "PANIC", "FIXME", "NOTICE", "DEBUG", "TRACE", "FATAL"];

/// Whether `lower` (lower-cased) holds any of `words`.
pub fn has(lower: &str, words: &[&str]) -> bool {
    words.iter().any(|k| lower.contains(k))
}

/// The identifiers a line names: tokens mixing letters and digits (`E0308`, `TF123-K45`), runs
/// of capitals joined by `-` or `_` (`OUT-GMLY`), `#123`, and codes of five or more capitals
/// (`DCTAPS`; a shouted log level is not one).
pub fn identifiers(line: &str) -> Vec<&str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '#'))
        .map(|t| t.trim_matches(|c| c == '-' || c == '_'))
        .filter(|t| {
            let letters = t.chars().filter(|c| c.is_alphabetic()).count();
            let digits = t.chars().filter(char::is_ascii_digit).count();
            let caps = t.chars().filter(char::is_ascii_uppercase).count();
            let joined = t.contains('-') || t.contains('_');
            (t.len() >= 3 && letters > 0 && digits > 0 && caps > 0)
                || (joined && caps >= 2 && caps == letters)
                || (t.starts_with('#') && digits + 1 == t.len() && digits > 0)
                || (caps >= 5 && caps == t.len() && !SHOUTED.contains(t))
        })
        .collect()
}

/// The names a replacing sentence says are dropped (lower case): the first word after each lead
/// of `DROPS` that is not filler, at least three letters long.
pub fn dropped_names(lower: &str) -> Vec<String> {
    let mut out = Vec::new();
    for lead in DROPS {
        for (at, _) in lower.match_indices(lead) {
            if at > 0 && lower.as_bytes()[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let name = lower[at + lead.len()..]
                .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '.'))
                .find(|w| !w.is_empty() && !FILLER.contains(w));
            if let Some(name) = name.filter(|w| w.chars().filter(|c| c.is_alphanumeric()).count() >= 3) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Whether `lower` holds `name` as a word.
pub fn has_word(lower: &str, name: &str) -> bool {
    lower.match_indices(name).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether `later` (a line saying it replaces something) replaces `earlier`: they share an
/// identifier, or `earlier` names what `later` drops.
pub fn replaces(later: &str, earlier: &str) -> bool {
    let lower = later.to_lowercase();
    if !has(&lower, REPLACES) {
        return false;
    }
    let ids = identifiers(later);
    if identifiers(earlier).iter().any(|x| ids.contains(x)) {
        return true;
    }
    let earlier = earlier.to_lowercase();
    dropped_names(&lower).iter().any(|n| has_word(&earlier, n))
}

/// `transcript` with `[replaced later]` after each line of the conversation (lines starting
/// `[user]` or `[assistant]`, and a previous summary's lines) that a later such line replaces.
/// Tool output is never marked.
pub fn mark_replaced(transcript: &str) -> String {
    let lines: Vec<&str> = transcript.lines().collect();
    let spoken = |l: &str| !l.starts_with("[result of ") && !l.starts_with("[error of ") && !l.contains(" calls ");
    let mut marked = alloc::vec![false; lines.len()];
    for (j, later) in lines.iter().enumerate() {
        if !spoken(later) || !has(&later.to_lowercase(), REPLACES) {
            continue;
        }
        for (i, earlier) in lines[..j].iter().enumerate() {
            if spoken(earlier) && !earlier.trim().is_empty() && replaces(later, earlier) {
                marked[i] = true;
            }
        }
    }
    let mut out = String::with_capacity(transcript.len() + 64);
    for (line, marked) in lines.iter().zip(marked) {
        out.push_str(line);
        if marked {
            out.push_str(" [replaced later]");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_in_any_wording_mark_what_they_replace() {
        let t = "[assistant] Going with rocksdb for the hashing layer (DQ7KPA).\n\
                 [result of c1] rocksdb compaction done\n\
                 [user] What about the cache?\n\
                 [assistant] Let's switch from rocksdb to lmdb for hashing: DW3MXR, so DQ7KPA is out.\n";
        let marked = mark_replaced(t);
        let lines: Vec<&str> = marked.lines().collect();
        assert!(lines[0].ends_with("[replaced later]"), "{marked}");
        assert!(!lines[1].contains("replaced later"), "tool output is never marked: {marked}");
        assert!(!lines[2].contains("replaced later") && !lines[3].contains("replaced later"), "{marked}");
        for (later, earlier) in [
            (
                "We'll use lmdb instead of rocksdb for hashing now (DW3MXR); forget DQ7KPA.",
                "Going with rocksdb (DQ7KPA).",
            ),
            ("DQ7KPA no longer holds: hashing moves to lmdb (DW3MXR).", "Going with rocksdb (DQ7KPA)."),
            ("Drop rocksdb for hashing; lmdb it is.", "We settled on rocksdb for hashing."),
            ("DEC-2 replaces DEC-1: hashing goes to lmdb.", "Decision: rocksdb (DEC-1)."),
        ] {
            assert!(replaces(later, earlier), "{later} / {earlier}");
        }
        assert!(!replaces("Going with lmdb for hashing (DW3MXR).", "Going with rocksdb (DQ7KPA)."));
        assert_eq!(identifiers("FAILED DCTAPS OUT-GMLY E0308 #12 ok"), ["DCTAPS", "OUT-GMLY", "E0308", "#12"]);
    }
}
