//! Trying a plugin on real history without changing anything: a session or an export is copied
//! into a scratch database and the plugin runs on it — a trimmer's trims, a summariser's summary
//! (its model calls answered by [`EchoModel`] unless a provider is named), the request a provider
//! or an embedder would build. `seshat plugins test` and `plugins check` render what this gives.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{Client, ClientOptions, Result, Substitute};
use crate::compaction::{ECHO_MODEL, EchoModel, Frame, ModelClient, Report, TrimChange};
use crate::conversation::{NewMessage, Part, Role};
use crate::paths::Dirs;
use crate::plugins::ExtractMoment;
use crate::plugins::{
    ChatRequest, EmbedderPlugin, EncodeOptions, LoadedPlugin, PluginKind, PluginMessage, ProviderPlugin, Usage,
};
use crate::store::{Error as StoreError, ImportOptions, NewSession, Store};

/// Where one history comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Source {
    /// A session of the user's database.
    Session(String),
    /// An export file.
    Export(PathBuf),
    /// The built-in fixture `plugins check` runs.
    Fixture,
}

impl Source {
    /// How a person names it.
    pub fn label(&self) -> String {
        match self {
            Source::Session(id) => format!("session {id}"),
            Source::Export(path) => path.display().to_string(),
            Source::Fixture => "the built-in fixture".into(),
        }
    }
}

/// What a model call of the summariser was answered by.
#[derive(Debug, Clone, Serialize)]
pub struct Answerer {
    /// `echo` or `provider`.
    pub kind: &'static str,
    /// The provider, when one.
    pub provider: Option<String>,
    /// The model id.
    pub model: String,
}

/// The request a provider would build.
#[derive(Debug, Clone, Serialize)]
pub struct BuiltRequest {
    /// The HTTP method.
    pub method: String,
    /// The URL.
    pub url: String,
    /// The plugin's headers (never credentials).
    pub headers: Vec<(String, String)>,
    /// The body as text (it is JSON for the built-in providers).
    pub body: String,
    /// Messages encoded into it (a provider's), or texts in the batch (an embedder's).
    pub messages: usize,
    /// What `messages` counts, for people: "messages" or "texts".
    #[serde(skip)]
    pub counts: &'static str,
}

/// What the plugin did with one history.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The history, as a person names it.
    pub source: String,
    /// The scratch session it ran on.
    pub session: String,
    /// Messages in the history.
    pub messages: u64,
    /// Estimated tokens of the history's live view.
    pub tokens: u64,
    /// The window it ran with.
    pub window: u64,
    /// Where that window came from.
    pub window_source: &'static str,
    /// What the compaction pass did (trimmers, summarisers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// The trims a trimmer proposed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trims: Vec<TrimChange>,
    /// The summary a summariser wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Who answered the summariser's model calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Answerer>,
    /// The request a provider or embedder built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<BuiltRequest>,
    /// What a hook decided at each event the history holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<HookTrial>,
    /// What an extractor would write to memory from the history (written only to the scratch
    /// store).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remembered: Vec<TrialMemory>,
    /// The plugin's guest time and memory on this history.
    pub usage: Usage,
    /// The end of what the plugin wrote to stderr on this history (at most 4 KiB, redacted, control
    /// characters escaped), when it wrote anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// How the plugin failed, if it did.
    pub error: Option<Failure>,
}

/// One observation an extractor would write.
#[derive(Debug, Clone, Serialize)]
pub struct TrialMemory {
    /// Whose memory (`user` or `project`).
    pub scope: String,
    /// The entity.
    pub entity: String,
    /// The observation.
    pub observation: String,
    /// What it would replace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<String>,
    /// The message it comes from.
    pub seq: u64,
}

/// A hook's decision at one event of the history.
#[derive(Debug, Clone, Serialize)]
pub struct HookTrial {
    /// The event.
    pub event: crate::hooks::HookEvent,
    /// The message it was told at.
    pub seq: u64,
    /// The tool, for a tool event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What it answered.
    pub decision: crate::hooks::HookDecision,
}

/// A failure, with its stable code.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The stable code.
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// How a trial runs: the window (else the history's recorded one), and for a summariser the
/// provider or model that answers its calls (else [`EchoModel`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Options {
    /// The window to run with.
    pub window: Option<u64>,
    /// The provider that answers a summariser's model calls.
    pub provider: Option<String>,
    /// The model (also the one a provider's request names).
    pub model: Option<String>,
}

