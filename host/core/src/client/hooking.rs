//! The agent's lifecycle hooks: where each event is told to the hooks ([`crate::hooks`]) and
//! what their decisions do. A hook changes no stored message: a block stops what it was told
//! about before anything is stored or sent (or becomes a tool's error result), context is stored
//! as a message of its own after the user's (marked as the hooks', counted in the window), and a
//! `pre_compact` hook's instructions or skip apply to that compaction only.

use serde_json::Value;

use super::agent::Agent;
use super::{Error, Result};
use crate::conversation::{MessageStatus, NewMessage, Part, Role};
use crate::hooks::{Data, HookEvent, Outcome};

/// How hook context is marked in the message that carries it.
pub const CONTEXT_MARK: &str = "[context from hooks]";

impl Agent {
    /// Runs the hooks of `data`'s event (those for its tool, when it names one); what failed is
    /// told at the next turn.
    pub(super) fn fire(&mut self, data: &Data<'_>) -> Outcome {
        if !self.hooks.any(data.event()) {
            return Outcome::default();
        }
        let seq = self.client.store().session(&self.session).map(|s| s.message_count).unwrap_or(0);
        let payload = crate::hooks::payload(&self.session, &self.project, seq, data);
        let outcome = self.hooks.run(&payload, data.tool());
        self.notices.extend(outcome.failures.iter().cloned());
        outcome
    }

    /// The session was opened (`source`: new, resumed, fork): the `session_start` hooks' context
    /// goes with the next user message.
    pub(super) fn started(mut self, source: &str) -> Self {
        let untrusted: Vec<String> = self.hooks.untrusted().iter().map(ToString::to_string).collect();
        self.notices.extend(untrusted);
        let outcome = self.fire(&Data::SessionStart { source });
        self.hook_context.extend(outcome.context);
        self
    }

    /// The `user_prompt` hooks on `input`, before anything is stored: a block is an error; the
    /// context they give (with what `session_start` gave) is returned, to store after the message.
    pub(super) fn prompted(&mut self, input: &str) -> Result<Vec<String>> {
        let outcome = self.fire(&Data::UserPrompt { prompt: input });
        if let Some(why) = outcome.blocked {
            return Err(Error::Blocked(format!("{why}. Nothing was stored or sent")));
        }
        let mut context = std::mem::take(&mut self.hook_context);
        context.extend(outcome.context);
        Ok(context)
    }

    /// Stores the hooks' `context` after the user's message: a message of its own, marked, sent
    /// with the request (and counted in the window).
    pub(super) fn add_context(&mut self, context: &[String]) -> Result<()> {
        if context.is_empty() {
            return Ok(());
        }
        let text = format!("{CONTEXT_MARK}\n{}", context.join("\n\n"));
        let message = NewMessage {
            role: Role::User,
            parts: vec![Part::Text { text }],
            usage: None,
            status: MessageStatus::Synthetic,
        };
        self.client.store().append(&self.session, &[message])?;
        Ok(())
    }

    /// The `pre_tool` hooks on a call: `Err` with the reason when one blocks it (the tool's error
    /// result); the context they give, to add to its result.
    pub(super) fn before_tool(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
    ) -> std::result::Result<Vec<String>, String> {
        let outcome = self.fire(&Data::PreTool { call_id: id, tool: name, arguments });
        match outcome.blocked {
            Some(why) => Err(why),
            None => Ok(outcome.context),
        }
    }

    /// The `post_tool` hooks on a call's result (and `memory_write` after a memory tool that
    /// writes): the result as the model is to read it.
    pub(super) fn after_tool(
        &mut self,
        (id, name, arguments): (&str, &str, &str),
        mut content: String,
        mut is_error: bool,
        mut context: Vec<String>,
    ) -> (String, bool) {
        let outcome = self.fire(&Data::PostTool { call_id: id, tool: name, arguments, result: &content, is_error });
        context.extend(outcome.context);
        if let Some(why) = outcome.blocked {
            is_error = true;
            content.push_str(&format!("\n\n{why}"));
        }
        if !context.is_empty() {
            content.push_str(&format!("\n\n{CONTEXT_MARK}\n{}", context.join("\n\n")));
        }
        // (The chat offers the memory tools under a prefix.)
        let plain = name.strip_prefix(crate::memory::tools::AGENT_PREFIX).unwrap_or(name);
        let writes_memory = crate::memory::tools::definitions().iter().any(|d| d.name == plain && !d.read_only);
        if writes_memory && !is_error {
            self.fire(&Data::MemoryWrite { tool: name, arguments });
        }
        (content, is_error)
    }

    /// The `post_compact` hooks on a compaction's report.
    pub(super) fn compacted(&mut self, report: &crate::compaction::Report) {
        if self.hooks.any(HookEvent::PostCompact) {
            let report = serde_json::to_value(report).unwrap_or(Value::Null);
            self.fire(&Data::PostCompact { report });
        }
    }

    /// The `pre_compact` hooks, as the compaction asks them before a pass (none configured: not
    /// asked).
    pub(super) fn pre_compact(&self) -> Option<crate::compaction::PreCompact> {
        if !self.hooks.any(HookEvent::PreCompact) {
            return None;
        }
        let hooks = self.hooks.clone();
        let (session, project) = (self.session.clone(), self.project.clone());
        Some(crate::compaction::PreCompact(std::sync::Arc::new(move |starting: &crate::compaction::Starting| {
            let trigger = match starting.trigger {
                crate::store::CompactionTrigger::Manual => "manual",
                _ => "auto",
            };
            let data = Data::PreCompact { trigger, tokens: starting.tokens, window: starting.window };
            let payload = crate::hooks::payload(&session, &project, 0, &data);
            let outcome = hooks.run(&payload, None);
            for failure in &outcome.failures {
                tracing::warn!("{failure}");
            }
            // A required hook that failed skips the compaction as a hook's skip does.
            let skip = match outcome.blocked {
                Some(why) => Some(format!("skipped: {why}")),
                None => outcome.skip.then(|| "a pre_compact hook asked to skip this compaction".to_string()),
            };
            crate::compaction::PreCompactAnswer::new(skip, outcome.instructions)
        })))
    }

    /// The `fork` hooks, then the fork's `session_start`.
    pub(super) fn forked(&mut self, parent: &str, forked: &crate::store::Forked) {
        self.fire(&Data::Fork { parent, at_seq: forked.at, fork: &forked.session.id });
        let outcome = self.fire(&Data::SessionStart { source: "fork" });
        // The fork's context replaces what opening its parent gave.
        self.hook_context = outcome.context;
    }

    /// The `rewind` hooks.
    pub(super) fn rewound(&mut self, rewound: &crate::store::Rewound) {
        self.fire(&Data::Rewind { from_seq: rewound.from_seq, through_seq: rewound.through_seq });
    }
}

impl Drop for Agent {
    /// The front end closes the session: the `session_end` hooks, and the extractor when it reads
    /// at the end.
    fn drop(&mut self) {
        if self.hooks.any(HookEvent::SessionEnd) {
            self.fire(&Data::SessionEnd);
        }
        // Read by the extractor once, at the end, when it is set to.
        if self.extraction.as_ref().is_some_and(|e| e.at() == crate::config::ExtractAt::SessionEnd)
            && let Err(e) = self.extract(crate::plugins::ExtractMoment::SessionEnd)
        {
            tracing::warn!("memory extraction at the session's end failed (it will be read again next time): {e}");
        }
    }
}
