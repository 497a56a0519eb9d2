//! `seshat sessions import`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use seshat::store::ImportOptions;
use seshat_protocol::methods::BroughtIn;

use crate::{Context, format};

/// Arguments of `sessions import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file written by `sessions export`, or `-` for stdin; with --from, another agent's
    /// session file or a directory of them (e.g. ~/.claude/projects/…, ~/.codex/sessions/).
    file: PathBuf,
    /// Read another agent's sessions: `claude-code` or `codex`. Each becomes a Seshat session
    /// (repaired as --repair does); one imported before gets only what its file gained.
    #[arg(long, value_name = "AGENT", conflicts_with_all = ["new_id", "repair"])]
    from: Option<seshat::foreign::Tool>,
    /// Give the session a new id (needed when its id is already in the database).
    #[arg(long)]
    new_id: bool,
    /// Import a session whose structure is broken instead of refusing it: tool results that
    /// answer no call are kept in the full history but out of the live view, and calls never
    /// answered get a synthetic error result. The report counts both.
    #[arg(long)]
    repair: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(tool) = args.from {
        return from(ctx, args, tool);
    }
    let mut input: Box<dyn BufRead> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(BufReader::new(seshat::input::open_regular(&args.file)?))
    };
    let imported = if let Some(mut remote) = ctx.remote()? {
        // The service validates and imports it whole, as the caller's session.
        let mut jsonl = String::new();
        input.read_to_string(&mut jsonl).with_context(|| format!("cannot read {}", args.file.display()))?;
        let params = seshat_protocol::methods::SessionImportParams { jsonl, new_id: args.new_id, repair: args.repair };
        remote
            .try_request::<seshat_protocol::methods::SessionImport>(&params)?
            .map_err(|refused| anyhow::anyhow!("cannot import {}: {refused}", args.file.display()))?
    } else {
        let mut store = ctx.store()?;
        let max_record_bytes = crate::record_limit(&ctx.config()?);
        let options = ImportOptions { new_id: args.new_id, repair: args.repair, max_record_bytes };
        store.import(&mut input, options).with_context(|| format!("cannot import {}", args.file.display()))?
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &imported)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut repaired = Vec::new();
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if imported.orphans > 0 {
        repaired.push(format!(
            "{} that answer no call, kept in the full history but out of the live view",
            plural(imported.orphans, "tool result", "tool results")
        ));
    }
    if imported.empty > 0 {
        repaired.push(format!("{} without parts, likewise", plural(imported.empty, "message", "messages")));
    }
    if imported.synthetic > 0 {
        repaired.push(format!(
            "{} never answered, given a synthetic error result",
            plural(imported.synthetic, "call", "calls")
        ));
    }
    let repaired = if repaired.is_empty() { String::new() } else { format!(" Repaired: {}.", repaired.join("; ")) };
    writeln!(out, "Imported session {} ({} messages).{repaired}", imported.id, imported.messages)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--from claude-code|codex`: every session in the file or directory, one line each.
fn from(ctx: &Context, args: &Args, tool: seshat::foreign::Tool) -> anyhow::Result<ExitCode> {
    let found = seshat::foreign::read(tool, &args.file, crate::record_limit(&ctx.config()?))?;
    for (file, why) in &found.skipped {
        eprintln!("skipped {}: {why}", format::visible(&file.display().to_string()));
    }
    let converted = found.sessions;
    // The agent's working directory is the project: its key when it exists here, else the path
    // as the agent wrote it.
    let project = |dir: &str| {
        let path = std::path::Path::new(dir);
        if path.is_dir() { seshat::paths::project_key(path) } else { dir.to_string() }
    };
    let failed = |c: &seshat::foreign::Converted| {
        format!("cannot import {} session {} from {}", tool, c.source_id, c.file.display())
    };
    let mut reports: Vec<BroughtIn> = Vec::with_capacity(converted.len());
    if let Some(mut remote) = ctx.remote()? {
        // Read here, brought in by the service as the caller's, filed under this machine's keys.
        for c in &converted {
            let key = c.cwd.as_deref().map_or_else(|| format!("/{tool}"), project);
            let brought = remote
                .try_request::<seshat_protocol::methods::SessionBringIn>(&c.to_params(key))?
                .map_err(|refused| anyhow::anyhow!("{}: {refused}", failed(c)))?;
            reports.push(brought);
        }
    } else {
        let mut store = ctx.store()?;
        for c in &converted {
            let report = seshat::foreign::bring_in(&mut store, c, project).with_context(|| failed(c))?;
            reports.push(report.into());
        }
    }
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &reports)?;
        return Ok(ExitCode::SUCCESS);
    }
    for r in &reports {
        let what = match r.outcome.as_str() {
            "imported" => format!("Imported {} session {} as {}", r.tool, r.source_id, r.session),
            "appended" => format!("Appended to {} ({} session {} grew)", r.session, r.tool, r.source_id),
            "forked" => {
                let (parent, at) = r.forked_from.clone().unwrap_or_default();
                format!(
                    "Forked {parent} after message {at} into {} ({} session {} grew while {parent} went on in \
                     Seshat: the file's new messages continue in the fork, which follows the file from now on)",
                    r.session, r.tool, r.source_id
                )
            }
            _ => format!("Unchanged: {} already holds {} session {}", r.session, r.tool, r.source_id),
        };
        let mut notes = vec![format!(
            "{}, {} written",
            format::count(r.messages, "message", "messages"),
            format::count(r.compactions, "compaction", "compactions")
        )];
        if r.orphans + r.synthetic > 0 {
            notes.push(format!(
                "repaired: {} tool results without their call, {} calls never answered",
                r.orphans, r.synthetic
            ));
        }
        if !r.skipped.is_empty() && r.outcome != "unchanged" {
            let skipped: Vec<String> = r.skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
            notes.push(format!("not brought in: {}", skipped.join(", ")));
        }
        writeln!(out, "{what}: {}.", notes.join("; "))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
