// A trimmer built without the SDK against this crate's `wit-generated`: a copy of the frozen
// `wit/v0.1.0` WIT (for `semver-0-1-1` and `version-0-3-0`, which include this file, the same
// with the version changed; written by tests/plugins/build.rs). It keeps a 100-byte head and tail
// of every unprotected tool result longer than 1,000 bytes. Plain comments: an included file
// cannot carry inner doc comments.

wit_bindgen::generate!({ path: "wit-generated", world: "trimmer" });

use seshat::plugin::trim_types::{Budget, Edit, HeadTail, History};

struct Plugin;

impl exports::seshat::plugin::trim::Guest for Plugin {
    fn trim(history: History, _budget: Budget) -> Result<Vec<Edit>, seshat::plugin::types::Error> {
        let protected: Vec<u64> = history
            .message_ids
            .iter()
            .zip(&history.message_protected)
            .filter(|(_, p)| **p != 0)
            .map(|(id, _)| *id)
            .collect();
        let mut edits = Vec::new();
        for j in 0..history.part_messages.len() {
            let message = history.part_messages[j];
            if history.part_kinds[j] == 2 && history.part_bytes[j] > 1_000 && !protected.contains(&message) {
                edits.push(Edit::HeadTail(HeadTail { message, part: history.part_indexes[j], head: 100, tail: 100 }));
            }
        }
        Ok(edits)
    }
}

export!(Plugin);
