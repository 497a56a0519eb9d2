//! `seshat plugins test`: run a plugin on real histories exactly as compaction (or a chat
//! request) would, and show what it did — without changing anything. Each history is copied
//! into a scratch database first, so the user's database is only read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use serde::Serialize;
use seshat::compaction::{ECHO_MODEL, EchoModel, Frame, ModelClient, Report, TrimChange};
use seshat::conversation::{NewMessage, Part, Role};
use seshat::plugins::{ChatRequest, EncodeOptions, LoadedPlugin, PluginKind, PluginMessage, ProviderPlugin, Usage};
use seshat::store::{ImportOptions, NewSession, Store};
use seshat::{Client, ClientConfig};

use crate::{Context, format};

/// Arguments of `plugins test`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin: a `.wasm`, a plugin directory (`plugin.toml` and `plugin.wasm`), or the id of
    /// an installed plugin.
    plugin: String,
    /// What to run it on: an export (`seshat sessions export`), a directory of exports (one row
    /// each), or else a session id (or unique prefix) in the database.
    history: String,
    /// The context window to compact for (tokens, at least 4096); default: the session's
    /// recorded window, else two thirds of the history's size, so compaction has work to do.
    #[arg(long, value_name = "TOKENS")]
    window: Option<u64>,
    /// A summariser's model calls go to this provider instead of the echo stub.
    #[arg(long)]
    provider: Option<String>,
    /// A summariser's model calls go to this model instead of the echo stub (through --provider,
    /// else the configured provider; with --provider alone: the session's model).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Where one history comes from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A session of the user's database.
    Session(String),
    /// An export file.
    Export(PathBuf),
    /// The built-in fixture `plugins check` runs.
    Fixture,
}

impl Source {
    fn label(&self) -> String {
        match self {
            Source::Session(id) => format!("session {id}"),
            Source::Export(path) => path.display().to_string(),
            Source::Fixture => "the built-in fixture".into(),
        }
    }
}

/// What a model call of the summariser was answered by.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Answerer {
    /// `echo` or `provider`.
    kind: &'static str,
    /// The provider, when one.
    provider: Option<String>,
    /// The model id.
    model: String,
}

/// The request a provider would build.
#[derive(Debug, Clone, Serialize)]
pub(super) struct BuiltRequest {
    pub(super) method: String,
    pub(super) url: String,
    pub(super) headers: Vec<(String, String)>,
    /// The body as text (it is JSON for the built-in providers).
    pub(super) body: String,
    /// Messages encoded into it (a provider's), or texts in the batch (an embedder's).
    pub(super) messages: usize,
    /// What `messages` counts, for people: "messages" or "texts".
    #[serde(skip)]
    pub(super) counts: &'static str,
}

/// What the plugin did with one history.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Outcome {
    pub(super) source: String,
    pub(super) session: String,
    pub(super) messages: u64,
    /// Estimated tokens of the history's live view.
    pub(super) tokens: u64,
    pub(super) window: u64,
    pub(super) window_source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) report: Option<Report>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) trims: Vec<TrimChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) answered_by: Option<Answerer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) request: Option<BuiltRequest>,
    /// The plugin's guest time and memory on this history.
    pub(super) usage: Usage,
    pub(super) error: Option<Failure>,
}

/// A failure, with its stable code.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Failure {
    pub(super) code: String,
    pub(super) message: String,
}

#[derive(Serialize)]
struct PluginSummary<'a> {
    id: &'a str,
    kind: PluginKind,
    api_version: &'a str,
    sha256: &'a str,
}

