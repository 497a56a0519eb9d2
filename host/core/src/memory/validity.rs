//! When an observation stops being true: one replaced by a newer one (`replaces` on
//! `add_observations`) keeps its text with `valid_until` and the observation that replaced it, out
//! of search and the memory context; one that looks like another value of an attribute a current
//! observation holds, written without saying so, is flagged as a conflict for the user to see.

use crate::store::db::{Tx, params};

use super::Result;

/// Words after which an observation's value starts, when they come within its first few words:
/// `Editor is vim`, `Prefers tabs`, `Lives in Oslo`, `Deadline: Friday`. A verb that takes one of
/// the prepositions after it (`lives in`) keeps the preposition in the attribute.
const LINKS: &[&str] = &["is", "are", "was", "were", "prefers", "lives", "works", "moved", "uses", "wants", "likes"];

/// Prepositions kept with a verb of [`LINKS`] (`works at`, `moved to`).
const PREPOSITIONS: &[&str] = &["in", "at", "on", "for", "to", "with"];

/// Verbs whose values add up rather than replace each other (`uses Rust` and `uses Go` are both
/// true): they never make a conflict.
const CUMULATIVE: &[&str] = &["uses", "likes", "wants"];

/// The most words an attribute phrase has (longer, the observation is a sentence, not an
/// attribute and its value).
const ATTRIBUTE_WORDS: usize = 5;

/// An observation split into its attribute phrase and its value, both lower-cased with their
/// words single-spaced: `Favourite editor: Vim` is (`favourite editor:`, `vim`). `None` when it
/// names no attribute.
pub(crate) fn attribute(text: &str) -> Option<(String, String)> {
    let lower = text.trim().to_lowercase();
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    // `: ` and ` = ` (not the colon of a URL or a time).
    if let Some((head, value)) = lower.split_once(": ").or_else(|| lower.split_once(" = ")) {
        let head = words(head);
        let value = words(value.trim_end_matches('.'));
        let n = head.split(' ').count();
        if !head.is_empty() && n <= ATTRIBUTE_WORDS && !value.is_empty() {
            return Some((format!("{head}:"), value));
        }
    }
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let at = tokens.iter().take(ATTRIBUTE_WORDS).position(|t| LINKS.contains(t))?;
    if CUMULATIVE.contains(&tokens[at]) {
        return None;
    }
    let mut end = at + 1;
    if tokens[at] != "is" && tokens.get(end).is_some_and(|t| PREPOSITIONS.contains(t)) {
        end += 1;
    }
    // `is now`, `is still`: the value is what follows.
    while tokens.get(end).is_some_and(|t| matches!(*t, "now" | "still" | "currently")) {
        end += 1;
    }
    let value = tokens[end..].join(" ");
    let value = value.trim_end_matches('.').trim();
    if value.is_empty() {
        return None;
    }
    let head: Vec<&str> =
        tokens[..end].iter().copied().filter(|t| !matches!(*t, "now" | "still" | "currently")).collect();
    Some((head.join(" "), value.to_string()))
}

/// Whether `new` gives another value to the attribute `earlier` holds.
pub(crate) fn contradicts(new: &str, earlier: &str) -> bool {
    match (attribute(new), attribute(earlier)) {
        (Some((a, x)), Some((b, y))) => a == b && x != y,
        _ => false,
    }
}

/// The current observation of `entity` that `text` names — its exact text, else the same text
/// ignoring case and surrounding space: (id, content).
pub(crate) fn current_match(tx: &Tx<'_>, entity: i64, text: &str) -> Result<Option<(i64, String)>> {
    let current: Vec<(i64, String)> = tx.query_vec(
        "SELECT id, content FROM memory_observations WHERE entity_id = ?1 AND deleted_by IS NULL \
         AND valid_until IS NULL ORDER BY id",
        params![entity],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let exact = current.iter().find(|(_, c)| c == text);
    let loose = || current.iter().find(|(_, c)| c.trim().to_lowercase() == text.trim().to_lowercase());
    Ok(exact.or_else(loose).cloned())
}

#[cfg(test)]
mod tests {
    use super::{attribute, contradicts};

    #[test]
    fn attributes_and_values() {
        assert_eq!(attribute("Favourite editor: Vim"), Some(("favourite editor:".into(), "vim".into())));
        assert_eq!(attribute("Editor is now Emacs."), Some(("editor is".into(), "emacs".into())));
        assert_eq!(attribute("Lives in Oslo"), Some(("lives in".into(), "oslo".into())));
        assert_eq!(attribute("Prefers tabs"), Some(("prefers".into(), "tabs".into())));
        assert_eq!(attribute("Uses Rust"), None, "a cumulative verb names no single value");
        assert_eq!(attribute("Wrote the first version of the parser in a weekend"), None);
    }

    #[test]
    fn contradictions_are_another_value_of_one_attribute() {
        assert!(contradicts("Editor is Emacs", "Editor is vim"));
        assert!(contradicts("Deadline: March 3", "deadline: February 28"));
        assert!(contradicts("Lives in Berlin", "Lives in Oslo"));
        assert!(!contradicts("Editor is vim", "editor is Vim"), "the same value in other case");
        assert!(!contradicts("Uses Go", "Uses Rust"));
        assert!(!contradicts("Lives in Berlin", "Editor is vim"));
    }
}
