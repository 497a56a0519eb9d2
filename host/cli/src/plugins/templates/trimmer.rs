//! A trimmer plugin for Seshat.
use seshat_plugin_sdk::trimmer::{Budget, Edit, Error, HeadTail, MessageMeta, PartKind, PartMeta, Trimmer};

/// Keeps the first 2 KiB and the last 1 KiB of every unprotected tool result over 16 KiB.
struct Plugin;

impl Trimmer for Plugin {
    fn trim(messages: Vec<MessageMeta>, parts: Vec<PartMeta>, _budget: Budget) -> Result<Vec<Edit>, Error> {
        let protected = |id: u64| messages.iter().any(|m| m.id == id && m.protected);
        Ok(parts
            .iter()
            .filter(|p| p.kind == PartKind::ToolResult && p.bytes > 16 * 1024 && !protected(p.message))
            .map(|p| Edit::HeadTail(HeadTail { message: p.message, part: p.index, head: 2048, tail: 1024 }))
            .collect())
    }
}

seshat_plugin_sdk::export_trimmer!(Plugin);