#[derive(Serialize)]
struct Output<'a> {
    plugin: PluginSummary<'a>,
    results: &'a [Outcome],
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let plugin = load(ctx, &args.plugin)?;
    let sources = sources(ctx, &args.history)?;
    let opts = Options { window: args.window, provider: args.provider.clone(), model: args.model.clone() };
    let results: Vec<Outcome> = sources.iter().map(|s| on_history(ctx, &plugin, s, &opts)).collect::<Result<_, _>>()?;
    let mut out = format::stdout();
    if args.json {
        let m = &plugin.manifest;
        let plugin =
            PluginSummary { id: &m.id, kind: m.kind, api_version: &plugin.api_version, sha256: &plugin.sha256 };
        format::json(&mut out, &Output { plugin, results: &results })?;
    } else {
        writeln!(out, "{}", headline(&plugin))?;
        if results.len() == 1 {
            describe(&mut out, &results[0])?;
        } else {
            table(&mut out, &results)?;
        }
        writeln!(out, "nothing was changed: each history ran in a scratch copy")?;
    }
    out.flush()?;
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 && !args.json {
        eprintln!("error: the plugin failed on {failed} of {} histories", results.len());
    }
    Ok(if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The first line: which plugin, which build.
fn headline(plugin: &LoadedPlugin) -> String {
    let m = &plugin.manifest;
    format!(
        "plugin `{}`: a {} for seshat:plugin@{} (sha256 {})",
        m.id,
        m.kind,
        plugin.api_version,
        &plugin.sha256[..12.min(plugin.sha256.len())]
    )
}

/// A `.wasm`, a plugin directory or an installed plugin's id.
fn load(ctx: &Context, name: &str) -> anyhow::Result<LoadedPlugin> {
    let config = ctx.config()?;
    let path = Path::new(name);
    if path.exists() {
        let wasm = if path.is_dir() { path.join("plugin.wasm") } else { path.to_path_buf() };
        if !wasm.is_file() {
            bail!(
                "{} holds no plugin.wasm: pass the .wasm cargo built (target/wasm32-wasip2/release/…) or the \
                 directory `seshat plugins install` would take",
                path.display()
            );
        }
        return Ok(ctx.runtime().load_file(&wasm, |k| config.limits(k))?.0);
    }
    let catalog = ctx.catalog();
    for kind in PluginKind::ALL {
        if let Ok(entry) = catalog.find(kind, name) {
            return Ok(ctx.runtime().load(entry, config.limits(kind))?);
        }
    }
    bail!(
        "`{name}` is neither a file, a directory nor an installed plugin: pass a .wasm, a plugin directory, or an id \
         `seshat plugins list` shows"
    )
}

/// An existing file is an export, an existing directory holds exports, anything else is a
/// session id.
fn sources(ctx: &Context, history: &str) -> anyhow::Result<Vec<Source>> {
    let path = Path::new(history);
    if path.is_file() {
        return Ok(vec![Source::Export(path.to_path_buf())]);
    }
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("{} holds no .jsonl exports (`seshat sessions export <id> > file.jsonl` writes one)", path.display());
        }
        return Ok(files.into_iter().map(Source::Export).collect());
    }
    let id = ctx.store()?.resolve(history).with_context(|| {
        format!("`{history}` is no file or directory, so it was taken as a session id, and no session has it")
    })?;
    Ok(vec![Source::Session(id)])
}

/// How a history is run.
#[derive(Debug, Clone, Default)]
pub(super) struct Options {
    pub(super) window: Option<u64>,
    pub(super) provider: Option<String>,
    pub(super) model: Option<String>,
}

