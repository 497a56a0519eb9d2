//! `seshat sessions redact`: credentials already stored replaced by their placeholders.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use seshat::store::{ListFilter, Redacted};

use crate::Context;

/// Arguments of `sessions redact`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sessions (ids, or unique prefixes of them).
    ids: Vec<String>,
    /// Every session of yours, in every project.
    #[arg(long, conflicts_with = "ids")]
    all: bool,
    /// Count what would be replaced, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if ctx.remote()?.is_some() {
        bail!(
            "sessions redact rewrites a store this machine opens: run it without --remote (on a team's service, where \
             its database is reached)"
        );
    }
    // The configuration must load: its [redaction] and [retention] decide what this changes.
    ctx.config()?;
    if args.ids.is_empty() && !args.all {
        bail!("name the sessions to redact (their ids), or --all for every session of yours");
    }
    let mut store = ctx.store()?;
    let ids: Vec<String> = if args.all {
        store.list_sessions(&ListFilter::default())?.into_iter().map(|s| s.id).collect()
    } else {
        args.ids.iter().map(|id| store.resolve(id)).collect::<Result<_, _>>()?
    };
    let bar = crate::knowledge::bar("{msg} {pos}/{len} sessions {wide_bar} {eta}");
    if let Some(bar) = &bar {
        bar.set_length(ids.len() as u64);
        bar.set_message(if args.dry_run { "looking" } else { "redacting" });
    }
    let mut reports: Vec<Redacted> = Vec::with_capacity(ids.len());
    for id in &ids {
        reports.push(store.redact_session(id, args.dry_run)?);
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if !args.dry_run && reports.iter().any(|r| r.messages + r.records > 0) {
        store.scrub_leftovers()?;
    }
    let mut rules: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        for (rule, n) in &r.rules {
            *rules.entry(rule.clone()).or_default() += n;
        }
    }
    let changed: Vec<&Redacted> = reports.iter().filter(|r| r.messages + r.records > 0).collect();
    let (messages, records) = reports.iter().fold((0, 0), |(m, o), r| (m + r.messages, o + r.records));
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = serde_json::json!({
            "dry_run": args.dry_run,
            "sessions": reports,
            "looked_at": reports.len(),
            "changed": changed.len(),
            "messages": messages,
            "records": records,
            "rules": rules,
        });
        writeln!(out, "{report}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.dry_run { "would be rewritten" } else { "rewritten" };
    for r in &changed {
        writeln!(
            out,
            "{}: {} messages and {} other records {verb} ({})",
            r.session,
            r.messages,
            r.records,
            by_rule(&r.rules)
        )?;
    }
    let skipped = reports.iter().filter(|r| r.skipped).count();
    writeln!(
        out,
        "{} of {} sessions held credentials: {messages} messages and {records} other records {verb}{}.{}",
        changed.len(),
        reports.len(),
        if rules.is_empty() { String::new() } else { format!(" ({})", by_rule(&rules)) },
        if skipped > 0 {
            format!(" {skipped} sessions of projects redaction is off for were left.")
        } else {
            String::new()
        }
    )?;
    if args.dry_run && !changed.is_empty() {
        writeln!(out, "Nothing was changed: run it again without --dry-run.")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `aws-access-token 2, github-pat 1`.
fn by_rule(rules: &BTreeMap<String, u64>) -> String {
    rules.iter().map(|(rule, n)| format!("{rule} {n}")).collect::<Vec<_>>().join(", ")
}
