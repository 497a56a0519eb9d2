// A trimmer built without the SDK against this crate's `wit-generated`: a copy of the frozen
// `wit/v0.2.0` WIT (written by tests/plugins/build.rs), using what 0.2.0 added — the
// `keep-lines` edit and the `log` interface. It keeps the first and the last line of every
// unprotected tool result longer than 1,000 bytes and of more than two lines, and logs each edit.

wit_bindgen::generate!({ path: "wit-generated", world: "trimmer" });

use seshat::plugin::log::{Level, log};
use seshat::plugin::trim_types::{Budget, Edit, History, KeepLines, LineRange};

struct Plugin;

impl exports::seshat::plugin::trim::Guest for Plugin {
    fn trim(history: History, _budget: Budget) -> Result<Vec<Edit>, seshat::plugin::types::Error> {
        let mut edits = Vec::new();
        for j in 0..history.part_messages.len() {
            let message = history.part_messages[j];
            let at = history.message_ids.iter().position(|id| *id == message).unwrap_or(0);
            if history.part_kinds[j] != 2 || history.part_bytes[j] <= 1_000 || history.message_protected[at] != 0 {
                continue;
            }
            let part = history.part_indexes[j];
            let Some(content) = seshat::plugin::trim_host::read_part(message, part) else { continue };
            // Lines split at `\n`, 0-based, `end` exclusive.
            let lines = content.split('\n').count() as u32;
            if lines > 2 {
                log(Level::Info, &format!("keeping the first and the last of {lines} lines of message {message}"));
                edits.push(Edit::KeepLines(KeepLines {
                    message,
                    part,
                    lines: vec![LineRange { start: 0, end: 1 }, LineRange { start: lines - 1, end: lines }],
                }));
            }
        }
        Ok(edits)
    }
}

export!(Plugin);
