//! Seshat's default trimmer plugin: the [`policy`] behind the SDK's trimmer trait.

pub mod policy;

use std::collections::HashSet;

use seshat_plugin_sdk::trimmer::{Budget, Edit, Error, HeadTail, MessageMeta, PartKind, PartMeta, Trimmer};

struct DefaultTrimmer;

impl Trimmer for DefaultTrimmer {
    fn trim(messages: Vec<MessageMeta>, parts: Vec<PartMeta>, budget: Budget) -> Result<Vec<Edit>, Error> {
        let protected: HashSet<u64> = messages.iter().filter(|m| m.protected).map(|m| m.id).collect();
        let candidates: Vec<policy::Candidate> = parts
            .iter()
            .filter(|p| p.kind == PartKind::ToolResult && !protected.contains(&p.message))
            .map(|p| policy::Candidate { message: p.message, part: p.index, bytes: p.bytes, tokens: p.tokens })
            .collect();
        let cuts = policy::decide(&candidates, budget.current_tokens, budget.target_tokens, budget.window_tokens);
        Ok(cuts
            .into_iter()
            .map(|c| Edit::HeadTail(HeadTail { message: c.message, part: c.part, head: c.head, tail: c.tail }))
            .collect())
    }
}

seshat_plugin_sdk::export_trimmer!(DefaultTrimmer);
