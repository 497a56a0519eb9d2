//! `seshat hooks list`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use crate::{Context, format};

/// `seshat hooks list`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let hooks = ctx.environment(seshat::client::Overrides::default())?.hooks()?;
    let mut out = format::stdout();
    if args.json {
        let listed: Vec<_> = hooks
            .list()
            .iter()
            .map(|h| {
                json!({
                    "event": h.event,
                    "command": match &h.action {
                        seshat::hooks::Action::Command(c) => Some(c.as_str()),
                        _ => None,
                    },
                    "handler": match &h.action {
                        seshat::hooks::Action::Handler { name, .. } => Some(name.as_str()),
                        _ => None,
                    },
                    "matcher": h.matcher,
                    "timeout_ms": h.timeout.as_millis() as u64,
                    "required": h.required,
                    "source": source(&h.source),
                })
            })
            .collect();
        let untrusted: Vec<_> =
            hooks.untrusted().iter().map(|u| json!({"path": u.path, "changed": u.changed, "hooks": u.hooks})).collect();
        format::json(&mut out, &json!({"hooks": listed, "untrusted": untrusted}))?;
        return Ok(ExitCode::SUCCESS);
    }
    if hooks.list().is_empty() {
        writeln!(
            out,
            "No hooks run here. Declare them in config.toml: [[hooks.pre_tool]] command = \"…\" (or plugin = \"<id>\")"
        )?;
    }
    let mut event = None;
    for h in hooks.list() {
        if event != Some(h.event) {
            writeln!(out, "{}:", h.event)?;
            event = Some(h.event);
        }
        let matcher = h.matcher.as_deref().map_or_else(String::new, |m| format!(" for {m}"));
        let required = if h.required { ", required" } else { "" };
        let time = match &h.action {
            seshat::hooks::Action::Command(_) => format!("timeout {} ms", h.timeout.as_millis()),
            _ => "its limits".to_string(),
        };
        writeln!(out, "  {}{matcher} ({time}{required}) — {}", h.action, h.source)?;
    }
    for u in hooks.untrusted() {
        writeln!(out, "{u}")?;
    }
    if !hooks.untrusted().is_empty() {
        writeln!(out, "Read it, then `seshat hooks trust` runs its hooks (until it changes).")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a hook was declared, for `--json`.
fn source(s: &seshat::hooks::Source) -> serde_json::Value {
    match s {
        seshat::hooks::Source::User(p) => json!({"kind": "user", "path": p}),
        seshat::hooks::Source::Project(p) => json!({"kind": "project", "path": p}),
        seshat::hooks::Source::Program(name) => json!({"kind": "program", "name": name}),
        _ => json!({"kind": "other"}),
    }
}
