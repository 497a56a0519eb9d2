//! `seshat compact`: compact a session now, exactly as an automatic compaction in `chat` would:
//! through the session's provider (or `--provider`/`--summary-model`), with chat's frame.

use seshat_protocol::methods as m;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use seshat::client::{Overrides, SessionChoice};
use seshat::compaction::{Frame, Report, SeqRange, Summarising};

use super::chat::{AgentFlags, open_agent};
use super::{Context, format};

/// Arguments of `compact`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique prefix); default: this project's most recent.
    id: Option<String>,
    /// Say what would happen without changing anything or calling a model.
    #[arg(long)]
    dry_run: bool,
    /// Compact for this context window (tokens, at least 4096) instead of the session's recorded
    /// one; also used when the window was never recorded.
    #[arg(long, value_name = "TOKENS")]
    window: Option<u64>,
    /// The provider whose model writes the summary (default: the session's).
    #[arg(long)]
    provider: Option<String>,
    /// The model that writes the summary (default: the session's model).
    #[arg(long, value_name = "MODEL")]
    summary_model: Option<String>,
    /// What the summary must keep or stress, beside the summary prompt (in place of
    /// `[compaction] instructions` for this compaction; recorded with it).
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Summarise everything before this message (its seq) and keep it and what follows verbatim,
    /// whatever the target says (refused, with the figures, when that would not fit the window).
    #[arg(long, value_name = "SEQ", conflicts_with = "undo")]
    until: Option<u64>,
    /// Undo the session's latest compaction or trim pass instead (the originals were never
    /// changed; refused when the restored view would not fit the window).
    #[arg(long, conflicts_with = "dry_run")]
    undo: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if ctx.remote.is_some() {
        return run_remote(ctx, args);
    }
    let mut client = ctx.environment(Overrides::default())?.client()?;
    let id = match &args.id {
        Some(prefix) => client.store().resolve(prefix)?,
        None => match client.store().latest_session(&ctx.project)? {
            Some(s) => s.id,
            None => bail!("no session in this project to compact: pass a session id (`seshat sessions list --all`)"),
        },
    };
    let session = client.store().session(&id)?;
    let flags = AgentFlags {
        session: SessionChoice::Resume(id.clone()),
        provider: args.provider.clone().or(session.provider.clone()),
        // A session that never ran a turn has no model: the summary model stands in for it.
        model: session.model.clone().or(args.summary_model.clone()),
        window: args.window,
        summary_model: args.summary_model.clone(),
        ..AgentFlags::default()
    };
    drop(client);
    if args.undo {
        return undo(ctx, args, &id, &flags, session.context_window);
    }
    let report = match open_agent(ctx, &flags)? {
        // The provider chat would use: the summary goes through it, the figures count chat's frame.
        Ok(mut agent) => agent
            .compact_observed(args.dry_run, args.instructions.as_deref(), args.until, &mut Announcer)
            .with_context(|| format!("cannot compact {id}"))?,
        // No provider to talk to: only a summariser that needs no model can work, and there is no
        // chat frame to count.
        Err(_) => {
            let Some(window) = args.window.or(session.context_window) else {
                bail!("the context window of session {id} is unknown: pass --window <TOKENS>");
            };
            let overrides = Overrides {
                auto_compact: Some(true),
                summary_model: args.summary_model.clone(),
                ..Overrides::default()
            };
            let mut client = ctx.environment(overrides)?.client()?;
            let model = session.model.unwrap_or_else(|| "unknown-model".into());
            let mut settings = client.settings(&model, Some(window), 0);
            if let Some(text) = &args.instructions {
                settings.instructions = Some(text.clone());
            }
            settings.until = args.until;
            client
                .compact_with(&id, &Frame::default(), &settings, args.dry_run, &mut |p| {
                    seshat::client::tell(&mut Announcer, p)
                })
                .with_context(|| format!("cannot compact {id}"))?
        }
    };
    print_report(args, &id, &report)
}

/// Says on a terminal what a summary is about to replace, before it is written (the summary
/// model may take a while); the report follows on stdout.
struct Announcer;

impl seshat::client::Observer for Announcer {
    fn compaction_summarising(&mut self, summarising: &Summarising) {
        if std::io::stderr().is_terminal() {
            eprintln!("[{}]", describe_summarising(summarising));
        }
    }
}

