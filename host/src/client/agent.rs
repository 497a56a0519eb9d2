//! The turn loop: a user message in, the model called (after the compaction pipeline) until it
//! stops asking for tools, every message stored as it happens.
//!
//! Stored per turn: the user's message; each assistant answer (status `interrupted` when it was
//! cut short — Ctrl-C, a dropped or stalled stream — with what arrived); each tool result; and a
//! synthetic result (status `synthetic`) for every tool call that was not run, so the next
//! request is always valid.

use std::path::PathBuf;

use serde::Serialize;

use super::tools::Tools;
use super::{Client, Error, Result, prompt};
use crate::compaction::{Frame, Report};
use crate::plugins::{StopReason, StreamEvent, ToolSpec};
use crate::providers::{self, Answer, Call, Cancel, SharedProvider};
use crate::store::{MessageStatus, NewMessage, NewSession, Part, Role, Usage};

/// Which session a chat continues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// A new session.
    #[default]
    New,
    /// The project's most recent session (a new one if there is none).
    Continue,
    /// The session with this id (or unique prefix).
    Resume(String),
}

/// How an [`Agent`] runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The session.
    pub session: SessionChoice,
    /// The project key.
    pub project: String,
    /// The project directory (for `AGENTS.md` / `CLAUDE.md`), if instructions are read.
    pub project_dir: Option<PathBuf>,
    /// The model (default: the resumed session's, else the provider's first).
    pub model: Option<String>,
    /// The context window, overriding what the provider knows.
    pub window: Option<u64>,
    /// Largest answer (default: the model's, at most 16,384).
    pub max_output_tokens: Option<u32>,
    /// Most model calls per turn.
    pub max_iterations: u32,
    /// The base system prompt (default: Seshat's own).
    pub system_prompt: Option<String>,
    /// Stream answers.
    pub stream: bool,
    /// Token budget of the memory context snapshotted at session start.
    pub memory_budget: usize,
    /// Provider options, a JSON object.
    pub provider_options: String,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            session: SessionChoice::New,
            project: String::new(),
            project_dir: None,
            model: None,
            window: None,
            max_output_tokens: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            system_prompt: None,
            stream: true,
            memory_budget: crate::memory::DEFAULT_CONTEXT_TOKENS,
            provider_options: "{}".into(),
        }
    }
}

/// Model calls per turn unless configured.
pub const DEFAULT_MAX_ITERATIONS: u32 = 25;
/// Answers are capped at this many tokens unless configured (the rest of the window is for context).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 16_384;

/// What the chat loop reports while a turn runs (the CLI prints it; tests record it).
pub trait Observer {
    /// A streamed event (text as it arrives).
    fn event(&mut self, _event: &StreamEvent) {}
    /// Compaction ran before a model call.
    fn compaction(&mut self, _report: &Report) {}
    /// A tool is about to run.
    fn tool_call(&mut self, _name: &str, _arguments: &str) {}
    /// A tool returned.
    fn tool_result(&mut self, _name: &str, _content: &str, _is_error: bool) {}
    /// Something the user should know.
    fn warning(&mut self, _message: &str) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

/// How full the window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContextUse {
    /// Tokens in use (the provider's figure when it reported one).
    pub used: u64,
    /// The model's window.
    pub window: u64,
}

impl ContextUse {
    /// `ctx 63% · 124k/198k`.
    pub fn status_line(&self) -> String {
        let pct = (self.used * 100).checked_div(self.window).unwrap_or(0);
        format!("ctx {pct}% · {}/{}", short_tokens(self.used), short_tokens(self.window))
    }
}

fn short_tokens(n: u64) -> String {
    if n >= 10_000 { format!("{}k", (n + 500) / 1000) } else { n.to_string() }
}

