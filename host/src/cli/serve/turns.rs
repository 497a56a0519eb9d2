//! The sessions `seshat serve` runs turns in: one agent per session, opened on its first turn and
//! kept; a turn (or a compaction) runs in a thread of its own with the agent moved into it, so a
//! second `turn/start` on that session meanwhile is `session_busy`. A turn streams notifications
//! and ends with `turn/completed`; a tool the client registered is run by asking the client
//! (`tool/call`) and waiting for its answer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};
use seshat::client::{Agent, Observer, SessionChoice, Tool};
use seshat::compaction::Report;
use seshat::plugins::{StreamEvent, ToolSpec};
use seshat::providers::Cancel;

use super::rpc::{Outbox, Pending, RpcError};
use super::{ClientSetup, Context};

/// One session's agent and what runs in it.
#[derive(Default)]
struct Slot {
    /// The agent, when no thread holds it.
    agent: Option<Agent>,
    /// The thread running a turn or a compaction, which hands the agent back.
    running: Option<JoinHandle<Option<Agent>>>,
    /// Set by that thread just before it answers (`turn/completed`, the compaction's result), so
    /// a request that follows the answer finds the session free.
    done: Arc<AtomicBool>,
    cancel: Cancel,
}

/// What a connection's turns need of it: the command's context, what the client registered,
/// where lines go, and the client's pending answers.
#[derive(Clone, Copy)]
pub(super) struct Link<'a> {
    pub(super) ctx: &'a Context,
    pub(super) setup: &'a ClientSetup,
    pub(super) outbox: &'a Outbox,
    pub(super) pending: &'a Pending,
}

/// The sessions with a turn or compaction in flight, across every connection of the server.
#[derive(Debug, Clone, Default)]
pub(super) struct Busy(Arc<Mutex<HashSet<String>>>);

impl Busy {
    /// Claims `session`; false when another connection holds it.
    fn claim(&self, session: &str) -> bool {
        self.0.lock().expect("never poisoned").insert(session.to_string())
    }
    fn release(&self, session: &str) {
        self.0.lock().expect("never poisoned").remove(session);
    }
}

/// The sessions with agents (of one connection).
pub(super) struct Turns {
    slots: HashMap<String, Slot>,
    next: u64,
    busy: Busy,
}

impl Turns {
    /// A connection's turns, sharing the server's `busy` sessions.
    pub(super) fn new(busy: Busy) -> Self {
        Turns { slots: HashMap::new(), next: 0, busy }
    }

    /// Whether `session` has a turn or compaction in flight (on this connection or another).
    pub(super) fn busy(&mut self, session: &str) -> bool {
        if self.busy.0.lock().expect("never poisoned").contains(session) && !self.slots.contains_key(session) {
            return true;
        }
        let Some(slot) = self.slots.get_mut(session) else { return false };
        if slot.running.as_ref().is_some_and(|h| h.is_finished() || slot.done.load(Ordering::Acquire)) {
            let handle = slot.running.take().expect("checked");
            slot.agent = handle.join().ok().flatten();
        }
        slot.running.is_some()
    }

    /// Drops a session's agent (it was deleted).
    pub(super) fn forget(&mut self, session: &str) {
        self.slots.remove(session);
    }

    /// The agent of `session`, opened on first use with what the client asked for.
    fn take_agent(&mut self, link: Link<'_>, session: &str) -> Result<Agent, RpcError> {
        let Link { ctx, setup, outbox, pending } = link;
        if self.busy(session) || !self.busy.claim(session) {
            return Err(RpcError::busy(session));
        }
        let slot = self.slots.entry(session.to_string()).or_default();
        if let Some(agent) = slot.agent.take() {
            return Ok(agent);
        }
        let flags = crate::cli::chat::AgentFlags {
            session: SessionChoice::Resume(session.to_string()),
            provider: setup.provider.clone(),
            model: setup.model.clone(),
            window: setup.window,
            max_output: None,
            no_auto_compact: setup.auto_compact == Some(false),
            summary_model: setup.summary_model.clone(),
            max_iterations: None,
            no_stream: false,
        };
        let tools: Vec<Box<dyn Tool>> = setup
            .tools
            .iter()
            .map(|spec| {
                Box::new(ClientTool {
                    spec: spec.clone(),
                    outbox: outbox.clone(),
                    pending: pending.clone(),
                    session: session.to_string(),
                }) as Box<dyn Tool>
            })
            .collect();
        let opened = crate::cli::chat::open_agent_with(ctx, &flags, tools);
        if !matches!(opened, Ok(Ok(_))) {
            self.busy.release(session);
        }
        match opened {
            Ok(Ok(agent)) => Ok(agent),
            Ok(Err(message)) => Err(RpcError::seshat("provider_not_configured", message)),
            Err(e) => {
                let code = e.downcast_ref::<seshat::client::Error>().map_or("open_failed", |e| e.code()).to_string();
                Err(RpcError::seshat(&code, format!("{e:#}")))
            }
        }
    }

