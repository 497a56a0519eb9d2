//! The turn loop: a user message in, the model called (after the compaction pipeline) until it
//! stops asking for tools, every message stored as it happens.
//!
//! Stored per turn: the user's message; each assistant answer (status `interrupted` when it was
//! cut short — Ctrl-C, a dropped or stalled stream — with what arrived); each tool result; and a
//! synthetic result (status `synthetic`) for every tool call that was not run, so the next
//! request is always valid.

use std::path::PathBuf;

use super::sizing::{self, FrameParts, OutputAsk};
use super::tools::Tools;
use super::{Client, Error, Result, prompt};
use crate::compaction::{Frame, Progress, Report, Starting, Summarising};
use crate::conversation::{MessageStatus, NewMessage, Part, Role};
use crate::plugins::{Limit, StreamEvent, ToolSpec};
use crate::providers::{self, Answer, Call, Cancel, SharedProvider};
use crate::store::{ModelWindow, NewSession, WindowOrigin};
use crate::window::{self, Marks, WindowSource};
pub use seshat_protocol::turn::{ContextUse, TurnOutcome};

/// Which session a chat continues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
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
#[derive(Debug)]
pub struct AgentOptions {
    /// The session.
    pub session: SessionChoice,
    /// The project key.
    pub project: String,
    /// The project directory (for `AGENTS.md` / `CLAUDE.md`), if instructions are read.
    pub project_dir: Option<PathBuf>,
    /// The project's instructions as (file name, text), given instead of read from
    /// `project_dir` (a remote client's, read on its own machine).
    pub instructions: Option<Vec<(String, String)>>,
    /// The model (default: the resumed session's, else the provider's first).
    pub model: Option<String>,
    /// The context window, overriding what the provider knows.
    pub window: Option<u64>,
    /// A cap on the answer's room (`[chat] max_output_tokens`), clamped to what fits the window
    /// with a notice. By default the room is `min(the model's limit, 16,384, what lies above the
    /// threshold)`.
    pub max_output_tokens: Option<u32>,
    /// The answer's room exactly (`--max-output`): refused, naming the largest that fits, when it
    /// cannot fit the window.
    pub max_output: Option<u64>,
    /// Tools the user chose by name (`[chat] tools = [...]`): never left out on small windows.
    pub required_tools: std::collections::HashSet<String>,
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
    /// The hooks run at the session's events.
    pub hooks: crate::hooks::Hooks,
    /// The memory extractor (`[memory] extract`), when one is on.
    pub extraction: Option<super::extraction::Extraction>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            session: SessionChoice::New,
            project: String::new(),
            project_dir: None,
            instructions: None,
            model: None,
            window: None,
            max_output_tokens: None,
            max_output: None,
            required_tools: Default::default(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            system_prompt: None,
            stream: true,
            memory_budget: crate::memory::DEFAULT_CONTEXT_TOKENS,
            provider_options: "{}".into(),
            hooks: Default::default(),
            extraction: None,
        }
    }
}

/// What the chat loop reports while a turn runs (the CLI prints it; tests record it).
pub trait Observer {
    /// A streamed event (text as it arrives).
    fn event(&mut self, _event: &StreamEvent) {}
    /// A compaction is about to run before a model call (its report follows).
    fn compaction_started(&mut self, _starting: &Starting) {}
    /// Its trims did not make room: a summary of what it names is about to be written.
    fn compaction_summarising(&mut self, _summarising: &Summarising) {}
    /// Compaction ran before a model call.
    fn compaction(&mut self, _report: &Report) {}
    /// A tool is about to run.
    fn tool_call(&mut self, _call_id: &str, _name: &str, _arguments: &str) {}
    /// A tool returned.
    fn tool_result(&mut self, _call_id: &str, _name: &str, _content: &str, _is_error: bool) {}
    /// Something the user should know.
    fn warning(&mut self, _message: &str) {}
}