/// Copies `source` into a scratch database and runs the plugin on it.
pub(super) fn on_history(
    ctx: &Context,
    plugin: &LoadedPlugin,
    source: &Source,
    opts: &Options,
) -> anyhow::Result<Outcome> {
    let scratch =
        tempfile::Builder::new().prefix("seshat-plugins-test").tempdir().context("cannot make a scratch directory")?;
    let db = scratch.path().join("scratch.db");
    let mut store = Store::open(&db)?;
    let session = match source {
        Source::Session(id) => {
            let mut export = Vec::new();
            ctx.store()?.export(id, &mut export)?;
            store.import(&mut export.as_slice(), ImportOptions { repair: true, ..ImportOptions::default() })?.id
        }
        Source::Export(path) => {
            let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let mut input = std::io::BufReader::new(file);
            store
                .import(&mut input, ImportOptions { repair: true, new_id: true, ..ImportOptions::default() })
                .with_context(|| format!("cannot import {}", path.display()))?
                .id
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
    let tokens = seshat::compaction::estimate_request(&Frame::default(), &view);
    drop(store);
    let (window, window_source) = match (opts.window, info.context_window) {
        (Some(w), _) => (w, "--window"),
        (None, _) if matches!(source, Source::Fixture) => (seshat::window::MIN_WINDOW, "the smallest window"),
        (None, Some(w)) => (w, "the session's recorded window"),
        (None, None) => ((tokens * 2 / 3).max(seshat::window::MIN_WINDOW), "two thirds of the history (none recorded)"),
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
        usage: Usage::default(),
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
        }
        PluginKind::Embedder => {
            let mut p = seshat::plugins::EmbedderPlugin::new(plugin)?;
            match embed_request(&mut p, &view) {
                Ok(r) => outcome.request = Some(r),
                Err(e) => outcome.error = fail(e.code(), e.to_string()),
            }
            outcome.usage = p.usage();
        }
        kind => {
            let config = ClientConfig {
                auto_compact: true,
                db_path: Some(db),
                dirs: Some(ctx.dirs.clone()),
                project: Some(ctx.project.clone()),
                ..ClientConfig::default()
            };
            let mut client = Client::new(config, Arc::new(EchoModel))?;
            // A real model only when asked for (`--provider`, `--model` or both; the configured
            // provider when only the model is named); the echo stub otherwise.
            let answerer = if kind == PluginKind::Summariser && (opts.provider.is_some() || opts.model.is_some()) {
                let provider = client.load_provider(opts.provider.as_deref())?;
                let name = provider.name().to_string();
                client.set_models(Arc::new(seshat::providers::SharedProvider::new(provider)) as Arc<dyn ModelClient>);
                Answerer { kind: "provider", provider: Some(name), model: model.clone() }
            } else {
                Answerer { kind: "echo", provider: None, model: ECHO_MODEL.into() }
            };
            let mut settings = client.settings(&model, Some(window), 0);
            settings.summary_model = Some(answerer.model.clone());
            let result = if kind == PluginKind::Trimmer {
                let mut t = seshat::plugins::TrimmerPlugin::new(plugin)?;
                let r =
                    client.preview(&session, &Frame::default(), &settings, seshat::client::Substitute::Trimmer(&mut t));
                outcome.usage = t.usage();
                r
            } else {
                let mut s = seshat::plugins::SummariserPlugin::new(plugin)?;
                let r = client.preview(
                    &session,
                    &Frame::default(),
                    &settings,
                    seshat::client::Substitute::Summariser(&mut s),
                );
                outcome.usage = s.usage();
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

/// The chat request a provider builds for the live view, sent nowhere.
fn build_request(
    p: &mut ProviderPlugin,
    view: &seshat::store::LiveView,
    model: &str,
) -> Result<BuiltRequest, seshat::plugins::Error> {
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
fn embed_request(
    p: &mut seshat::plugins::EmbedderPlugin,
    view: &seshat::store::LiveView,
) -> Result<BuiltRequest, seshat::plugins::Error> {
    let info = p.info()?;
    let texts: Vec<String> = view
        .entries
        .iter()
        .map(|e| seshat::store::index_text(&e.parts))
        .filter(|t| !t.trim().is_empty())
        .take(info.max_batch as usize)
        .collect();
    let request = seshat::plugins::EmbedRequest {
        model: info.models.first().map_or_else(|| "unknown-model".into(), |m| m.id.clone()),
        texts,
        purpose: seshat::plugins::EmbedPurpose::Document,
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

fn kib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn guest(u: &Usage) -> String {
    format!(
        "{} call{}, {:.1} ms of guest time, {} of memory at most",
        u.calls,
        if u.calls == 1 { "" } else { "s" },
        u.guest_micros as f64 / 1e3,
        kib(u.peak_memory_bytes)
    )
}

/// One history, in full.
fn describe(out: &mut impl Write, r: &Outcome) -> anyhow::Result<()> {
    writeln!(out, "history: {} → {} messages, ~{} tokens", r.source, r.messages, format::tokens(r.tokens))?;
    writeln!(out, "window: {} tokens ({})", format::tokens(r.window), r.window_source)?;
    if let Some(req) = &r.request {
        writeln!(out, "request (sent nowhere): {} {} with {} {}", req.method, req.url, req.messages, req.counts)?;
        for (k, v) in &req.headers {
            writeln!(out, "  {k}: {v}")?;
        }
        writeln!(out, "  (plus the credential header the host adds; the plugin never sees it)")?;
        // As built: the bytes (and their order) are what a prompt cache sees.
        writeln!(out, "body ({} bytes, as built):", req.body.len())?;
        writeln!(out, "{}", req.body)?;
    }
    if let Some(rep) = &r.report {
        if r.answered_by.is_none() {
            writeln!(out, "edits: {}", r.trims.len())?;
            for t in &r.trims {
                writeln!(
                    out,
                    "  message {} part {}: {} → {} bytes",
                    t.seq,
                    t.part,
                    format::tokens(t.bytes_before),
                    format::tokens(t.bytes_after)
                )?;
            }
            writeln!(
                out,
                "tokens: {} → {} (the trims freed {})",
                format::tokens(rep.tokens_before),
                format::tokens(rep.tokens_before.saturating_sub(rep.trims_freed)),
                format::tokens(rep.trims_freed)
            )?;
        } else {
            writeln!(out, "cut: {} messages summarised, {} kept", rep.dropped, rep.kept)?;
        }
    }
    if let Some(a) = &r.answered_by {
        match &a.provider {
            Some(p) => writeln!(
                out,
                "model calls: {} to `{}` through provider `{p}`",
                r.report.as_ref().map_or(0, |x| x.model_calls),
                a.model
            )?,
            None => writeln!(
                out,
                "model calls: {} answered by the echo stub (pass --provider and --model to call a real model)",
                r.report.as_ref().map_or(0, |x| x.model_calls)
            )?,
        }
    }
    if let Some(summary) = &r.summary {
        writeln!(out, "summary ({} bytes):", summary.len())?;
        for line in summary.lines() {
            writeln!(out, "  {line}")?;
        }
    } else if r.answered_by.is_some() && r.error.is_none() {
        writeln!(out, "summary: none (nothing to drop at this window; pass a smaller --window)")?;
    }
    writeln!(out, "guest: {}", guest(&r.usage))?;
    if let Some(e) = &r.error {
        writeln!(out, "failed [{}]: {}", e.code, e.message)?;
    }
    Ok(())
}

/// One row per history.
fn table(out: &mut impl Write, results: &[Outcome]) -> anyhow::Result<()> {
    let rows: Vec<[String; 5]> = results
        .iter()
        .map(|r| {
            let what = match (&r.error, &r.request, &r.summary, &r.answered_by) {
                (Some(e), ..) => format!("failed [{}]", e.code),
                (None, Some(req), ..) => format!("request of {} bytes", req.body.len()),
                (None, None, Some(s), _) => format!("summary of {} bytes", s.len()),
                (None, None, None, Some(_)) => "no summary (nothing to drop)".into(),
                (None, None, None, None) => {
                    let freed = r.report.as_ref().map_or(0, |x| x.trims_freed);
                    format!("{} edits, {} tokens freed", r.trims.len(), format::tokens(freed))
                }
            };
            [
                r.source.clone(),
                r.messages.to_string(),
                what,
                format!("{:.1}", r.usage.guest_micros as f64 / 1e3),
                kib(r.usage.peak_memory_bytes),
            ]
        })
        .collect();
    let header = ["history", "messages", "result", "guest ms", "memory"];
    let widths: Vec<usize> =
        (0..5).map(|i| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0)).collect();
    let line = |cells: [&str; 5]| -> String {
        cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for r in &rows {
        writeln!(out, "{}", line([&r[0], &r[1], &r[2], &r[3], &r[4]]))?;
    }
    for r in results {
        if let Some(e) = &r.error {
            writeln!(out, "{}: {}", r.source, e.message)?;
        }
    }
    Ok(())
}

/// A realistic short session for `plugins check`: a request, a failing test run with a long
/// log, a file read, a fix, a passing run, and two follow-up requests (so the first exchange is
/// no longer among the protected latest turns).
pub(super) fn fixture() -> Vec<NewMessage> {
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
