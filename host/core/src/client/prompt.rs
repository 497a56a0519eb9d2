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
pub(crate) fn read_instructions(dir: &Path) -> Vec<(String, String)> {
    INSTRUCTION_FILES.iter().filter_map(|name| Some((name.to_string(), read_instruction_file(dir, name)?))).collect()
}

fn read_instruction_file(dir: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(name)).ok()?;
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
