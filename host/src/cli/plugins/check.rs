//! `seshat plugins check`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use seshat::plugins::{PluginKind, ProviderPlugin, SummariserPlugin, TrimBudget, TrimmerPlugin};

use crate::cli::{Context, format};

/// Arguments of `plugins check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin's `.wasm` (a `plugin.toml` beside it is read too).
    path: PathBuf,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let config = ctx.config()?;
    let (plugin, has_manifest) = ctx.runtime().load_file(&args.path, |k| config.limits(k))?;
    let m = &plugin.manifest;
    let l = plugin.limits;
    let mut out = format::stdout();
    writeln!(out, "{}: a {} plugin for seshat:plugin@{}", args.path.display(), m.kind, plugin.api_version)?;
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
    writeln!(out, "sandbox: no files, no environment, no arguments, no sockets, no stdio")?;
    writeln!(out, "limits: {} MiB of memory, {} ms of guest time per call", l.memory_mib, l.time_ms)?;
    for w in &plugin.warnings {
        writeln!(out, "warning: {w}")?;
    }
    let call = Instant::now();
    match m.kind {
        PluginKind::Trimmer => {
            writeln!(out, "host functions: read-part (the content of one message part)")?;
            let mut t = TrimmerPlugin::new(&plugin)?;
            let budget = TrimBudget {
                current_tokens: 0,
                target_tokens: 0,
                threshold_tokens: 0,
                window_tokens: 0,
                extra: config.options_json(PluginKind::Trimmer),
            };
            let edits = t.trim(&[], &budget, |_, _| None)?;
            writeln!(out, "check call: trim of an empty history gave {} edits in {:.1} ms", edits.len(), ms(call))?;
        }
        PluginKind::Summariser => {
            writeln!(
                out,
                "host functions: complete (the summary model), at most {} calls of at most {} tokens per summary",
                l.complete_calls, l.complete_max_tokens
            )?;
            SummariserPlugin::new(&plugin)?;
            writeln!(out, "check: its imports and exports match the summariser world")?;
        }
        PluginKind::Provider => {
            let hosts = if m.allowed_hosts.is_empty() { "none".to_string() } else { m.allowed_hosts.join(", ") };
            writeln!(out, "network: none of its own; the host sends its requests only to: {hosts}")?;
            let mut p = ProviderPlugin::new(&plugin)?;
            let info = p.info()?;
            writeln!(
                out,
                "check call: info() names provider `{}` with {} models in {:.1} ms",
                info.id,
                info.models.len(),
                ms(call)
            )?;
        }
    }
    writeln!(out, "ok: seshat would load it")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}