/// What one turn did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnOutcome {
    /// The session.
    pub session: String,
    /// The final answer's text.
    pub text: String,
    /// Model calls made.
    pub iterations: u32,
    /// Usage summed over the turn's calls.
    pub usage: Usage,
    /// Why the last call stopped.
    pub stop_reason: Option<StopReason>,
    /// The turn was cut short (Ctrl-C, a dropped stream); what arrived is stored.
    pub interrupted: bool,
    /// The iteration cap ended the turn while the model still wanted tools.
    pub hit_iteration_cap: bool,
    /// The error that cut the turn short.
    pub error: Option<String>,
    /// Its stable code (`interrupted`, `timeout`, `connection_failed`, …).
    pub error_code: Option<String>,
    /// Compactions that ran.
    pub compactions: Vec<Report>,
    /// Window use after the turn.
    pub context: Option<ContextUse>,
}

impl TurnOutcome {
    /// Records why the turn stopped early.
    fn cut_short(&mut self, code: &str, message: String) {
        self.interrupted = true;
        self.error_code = Some(code.to_string());
        self.error = Some(message);
    }
}

/// A chat session bound to a provider, a model and tools.
pub struct Agent {
    client: Client,
    provider: SharedProvider,
    tools: Tools,
    specs: Vec<ToolSpec>,
    session: String,
    project: String,
    model: String,
    window: Option<u64>,
    max_output: u32,
    max_iterations: u32,
    /// The system prompt and tool schemas, built once at open.
    frame: Frame,
    stream: bool,
    extra: String,
    same_model_after: u64,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("session", &self.session).field("model", &self.model).finish_non_exhaustive()
    }
}

impl Agent {
    /// Opens (or creates) the session and prepares the system prompt and tools.
    pub fn open(mut client: Client, provider: SharedProvider, tools: Tools, options: AgentOptions) -> Result<Self> {
        let (provider_name, first_model) = {
            let p = provider.lock();
            (p.name().to_string(), p.models().first().map(|m| m.id.clone()))
        };
        let existing = match &options.session {
            SessionChoice::New => None,
            SessionChoice::Continue => client.store().latest_session(&options.project)?,
            SessionChoice::Resume(prefix) => {
                let id = client.store().resolve(prefix)?;
                Some(client.store().session(&id)?)
            }
        };
        let resumed_model = existing
            .as_ref()
            .filter(|s| s.provider.as_deref() == Some(provider_name.as_str()))
            .and_then(|s| s.model.clone());
        let Some(model) = options.model.clone().or(resumed_model).or(first_model) else {
            return Err(Error::Provider(providers::Error::NotConfigured(format!(
                "provider `{provider_name}` knows no models: pass --model or set model under [chat] in config.toml"
            ))));
        };
        let info = provider.lock().model(&model).cloned();
        let window = options.window.or(info.as_ref().map(|m| m.context_window).filter(|&w| w > 0));
        let model_max = info.as_ref().map_or(DEFAULT_MAX_OUTPUT_TOKENS, |m| m.max_output_tokens.max(1));
        let max_output = options
            .max_output_tokens
            .map_or(model_max.min(DEFAULT_MAX_OUTPUT_TOKENS), u64::from)
            .min(u64::from(u32::MAX)) as u32;
        let session = match existing {
            Some(s) => {
                client.store().set_session_model(&s.id, Some(&provider_name), Some(&model), window)?;
                s.id
            }
            None => {
                let s = client.store().create_session(NewSession {
                    project: options.project.clone(),
                    provider: Some(provider_name),
                    model: Some(model.clone()),
                    context_window: window,
                    metadata: None,
                })?;
                client.store().snapshot_memory_context(&s.id, Some(&options.project), options.memory_budget)?;
                s.id
            }
        };
        let info = client.store().session(&session)?;
        let memory = info.metadata["memory_context"]["text"].as_str().map(str::to_string);
        let same_model_after = info.metadata["model_since"].as_u64().unwrap_or(0);
        let system = prompt::build(&prompt::PromptParts {
            base: options.system_prompt.clone().unwrap_or_else(|| prompt::DEFAULT_SYSTEM_PROMPT.to_string()),
            project_dir: options.project_dir.clone(),
            memory,
        });
        let specs = tools.specs();
        let frame = Frame {
            system,
            tools: serde_json::to_string(
                &specs.iter().map(|s| (&s.name, &s.description, &s.parameters)).collect::<Vec<_>>(),
            )
            .unwrap_or_default(),
        };
        Ok(Agent {
            client,
            provider,
            tools,
            specs,
            session,
            project: options.project,
            model,
            window,
            max_output,
            max_iterations: options.max_iterations.max(1),
            frame,
            stream: options.stream,
            extra: options.provider_options,
            same_model_after,
        })
    }