/// Passes a compaction's progress on to `observer`.
pub fn tell(observer: &mut dyn Observer, progress: Progress<'_>) {
    match progress {
        Progress::Starting(s) => observer.compaction_started(s),
        Progress::Summarising(s) => observer.compaction_summarising(s),
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

/// Model calls per turn unless configured.
pub(crate) const DEFAULT_MAX_ITERATIONS: u32 = 25;
/// An answer room below this after a refusal is not worth retrying with: compact instead.
const MIN_RETRY_OUTPUT: u64 = 256;

/// A chat session bound to a provider, a model and tools.
pub struct Agent {
    pub(super) client: Client,
    pub(super) provider: SharedProvider,
    pub(super) tools: Tools,
    pub(super) specs: Vec<ToolSpec>,
    pub(super) session: String,
    pub(super) project: String,
    pub(super) model: String,
    pub(super) window: u64,
    pub(super) window_source: WindowSource,
    pub(super) max_output: u32,
    /// What limits the answer's room (kept to size it again when the window changes).
    pub(super) output_ask: OutputAsk,
    pub(super) max_iterations: u32,
    /// The fixed parts of a request before fitting (kept to fit them again when the window
    /// changes).
    pub(super) frame_parts: FrameParts,
    /// The system prompt and tool schemas, fitted to the window at open (and when it changes).
    pub(super) frame: Frame,
    /// What the frame left out to fit the window.
    pub(super) left_out: Vec<String>,
    /// Warnings for the next turn's observer (an assumed window, a clamped cap).
    pub(super) notices: Vec<String>,
    /// Real tokens per estimated token for this model in this session (at least 1).
    pub(super) calibration: f64,
    /// The estimate's calibration per kind of content for this model (`calibration`'s source).
    pub(super) kinds: window::Calibration,
    pub(super) stream: bool,
    pub(super) extra: String,
    pub(super) same_model_after: u64,
    /// The turn's cancel, which also stops its compactions' summary calls.
    pub(super) cancel: Cancel,
    /// Holding the session's claim: the answer streaming is kept as a draft (see
    /// [`crate::store::Store::save_draft`]).
    pub(super) drafting: bool,
    /// What the turn in progress stored redacted, to send as it was written.
    pub(super) typed: super::typed::Typed,
    /// The background's own connection to the provider (summaries, filling the prompt cache),
    /// once background summaries are on.
    pub(super) background_provider: Option<SharedProvider>,
    /// The hooks run at the session's events.
    pub(super) hooks: std::sync::Arc<crate::hooks::Hooks>,
    /// Context the `session_start` hooks gave, added with the next user message.
    pub(super) hook_context: Vec<String>,
    /// The memory extractor, when one is on.
    pub(super) extraction: Option<super::extraction::Extraction>,
    /// How many messages the session held when this agent opened it (an extractor reading it
    /// for the first time starts after them).
    pub(super) opened_at: u64,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("session", &self.session).field("model", &self.model).finish_non_exhaustive()
    }
}

/// Whether an answer that ended without an error holds nothing: no text but blanks, no tool call.
fn is_empty(answer: &Answer) -> bool {
    answer.error.is_none()
        && answer.parts.iter().all(|p| match p {
            Part::Text { text } => text.trim().is_empty(),
            Part::ToolCall { .. } => false,
            _ => true,
        })
}

/// What a message costs beyond its text in a request (its role and framing), in tokens.
const MESSAGE_OVERHEAD: u64 = 4;

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
        let mut resumed_model = existing
            .as_ref()
            // (A session that records no provider — made by a program through the store — keeps its
            // model too.)
            .filter(|s| s.provider.as_deref().is_none_or(|p| p == provider_name))
            .and_then(|s| s.model.clone());
        // The models a server the user pointed Seshat at (a local one, say) serves: asked once,
        // and only when a choice below needs them.
        let served_once = std::cell::OnceCell::new();
        let served = || -> &Vec<String> {
            served_once.get_or_init(|| {
                let mut p = provider.lock();
                match p.base_configured() && p.discovers() {
                    true => p.discover(None).map(|(d, _)| d.models).unwrap_or_default(),
                    false => Vec::new(),
                }
            })
        };
        // A session resumed against such a server (an imported Codex session on a local server,
        // say) keeps its model only if the server serves it.
        if options.model.is_none()
            && let Some(m) = resumed_model.clone()
            && !served().is_empty()
            && !served().contains(&m)
        {
            let base = provider.lock().base_url().to_string();
            client.note(format!(
                "the session's model `{m}` is not one {base} serves: using another (name one to choose)"
            ));
            resumed_model = None;
        }
        // Without a model named: the one model the user configured for this provider, if exactly
        // one (`[providers.llamacpp.models.local]`)…
        let configured_one = match provider.lock().configured_models().as_slice() {
            [one] if options.model.is_none() && resumed_model.is_none() => Some(one.clone()),
            _ => None,
        };
        // …else, for a server the user pointed Seshat at, the one it lists first — waited for,
        // saying so — or the one last used with it; never a plugin's table model when the server
        // can be asked (a local server taken for `gpt-5` would be counted, sized and compacted as
        // it), and said when it cannot.
        let (base_configured, base) = {
            let p = provider.lock();
            (p.base_configured(), p.base_url().to_string())
        };
        let unchosen = options.model.is_none() && resumed_model.is_none() && configured_one.is_none();
        let mut listed = None;
        if unchosen && base_configured {
            let remembered = client.store().last_model_at(&base)?;
            let can_list = provider.lock().can_list_models()?;
            let why = if can_list {
                let wait = provider.lock().models_wait().as_secs();
                client.progress(&format!(
                    "asking {base} which models it serves (up to {wait} s: models_timeout_secs under \
                     [providers.{provider_name}]; naming a model skips this)"
                ));
                match provider.lock().list_models()? {
                    Ok(models) => {
                        let m = models.first().cloned().expect("a list has a first");
                        client.note(format!("using the model `{m}`, the first {base} lists (name another to use it)"));
                        listed = Some(m);
                        None
                    }
                    Err(why) => Some(why),
                }
            } else {
                Some("its provider plugin cannot ask".to_string())
            };
            if let Some(why) = why {
                match (remembered, can_list, &first_model) {
                    (Some(m), _, _) => {
                        client.note(format!(
                            "using the model `{m}`, the last one used with {base}: the server did not list its models \
                             ({why}); name another to use it"
                        ));
                        listed = Some(m);
                    }
                    (None, false, Some(m)) => {
                        client.note(format!(
                            "using the model `{m}`, the first the `{provider_name}` plugin knows: {base} cannot be \
                             asked which models it serves; name another to use it"
                        ));
                    }
                    _ => {
                        return Err(Error::Provider(providers::Error::NotConfigured(format!(
                            "no model was named, and {base} did not list the models it serves ({why}): name the \
                             model to use, or set model under [chat] in config.toml"
                        ))));
                    }
                }
            }
        }
        let Some(model) = options.model.clone().or(resumed_model).or(configured_one).or(listed).or(first_model) else {
            return Err(Error::Provider(providers::Error::NotConfigured(format!(
                "provider `{provider_name}` knows no models: name one, or set model under [chat] in config.toml"
            ))));
        };
        let choice = {
            let mut p = provider.lock();
            sizing::choose_window(&mut p, client.store(), &model, options.window)?
        };
        if let Some(e) = window::too_small(&model, choice.window, choice.source) {
            return Err(Error::Sizing { code: "window_too_small", message: e });
        }
        let exact =
            match (options.max_output, provider.lock().configured_model(&model).and_then(|c| c.max_output_tokens)) {
                (Some(v), _) => Some((v, "max_output".to_string())),
                (None, Some(v)) => Some((v, format!("max_output_tokens for `{model}` in config.toml"))),
                (None, None) => None,
            };
        let output_ask =
            OutputAsk { model_limit: choice.model_output_limit, exact, cap: options.max_output_tokens.map(u64::from) };
        let (max_output, cap_notice) = sizing::max_output(choice.window, &output_ask)
            .map_err(|(message, _)| Error::Sizing { code: "invalid_config", message })?;
        let mut notices: Vec<String> = cap_notice.into_iter().collect();
        // Said once per model (and again when the server's cached answer goes stale).
        if choice.source == WindowSource::Assumed && choice.first_seen {
            notices.push(sizing::assumed_warning(&model, &provider_name));
        }
        if base_configured {
            // The model to fall back on when this server next lists none.
            client.store().remember_model_at(&base, &model)?;
        }
        let window = Some(choice.window);
        let existing_id = existing.is_some();
        let opened_at = existing.as_ref().map_or(0, |s| s.message_count);
        let session = match existing {
            Some(s) => {
                client.store().set_session_model(&s.id, Some(&provider_name), Some(&model), window)?;
                s.id
            }
            None => {
                let s = client.store().create_session(NewSession {
                    project: options.project.clone(),
                    title: None,
                    provider: Some(provider_name),
                    model: Some(model.clone()),
                    context_window: window,
                    metadata: None,
                })?;
                client.store().snapshot_memory_context(&s.id, Some(&options.project), options.memory_budget)?;
                s.id
            }
        };
        if options.extraction.is_some() {
            // What the session held before is not read at this agent's turns (`memory extract`
            // reads it).
            super::extraction::start_at(client.store(), &session, opened_at)?;
        }
        let info = client.store().session(&session)?;
        let memory = info.metadata["memory_context"]["text"].as_str().map(str::to_string);
        let same_model_after = info.metadata["model_since"].as_u64().unwrap_or(0);
        let calibration = sizing::stored_calibration(&info.metadata, &model);
        let kinds = sizing::stored_kinds(&info.metadata, &model);
        let frame_parts = FrameParts {
            base: options.system_prompt.clone().unwrap_or_else(|| prompt::DEFAULT_SYSTEM_PROMPT.to_string()),
            instructions: match &options.instructions {
                Some(given) => prompt::given_instructions(given),
                None => options.project_dir.as_deref().map(prompt::read_instructions).unwrap_or_default(),
            },
            memory,
            tools: tools.specs(),
            required: options.required_tools.clone(),
            default_base: options.system_prompt.is_none(),
        };
        let fitted = sizing::fit_frame(&frame_parts, Marks::new(choice.window).frame_budget());
        Ok(Agent {
            client,
            provider,
            tools,
            specs: fitted.tools,
            session,
            project: options.project,
            model,
            window: choice.window,
            window_source: choice.source,
            max_output: u32::try_from(max_output).unwrap_or(u32::MAX),
            output_ask,
            max_iterations: options.max_iterations.max(1),
            frame_parts,
            frame: fitted.frame,
            left_out: fitted.left_out,
            notices,
            calibration,
            kinds,
            stream: options.stream,
            extra: options.provider_options,
            same_model_after,
            cancel: Cancel::default(),
            drafting: false,
            typed: Default::default(),
            background_provider: None,
            hooks: std::sync::Arc::new(options.hooks),
            hook_context: Vec::new(),
            extraction: options.extraction,
            opened_at,
        }
        .started(if existing_id { "resumed" } else { "new" }))
    }

    /// The window in use and where it came from.
    pub fn window(&self) -> (u64, WindowSource) {
        (self.window, self.window_source)
    }

    /// The answer's room each call asks for (`max_tokens`).
    pub fn max_output(&self) -> u32 {
        self.max_output
    }

    /// What the frame left out to fit the window (for `/context`).
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The session's id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Claims the session for a turn or a compaction, for every process sharing the store (see
    /// [`crate::store::Store::claim_session`]); `None` when another holder has it. Give it back
    /// with [`Agent::release`].
    ///
    /// While the claim is held, the answer streaming is kept as a draft; an answer a holder that
    /// died left unstored is stored, marked interrupted, when the session is claimed next.
    pub fn claim(&mut self) -> Result<Option<crate::store::SessionClaim>> {
        let session = self.session.clone();
        let store = self.client.store();
        let Some(claim) = store.claim_session(&session)? else { return Ok(None) };
        let recovered = store.take_draft(&session).and_then(|left| {
            let Some(text) = left else { return Ok(()) };
            let answer = NewMessage { status: MessageStatus::Interrupted, ..NewMessage::text(Role::Assistant, &text) };
            store.append(&session, &[answer])?;
            tracing::info!(session, bytes = text.len(), "stored the answer a holder that died left as interrupted");
            Ok(())
        });
        if let Err(e) = recovered {
            store.release_session(claim)?;
            return Err(e.into());
        }
        self.drafting = true;
        Ok(Some(claim))
    }

    /// Gives back a claim [`Agent::claim`] made.
    pub fn release(&mut self, claim: crate::store::SessionClaim) -> Result<()> {
        self.drafting = false;
        Ok(self.client.store().release_session(claim)?)
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
        crate::compaction::Settings {
            calibration: self.calibration,
            // The marker and placeholders name history_search and history_read: only when offered.
            recall: self.specs.iter().any(|s| s.name == super::history::SEARCH || s.name == super::history::READ),
            cancel: self.cancel.clone(),
            shape: Some(crate::compaction::RequestShape {
                same_model_after: Some(self.same_model_after),
                extra: self.extra.clone(),
            }),
            pre_compact: self.pre_compact(),
            ..self.client.settings(&self.model, Some(self.window), u64::from(self.max_output))
        }
    }

    /// How full the window is now.
    pub fn context_use(&mut self) -> Result<Option<ContextUse>> {
        let view = self.client.live_view(&self.session)?;
        Ok(Some(ContextUse {
            used: crate::compaction::current_use_calibrated(&self.frame, &view, self.calibration),
            window: self.window,
            source: self.window_source,
            counting: Some(self.counting()),
        }))
    }

    /// How this model's tokens are counted where precision decides (`/context`): by the server,
    /// here with its own tokenizer, or estimated.
    pub fn counting(&self) -> providers::Counting {
        self.provider.lock().counting(&self.model)
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
                let tokens = window::estimate_parts(std::slice::from_ref(p));
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
        self.compact_now(false)
    }

    /// Compacts now (or says what it would do), ignoring the failure breaker: with this agent's
    /// frame, window and summary model, as an automatic compaction would (`seshat compact`).
    pub(crate) fn compact_now(&mut self, dry_run: bool) -> Result<Report> {
        self.compact_with(dry_run, None)
    }

    /// [`Agent::compact_now`] told what to keep or stress (`/compact <text>`, `seshat compact
    /// --instructions`), in place of the configured instructions for this compaction.
    pub fn compact_with(&mut self, dry_run: bool, instructions: Option<&str>) -> Result<Report> {
        self.compact_until(dry_run, instructions, None)
    }

    /// [`Agent::compact_with`] summarising everything before message `until` (and keeping it and
    /// what follows verbatim, whatever the target says) when it is given (`seshat compact
    /// --until`, `/compact --until`); refused with the figures when the result would not fit.
    pub fn compact_until(&mut self, dry_run: bool, instructions: Option<&str>, until: Option<u64>) -> Result<Report> {
        self.compact_observed(dry_run, instructions, until, &mut Quiet)
    }

    /// [`Agent::compact_until`], telling `observer` as it runs: that it starts, and what a
    /// summary will replace before the summary is written (its report is returned, not told).
    pub fn compact_observed(
        &mut self,
        dry_run: bool,
        instructions: Option<&str>,
        until: Option<u64>,
        observer: &mut dyn Observer,
    ) -> Result<Report> {
        let mut settings = self.settings();
        settings.until = until;
        if let Some(text) = instructions.map(str::trim).filter(|t| !t.is_empty()) {
            settings.instructions = Some(text.to_string());
        }
        let report =
            self.client.compact_with(&self.session, &self.frame, &settings, dry_run, &mut |p| tell(observer, p))?;
        if !report.dry_run && report.not_applied.is_none() {
            self.compacted(&report);
        }
        Ok(report)
    }

    /// Writes this session's summaries in the background from now on, unless `[compaction]
    /// background = false`: for a session that lives past its turn (an interactive chat, a
    /// service's), where a summary started past the early mark is swapped in at a later model
    /// call. (A one-shot turn would end before it.) The summaries go through another connection to
    /// the provider, with its own plugin instance: the chat's is busy while a turn streams.
    /// Returns whether it is on.
    pub fn enable_background(&mut self) -> bool {
        let compaction = self.client.config().compaction.clone();
        if !compaction.background.unwrap_or(true) {
            return false;
        }
        let other = self.provider.lock().duplicate();
        match other {
            Ok(other) => {
                let other = SharedProvider::new(other);
                self.background_provider = Some(other.clone());
                let models = std::sync::Arc::new(other);
                self.client
                    .enable_background(models, (compaction.early_mark_percent(), compaction.idle_above_percent()));
                true
            }
            Err(e) => {
                tracing::warn!("summaries are written on the turn's path: {e}");
                false
            }
        }
    }

    /// Starts compacting an idle session in the background (the front end's idle timer): when it
    /// is past the idle mark (`[compaction] idle_above_percent`) and no summary is being written, the compaction is planned now (told
    /// to `observer`) and its summary written on another thread, while the provider's prompt cache
    /// still holds the prefix; [`Agent::swap_background`] or the next turn swaps it in. Returns
    /// whether one started.
    pub fn start_idle_compaction(&mut self, observer: &mut dyn Observer) -> Result<bool> {
        let settings = self.settings();
        let reason = crate::compaction::BackgroundReason::Idle;
        self.client.start_background(&self.session, &self.frame, &settings, reason, &mut |p| tell(observer, p))
    }

    /// [`Agent::start_idle_compaction`] for a front end's idle timer: what to wait on when one
    /// started; a failure to start is told to `observer` as a warning.
    pub fn idle_compaction(&mut self, observer: &mut dyn Observer) -> Option<crate::compaction::Waiter> {
        match self.start_idle_compaction(observer) {
            Ok(true) => self.background_waiter(),
            Ok(false) => None,
            Err(e) => {
                observer.warning(&format!("the idle compaction could not start: {e}"));
                None
            }
        }
    }

    /// Between turns, once the summary written in the background is: swaps it in
    /// ([`Agent::swap_background`]) and returns the request that fills the prompt cache with the
    /// compacted conversation ([`Agent::warming`]), to send without holding the agent. Failures
    /// are told to `observer` as warnings.
    pub fn swap_between_turns(&mut self, observer: &mut dyn Observer) -> Option<super::Warming> {
        match self.swap_background(false, observer) {
            Ok(Some(_)) => self.warming().unwrap_or_else(|e| {
                tracing::warn!(session = %self.session, "the prompt cache is not filled: {e}");
                None
            }),
            Ok(None) => None,
            Err(e) => {
                observer.warning(&format!("the summary written in the background could not be recorded: {e}"));
                None
            }
        }
    }

    /// What to wait on for the summary being written in the background, if one is (without
    /// holding the agent).
    pub fn background_waiter(&self) -> Option<crate::compaction::Waiter> {
        self.client.background_waiter(&self.session)
    }

    /// Swaps in the summary written in the background if it is ready (`wait`: waiting for it),
    /// holding the session's claim while it is recorded: call it between turns. Its report is
    /// returned; a summary that could not be used (the history before it changed, or it failed) is
    /// told to `observer` as a warning. `Ok(None)` when there was none, or another process holds
    /// the session (its next turn swaps it in).
    pub fn swap_background(&mut self, wait: bool, observer: &mut dyn Observer) -> Result<Option<Report>> {
        if self.client.background_waiter(&self.session).is_none() {
            return Ok(None);
        }
        let Some(claim) = self.claim()? else { return Ok(None) };
        let cancel = self.cancel.clone();
        let wait = wait.then_some(&cancel);
        let swapped = self.client.swap_background(&self.session.clone(), &self.frame.clone(), wait);
        self.release(claim)?;
        match swapped? {
            Some(crate::compaction::background::Swapped::Applied(report)) => {
                observer.compaction(&report);
                self.compacted(&report);
                Ok(Some(*report))
            }
            Some(
                crate::compaction::background::Swapped::Discarded(why)
                | crate::compaction::background::Swapped::Failed(why),
            ) => {
                observer.warning(&why);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// The request that fills the provider's prompt cache with the session as its next turn will
    /// send it, after a summary was swapped in between turns (`[compaction] warm_cache`: by
    /// default only for a server on this machine or its network). Built here; sent with
    /// [`super::Warming::send`] without holding the agent, over the background's connection.
    /// `None` when background summaries are off or the cache is not filled for this provider.
    pub fn warming(&mut self) -> Result<Option<super::Warming>> {
        let Some(provider) = self.background_provider.clone() else { return Ok(None) };
        let fill = match self.client.config().compaction.warm_cache.unwrap_or_default() {
            crate::config::WarmCache::Local => provider.lock().is_local(),
            crate::config::WarmCache::Always => true,
            _ => false,
        };
        if !fill {
            return Ok(None);
        }
        let recall = self.settings().recall;
        let messages = crate::compaction::request_as_stored(self.client.store(), &self.session, recall)?;
        if messages.is_empty() {
            return Ok(None);
        }
        Ok(Some(super::Warming {
            provider,
            model: self.model.clone(),
            system: self.frame.system.clone(),
            tools: self.specs.clone(),
            messages,
            extra: self.extra.clone(),
            same_model_after: self.same_model_after,
        }))
    }

    /// Undoes the latest compaction or trim pass of the session (`/uncompact`), unless the view
    /// it restores would not fit this agent's window.
    pub fn undo_compaction(&mut self) -> Result<crate::store::Retracted> {
        let settings = self.settings();
        Ok(crate::compaction::undo(self.client.store(), &self.session, &self.frame, &settings)?)
    }

    /// Rewinds the session to before the user's `n`-th-last request (`/rewind [N]`; 1: the
    /// latest): it and everything after leave the live view (nothing is deleted), unless the view
    /// that restores would not fit this agent's window. Returns what was rewound and the request's
    /// text (for the user to edit and send again).
    pub fn rewind(&mut self, n: u64) -> Result<(crate::store::Rewound, String)> {
        let session = self.session.clone();
        let Some((seq, text)) = self.client.store().nth_last_request(&session, n.max(1))? else {
            return Err(crate::store::Error::NothingToRewind(session).into());
        };
        Ok((self.rewind_to(seq)?, text))
    }

    /// Rewinds the session to before message `to` (`seshat sessions rewind --to`), within this
    /// agent's window as [`Agent::rewind`].
    pub fn rewind_to(&mut self, to: u64) -> Result<crate::store::Rewound> {
        let session = self.session.clone();
        let settings = self.settings();
        let rewound = crate::compaction::rewind(self.client.store(), &session, to, &self.frame, &settings)?;
        self.rewound(&rewound);
        Ok(rewound)
    }

    /// Undoes the session's latest rewind while nothing was added after it (`/rewind --undo`).
    pub fn undo_rewind(&mut self) -> Result<crate::store::Rewound> {
        let session = self.session.clone();
        Ok(self.client.store().undo_rewind(&session)?)
    }

    /// Forks the session at `at` (its last message when `None`) and continues in the fork
    /// (`/fork`, `chat --fork`): the session this agent talks in becomes the new one.
    pub fn fork(&mut self, at: Option<u64>) -> Result<crate::store::Forked> {
        let session = self.session.clone();
        let forked = self.client.store().fork(&session, at, None)?;
        self.session = forked.session.id.clone();
        self.forked(&session, &forked);
        Ok(forked)
    }

    /// Pins a message of the session (`/pin`; the last message when `seq` is `None`) with the
    /// other side of its tool exchanges, within the share of this agent's window pins may take.
    /// Returns the seqs newly pinned.
    pub fn pin(&mut self, seq: Option<u64>) -> Result<Vec<u64>> {
        let session = self.session.clone();
        let seq = match seq {
            Some(seq) => seq,
            None => self.client.store().session(&session)?.message_count,
        };
        let window = self.window;
        Ok(crate::compaction::pin(self.client.store(), &session, seq, window)?)
    }

    /// Has `cancel` stop what the agent does outside a turn too — a compaction asked for by hand,
    /// its summary calls, counts and probes (a turn sets its own).
    pub fn set_cancel(&mut self, cancel: &Cancel) {
        self.cancel = cancel.clone();
        self.provider.lock().watch_cancel(cancel);
    }

    /// Runs one turn: stores `input`, then calls the model (and tools) until it answers, the
    /// iteration cap is reached, or the turn is cancelled.
    pub fn turn(&mut self, input: &str, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        self.check_fits(input)?;
        let context = self.prompted(input)?;
        self.typed.clear();
        self.append(&[NewMessage::text(Role::User, input)])?;
        self.add_context(&context)?;
        tracing::trace!(session = %self.session, "the user's message is stored");
        self.run(cancel, observer)
    }

    /// Refuses, before anything is stored or sent, a message that cannot fit the window alone:
    /// with the request's fixed parts (system prompt, instructions, memory, tool schemas) and room
    /// for the answer, no compaction could make room for it (the latest request is always kept
    /// whole). Coded `message_too_large`.
    fn check_fits(&self, input: &str) -> Result<()> {
        let real = |estimate: u64| (estimate as f64 * self.calibration).ceil() as u64;
        let limit = Marks::new(self.window).hard_limit(u64::from(self.max_output));
        let frame = real(self.frame.tokens());
        let message = real(window::estimate_text(input) + MESSAGE_OVERHEAD);
        if frame + message <= limit {
            return Ok(());
        }
        Err(Error::Sizing {
            code: "message_too_large",
            message: format!(
                "the message is about {message} tokens and cannot fit the model's {window}-token window: with the \
                 system prompt, instructions and tools ({frame}) and room for an answer ({answer}), at most {room} are \
                 left for it, whatever is compacted. Nothing was sent or stored: split it, give the agent a file's path \
                 to read instead of its text, or use a model (or a server setting) with a larger window",
                window = self.window,
                answer = self.max_output,
                room = limit.saturating_sub(frame),
            ),
        })
    }

    /// [`Agent::turn`] with the idempotency key its client chose for the request (none: as
    /// [`Agent::turn`]). The user's message is stored with the key; the same request sent again
    /// (after a failure that left the client unsure whether it was stored) stores nothing new:
    /// when its exchange was answered, the outcome is what was stored ([`TurnOutcome::replayed`],
    /// no model called); when the exchange is the session's last and unfinished (the answer was
    /// lost with its connection), the turn goes on from what was stored. The same key with other
    /// text is refused (`turn_key_reused`).
    pub fn turn_keyed(
        &mut self,
        input: &str,
        key: Option<&str>,
        cancel: &Cancel,
        observer: &mut dyn Observer,
    ) -> Result<TurnOutcome> {
        let Some(key) = key else { return self.turn(input, cancel, observer) };
        self.check_fits(input)?;
        // A request sent again was told to the user_prompt hooks the first time.
        let repeated = self.client.store().turn_key_seq(&self.session, key)?.is_some();
        let context = if repeated { Vec::new() } else { self.prompted(input)? };
        self.typed.clear();
        match self.client.store().append_request(&self.session, key, input)? {
            crate::store::Request::Repeated(seq) => self.repeat(seq, cancel, observer),
            crate::store::Request::Stored(seq) => {
                // What the store kept of the request, to send it as typed.
                let written = NewMessage::text(Role::User, input);
                let stored = self.client.store().message(&self.session, seq)?.map(|m| m.parts);
                let stored = stored.filter(|parts| *parts != written.parts);
                self.typed.note(&[written], &[seq], vec![stored]);
                self.add_context(&context)?;
                self.run(cancel, observer)
            }
        }
    }

    /// A request stored before as message `seq` was sent again: what its exchange stored, or the
    /// turn gone on when it is the session's last and unfinished.
    fn repeat(&mut self, seq: u64, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        let store = self.client.store();
        let answers = store.answers_to(&self.session, seq)?;
        let last = store.session(&self.session)?.message_count;
        let finished = answers.last().is_some_and(|m| {
            m.role == Role::Assistant
                && m.status == MessageStatus::Complete
                && !m.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }))
        });
        if !finished && answers.last().map_or(seq, |m| m.seq) == last {
            tracing::info!(session = %self.session, seq, "a repeated request goes on with the turn it began");
            return self.run(cancel, observer);
        }
        let mut out = TurnOutcome { session: self.session.clone(), replayed: true, ..TurnOutcome::default() };
        for u in answers.iter().filter_map(|m| m.usage) {
            out.usage.add(&u);
        }
        if let Some(answer) = answers.iter().rev().find(|m| m.role == Role::Assistant) {
            out.text = crate::conversation::text_of(&answer.parts);
        }
        if !finished {
            cut_short(
                &mut out,
                "interrupted",
                format!(
                    "the turn this request began (message {seq}) was cut short, and the session went on after it: \
                     what was stored is its outcome"
                ),
            );
        }
        self.finish(&mut out, observer);
        Ok(out)
    }

    /// [`Agent::turn`] holding the session's claim for every process sharing the store (see
    /// [`Agent::claim`]): refused with `session_busy`, storing nothing, while another holder runs a
    /// turn in it; meanwhile the answer is kept as a draft, taken back if this process dies.
    pub fn claimed_turn(&mut self, input: &str, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        self.claimed(cancel, observer, |agent, cancel, observer| agent.turn(input, cancel, observer))
    }

    /// [`Agent::run`] holding the session's claim, as [`Agent::claimed_turn`] does: the session's
    /// last request asked again (after an empty answer or an interruption).
    pub fn claimed_run(&mut self, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        self.typed.clear();
        self.claimed(cancel, observer, |agent, cancel, observer| agent.run(cancel, observer))
    }

    fn claimed(
        &mut self,
        cancel: &Cancel,
        observer: &mut dyn Observer,
        turn: impl FnOnce(&mut Self, &Cancel, &mut dyn Observer) -> Result<TurnOutcome>,
    ) -> Result<TurnOutcome> {
        let Some(claim) = self.claim()? else { return Err(Error::SessionBusy(self.session.clone())) };
        let outcome = turn(self, cancel, observer);
        let released = self.release(claim);
        let mut outcome = outcome?;
        if let Err(e) = released {
            warn(
                &mut outcome,
                observer,
                format!("the session's claim could not be given back (it ends with the connection): {e}"),
            );
        }
        Ok(outcome)
    }

    /// Continues the session without a new user message (after an interrupted turn, say).
    pub fn run(&mut self, cancel: &Cancel, observer: &mut dyn Observer) -> Result<TurnOutcome> {
        self.set_cancel(cancel);
        let mut out = TurnOutcome { session: self.session.clone(), ..TurnOutcome::default() };
        // A refusal for length is recovered once per model call (never a loop).
        let mut recovered = false;
        // A lower `max_tokens` for the retry after an "input and output exceed the window" refusal.
        let mut retry_max_tokens: Option<u32> = None;
        // An empty streamed answer is asked for once more, whole (some local servers drop a
        // streamed answer when tools are offered, and answer the same request whole).
        let mut whole_once = false;
        let mut asked_whole = false;
        loop {
            self.flush_notices_into(&mut out, observer);
            if out.iterations >= self.max_iterations {
                out.hit_iteration_cap = true;
                observer.warning(&format!(
                    "stopped after {} model calls in one turn (max_iterations); send a message to go on",
                    self.max_iterations
                ));
                break;
            }
            let settings = self.settings();
            let prepared =
                match self.client.prepare_with(&self.session, &self.frame, &settings, &mut |p| tell(observer, p)) {
                    Err(Error::Compaction(crate::compaction::Error::Interrupted)) => {
                        cut_short(
                            &mut out,
                            "interrupted",
                            "interrupted while compacting: nothing was sent, and the session is as it was".into(),
                        );
                        break;
                    }
                    other => other?,
                };
            tracing::trace!(session = %self.session, messages = prepared.messages.len(), "the request is prepared");
            if let Some(c) = prepared.counted {
                self.learn_calibration(c.real, &c.tally)?;
            }
            for w in &prepared.warnings {
                observer.warning(w);
            }
            if let Some(report) = &prepared.compaction {
                if report.refusals_recovered > 0 {
                    self.reload_calibration()?;
                }
                observer.compaction(report);
                if report.not_applied.is_none() {
                    self.compacted(report);
                }
                out.compactions.push(report.clone());
            }
            out.iterations += 1;
            // The turn's own messages as written, where the store keeps them redacted.
            let messages = self.typed.restore(&prepared.messages);
            let call = Call {
                model: &self.model,
                system: Some(&self.frame.system),
                tools: &self.specs,
                messages: &messages,
                max_tokens: retry_max_tokens
                    .take()
                    .unwrap_or(self.max_output)
                    .min(prepared.max_tokens.map_or(u32::MAX, |m| u32::try_from(m).unwrap_or(u32::MAX))),
                stream: self.stream && !std::mem::take(&mut whole_once),
                same_model_after: Some(self.same_model_after),
                extra: &self.extra,
            };
            let streamed = call.stream;
            let drafted;
            // The session's last message when the answer began: the newest the request holds.
            let began = prepared.messages.iter().filter_map(|m| m.seq).max();
            // The session's claim went with the store's connection: the answer stops at once.
            let mut lost = false;
            let sent = {
                let mut p = self.provider.lock();
                let mut draft = self.drafting.then(|| Draft::new(&self.session));
                let store = self.client.store();
                let sent = p.send(&call, cancel, &mut |e| {
                    observer.event(e);
                    if let Some(draft) = draft.as_mut() {
                        if !lost && store.claim_lost() {
                            lost = true;
                            cancel.cancel();
                        }
                        draft.on(store, e);
                    }
                });
                drafted = draft.is_some_and(|d| d.saved.is_some());
                for w in p.warnings.drain(..) {
                    observer.warning(&w);
                }
                sent
            };
            let answer = match sent {
                Ok(a) if !streamed => {
                    // Show a whole answer the way a streamed one would have been shown.
                    for p in &a.parts {
                        if let Part::Text { text } = p {
                            observer.event(&StreamEvent::TextDelta { text: text.clone() });
                        }
                    }
                    a
                }
                Ok(a) => a,
                Err(_) if lost => return Err(self.claim_lost(Answer::default(), began, &mut out)),
                Err(e) if e.code() == "interrupted" => {
                    cut_short(&mut out, e.code(), e.to_string());
                    break;
                }
                Err(providers::Error::Refused { message, limit, .. }) if !recovered => {
                    recovered = true;
                    retry_max_tokens = self.recover(limit, &prepared, &message, &mut out, observer)?;
                    // The same call again: the user's message is stored once.
                    out.iterations -= 1;
                    continue;
                }
                Err(providers::Error::Refused { message, .. }) => {
                    return Err(Error::ContextOverflow(format!(
                        "the server refused the request for its length again after Seshat made room for it \
                         ({message}); start a new session or set the model's context_window in config.toml"
                    )));
                }
                Err(e) => return Err(Error::Provider(e)),
            };
            recovered = false;
            if lost || self.client.store().claim_lost() {
                return Err(self.claim_lost(answer, began, &mut out));
            }
            if is_empty(&answer) {
                if streamed && !asked_whole {
                    asked_whole = true;
                    whole_once = true;
                    out.iterations -= 1;
                    observer.warning("the model answered nothing when streaming: asking again, whole");
                    continue;
                }
                // Nothing of it is stored: the user's message waits for an answer, and the turn
                // can be run again.
                if let Some(u) = answer.usage {
                    out.usage.add(&u);
                }
                out.error_code = Some("empty_answer".into());
                out.error = Some(
                    "the model answered nothing (no text, no tool call): nothing was stored, and your message waits \
                     for an answer; ask again, or try another model"
                        .into(),
                );
                break;
            }
            // What arrived is stored before anything else can fail.
            let stop = match self.store_answer(&answer, &mut out) {
                Err(Error::Store(crate::store::Error::ClaimLost)) => {
                    return Err(self.claim_lost(answer, began, &mut out));
                }
                other => other?,
            };
            if drafted && let Err(e) = self.client.store().clear_draft(&self.session) {
                tracing::warn!(session = %self.session, "cannot remove the answer's draft: {e}");
            }
            // The answer is stored: what fails from here on does not undo it.
            if let Err(e) = self.learn_from_usage(&answer, &prepared) {
                warn(&mut out, observer, format!("the token figures learnt from this answer were not kept: {e}"));
            }
            if !stop {
                self.run_tools(&answer, cancel, observer)?;
                if cancel.is_cancelled() {
                    cut_short(&mut out, "interrupted", "interrupted while tools ran".into());
                    break;
                }
                continue;
            }
            break;
        }
        self.finish(&mut out, observer);
        Ok(out)
    }

    /// The end of a turn whose outcome is settled: the notices left, and how full the window is
    /// now (a failure to read it is a warning: the turn's messages are stored).
    fn finish(&mut self, out: &mut TurnOutcome, observer: &mut dyn Observer) {
        // The turn is over: the next one sends what is stored.
        self.typed.clear();
        // Past the early mark, the summary is written while the user reads and types.
        let settings = self.settings();
        let reason = crate::compaction::BackgroundReason::EarlyMark;
        if let Err(e) =
            self.client.start_background(&self.session, &self.frame, &settings, reason, &mut |p| tell(observer, p))
        {
            warn(out, observer, format!("the summary could not be started in the background: {e}"));
        }
        if self.extraction.as_ref().is_some_and(|e| e.at() == crate::config::ExtractAt::Turn) {
            match self.extract(crate::plugins::ExtractMoment::Turn) {
                Ok(done) => {
                    for why in done.map(|d| d.failed).unwrap_or_default() {
                        warn(out, observer, format!("the memory extractor failed: {why}"));
                    }
                }
                Err(e) => {
                    warn(out, observer, format!("memory extraction failed (the turn is read again next time): {e}"))
                }
            }
        }
        self.flush_notices_into(out, observer);
        match self.context_use() {
            Ok(context) => out.context = context,
            Err(e) => warn(out, observer, format!("how full the window is could not be read: {e}")),
        }
    }

    /// The turn's claim was lost with the store's connection: when nobody took the session
    /// meanwhile and nothing was stored in it since the answer began (at message `began`), what
    /// arrived of `answer` is stored as interrupted (replacing its draft); otherwise the next
    /// holder stores the draft, or nothing when the session went on without it. Either way the
    /// turn ends with `claim_lost`.
    fn claim_lost(&mut self, mut answer: Answer, began: Option<u64>, out: &mut TurnOutcome) -> Error {
        let store = self.client.store();
        let untouched = |store: &crate::store::Store| {
            began.is_some_and(|b| store.session(&self.session).is_ok_and(|s| s.message_count == b))
        };
        match store.reclaim_session(&self.session) {
            Ok(true) if !untouched(store) => {
                tracing::warn!(session = %self.session, "the session went on while its claim was lost: nothing stored");
            }
            Ok(true) => {
                answer.error.get_or_insert(providers::Error::Api {
                    code: "claim_lost".into(),
                    message: "the answer was cut short: the session's claim was lost with the database connection"
                        .into(),
                });
                if let Err(e) = self.store_answer(&answer, out) {
                    tracing::warn!(session = %self.session, "cannot store the answer after a lost claim: {e}");
                } else if let Err(e) = self.client.store().clear_draft(&self.session) {
                    tracing::warn!(session = %self.session, "cannot remove the answer's draft: {e}");
                }
            }
            Ok(false) => tracing::warn!(session = %self.session, "the session's claim was lost and taken by another"),
            Err(e) => tracing::warn!(session = %self.session, "cannot claim the session again: {e}"),
        }
        Error::Store(crate::store::Error::ClaimLost)
    }

    /// Tells the observer what the user should know (a learnt window, a clamped cap).
    fn flush_notices(&mut self, observer: &mut dyn Observer) {
        for n in self.notices.drain(..) {
            observer.warning(&n);
        }
    }

    /// [`Agent::flush_notices`], kept on the turn's outcome too.
    fn flush_notices_into(&mut self, out: &mut TurnOutcome, observer: &mut dyn Observer) {
        for n in self.notices.drain(..) {
            observer.warning(&n);
            out.warnings.push(n);
        }
    }

    /// After a refusal for length: records what it says of the model's limits and makes the retry
    /// fit — a lower `max_tokens` when only the answer's room was too much (returned), else a
    /// compaction against the learnt window. With auto-compaction off or the breaker tripped,
    /// the window is recorded and the turn fails.
    fn recover(
        &mut self,
        limit: Limit,
        refused: &crate::compaction::Prepared,
        message: &str,
        out: &mut TurnOutcome,
        observer: &mut dyn Observer,
    ) -> Result<Option<u32>> {
        let refused_estimate = refused.tokens;
        match limit {
            Limit::MaxOutput(n) => {
                let base = self.provider.lock().base_url().to_string();
                let entry = ModelWindow {
                    context_window: None,
                    max_output_tokens: Some(n),
                    origin: WindowOrigin::Learnt,
                    learnt_at: crate::store::now_ms(),
                };
                self.client.store().record_model_window(&base, &self.model, &entry)?;
                self.output_ask.model_limit = Some(n);
                self.resize();
                return Ok(None);
            }
            Limit::InputAndOutput { input, window, .. } if window.saturating_sub(input) >= MIN_RETRY_OUTPUT => {
                if window != self.window {
                    self.learn_window(window, "the server's refusal named its window")?;
                }
                let room = window.saturating_sub(input).min(u64::from(self.max_output));
                return Ok(Some(u32::try_from(room).unwrap_or(u32::MAX)));
            }
            Limit::InputAndOutput { window, .. } => {
                self.learn_window(window, "the server's refusal named its window")?;
            }
            Limit::TooLong { window: Some(w), requested } => {
                if let Some(r) = requested {
                    self.calibrate(r, &refused.messages)?;
                }
                self.learn_window(w, "the server's refusal named its window")?;
            }
            Limit::TooLong { window: None, .. } => {
                let guess = refused_estimate * 9 / 10;
                self.learn_window(guess, "the server refused the request for its length without naming its window")?;
            }
        }
        let info = self.client.store().session(&self.session)?;
        let settings = self.settings();
        if !settings.auto_compact
            || info.compaction_failures >= crate::compaction::MAX_CONSECUTIVE_FAILURES
            || info.auto_compact_disabled
        {
            let why = if settings.auto_compact {
                "summarising is off after repeated failures"
            } else {
                "auto-compaction is off"
            };
            return Err(Error::ContextOverflow(format!(
                "the server refused the request for its length ({message}); the window is now recorded as {} tokens, \
                 but {why}: compact the session by hand and try again",
                self.window
            )));
        }
        self.flush_notices(observer);
        let report = self.client.compact_auto(&self.session, &self.frame, &settings, &mut |p| tell(observer, p))?;
        if report.refusals_recovered > 0 {
            self.reload_calibration()?;
        }
        observer.compaction(&report);
        out.compactions.push(report);
        Ok(None)
    }

    /// Stores the answer; returns whether the turn is over.
    fn store_answer(&mut self, answer: &Answer, out: &mut TurnOutcome) -> Result<bool> {
        if let Some(u) = answer.usage {
            out.usage.add(&u);
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
            cut_short(out, e.code(), e.to_string());
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
            self.append(&batch)?;
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
            observer.tool_call(id, name, arguments);
            let (content, is_error) = match self.before_tool(id, name, arguments) {
                // Blocked by a hook: its reason is the tool's error result.
                Err(why) => (why, true),
                Ok(context) => {
                    let reply = if self.specs.iter().any(|s| &s.name == name) {
                        self.tools.call(self.client.store(), Some(&self.project), &self.session, name, arguments)
                    } else {
                        crate::tool::ToolOutput::error(format!(
                            "`{name}` is not one of the tools offered in this session"
                        ))
                    };
                    self.after_tool((id, name, arguments), reply.content(), reply.is_error, context)
                }
            };
            observer.tool_result(id, name, &content, is_error);
            parts.push(Part::ToolResult { call_id: id.clone(), content, is_error });
        }
        self.append(&[NewMessage { role: Role::Tool, parts, usage: None, status }])?;
        Ok(())
    }

    /// Appends the turn's `messages`, remembering what redaction changed of them.
    fn append(&mut self, messages: &[NewMessage]) -> Result<()> {
        let appended = self.client.store().append_redacted(&self.session, messages, &[])?;
        self.typed.note(messages, &appended.seqs, appended.redacted);
        Ok(())
    }
}

