//! The system prompt a session sends: Seshat's own (or the user's file), the project's
//! instructions (`AGENTS.md`, then `CLAUDE.md`), and the memory context snapshotted when the
//! session started. All of it is counted in the window.

use std::path::Path;

/// Seshat's own system prompt.
pub(crate) const DEFAULT_SYSTEM_PROMPT: &str = include_str!("system-prompt.md");

/// Project instruction files read into the prompt, in order.
pub(crate) const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// Instruction files larger than this are cut (and the cut is stated).
pub(crate) const MAX_INSTRUCTIONS_BYTES: usize = 64 << 10;

/// What goes into a system prompt.
#[derive(Debug, Clone, Default)]
pub struct PromptParts {
    /// The base prompt (Seshat's, or the configured file's contents).
    pub base: String,
    /// The project's instruction files that were read: (file name, text), in order.
    pub instructions: Vec<(String, String)>,
    /// The memory context of the session.
    pub memory: Option<String>,
}

/// The project's instruction files in `dir` ([`INSTRUCTION_FILES`], in order), those that exist
/// and are not empty; each cut at [`MAX_INSTRUCTIONS_BYTES`], saying so.
pub fn read_instructions(dir: &Path) -> Vec<(String, String)> {
    INSTRUCTION_FILES.iter().filter_map(|name| Some((name.to_string(), read_instruction_file(dir, name)?))).collect()
}

fn read_instruction_file(dir: &Path, name: &str) -> Option<String> {
    cut_instructions(name, &std::fs::read_to_string(dir.join(name)).ok()?)
}

/// Instructions given rather than read (a network client's, from its own machine): each that is
/// not empty, cut at [`MAX_INSTRUCTIONS_BYTES`] as a file would be.
pub(crate) fn given_instructions(given: &[(String, String)]) -> Vec<(String, String)> {
    given.iter().filter_map(|(name, text)| Some((name.clone(), cut_instructions(name, text)?))).collect()
}

fn cut_instructions(name: &str, text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return Some(text.to_string());
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}\n[{name} cut at {} KiB of {} KiB]", &text[..end], end >> 10, text.len() >> 10))
}

/// `prompt` without what names a tool of `known` that is not `offered`: a list item naming one
/// goes, a sentence naming one goes from its paragraph, and a line introducing a list ("…:")
/// whose items all went goes too. The model is never told of a tool it does not have.
pub(crate) fn without_absent_tools(prompt: &str, known: &[&str], offered: &[&str]) -> String {
    let absent: Vec<String> = known.iter().filter(|k| !offered.contains(k)).map(|k| format!("`{k}`")).collect();
    if absent.is_empty() {
        return prompt.to_string();
    }
    let names_absent = |s: &str| absent.iter().any(|a| s.contains(a.as_str()));
    let mut lines: Vec<String> = Vec::new();
    for line in prompt.lines() {
        if line.starts_with("- ") {
            if !names_absent(line) {
                lines.push(line.to_string());
            }
            continue;
        }
        if !names_absent(line) {
            lines.push(line.to_string());
            continue;
        }
        let kept: Vec<&str> = line.split_inclusive(". ").filter(|s| !names_absent(s)).collect();
        lines.push(kept.concat().trim_end().to_string());
    }
    // A list's introduction with no items left after it goes.
    let mut out: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map(String::as_str).unwrap_or("");
        if line.ends_with(':') && !next.starts_with("- ") {
            continue;
        }
        out.push(line.clone());
    }
    out.join("\n")
}

/// Builds the system prompt.
pub fn build(parts: &PromptParts) -> String {
    let mut out = parts.base.trim().to_string();
    for (name, text) in &parts.instructions {
        out.push_str(&format!("\n\n# Project instructions ({name})\n\n{text}"));
    }
    match parts.memory.as_deref().map(str::trim) {
        Some("") => out.push_str("\n\n# Memory\n\nNothing is remembered yet."),
        Some(memory) => out.push_str(&format!("\n\n# Memory\n\n{memory}")),
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_names_only_the_tools_offered() {
        let known = [
            "memory_search_nodes",
            "memory_open_nodes",
            "memory_create_entities",
            "memory_add_observations",
            "memory_create_relations",
            "memory_delete_observations",
            "history_search",
            "history_read",
            "context_status",
        ];
        assert_eq!(without_absent_tools(DEFAULT_SYSTEM_PROMPT, &known, &known), DEFAULT_SYSTEM_PROMPT);
        let some = without_absent_tools(DEFAULT_SYSTEM_PROMPT, &known, &["memory_search_nodes", "memory_open_nodes"]);
        assert!(some.contains("`memory_search_nodes`") && some.contains("Use the memory tools:"), "{some}");
        for gone in
            ["memory_create_entities", "memory_delete_observations", "history_search", "history_read", "context_status"]
        {
            assert!(!some.contains(gone), "{gone}: {some}");
        }
        assert!(some.contains("Long conversations are compacted"), "the paragraph stays, less the sentence: {some}");
        let none = without_absent_tools(DEFAULT_SYSTEM_PROMPT, &known, &[]);
        assert!(!none.contains("Use the memory tools:"), "{none}");
        assert!(!none.contains("memory_") && !none.contains("history_") && !none.contains("context_"), "{none}");
    }

    #[test]
    fn project_files_and_memory_follow_the_base_prompt_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules\n").unwrap();
        let p = build(&PromptParts {
            base: "base".into(),
            instructions: read_instructions(dir.path()),
            memory: Some("- style: short".into()),
        });
        assert_eq!(
            p,
            "base\n\n# Project instructions (AGENTS.md)\n\nagent rules\n\n# Project instructions (CLAUDE.md)\n\n\
             claude rules\n\n# Memory\n\n- style: short"
        );
        std::fs::write(dir.path().join("AGENTS.md"), "é".repeat(MAX_INSTRUCTIONS_BYTES)).unwrap();
        let p = build(&PromptParts { base: "b".into(), instructions: read_instructions(dir.path()), memory: None });
        assert!(p.contains("\n[AGENTS.md cut at 64 KiB of 128 KiB]\n"), "{}", p.len());
    }
}
