//! Seshat's default trimmer plugin: the policy (`seshat_outcomes::trim`) chooses which tool results to shorten (from
//! metadata alone); each is read and keeps its head, its tail and the lines that carry its outcome.

use seshat_outcomes::trim as policy;

use std::collections::HashSet;

use seshat_plugin_sdk::trimmer::{
    Budget, Edit, Error, HeadTail, MessageMeta, PartKind, PartMeta, Trimmer, keep_outcomes, read_part,
};

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
        // Only the results chosen are read: for each, its head, its tail and the lines that
        // carry its outcome, in the bytes a head and a tail would have kept.
        Ok(cuts
            .into_iter()
            .filter_map(|c| match read_part(c.message, c.part) {
                Some(content) => keep_outcomes(c.message, c.part, &content, c.head + c.tail),
                None => Some(Edit::HeadTail(HeadTail { message: c.message, part: c.part, head: c.head, tail: c.tail })),
            })
            .collect())
    }
}

seshat_plugin_sdk::export_trimmer!(DefaultTrimmer);
