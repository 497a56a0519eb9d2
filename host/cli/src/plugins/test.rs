//! `seshat plugins test`: run a plugin on real histories exactly as compaction (or a chat
//! request) would, and show what it did — without changing anything. Each history is copied
//! into a scratch database first, so the user's database is only read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::Serialize;
use seshat::client::trial::{Options, Outcome, Source, trial};
use seshat::plugins::{LoadedPlugin, PluginKind, Usage};

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
    /// Compile a `.wasm` as an installed plugin is (optimised, guest times as in sessions) rather
    /// than with the quick tier.
    #[arg(long)]
    optimised: bool,
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
    let (plugin, tier) = load(ctx, &args.plugin, args.optimised)?;
    let sources = sources(ctx, &args.history)?;
    let mut opts = Options::default();
    (opts.window, opts.provider, opts.model) = (args.window, args.provider.clone(), args.model.clone());
    let results: Vec<Outcome> =
        sources.iter().map(|s| trial(ctx.trial_home(), &plugin, s, &opts)).collect::<Result<_, _>>()?;
    let mut out = format::stdout();
    if args.json {
        let m = &plugin.manifest;
        let plugin =
            PluginSummary { id: &m.id, kind: m.kind, api_version: &plugin.api_version, sha256: &plugin.sha256 };
        format::json(&mut out, &Output { plugin, results: &results })?;
    } else {
        writeln!(out, "{}", headline(&plugin))?;
        if let Some(tier) = tier {
            writeln!(out, "compile: {tier}")?;
        }
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
    let article = if matches!(m.kind, PluginKind::Embedder | PluginKind::Extractor) { "an" } else { "a" };
    format!(
        "plugin `{}`: {article} {} for seshat:plugin@{} (sha256 {})",
        m.id,
        m.kind,
        plugin.api_version,
        &plugin.sha256[..12.min(plugin.sha256.len())]
    )
}

/// A `.wasm`, a plugin directory or an installed plugin's id, and the compile tier chosen for a
/// file (see [`super::choose_tier`]).
fn load(ctx: &Context, name: &str, optimised: bool) -> anyhow::Result<(LoadedPlugin, Option<&'static str>)> {
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
        let tier = super::choose_tier(ctx, &wasm, optimised);
        return Ok((ctx.runtime().load_file(&wasm, |k| config.limits(k))?.0, tier));
    }
    let catalog = ctx.catalog();
    for kind in PluginKind::ALL {
        if let Ok(entry) = catalog.find(kind, name) {
            return Ok((ctx.runtime().load(entry, config.limits(kind))?, None));
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
    if !r.remembered.is_empty() {
        writeln!(out, "remembered: {}", super::check::remembered(&r.remembered))?;
        for m in &r.remembered {
            let replaced = match m.replaced.first() {
                Some(old) => format!(" (replacing: {})", format::clip(old, 80)),
                None => String::new(),
            };
            writeln!(out, "  [{}] {} (message {}){replaced}", m.scope, format::clip(&m.observation, 120), m.seq)?;
        }
    }
    if !r.decisions.is_empty() {
        writeln!(out, "decisions: {}", super::check::hook_decisions(&r.decisions))?;
        for d in &r.decisions {
            let tool = d.tool.as_deref().map_or_else(String::new, |t| format!(", {t}"));
            let mut said = match d.decision.decision {
                seshat::hooks::Verdict::Block => {
                    format!("block — {}", d.decision.reason.as_deref().unwrap_or("no reason given"))
                }
                _ => "continue".to_string(),
            };
            for (what, text) in [("context", &d.decision.context), ("instructions", &d.decision.instructions)] {
                if let Some(text) = text {
                    said.push_str(&format!("; {what}: {}", format::clip(text, 120)));
                }
            }
            if d.decision.skip {
                said.push_str("; skip");
            }
            writeln!(out, "  {} (message {}{tool}): {said}", d.event, d.seq)?;
        }
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
    } else if r.answered_by.as_ref().is_some_and(|a| a.kind != "stand-in") && r.error.is_none() {
        writeln!(out, "summary: none (nothing to drop at this window; pass a smaller --window)")?;
    }
    writeln!(out, "guest: {}", guest(&r.usage))?;
    // A crash's error already ends with it.
    let last = r.stderr.as_deref().and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()));
    if let Some(stderr) = &r.stderr
        && !r.error.as_ref().is_some_and(|e| last.is_some_and(|l| e.message.contains(l)))
    {
        writeln!(out, "stderr (its end):")?;
        for line in stderr.trim_end().lines() {
            writeln!(out, "  {line}")?;
        }
    }
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
                _ if !r.decisions.is_empty() => super::check::hook_decisions(&r.decisions),
                (None, _, _, Some(a)) if a.kind == "stand-in" => super::check::remembered(&r.remembered),
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
