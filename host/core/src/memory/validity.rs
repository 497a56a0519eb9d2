//! When an observation stops being true: one replaced by a newer one (`replaces` on
//! `add_observations`) keeps its text with `valid_until` and the observation that replaced it, out
//! of search and the memory context; one that looks like another value of an attribute a current
//! observation holds, written without saying so, is flagged as a conflict for the user to see.

use crate::store::db::{Db, Tx, params};

use super::Result;

/// Verbs after which an observation's value starts, each with the prepositions that make it
/// single-valued (`Lives in Oslo`, `Works at Acme`, `Moved to Berlin`); `is`/`are` need a subject
/// before them (`Editor is vim`), never a pronoun's (`It is written in Rust`) and never a
/// category (`is a`, `is an`): a thing is many of those at once. Verbs whose values add up (`uses`,
/// `likes`, `prefers`, `works on`) make no attribute.
const LINKS: &[(&str, &[&str])] =
    &[("is", &[]), ("are", &[]), ("lives", &["in"]), ("works", &["at", "for"]), ("moved", &["to"])];

/// Subjects that name nothing: `It is …` says nothing about which attribute.
const PRONOUNS: &[&str] = &["it", "he", "she", "they", "i", "we", "you", "this", "that", "there"];

/// Heads of `label: text` that mark a kind of note rather than an attribute (`Note: …`).
const LABELS: &[&str] =
    &["note", "notes", "todo", "fixme", "update", "warning", "tip", "example", "see", "nb", "fyi", "idea", "question"];

/// The most words an attribute phrase has (longer, the observation is a sentence, not an
/// attribute and its value).
const ATTRIBUTE_WORDS: usize = 5;

/// The most words a value has (longer, it is a statement rather than a value).
const VALUE_WORDS: usize = 6;

/// An observation split into its attribute phrase and its value, both lower-cased with their
/// words single-spaced: `Favourite editor: Vim` is (`favourite editor:`, `vim`). `None` when it
/// names no single-valued attribute.
pub(crate) fn attribute(text: &str) -> Option<(String, String)> {
    let lower = text.trim().to_lowercase();
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let short = |value: &str| !value.is_empty() && value.split(' ').count() <= VALUE_WORDS;
    // `: ` and ` = ` (not the colon of a URL or a time).
    if let Some((head, value)) = lower.split_once(": ").or_else(|| lower.split_once(" = ")) {
        let head = words(head);
        let value = words(value.trim_end_matches('.'));
        let n = head.split(' ').count();
        if !head.is_empty() && n <= ATTRIBUTE_WORDS && !LABELS.contains(&head.as_str()) && short(&value) {
            return Some((format!("{head}:"), value));
        }
        return None;
    }
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let (at, prepositions) = tokens
        .iter()
        .take(ATTRIBUTE_WORDS)
        .enumerate()
        .find_map(|(i, t)| LINKS.iter().find(|(verb, _)| verb == t).map(|(_, p)| (i, *p)))?;
    let mut end = at + 1;
    if prepositions.is_empty() {
        // `X is …`: a subject of its own, and a value rather than a category.
        if at == 0 || PRONOUNS.contains(&tokens[0]) {
            return None;
        }
    } else {
        if !tokens.get(end).is_some_and(|t| prepositions.contains(t)) {
            return None;
        }
        end += 1;
    }
    // `is now`, `is still`: the value is what follows.
    while tokens.get(end).is_some_and(|t| matches!(*t, "now" | "still" | "currently")) {
        end += 1;
    }
    if prepositions.is_empty() && tokens.get(end).is_some_and(|t| matches!(*t, "a" | "an" | "not")) {
        return None;
    }
    let value = tokens.get(end..).unwrap_or_default().join(" ");
    let value = value.trim_end_matches('.').trim();
    if !short(value) {
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

/// The current observations of `entity` (neither deleted nor replaced), oldest first: (id,
/// content).
pub(crate) fn current(db: &Db, entity: i64) -> Result<Vec<(i64, String)>> {
    Ok(db.query_vec(
        "SELECT id, content FROM memory_observations WHERE entity_id = ?1 AND deleted_by IS NULL \
         AND valid_until IS NULL ORDER BY id",
        params![entity],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

/// The current observation of `entity` that `text` names — its exact text, else the same text
/// ignoring case and surrounding space: (id, content).
pub(crate) fn current_match(tx: &Tx<'_>, entity: i64, text: &str) -> Result<Option<(i64, String)>> {
    let current = current(tx, entity)?;
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
        assert_eq!(attribute("Works at Acme"), Some(("works at".into(), "acme".into())));
        assert_eq!(attribute("Uses Rust"), None, "a cumulative verb names no single value");
        assert_eq!(attribute("Prefers tabs"), None);
        assert_eq!(attribute("Works on the parser"), None, "one works on many things");
        assert_eq!(attribute("Is a senior engineer"), None, "no subject");
        assert_eq!(attribute("Ada is a senior engineer"), None, "a category, not a value");
        assert_eq!(attribute("It is written in Rust"), None, "a pronoun names no attribute");
        assert_eq!(attribute("Note: ask about the budget"), None, "a label, not an attribute");
        assert_eq!(attribute("See the wiki for the steps"), None);
        assert_eq!(attribute("Wrote the first version of the parser in a weekend"), None);
        assert_eq!(attribute("Status: the migration failed twice last week because of locks"), None, "a statement");
    }

    #[test]
    fn contradictions_are_another_value_of_one_attribute() {
        assert!(contradicts("Editor is Emacs", "Editor is vim"));
        assert!(contradicts("Deadline: March 3", "deadline: February 28"));
        assert!(contradicts("Lives in Berlin", "Lives in Oslo"));
        assert!(!contradicts("Editor is vim", "editor is Vim"), "the same value in other case");
        assert!(!contradicts("Uses Go", "Uses Rust"));
        assert!(!contradicts("Lives in Berlin", "Editor is vim"));
        assert!(!contradicts("Note: ask about the budget", "Note: book the room"));
        assert!(!contradicts("Was born in 1990", "Was promoted in 2024"));
    }
}