/// Where a trial runs: the user's database (a session is copied out of it), directories and
/// project.
#[derive(Debug, Clone, Copy)]
pub struct Home<'a> {
    /// The user's store.
    pub store: &'a crate::store::Location,
    /// Seshat's directories.
    pub dirs: &'a Dirs,
    /// The project key.
    pub project: &'a str,
}

/// Copies `source` into a scratch database and runs the plugin on it: what a trimmer would trim,
/// what a summariser would write, the request a provider or an embedder would build. Nothing is
/// sent and the user's database is only read.
pub fn trial(home: Home<'_>, plugin: &LoadedPlugin, source: &Source, opts: &Options) -> Result<Outcome> {
    let scratch = tempfile::Builder::new()
        .prefix("seshat-plugins-test")
        .tempdir()
        .map_err(|cause| io("cannot make a scratch directory in", &std::env::temp_dir(), cause))?;
    let db = scratch.path().join("scratch.db");
    let mut store = Store::open(&db)?;
    let session = match source {
        Source::Session(id) => {
            let mut export = Vec::new();
            Store::connect(home.store)?.export(id, &mut export)?;
            store.import(&mut export.as_slice(), ImportOptions { repair: true, ..ImportOptions::default() })?.id
        }
        Source::Export(path) => {
            let file = std::fs::File::open(path).map_err(|cause| io("cannot open", path, cause))?;
            let mut input = std::io::BufReader::new(file);
            store.import(&mut input, ImportOptions { repair: true, new_id: true, ..ImportOptions::default() })?.id
        }
        Source::Fixture => {
            let info = store.create_session(NewSession {
                project: "/fixture".into(),
                title: Some("plugins check fixture".into()),
                provider: None,
                model: Some("fixture-model".into()),
                context_window: None,
                metadata: None,
            })?;
            store.append(&info.id, &fixture())?;
            info.id
        }
    };
    let info = store.session(&session)?;
    let view = store.live_view(&session)?;
    let tokens = crate::compaction::estimate_request(&Frame::default(), &view);
    drop(store);
    let (window, window_source) = match (opts.window, info.context_window) {
        (Some(w), _) => (w, "the window asked for"),
        (None, _) if matches!(source, Source::Fixture) => (crate::window::MIN_WINDOW, "the smallest window"),
        (None, Some(w)) => (w, "the session's recorded window"),
        (None, None) => ((tokens * 2 / 3).max(crate::window::MIN_WINDOW), "two thirds of the history (none recorded)"),
    };
    let mut outcome = Outcome {
        source: source.label(),
        session: session.clone(),
        messages: info.message_count,
        tokens,
        window,
        window_source,
        report: None,
        trims: Vec::new(),
        summary: None,
        answered_by: None,
        request: None,
        decisions: Vec::new(),
        remembered: Vec::new(),
        usage: Usage::default(),
        stderr: None,
        error: None,
    };
    let model = opts.model.clone().or(info.model).unwrap_or_else(|| "unknown-model".into());
    let fail = |code: &str, message: String| Some(Failure { code: code.into(), message });
    match plugin.manifest.kind {
        PluginKind::Provider => {
            let mut p = ProviderPlugin::new(plugin)?;
            match build_request(&mut p, &view, &model) {
                Ok(r) => outcome.request = Some(r),
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
            outcome.usage = p.usage();
            outcome.stderr = Some(p.stderr().to_string()).filter(|s| !s.is_empty());
        }
        PluginKind::Hook => {
            let mut p = crate::plugins::HookPlugin::new(plugin)?;
            let hook = hook_trial(&mut p, &session, &info.project, &view, tokens, window);
            match hook {
                Ok(decisions) => outcome.decisions = decisions,
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
            outcome.usage = p.usage();
            outcome.stderr = Some(p.stderr().to_string()).filter(|s| !s.is_empty());
        }
        PluginKind::Extractor => {
            // The whole history read once, as at a session's end; what it proposes is written to
            // the scratch store only. Its model calls are answered "nothing lasting" (`[]`).
            let p = crate::plugins::ExtractorPlugin::new(plugin)?;
            let mut extraction = super::Extraction::new(
                p,
                crate::config::ExtractAt::SessionEnd,
                "{}".into(),
                crate::memory::Ttls::default(),
            );
            let mut store = Store::open(&db)?;
            // The copy is read whole, whatever the user's store read of it already.
            store.set_metadata(&session, super::extraction::EXTRACTED_THROUGH, serde_json::Value::Null)?;
            let models: Arc<dyn ModelClient> = Arc::new(NothingLasting);
            match extraction.run(&mut store, &session, &info.project, ExtractMoment::SessionEnd, 1, (models, "none")) {
                Ok(done) => {
                    outcome.remembered = done
                        .written
                        .into_iter()
                        .map(|r| TrialMemory {
                            scope: r.scope.to_string(),
                            entity: r.entity,
                            observation: r.observation,
                            replaced: r.replaced,
                            seq: r.seq,
                        })
                        .collect();
                }
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
            outcome.answered_by = Some(Answerer { kind: "stand-in", provider: None, model: "[]".into() });
            outcome.usage = extraction.usage();
            outcome.stderr = Some(extraction.stderr().to_string()).filter(|s| !s.is_empty());
        }
        PluginKind::Embedder => {
            let mut p = EmbedderPlugin::new(plugin)?;
            match embed_request(&mut p, &view) {
                Ok(r) => outcome.request = Some(r),
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
            outcome.usage = p.usage();
            outcome.stderr = Some(p.stderr().to_string()).filter(|s| !s.is_empty());
        }
        kind => {
            let config = ClientOptions {
                auto_compact: true,
                store: Some(crate::store::Location::File(db)),
                dirs: Some(home.dirs.clone()),
                project: Some(home.project.to_string()),
                ..ClientOptions::default()
            };
            let mut client = Client::new(config, Arc::new(EchoModel))?;
            // A real model only when asked for (`--provider`, `--model` or both; the configured
            // provider when only the model is named); the echo stub otherwise.
            let answerer = if kind == PluginKind::Summariser && (opts.provider.is_some() || opts.model.is_some()) {
                let provider = client.load_provider(opts.provider.as_deref())?;
                let name = provider.name().to_string();
                client.set_models(Arc::new(crate::providers::SharedProvider::new(provider)) as Arc<dyn ModelClient>);
                Answerer { kind: "provider", provider: Some(name), model: model.clone() }
            } else {
                Answerer { kind: "echo", provider: None, model: ECHO_MODEL.into() }
            };
            let mut settings = client.settings(&model, Some(window), 0);
            settings.summary_model = Some(answerer.model.clone());
            let result = if kind == PluginKind::Trimmer {
                let mut t = crate::plugins::TrimmerPlugin::new(plugin)?;
                let r = client.preview(&session, &Frame::default(), &settings, Substitute::Trimmer(&mut t));
                outcome.usage = t.usage();
                outcome.stderr = Some(t.stderr().to_string()).filter(|s| !s.is_empty());
                r
            } else {
                let mut s = crate::plugins::SummariserPlugin::new(plugin)?;
                let r = client.preview(&session, &Frame::default(), &settings, Substitute::Summariser(&mut s));
                outcome.usage = s.usage();
                outcome.stderr = Some(s.stderr().to_string()).filter(|s| !s.is_empty());
                outcome.answered_by = Some(answerer);
                r
            };
            match result {
                Ok(preview) => {
                    outcome.trims = if kind == PluginKind::Trimmer { preview.trims } else { Vec::new() };
                    match preview.summary {
                        Some(Ok(text)) => outcome.summary = Some(text),
                        Some(Err(message)) => outcome.error = fail("summary_failed", message),
                        None => {}
                    }
                    outcome.report = Some(preview.report);
                }
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
        }
    }
    Ok(outcome)
}

/// A model that finds nothing lasting: answers an extractor's calls in a trial with `[]`.
struct NothingLasting;

impl ModelClient for NothingLasting {
    fn complete(
        &self,
        _model: &str,
        _request: crate::plugins::CompletionRequest,
    ) -> std::result::Result<crate::plugins::Completion, crate::plugins::ModelError> {
        Ok(crate::plugins::Completion {
            text: "[]".into(),
            usage: None,
            stop_reason: crate::plugins::StopReason::EndTurn,
        })
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// A hook told every event the live view holds, in order: the session's start, each user prompt,
/// each tool call and its result, a compaction at the trial's window and the session's end.
fn hook_trial(
    p: &mut crate::plugins::HookPlugin,
    session: &str,
    project: &str,
    view: &crate::store::LiveView,
    tokens: u64,
    window: u64,
) -> Result<Vec<HookTrial>, crate::plugins::Error> {
    use crate::hooks::Data;
    let mut events: Vec<(u64, Data<'_>)> = vec![(0, Data::SessionStart { source: "resumed" })];
    let mut calls = std::collections::HashMap::new();
    for e in &view.entries {
        let seq = e.seq.unwrap_or(0);
        for part in &e.parts {
            match part {
                Part::Text { text } if e.role == Role::User => events.push((seq, Data::UserPrompt { prompt: text })),
                Part::ToolCall { id, name, arguments } => {
                    calls.insert(id.as_str(), (name.as_str(), arguments.as_str()));
                    events.push((seq, Data::PreTool { call_id: id, tool: name, arguments }));
                }
                Part::ToolResult { call_id, content, is_error } => {
                    let (tool, arguments) = calls.get(call_id.as_str()).copied().unwrap_or(("", "{}"));
                    let data = Data::PostTool { call_id, tool, arguments, result: content, is_error: *is_error };
                    events.push((seq, data));
                }
                _ => {}
            }
        }
    }
    let last = view.entries.last().and_then(|e| e.seq).unwrap_or(0);
    events.push((0, Data::PreCompact { trigger: "manual", tokens, window }));
    events.push((last, Data::SessionEnd));
    events
        .iter()
        .map(|(seq, data)| {
            let payload = crate::hooks::payload(session, project, *seq, data);
            let decision = p.handle(&payload, data.tool())?;
            Ok(HookTrial { event: data.event(), seq: *seq, tool: data.tool().map(str::to_string), decision })
        })
        .collect()
}

/// An I/O failure, named as the store names its own.
fn io(action: &'static str, path: &Path, cause: std::io::Error) -> StoreError {
    StoreError::Io { action, path: path.to_path_buf(), cause }
}

/// The chat request a provider builds for the live view, sent nowhere.
fn build_request(
    p: &mut ProviderPlugin,
    view: &crate::store::LiveView,
    model: &str,
) -> Result<BuiltRequest, crate::plugins::Error> {
    let info = p.info()?;
    let last = view.entries.len().saturating_sub(1);
    let mut fragments = Vec::with_capacity(view.entries.len());
    for (i, e) in view.entries.iter().enumerate() {
        let message = PluginMessage { id: e.seq.unwrap_or(0), role: e.role, parts: e.parts.clone() };
        let options = EncodeOptions { model: model.to_string(), same_model: false, cache_breakpoint: i == last };
        fragments.push(p.encode_message(&message, &options)?);
    }
    let request = ChatRequest {
        model: model.to_string(),
        system: Some("(the system prompt chat would send)".into()),
        tools: Vec::new(),
        max_tokens: 4096,
        stream: true,
        base_url: info.default_base_url,
        extra: "{}".into(),
    };
    let http = p.build_request(&request)?;
    let body = http.body_with(fragments.iter().map(String::as_str));
    Ok(BuiltRequest {
        method: http.method.clone(),
        url: http.url.clone(),
        headers: http.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        messages: fragments.iter().filter(|f| !f.is_empty()).count(),
        counts: "messages",
    })
}

/// The first batch an embedder would be sent for the history's texts (as `embed_history` embeds
/// them), built but sent nowhere; `messages` counts the texts in it.
fn embed_request(p: &mut EmbedderPlugin, view: &crate::store::LiveView) -> Result<BuiltRequest, crate::plugins::Error> {
    let info = p.info()?;
    let texts: Vec<String> = view
        .entries
        .iter()
        .map(|e| crate::store::index_text(&e.parts))
        .filter(|t| !t.trim().is_empty())
        .take(info.max_batch as usize)
        .collect();
    let request = crate::plugins::EmbedRequest {
        model: info.models.first().map_or_else(|| "unknown-model".into(), |m| m.id.clone()),
        texts,
        purpose: crate::plugins::EmbedPurpose::Document,
        dimensions: None,
        base_url: info.default_base_url,
        extra: "{}".into(),
    };
    let http = p.build_request(&request)?;
    Ok(BuiltRequest {
        method: http.method.clone(),
        url: http.url.clone(),
        headers: http.headers,
        body: String::from_utf8_lossy(&http.body).into_owned(),
        messages: request.texts.len(),
        counts: "texts",
    })
}

/// A realistic short session for checking a plugin (`plugins check` runs it): a request, a failing test run with a long
/// log, a file read, a fix, a passing run, and two follow-up requests (so the first exchange is
/// no longer among the protected latest turns).
pub fn fixture() -> Vec<NewMessage> {
    let call =
        |id: &str, name: &str, args: &str| Part::ToolCall { id: id.into(), name: name.into(), arguments: args.into() };
    let result = |id: &str, content: String, is_error: bool| Part::ToolResult { call_id: id.into(), content, is_error };
    let msg = |role: Role, parts: Vec<Part>| NewMessage { parts, ..NewMessage::text(role, "") };
    let mut failing = String::from("   Compiling parser v0.3.1 (/work/parser)\n");
    for i in 0..400 {
        failing.push_str(&format!("test tokens::case_{i:03} ... ok\n"));
    }
    failing.push_str(
        "test tokens::unicode_escape ... FAILED\n\nfailures:\n\n---- tokens::unicode_escape stdout ----\nthread \
         'tokens::unicode_escape' panicked at src/tokens.rs:218:9:\nassertion `left == right` failed\n  left: \
         \"\\\\u{e9}\"\n right: \"é\"\n\ntest result: FAILED. 400 passed; 1 failed; 0 ignored; finished in 0.42s\n\
         error: test failed, to rerun pass `--lib`\n",
    );
    let mut source = String::new();
    for i in 0..300 {
        source.push_str(&format!("    // line {} of the tokenizer: match the next character class\n", i + 1));
    }
    source.push_str("fn unescape(s: &str) -> String { s.replace(\"\\\\u\", \"\") }\n");
    let mut plan = String::from("The failure is in unescape(): it drops the `\\u` and keeps the hex digits.\n");
    for step in 0..60 {
        plan.push_str(&format!(
            "Step {}: check how the tokenizer treats escape class {step} and whether the fix changes its output.\n",
            step + 1
        ));
    }
    let mut passing = String::new();
    for i in 0..401 {
        passing.push_str(&format!("test tokens::case_{i:03} ... ok\n"));
    }
    passing.push_str("\ntest result: ok. 401 passed; 0 failed; 0 ignored; finished in 0.40s\n");
    vec![
        NewMessage::text(
            Role::User,
            "The unicode_escape test fails in the parser crate; fix it. Never change the public API.",
        ),
        msg(
            Role::Assistant,
            vec![
                Part::Text { text: "Running the tests first.".into() },
                call("t1", "bash", r#"{"command":"cargo test"}"#),
            ],
        ),
        msg(Role::Tool, vec![result("t1", failing, true)]),
        msg(Role::Assistant, vec![call("t2", "read_file", r#"{"path":"src/tokens.rs"}"#)]),
        msg(Role::Tool, vec![result("t2", source, false)]),
        NewMessage::text(Role::Assistant, plan),
        NewMessage::text(
            Role::Assistant,
            "Decision: decode `\\u{…}` escapes in unescape() with char::from_u32; the public API stays.",
        ),
        msg(Role::Assistant, vec![call("t3", "bash", r#"{"command":"cargo test"}"#)]),
        msg(Role::Tool, vec![result("t3", passing, false)]),
        NewMessage::text(Role::Assistant, "Fixed: all 401 tests pass."),
        NewMessage::text(Role::User, "Now add a test for surrogate pairs."),
        msg(Role::Assistant, vec![call("t4", "bash", r#"{"command":"cargo test surrogate"}"#)]),
        msg(
            Role::Tool,
            vec![result("t4", "test tokens::surrogate_pair ... ok\n\ntest result: ok. 1 passed".into(), false)],
        ),
        NewMessage::text(Role::Assistant, "Added tokens::surrogate_pair; it passes."),
        NewMessage::text(Role::User, "Update CHANGELOG.md with both changes."),
    ]
}
