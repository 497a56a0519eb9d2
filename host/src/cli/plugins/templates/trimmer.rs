//! A trimmer plugin for Seshat.
use seshat_plugin_sdk::trimmer::{Budget, Edit, Error, HeadTail, MessageMeta, PartKind, Trimmer};

/// Keeps the first 2 KiB and the last 1 KiB of every unprotected tool result over 16 KiB.
struct Plugin;

impl Trimmer for Plugin {
    fn trim(messages: Vec<MessageMeta>, _budget: Budget) -> Result<Vec<Edit>, Error> {
        let mut edits = Vec::new();
        for m in messages.iter().filter(|m| !m.protected) {
            for (i, p) in m.parts.iter().enumerate() {
                if p.kind == PartKind::ToolResult && p.bytes > 16 * 1024 {
                    edits.push(Edit::HeadTail(HeadTail { message: m.id, part: i as u32, head: 2048, tail: 1024 }));
                }
            }
        }
        Ok(edits)
    }
}

seshat_plugin_sdk::export_trimmer!(Plugin);
