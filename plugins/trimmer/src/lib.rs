//! Seshat's default trimmer plugin: the [`policy`] behind the SDK's trimmer trait.

pub mod policy;

use seshat_plugin_sdk::trimmer::{Budget, Edit, Error, HeadTail, MessageMeta, PartKind, Trimmer};

struct DefaultTrimmer;

impl Trimmer for DefaultTrimmer {
    fn trim(messages: Vec<MessageMeta>, budget: Budget) -> Result<Vec<Edit>, Error> {
        let candidates: Vec<policy::Candidate> = messages
            .iter()
            .filter(|m| !m.protected)
            .flat_map(|m| {
                m.parts.iter().enumerate().filter(|(_, p)| p.kind == PartKind::ToolResult).map(|(i, p)| {
                    policy::Candidate { message: m.id, part: i as u32, bytes: p.bytes, tokens: p.tokens }
                })
            })
            .collect();
        let cuts = policy::decide(&candidates, budget.current_tokens, budget.target_tokens, budget.window_tokens);
        Ok(cuts
            .into_iter()
            .map(|c| Edit::HeadTail(HeadTail { message: c.message, part: c.part, head: c.head, tail: c.tail }))
            .collect())
    }
}

seshat_plugin_sdk::export_trimmer!(DefaultTrimmer);
