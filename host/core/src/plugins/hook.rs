//! Hook plugins (0.4.0): told a moment of a session's life — the same JSON payload a command hook
//! reads — they answer go on, block with a reason, add context, or (before a compaction) give its
//! summary instructions or skip it. They run sandboxed like every kind; which events and tools
//! they are told of is the user's configuration (`[[hooks.<event>]] plugin = "<id>"`).

use seshat_protocol::hooks::{HookDecision, HookEvent, HookPayload, Verdict};

use super::bindings::{Versioned, v0_4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::sandbox::State;
use super::{PluginKind, Result};

use v0_4::hook::exports::seshat::plugin::on_event as wit;

versioned_kind! {
    /// Hooks (from 0.4.0): a payload in, a decision out. Earlier versions have no hook world, so
    /// a component claiming one is linked against 0.4.0's and fails there, naming what it lacks.
    Hook: PluginKind::Hook, host (),
    v0_1 (v0_4::hook::Hook, v0_4::hook::HookPre<State<()>>),
    v0_2 (v0_4::hook::Hook, v0_4::hook::HookPre<State<()>>),
    v0_3 (v0_4::hook::Hook, v0_4::hook::HookPre<State<()>>),
    v0_4 (v0_4::hook::Hook, v0_4::hook::HookPre<State<()>>)
}

/// A loaded hook, ready to call.
pub struct HookPlugin {
    handle: Handle<Hook>,
}

shared_accessors!(HookPlugin);

impl HookPlugin {
    /// Tells the hook `payload` (for a tool event, `tool` names the tool) and returns its
    /// decision. A decision whose texts are larger than a request could carry is refused.
    pub fn handle(&mut self, payload: &HookPayload, tool: Option<&str>) -> Result<HookDecision> {
        let json = serde_json::to_string(payload).unwrap_or_else(|_| "{}".into());
        let Some(event) = event(payload.event) else {
            return Err(self
                .handle
                .invalid(format!("seshat:plugin@0.4.0 has no `{}` event to tell a hook plugin of", payload.event)));
        };
        let record = wit::Payload {
            event,
            session: payload.session.clone(),
            project: payload.project.clone(),
            seq: payload.seq,
            tool: tool.map(str::to_string),
            json,
        };
        let decision = self.handle.call(|store, bindings| match bindings {
            Versioned::V0_1(b) | Versioned::V0_2(b) | Versioned::V0_3(b) | Versioned::V0_4(b) => {
                b.seshat_plugin_on_event().call_handle(&mut *store, &record)
            }
        })?;
        for (name, text) in
            [("reason", &decision.reason), ("context", &decision.context), ("instructions", &decision.instructions)]
        {
            if text.as_ref().is_some_and(|t| t.len() > MAX_TEXT) {
                return Err(self.handle.invalid(format!(
                    "its decision's {name} is longer than {MAX_TEXT} bytes: a hook's texts go into a request, \
                     keep them short"
                )));
            }
        }
        Ok(HookDecision {
            decision: match decision.verdict {
                wit::Verdict::Proceed => Verdict::Continue,
                wit::Verdict::Block => Verdict::Block,
            },
            reason: decision.reason,
            context: decision.context,
            instructions: decision.instructions,
            skip: decision.skip,
        })
    }
}

/// The longest text a hook plugin's decision may carry (a command's output is capped alike).
const MAX_TEXT: usize = 1 << 20;

/// The event in the contract's enum (none for an event added after it).
fn event(event: HookEvent) -> Option<wit::Event> {
    Some(match event {
        HookEvent::SessionStart => wit::Event::SessionStart,
        HookEvent::UserPrompt => wit::Event::UserPrompt,
        HookEvent::PreTool => wit::Event::PreTool,
        HookEvent::PostTool => wit::Event::PostTool,
        HookEvent::PreCompact => wit::Event::PreCompact,
        HookEvent::PostCompact => wit::Event::PostCompact,
        HookEvent::Fork => wit::Event::Fork,
        HookEvent::Rewind => wit::Event::Rewind,
        HookEvent::SessionEnd => wit::Event::SessionEnd,
        HookEvent::MemoryWrite => wit::Event::MemoryWrite,
        _ => return None,
    })
}