/// Something that failed after the turn's answer was stored: told to the observer and kept on the
/// outcome (the turn succeeded).
fn warn(out: &mut TurnOutcome, observer: &mut dyn Observer, message: String) {
    tracing::warn!(session = %out.session, "{message}");
    observer.warning(&message);
    out.warnings.push(message);
}

/// Records why the turn stopped early.
fn cut_short(out: &mut TurnOutcome, code: &str, message: String) {
    out.interrupted = true;
    out.error_code = Some(code.to_string());
    out.error = Some(message);
}

/// The text an answer has streamed, kept in the store as the session's draft: first at the event
/// after its first words (never on the way to the first event the user sees), then at most once a
/// second while it grows (see [`crate::store::Store::save_draft`]).
struct Draft<'a> {
    session: &'a str,
    text: String,
    /// Text arrived since the draft was last saved.
    changed: bool,
    /// The session's last message when the answer began (read at the first save).
    after: Option<u64>,
    saved: Option<std::time::Instant>,
}

impl<'a> Draft<'a> {
    /// How often a streaming answer's draft is written again.
    const EVERY: std::time::Duration = std::time::Duration::from_secs(1);

    fn new(session: &'a str) -> Self {
        Draft { session, text: String::new(), changed: false, after: None, saved: None }
    }

    /// Follows the stream's event `e`, saving the draft when it is due. A draft that cannot be
    /// saved only warns: the answer itself is stored whole when it ends.
    fn on(&mut self, store: &mut crate::store::Store, e: &StreamEvent) {
        if let StreamEvent::TextDelta { text } = e {
            let first = self.text.is_empty();
            self.text.push_str(text);
            self.changed = true;
            if first {
                return;
            }
        }
        if !self.changed || self.saved.is_some_and(|at| at.elapsed() < Self::EVERY) {
            return;
        }
        let saved = match self.after {
            Some(after) => store.save_draft(self.session, after, &self.text),
            None => store.session(self.session).and_then(|info| {
                self.after = Some(info.message_count);
                store.save_draft(self.session, info.message_count, &self.text)
            }),
        };
        if let Err(e) = saved {
            tracing::warn!(session = self.session, "cannot keep the answer's draft: {e}");
        }
        self.changed = false;
        self.saved = Some(std::time::Instant::now());
    }
}