/// `compact --remote`: the service's `session/compact`, with its provider (or `--provider`,
/// `--summary-model`, `--window` asked of it when connecting).
fn run_remote(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        !args.undo,
        "--undo does not work against a remote service yet: `seshat sessions rewind --remote` takes a session back"
    );
    let mut extra = serde_json::Map::new();
    for (key, value) in [("provider", &args.provider), ("compact_summary_model", &args.summary_model)] {
        if let Some(value) = value {
            extra.insert(key.into(), value.clone().into());
        }
    }
    if let Some(window) = args.window {
        extra.insert("window".into(), window.into());
    }
    let mut remote = ctx.remote_with(extra)?.context("the remote service is set")?;
    let id = match &args.id {
        Some(id) => id.clone(),
        None => {
            let params = m::SessionListParams { limit: Some(1), ..Default::default() };
            match remote.request::<m::SessionList>(&params)?.sessions.into_iter().next() {
                Some(s) => s.id,
                None => bail!("no session of this project on the service to compact: pass a session id"),
            }
        }
    };
    let params = m::SessionCompactParams {
        session: id.clone(),
        instructions: args.instructions.clone(),
        until: args.until,
        dry_run: args.dry_run,
    };
    let report: Report = remote.request::<m::SessionCompact>(&params)?.report;
    print_report(args, &id, &report)
}

