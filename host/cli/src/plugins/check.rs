//! `seshat plugins check`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use seshat::plugins::PluginKind;

use crate::{Context, format};

/// Arguments of `plugins check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin's `.wasm` (a `plugin.toml` beside it is read too).
    path: PathBuf,
    /// Compile it as an installed plugin is (optimised) rather than with the quick tier.
    #[arg(long)]
    optimised: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let config = ctx.config()?;
    let tier = super::choose_tier(ctx, &args.path, args.optimised);
    let (plugin, has_manifest) = ctx.runtime().load_file(&args.path, |k| config.limits(k))?;
    let m = &plugin.manifest;
    let l = plugin.limits;
    let mut out = format::stdout();
    let article = if matches!(m.kind, PluginKind::Embedder | PluginKind::Extractor) { "an" } else { "a" };
    writeln!(out, "{}: {article} {} plugin for seshat:plugin@{}", args.path.display(), m.kind, plugin.api_version)?;
    if has_manifest {
        writeln!(
            out,
            "manifest: id `{}`{}",
            m.id,
            if m.description.is_empty() { String::new() } else { format!(" — {}", m.description) }
        )?;
    } else {
        writeln!(out, "manifest: none beside it (installing it needs a plugin.toml with id, kind and api)")?;
    }
    writeln!(
        out,
        "sandbox: no files, no environment, no arguments, no sockets, no stdin or stdout (stderr is kept: its end shows in a crash's error)"
    )?;
    writeln!(out, "limits: {} MiB of memory, {} ms of guest time per call", l.memory_mib, l.time_ms)?;
    if let Some(tier) = tier {
        writeln!(out, "compile: {tier}")?;
    }
    for w in &plugin.warnings {
        writeln!(out, "warning: {w}")?;
    }
    match m.kind {
        PluginKind::Trimmer => writeln!(out, "host functions: read-part (the content of one message part), log")?,
        PluginKind::Summariser => writeln!(
            out,
            "host functions: complete (the summary model), at most {} calls of at most {} tokens per summary; log",
            l.complete_calls, l.complete_max_tokens
        )?,
        PluginKind::Provider | PluginKind::Embedder => {
            let hosts = if m.allowed_hosts.is_empty() { "none".to_string() } else { m.allowed_hosts.join(", ") };
            writeln!(out, "network: none of its own; the host sends its requests only to: {hosts}")?;
        }
        PluginKind::Hook => {
            writeln!(out, "host functions: log; told the events a [[hooks.<event>]] entry names it at")?
        }
        PluginKind::Extractor => writeln!(
            out,
            "host functions: complete (the session's model), at most {} calls of at most {} tokens per extraction; \
             log; chosen by [memory] extract",
            l.complete_calls, l.complete_max_tokens
        )?,
    }
    // One realistic history through the plugin, exactly as `plugins test` runs it.
    let r = seshat::client::trial::trial(
        ctx.trial_home(),
        &plugin,
        &seshat::client::trial::Source::Fixture,
        &seshat::client::trial::Options::default(),
    )?;
    let did = match (m.kind, &r.error) {
        (_, Some(e)) => {
            out.flush()?;
            anyhow::bail!(
                "the check run on the built-in fixture failed [{}]: {} (`seshat plugins test {} <session>` runs it on a \
                 history of yours)",
                e.code,
                e.message,
                args.path.display()
            );
        }
        (PluginKind::Trimmer, None) => {
            let freed = r.report.as_ref().map_or(0, |x| x.trims_freed);
            format!("{} edits, freeing ~{} tokens", r.trims.len(), format::tokens(freed))
        }
        (PluginKind::Summariser, None) => match &r.summary {
            Some(s) => format!(
                "a summary of {} bytes of {} messages ({} model calls, answered by the echo stub)",
                s.len(),
                r.report.as_ref().map_or(0, |x| x.dropped),
                r.report.as_ref().map_or(0, |x| x.model_calls)
            ),
            None => "no summary (nothing to drop)".into(),
        },
        (PluginKind::Provider, None) => match &r.request {
            Some(q) => format!(
                "a {} request to {} of {} bytes with {} messages, sent nowhere",
                q.method,
                q.url,
                q.body.len(),
                q.messages
            ),
            None => "no request".into(),
        },
        (PluginKind::Hook, None) => hook_decisions(&r.decisions),
        (PluginKind::Extractor, None) => remembered(&r.remembered),
        (PluginKind::Embedder, None) => match &r.request {
            Some(q) => format!(
                "a {} request to {} of {} bytes embedding {} texts, sent nowhere",
                q.method,
                q.url,
                q.body.len(),
                q.messages
            ),
            None => "no request".into(),
        },
    };
    writeln!(
        out,
        "check run: the built-in fixture ({} messages, ~{} tokens, window {}) gave {did}; guest {:.1} ms, {:.1} MiB",
        r.messages,
        format::tokens(r.tokens),
        format::tokens(r.window),
        r.usage.guest_micros as f64 / 1e3,
        r.usage.peak_memory_bytes as f64 / (1024.0 * 1024.0)
    )?;
    writeln!(out, "ok: seshat would load it")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What an extractor would remember, in a phrase.
pub(super) fn remembered(remembered: &[seshat::client::trial::TrialMemory]) -> String {
    let replacing = remembered.iter().filter(|r| !r.replaced.is_empty()).count();
    format!("{} observations it would remember ({replacing} replacing an earlier one)", remembered.len())
}

/// What a hook decided at the history's events, in one phrase.
pub(super) fn hook_decisions(decisions: &[seshat::client::trial::HookTrial]) -> String {
    let blocks = decisions.iter().filter(|d| d.decision.decision == seshat::hooks::Verdict::Block).count();
    let context = decisions.iter().filter(|d| d.decision.context.is_some()).count();
    let instructions = decisions.iter().filter(|d| d.decision.instructions.is_some()).count();
    format!(
        "{} decisions: {blocks} blocks, {context} with context, {instructions} with summary instructions",
        decisions.len()
    )
}
