//! `seshat audit`: the network service's audit trail — writes, refused writes, denied reads,
//! refused logins, revocations, plugin crashes — by user and time, read from the store.

use std::io::Write;
use std::process::ExitCode;

use seshat::store::AuditFilter;

use crate::{Context, format};

/// `seshat audit`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this user's events.
    #[arg(long)]
    user: Option<String>,
    /// Only events since then: a span back from now (`1h`, `7d`) or a time (`2026-12-01T00:00:00Z`).
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// At most this many, the newest.
    #[arg(long, default_value_t = 1000)]
    limit: u64,
    /// Print JSON Lines, one event a line, instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let store = ctx.store()?;
    let mut filter = AuditFilter::default();
    filter.user.clone_from(&args.user);
    filter.since = args.since.as_deref().map(|w| format::when("--since", w, false)).transpose()?;
    filter.limit = Some(args.limit);
    let events = store.audit_events(&filter)?;
    let mut out = format::stdout();
    if args.json {
        for e in &events {
            let line = serde_json::to_string(e)?;
            writeln!(out.raw(), "{line}")?;
        }
    } else if events.is_empty() {
        writeln!(
            out,
            "No audit events{}.",
            if args.user.is_some() || args.since.is_some() { " match" } else { " yet" }
        )?;
    } else {
        let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        writeln!(out, "{:<16}  {:<13}  {:<12}  {:<18}  {:<28}  CODE", "AT", "EVENT", "USER", "METHOD", "TARGET")?;
        for e in &events {
            writeln!(
                out,
                "{:<16}  {:<13}  {:<12}  {:<18}  {:<28}  {}",
                format::time(e.at),
                e.event,
                cell(&e.user),
                cell(&e.method),
                cell(&e.target),
                cell(&e.code)
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