/// What a compaction did (or would do), as JSON or one line.
fn print_report(args: &Args, id: &str, report: &Report) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, report)?;
    } else {
        writeln!(out, "{}", describe(id, report))?;
        for line in describe_left(report) {
            writeln!(out, "  {line}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `compact --undo`: with chat's frame and window when a provider is configured, else the
/// session's known window (or `--window`) and no frame.
fn undo(ctx: &Context, args: &Args, id: &str, flags: &AgentFlags, known: Option<u64>) -> anyhow::Result<ExitCode> {
    let undone = match open_agent(ctx, flags)? {
        Ok(mut agent) => agent.undo_compaction().with_context(|| format!("cannot undo in {id}"))?,
        Err(_) => {
            let mut client = ctx.environment(Overrides::default())?.client()?;
            let settings = client.settings("unknown-model", args.window.or(known), 0);
            seshat::compaction::undo(client.store(), id, &Frame::default(), &settings)
                .with_context(|| format!("cannot undo in {id}"))?
        }
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &serde_json::json!({"session": id, "undone": undone}))?;
    } else {
        writeln!(out, "{}", describe_undo(id, &undone))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what an undo retracted.
pub fn describe_undo(id: &str, undone: &seshat::store::Retracted) -> String {
    use seshat::store::Retracted;
    let what = match undone {
        Retracted::Compaction { number } => format!("compaction {number}"),
        Retracted::Trims { first, last } if first == last => format!("trim {first}"),
        Retracted::Trims { first, last } => format!("trims {first}–{last}"),
    };
    format!("Undid {what} of session {id}: the live view is as it was before it (the originals were never changed).")
}

/// The notice before a summary is written: what it will replace, and the figures that called
/// for it.
pub fn describe_summarising(s: &Summarising) -> String {
    let why = match s.trigger {
        seshat::store::CompactionTrigger::Auto => format!(
            "~{} of {} tokens in use, over the threshold of {}",
            format::exact(s.tokens),
            format::exact(s.marks.window),
            format::exact(s.marks.threshold)
        ),
        seshat::store::CompactionTrigger::Manual => {
            format!(
                "~{} of {} tokens in use, compacting by hand",
                format::exact(s.tokens),
                format::exact(s.marks.window)
            )
        }
    };
    let trims = if s.after_trims < s.tokens {
        format!(
            "; trims brought it to ~{}, above the target of {}",
            format::exact(s.after_trims),
            format::exact(s.marks.target)
        )
    } else {
        String::new()
    };
    let why = match s.background {
        Some(seshat::compaction::BackgroundReason::EarlyMark) => format!(
            "~{} of {} tokens in use, past the early mark (the threshold is {})",
            format::exact(s.tokens),
            format::exact(s.marks.window),
            format::exact(s.marks.threshold)
        ),
        Some(seshat::compaction::BackgroundReason::Idle) => format!(
            "~{} of {} tokens in use, idle while the prompt cache holds it",
            format::exact(s.tokens),
            format::exact(s.marks.window)
        ),
        _ => why,
    };
    let (verb, end) = if s.background.is_some() {
        ("summarising in the background", "; the session goes on meanwhile")
    } else {
        ("summarising", "…")
    };
    format!(
        "{verb} {} ({}, ~{} tokens) with {} (its model: {}): {why}{trims}; keeping {}{end}",
        ranges(&s.seqs),
        format::count(s.messages, "message", "messages"),
        format::exact(s.messages_tokens),
        format::plain(&s.summariser),
        format::plain(&s.model),
        format::count(s.kept, "message", "messages"),
    )
}

/// `micro` millionths of a dollar, as money: to the cent from a dollar up, else to four places.
fn dollars(micro: u64) -> String {
    let d = micro as f64 / 1_000_000.0;
    if d >= 1.0 { format!("${d:.2}") } else { format!("${d:.4}") }
}

/// Seq ranges as a list: `#1–#40, #43`.
pub fn ranges(seqs: &[SeqRange]) -> String {
    seqs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// The trims listed in one line's detail at most; the rest are counted.
const TRIMS_LISTED: usize = 8;

/// What left the live view in a compaction, line by line: the messages the summary replaced and
/// the tool results trimmed, with their sizes (empty when nothing left it).
pub fn describe_left(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    let verb = if r.dry_run { "would leave" } else { "left" };
    if !r.summarised_seqs.is_empty() {
        let messages: u64 = r.summarised_seqs.iter().map(SeqRange::len).sum();
        let summary = match r.summary_tokens {
            Some(t) if r.dry_run => format!(", for a summary of at most ~{} tokens", format::exact(t)),
            Some(t) => format!(", replaced by a summary of ~{} tokens", format::exact(t)),
            None => String::new(),
        };
        lines.push(format!(
            "{} {verb} the view: {}{summary}",
            format::count(messages as usize, "message", "messages"),
            ranges(&r.summarised_seqs)
        ));
    }
    if !r.trims.is_empty() {
        let mut listed: Vec<String> = r
            .trims
            .iter()
            .take(TRIMS_LISTED)
            .map(|t| {
                format!(
                    "#{} part {} {} → {} bytes",
                    t.seq,
                    t.part,
                    format::exact(t.bytes_before),
                    format::exact(t.bytes_after)
                )
            })
            .collect();
        if r.trims.len() > TRIMS_LISTED {
            listed.push(format!("and {} more", r.trims.len() - TRIMS_LISTED));
        }
        let (before, after) = r.trims.iter().fold((0, 0), |(b, a), t| (b + t.bytes_before, a + t.bytes_after));
        lines.push(format!(
            "trimmed: {} ({} → {} bytes in all)",
            listed.join(", "),
            format::exact(before),
            format::exact(after)
        ));
    }
    if let (Some(kind), Some(u)) = (r.summary_request, r.summary_usage) {
        let how = match kind {
            seshat::compaction::SummaryRequestKind::SharedPrefix => "with the conversation's own prefix",
            _ => "on its own",
        };
        let cost = r.summary_cost_micro_usd.map_or_else(String::new, |c| format!(", costing {}", dollars(c)));
        lines.push(format!(
            "the summary was asked {how}: {} input tokens read from the provider's cache, {} written to it, {} \
             processed without it, {} written out{cost}",
            format::exact(u.cache_read_tokens),
            format::exact(u.cache_creation_tokens),
            format::exact(u.input_tokens),
            format::exact(u.output_tokens)
        ));
    }
    if !lines.is_empty() && !r.dry_run {
        lines.push(
            "the originals are kept: `seshat sessions show --full` shows them, `--compactions` lists every pass".into(),
        );
    }
    lines
}

/// One line saying what a compaction did: what it freed and whether a model was called.
pub fn describe(id: &str, r: &Report) -> String {
    let freed = r.tokens_before.saturating_sub(r.tokens_after);
    let verb = if r.dry_run { "Would compact" } else { "Compacted" };
    let mut parts = Vec::new();
    if r.trimmed > 0 {
        parts.push(format!("trimmed {}", format::count(r.trimmed, "tool result", "tool results")));
    }
    if r.summarised {
        parts.push(format!("summarised {}", format::count(r.dropped, "message", "messages")));
    }
    if let Some(why) = &r.not_applied {
        let trims = if r.trimmed > 0 {
            format!(" Trimmed {}.", format::count(r.trimmed, "tool result", "tool results"))
        } else {
            String::new()
        };
        return format!("Did not summarise session {id}: {}.{trims}", format::plain(why));
    }
    if parts.is_empty() {
        return format!("Nothing to compact in session {id} (~{} tokens).", format::exact(r.tokens_before));
    }
    let model = match (r.model_calls, &r.summary_model) {
        (0, _) => "no model called".to_string(),
        (n, Some(m)) => format!("{} to {}", format::count(n as usize, "call", "calls"), format::plain(m)),
        (n, None) => format::count(n as usize, "model call", "model calls"),
    };
    let thrash = if r.thrash { " (it freed too little: counted as a failed compaction)" } else { "" };
    // A dry run writes no summary: its figure counts the summary at its cap.
    let (after, freed) = if r.dry_run && r.summarised {
        (format!("at most {}", format::exact(r.tokens_after)), format!("at least {}", format::exact(freed)))
    } else {
        (format::exact(r.tokens_after), format::exact(freed))
    };
    let background = match r.background {
        Some(b) if b.appended > 0 => format!(
            " Written in the background from the view up to message {}; the {} since kept as they were.",
            b.snapshot_seq,
            format::count(b.appended as usize, "message appended", "messages appended")
        ),
        Some(b) => format!(" Written in the background from the view up to message {}.", b.snapshot_seq),
        None => String::new(),
    };
    format!(
        "{verb} session {id}: {} → {after} tokens (freed {freed}); {}; {model}{thrash}.{background}",
        format::exact(r.tokens_before),
        parts.join(", ")
    )
}