    /// The session's id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The system prompt sent with every call.
    pub fn system_prompt(&self) -> &str {
        &self.frame.system
    }

    /// The tools offered.
    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The provider.
    pub fn provider(&self) -> &SharedProvider {
        &self.provider
    }

    /// The client (store and policies).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// The request frame (system prompt and tool schemas), as counted in the window.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    fn settings(&self) -> crate::compaction::Settings {
        self.client.settings(&self.model, self.window, u64::from(self.max_output))
    }

    /// How full the window is now.
    pub fn context_use(&mut self) -> Result<Option<ContextUse>> {
        let Some(window) = self.window else { return Ok(None) };
        let view = self.client.live_view(&self.session)?;
        Ok(Some(ContextUse { used: crate::compaction::current_use(&self.frame, &view), window }))
    }

    /// What fills the window, by part (`/context`): estimated tokens per kind of content.
    pub fn context_breakdown(&mut self) -> Result<Vec<(String, u64)>> {
        use crate::window::estimate_text;
        let (system, frame) = (&self.frame.system, &self.frame);
        let memory_at = system.find("\n\n# Memory\n\n").unwrap_or(system.len());
        let mut rows = vec![
            ("system prompt and instructions".to_string(), estimate_text(&system[..memory_at])),
            ("memory context".to_string(), estimate_text(&system[memory_at..])),
            (format!("tool schemas ({})", self.specs.len()), estimate_text(&frame.tools)),
        ];
        let view = self.client.live_view(&self.session)?;
        let mut kinds: Vec<(String, u64)> = Vec::new();
        for e in &view.entries {
            for p in &e.parts {
                let label = match (e.seq, p) {
                    (None, _) => "summary of earlier turns".to_string(),
                    (_, Part::Text { .. }) => format!("{} text", e.role.as_str()),
                    (_, other) => other.kind().replace('_', " ") + "s",
                };
                let tokens = crate::window::estimate_parts(std::slice::from_ref(p));
                match kinds.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, t)) => *t += tokens,
                    None => kinds.push((label, tokens)),
                }
            }
        }
        rows.extend(kinds);
        Ok(rows)
    }

    /// Compacts now (`/compact`), ignoring the failure breaker.
    pub fn compact(&mut self) -> Result<Report> {
        let settings = self.settings();
        self.client.compact(&self.session, &self.frame, &settings, false)
    }

    /// Runs one turn: stores `input`, then calls the model (and tools) until it answers, the
    /// iteration cap is reached, or the turn is cancelled.
    pub fn turn(&mut self, input: &str, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        self.client.store().append(&self.session, &[NewMessage::text(Role::User, input)])?;
        self.run(cancel, observer)
    }

    /// Continues the session without a new user message (after an interrupted turn, say).
    pub fn run(&mut self, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        let mut out = TurnOutcome { session: self.session.clone(), ..TurnOutcome::default() };
        loop {
            if out.iterations >= self.max_iterations {
                out.hit_iteration_cap = true;
                observer.warning(&format!(
                    "stopped after {} model calls in one turn (max_iterations); send a message to go on",
                    self.max_iterations
                ));
                break;
            }
            let settings = self.settings();
            let prepared = self.client.prepare(&self.session, &self.frame, &settings)?;
            for w in &prepared.warnings {
                observer.warning(w);
            }
            if let Some(report) = &prepared.compaction {
                observer.compaction(report);
                out.compactions.push(report.clone());
            }
            out.iterations += 1;
            let call = Call {
                model: &self.model,
                system: Some(&self.frame.system),
                tools: &self.specs,
                messages: &prepared.messages,
                max_tokens: self.max_output,
                stream: self.stream,
                same_model_after: Some(self.same_model_after),
                extra: &self.extra,
            };
            let sent = {
                let mut p = self.provider.lock();
                let sent = p.send(&call, cancel, &mut |e| observer.event(e));
                for w in p.warnings.drain(..) {
                    observer.warning(&w);
                }
                sent
            };
            let answer = match sent {
                Ok(a) if !self.stream => {
                    // Show a whole answer the way a streamed one would have been shown.
                    for p in &a.parts {
                        if let Part::Text { text } = p {
                            observer.event(&StreamEvent::TextDelta { text: text.clone() });
                        }
                    }
                    a
                }
                Ok(a) => a,
                Err(e) if e.code() == "interrupted" => {
                    out.cut_short(e.code(), e.to_string());
                    break;
                }
                Err(e) => return Err(Error::Provider(e)),
            };
            let stop = self.store_answer(&answer, &mut out)?;
            if !stop {
                self.run_tools(&answer, cancel, observer)?;
                if cancel.is_cancelled() {
                    out.cut_short("interrupted", "interrupted while tools ran".into());
                    break;
                }
                continue;
            }
            break;
        }
        out.context = self.context_use()?;
        Ok(out)
    }

    /// Stores the answer; returns whether the turn is over.
    fn store_answer(&mut self, answer: &Answer, out: &mut TurnOutcome) -> Result<bool> {
        if let Some(u) = answer.usage {
            out.usage.input_tokens += u.input_tokens;
            out.usage.output_tokens += u.output_tokens;
            out.usage.cache_read_tokens += u.cache_read_tokens;
            out.usage.cache_creation_tokens += u.cache_creation_tokens;
            out.usage.context_tokens = u.context_tokens;
        }
        out.stop_reason.clone_from(&answer.stop_reason);
        out.text = answer.text();
        let status = if answer.error.is_some() { MessageStatus::Interrupted } else { MessageStatus::Complete };
        let calls: Vec<(String, String)> = answer
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
                _ => None,
            })
            .collect();
        let mut batch = Vec::new();
        if !answer.parts.is_empty() {
            batch.push(NewMessage { role: Role::Assistant, parts: answer.parts.clone(), usage: answer.usage, status });
        }
        if let Some(e) = &answer.error {
            out.cut_short(e.code(), e.to_string());
            if !calls.is_empty() {
                // The calls were never run: answer them now, in the same transaction.
                let parts = calls
                    .iter()
                    .map(|(id, name)| Part::ToolResult {
                        call_id: id.clone(),
                        content: format!("interrupted: `{name}` was not run because the answer was cut short"),
                        is_error: true,
                    })
                    .collect();
                batch.push(NewMessage { role: Role::Tool, parts, usage: None, status: MessageStatus::Synthetic });
            }
        }
        if !batch.is_empty() {
            self.client.store().append(&self.session, &batch)?;
        }
        Ok(answer.error.is_some() || calls.is_empty())
    }

    /// Runs the answer's tool calls and stores their results as one message.
    fn run_tools(&mut self, answer: &Answer, cancel: &Cancel, observer: &mut dyn Observer) -> Result<()> {
        let mut parts = Vec::new();
        let mut status = MessageStatus::Complete;
        for part in &answer.parts {
            let Part::ToolCall { id, name, arguments } = part else { continue };
            if cancel.is_cancelled() {
                status = MessageStatus::Synthetic;
                parts.push(Part::ToolResult {
                    call_id: id.clone(),
                    content: format!("interrupted: `{name}` was not run"),
                    is_error: true,
                });
                continue;
            }
            observer.tool_call(name, arguments);
            let reply = self.tools.call(self.client.store(), Some(&self.project), name, arguments);
            observer.tool_result(name, &reply.content, reply.is_error);
            parts.push(Part::ToolResult { call_id: id.clone(), content: reply.content, is_error: reply.is_error });
        }
        self.client.store().append(&self.session, &[NewMessage { role: Role::Tool, parts, usage: None, status }])?;
        Ok(())
    }
}