    /// Starts a turn of `session` with the user's `text`; returns the turn's id at once.
    pub(super) fn start(&mut self, link: Link<'_>, session: &str, text: String) -> Result<u64, RpcError> {
        tracing::trace!(session, "turn/start");
        let mut agent = self.take_agent(link, session)?;
        let outbox = link.outbox;
        self.next += 1;
        let turn = self.next;
        let slot = self.slots.get_mut(session).expect("take_agent made the slot");
        slot.cancel = Cancel::default();
        let cancel = slot.cancel.clone();
        let done = Arc::new(AtomicBool::new(false));
        slot.done = done.clone();
        let (outbox, session_id) = (outbox.clone(), session.to_string());
        let busy = self.busy.clone();
        slot.running = Some(std::thread::spawn(move || {
            let mut notifier = Notifier { outbox: outbox.clone(), session: session_id.clone(), turn };
            let outcome = agent.turn(&text, &cancel, &mut notifier);
            let params = match outcome {
                Ok(o) => json!({"session": session_id, "turn": turn, "outcome": o}),
                Err(e) => json!({"session": session_id, "turn": turn, "outcome": {
                    "session": session_id, "error": e.to_string(), "error_code": e.code(), "interrupted": false}}),
            };
            busy.release(&session_id);
            done.store(true, Ordering::Release);
            outbox.notify("turn/completed", params);
            Some(agent)
        }));
        Ok(turn)
    }

    /// Compacts `session` now (with `instructions`); the answer to request `id` comes when done.
    pub(super) fn compact(
        &mut self,
        link: Link<'_>,
        session: &str,
        instructions: Option<String>,
        id: Value,
    ) -> Result<(), RpcError> {
        let mut agent = self.take_agent(link, session)?;
        let outbox = link.outbox;
        let slot = self.slots.get_mut(session).expect("take_agent made the slot");
        let outbox = outbox.clone();
        let done = Arc::new(AtomicBool::new(false));
        slot.done = done.clone();
        let (busy, session_id) = (self.busy.clone(), session.to_string());
        slot.running = Some(std::thread::spawn(move || {
            let report = agent.compact_with(false, instructions.as_deref());
            busy.release(&session_id);
            done.store(true, Ordering::Release);
            match report {
                Ok(report) => outbox.result(id, json!({"report": report})),
                Err(e) => outbox.error(id, RpcError::seshat(e.code(), e.to_string())),
            }
            Some(agent)
        }));
        Ok(())
    }

    /// Interrupts `session`'s turn; whether one was running.
    pub(super) fn interrupt(&mut self, session: &str) -> bool {
        let busy = self.busy(session);
        if let Some(slot) = self.slots.get(session).filter(|_| busy) {
            slot.cancel.cancel();
        }
        busy
    }

    /// Interrupts every turn in flight (the client went away).
    pub(super) fn interrupt_all(&mut self) {
        for slot in self.slots.values() {
            if slot.running.is_some() {
                slot.cancel.cancel();
            }
        }
    }

    /// Waits for every turn to store what it has.
    pub(super) fn join_all(&mut self) {
        for slot in self.slots.values_mut() {
            if let Some(handle) = slot.running.take() {
                let _ = handle.join();
            }
        }
    }
}

/// Streams a turn's progress to the client as notifications.
struct Notifier {
    outbox: Outbox,
    session: String,
    turn: u64,
}

impl Observer for Notifier {
    fn event(&mut self, event: &StreamEvent) {
        self.outbox.notify("turn/event", json!({"session": self.session, "turn": self.turn, "event": event}));
    }

    fn compaction(&mut self, report: &Report) {
        self.outbox.notify("turn/compaction", json!({"session": self.session, "turn": self.turn, "report": report}));
    }

    fn tool_call(&mut self, name: &str, arguments: &str) {
        self.outbox.notify(
            "turn/toolCall",
            json!({"session": self.session, "turn": self.turn, "name": name, "arguments": arguments}),
        );
    }

    fn tool_result(&mut self, name: &str, content: &str, is_error: bool) {
        self.outbox.notify(
            "turn/toolResult",
            json!({"session": self.session, "turn": self.turn, "name": name, "content": content, "isError": is_error}),
        );
    }

    fn warning(&mut self, message: &str) {
        self.outbox.notify("turn/warning", json!({"session": self.session, "turn": self.turn, "message": message}));
    }
}

/// A tool the client registered: run by asking the client.
struct ClientTool {
    spec: ToolSpec,
    outbox: Outbox,
    pending: Pending,
    session: String,
}

impl Tool for ClientTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(&mut self, arguments: &Value) -> Result<String, String> {
        let rx = self.outbox.request(
            &self.pending,
            "tool/call",
            json!({"session": self.session, "name": self.spec.name, "arguments": arguments}),
        );
        let Ok(answer) = rx.recv() else {
            return Err(format!("the client that registered `{}` went away before answering", self.spec.name));
        };
        if let Some(e) = answer.get("error") {
            return Err(e["message"].as_str().unwrap_or("the client's tool failed").to_string());
        }
        let result = &answer["result"];
        let content = result["content"].as_str().unwrap_or_default().to_string();
        if result["isError"] == true { Err(content) } else { Ok(content) }
    }
}
