//! `seshat sessions show`.

use seshat_protocol::methods as m;
use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::compaction::{Pass, SeqRange};
use seshat::conversation::Part;
use seshat::store::{Compaction, CompactionStatus, Message, Origin, Rewind, SessionInfo, Trim, ViewEntry};

use crate::{Context, format};

/// Arguments of `sessions show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id, or any unique prefix of it.
    id: String,
    /// Show every original message and every compaction and trim record, not the live view.
    #[arg(long)]
    full: bool,
    /// List what each compaction took out of the live view: the tool results trimmed (sizes
    /// before and after) and, for each summary, the messages it replaced and what it kept.
    #[arg(long, conflicts_with = "full")]
    compactions: bool,
    /// Show the messages around message SEQ of the full history (the one a memory line was
    /// written at, as `seshat memory --show-source` names it), that message marked.
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["full", "compactions"])]
    at: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Full {
    session: SessionInfo,
    messages: Vec<Message>,
    compactions: Vec<Compaction>,
    trims: Vec<Trim>,
    /// Rewinds in force: their messages are a branch out of the live view.
    rewinds: Vec<Rewind>,
    /// The sessions forked from this one: (id, after which message).
    forks: Vec<(String, u64)>,
    /// The compactions and trim passes undone (`--compactions` leaves them out).
    #[serde(skip)]
    undone: Vec<seshat::store::Retracted>,
}

/// `sessions show --remote`: the service's `session/get` for the live view; `--full` reads the
/// session's export (`session/export`: every message, compaction, trim and rewind) and its forks
/// (`session/list`), shown as locally.
fn run_remote(args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    if let Some(seq) = args.at {
        let jsonl = remote.request::<m::SessionExport>(&m::SessionParams { session: args.id.clone() })?.jsonl;
        let full = from_export(&jsonl)?;
        show_at(&mut out, &full.session, &full.messages, seq, args.json)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.compactions {
        let jsonl = remote.request::<m::SessionExport>(&m::SessionParams { session: args.id.clone() })?.jsonl;
        let full = from_export(&jsonl)?;
        let got = remote.request::<m::SessionGet>(&m::SessionGetParams { session: args.id.clone(), full: false })?;
        let pinned: Vec<u64> = got.view.entries.iter().filter(|e| e.pinned).filter_map(|e| e.seq).collect();
        show_passes(&mut out, &full, &pinned, args.json)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.full {
        let jsonl = remote.request::<m::SessionExport>(&m::SessionParams { session: args.id.clone() })?.jsonl;
        let mut full = from_export(&jsonl)?;
        let listed = remote.request::<m::SessionList>(&m::SessionListParams { all: true, ..Default::default() })?;
        let sessions: Vec<SessionInfo> = listed.sessions;
        // In the order a local show lists them: oldest first.
        let mut forks: Vec<SessionInfo> =
            sessions.into_iter().filter(|s| s.parent_id.as_deref() == Some(full.session.id.as_str())).collect();
        forks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        full.forks = forks.into_iter().map(|s| (s.id, s.fork_seq.unwrap_or_default())).collect();
        if args.json {
            format::json(&mut out, &full)?;
        } else {
            render_full(&mut out, &full)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let got = remote.request::<m::SessionGet>(&m::SessionGetParams { session: args.id.clone(), full: false })?;
    if args.json {
        format::json(&mut out, &got.view)?;
    } else {
        render_view(&mut out, &got.view.session, got.view.compaction.as_ref(), &got.view.entries, &[])?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The whole record of a session from its export (pins and retractions are already in the
/// records they shaped); its forks are left for the caller to fill in.
fn from_export(jsonl: &str) -> anyhow::Result<Full> {
    let (mut session, mut messages, mut compactions, mut trims, mut rewinds, mut undone) =
        (None, Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, line) in jsonl.lines().enumerate() {
        let bad =
            |e: &dyn std::fmt::Display| anyhow::anyhow!("line {} of the service's export cannot be read: {e}", i + 1);
        let mut record: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).map_err(|e| bad(&e))?;
        let kind = record.remove("record").and_then(|k| k.as_str().map(str::to_string)).unwrap_or_default();
        let value = serde_json::Value::Object(record);
        match kind.as_str() {
            "session" => {
                let mut value = value;
                value.as_object_mut().map(|o| o.remove("format_version"));
                session = Some(serde_json::from_value(value).map_err(|e| bad(&e))?);
            }
            "message" => messages.push(serde_json::from_value(value).map_err(|e| bad(&e))?),
            "compaction" => compactions.push(serde_json::from_value(value).map_err(|e| bad(&e))?),
            "trim" => trims.push(serde_json::from_value(value).map_err(|e| bad(&e))?),
            "rewind" => rewinds.push(serde_json::from_value(value).map_err(|e| bad(&e))?),
            "retraction" => undone.push(serde_json::from_value(value["undone"].clone()).map_err(|e| bad(&e))?),
            _ => {}
        }
    }
    let session = session.ok_or_else(|| anyhow::anyhow!("the service's export has no session line"))?;
    Ok(Full { session, messages, compactions, trims, rewinds, forks: Vec::new(), undone })
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        return run_remote(args, &mut remote);
    }
    let store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let mut out = format::stdout();
    if let Some(seq) = args.at {
        show_at(&mut out, &store.session(&id)?, &store.full_history(&id)?, seq, args.json)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.compactions || args.full {
        let full = Full {
            session: store.session(&id)?,
            messages: store.full_history(&id)?,
            compactions: store.compactions(&id)?,
            trims: store.trims(&id)?,
            rewinds: store.live_rewinds(&id)?,
            forks: store.forks(&id)?,
            undone: store.retractions(&id)?.into_iter().map(|(r, _)| r).collect(),
        };
        if args.compactions {
            show_passes(&mut out, &full, &store.pins(&id)?, args.json)?;
        } else if args.json {
            format::json(&mut out, &full)?;
        } else {
            render_full(&mut out, &full)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let view = store.live_view(&id)?;
    if args.json {
        format::json(&mut out, &view)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    render_view(&mut out, &view.session, view.compaction.as_ref(), &view.entries, &store.forks(&id)?)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// How many messages before the one `--at` names are shown with it (the request that led to it).
const BEFORE_AT: u64 = 2;

/// `--at SEQ`: the messages from [`BEFORE_AT`] before SEQ to the one after it, SEQ marked.
fn show_at(
    out: &mut format::Out,
    session: &SessionInfo,
    messages: &[Message],
    seq: u64,
    json: bool,
) -> anyhow::Result<()> {
    let Some(last) = messages.last().map(|m| m.seq) else {
        anyhow::bail!("session {} holds no messages", session.id);
    };
    if seq == 0 || seq > last {
        anyhow::bail!("session {} has no message {seq}: its messages are 1 to {last}", session.id);
    }
    let near: Vec<&Message> =
        messages.iter().filter(|m| m.seq + BEFORE_AT >= seq && m.seq <= seq.saturating_add(1)).collect();
    if json {
        return format::json(out, &serde_json::json!({"session": session.id, "at": seq, "messages": near}));
    }
    header(out, session)?;
    for m in near {
        let mark = if m.seq == seq { " ◀ here" } else { "" };
        rule(out, &format!("{} #{}{mark}", m.role.as_str(), m.seq), m.status.as_str())?;
        parts(out, &m.parts)?;
    }
    Ok(())
}

/// `--compactions`: each pass of the session's compaction history, as JSON or text.
fn show_passes(out: &mut format::Out, full: &Full, pinned: &[u64], json: bool) -> anyhow::Result<()> {
    let seqs: Vec<u64> = full.messages.iter().map(|m| m.seq).collect();
    let passes = seshat::compaction::passes(&full.compactions, &full.trims, &seqs, pinned, &full.rewinds, &full.undone);
    if json {
        return format::json(out, &serde_json::json!({"session": full.session.id, "passes": passes}));
    }
    render_passes(out, &full.session, &passes)?;
    Ok(())
}

fn render_passes(out: &mut dyn Write, session: &SessionInfo, passes: &[Pass]) -> std::io::Result<()> {
    header(out, session)?;
    if passes.is_empty() {
        return writeln!(out, "Nothing was ever compacted in this session: its live view is its whole history.");
    }
    writeln!(
        out,
        "{}; the originals are kept (`seshat sessions show {} --full`).",
        format::count(passes.len(), "compaction pass", "compaction passes"),
        session.id
    )?;
    for pass in passes {
        match pass {
            Pass::Trims { created_at, plugin, trims } => {
                let (before, after) = trims.iter().fold((0, 0), |(b, a), t| (b + t.bytes_before, a + t.bytes_after));
                writeln!(
                    out,
                    "\n── {} trimmed at {}{}: {} → {} bytes ──",
                    format::count(trims.len(), "tool result", "tool results"),
                    format::time(*created_at),
                    plugin.as_ref().map_or(String::new(), |p| format!(" by {}", p.id)),
                    format::exact(before),
                    format::exact(after),
                )?;
                for t in trims {
                    writeln!(
                        out,
                        "  #{} part {}: {} → {} bytes",
                        t.seq,
                        t.part,
                        format::exact(t.bytes_before),
                        format::exact(t.bytes_after)
                    )?;
                }
            }
            Pass::Summary {
                created_at,
                trigger,
                status,
                tokens_before,
                tokens_after,
                summarised_seqs,
                first_kept_seq,
                summary,
                model,
                error,
                ..
            } => {
                let trigger = match trigger {
                    seshat::store::CompactionTrigger::Auto => "auto",
                    seshat::store::CompactionTrigger::Manual => "manual",
                };
                if *status == CompactionStatus::Failed {
                    writeln!(
                        out,
                        "\n══ summary ({trigger}) at {} failed: {} ══",
                        format::time(*created_at),
                        error.as_deref().unwrap_or("no reason recorded")
                    )?;
                    continue;
                }
                let messages: u64 = summarised_seqs.iter().map(SeqRange::len).sum();
                writeln!(
                    out,
                    "\n══ summary ({trigger}) at {}: {} → {} tokens; {} left the view: {}; kept from #{}; model {} ══",
                    format::time(*created_at),
                    format::exact(*tokens_before),
                    tokens_after.map_or("?".into(), format::exact),
                    format::count(messages as usize, "message", "messages"),
                    crate::compact::ranges(summarised_seqs),
                    first_kept_seq.map_or("?".into(), |s| s.to_string()),
                    model.as_deref().unwrap_or("-"),
                )?;
                if let Some(e) = error {
                    writeln!(out, "(counted as a failed compaction: {e})")?;
                }
                writeln!(out, "What the summary kept:\n{}", summary.as_deref().unwrap_or_default())?;
            }
            // A kind of pass this build does not know how to show.
            _ => {}
        }
    }
    Ok(())
}

/// The live view as text: the session, its lineage, then each entry.
fn render_view(
    out: &mut dyn Write,
    session: &SessionInfo,
    compaction: Option<&Compaction>,
    entries: &[ViewEntry],
    forks: &[(String, u64)],
) -> std::io::Result<()> {
    header(out, session)?;
    lineage(out, session, forks)?;
    if let Some(c) = compaction {
        writeln!(
            out,
            "Live view: compacted at message #{} (kept from #{}); `--full` shows the original history.",
            c.through_seq,
            c.first_kept_seq.unwrap_or(c.through_seq + 1),
        )?;
    }
    for entry in entries {
        let label = match (entry.origin, entry.seq) {
            (Origin::Summary, _) => "summary of the compacted history".to_string(),
            (Origin::Pinned, Some(seq)) => format!("{} #{seq} (pinned: the latest request)", entry.role.as_str()),
            (_, seq) if entry.pinned => format!("{} #{} (pinned)", entry.role.as_str(), seq.unwrap_or_default()),
            (_, seq) => format!("{} #{}", entry.role.as_str(), seq.unwrap_or_default()),
        };
        rule(out, &label, entry.status.as_str())?;
        parts(out, &entry.parts)?;
        for t in &entry.trims {
            writeln!(out, "  (part {} trimmed: {} → {} bytes)", t.part, t.original_size, t.new_size)?;
        }
    }
    Ok(())
}

fn header(out: &mut dyn Write, s: &SessionInfo) -> std::io::Result<()> {
    writeln!(out, "Session {}  {}", s.id, s.title.as_deref().unwrap_or("(untitled)"))?;
    let model = match (&s.provider, &s.model) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.clone(),
        (Some(p), None) => p.clone(),
        (None, None) => "-".into(),
    };
    writeln!(
        out,
        "project {}  model {}  messages {}  context {}  updated {}",
        s.project,
        model,
        s.message_count,
        format::context_use(s.context_tokens, s.context_window),
        format::time(s.updated_at),
    )?;
    writeln!(
        out,
        "tokens in {} out {} cache read {} cache write {}",
        s.totals.input_tokens, s.totals.output_tokens, s.totals.cache_read_tokens, s.totals.cache_creation_tokens,
    )
}

/// Where the session sits among its forks: what it was forked from, what was forked from it.
fn lineage(out: &mut dyn Write, s: &SessionInfo, forks: &[(String, u64)]) -> std::io::Result<()> {
    if let (Some(parent), Some(at)) = (&s.parent_id, s.fork_seq) {
        writeln!(out, "forked from {parent} after message {at} (messages 1 to {at} are read from it)")?;
    } else if let (Some(parent), Some(at)) =
        (s.metadata["forked_from"]["session"].as_str(), s.metadata["forked_from"]["at"].as_u64())
    {
        writeln!(out, "forked from {parent} after message {at} (imported whole: it holds its own copy)")?;
    }
    for (fork, at) in forks {
        writeln!(out, "fork {fork} continues after message {at}")?;
    }
    Ok(())
}

fn rule(out: &mut dyn Write, label: &str, status: &str) -> std::io::Result<()> {
    if status == "complete" {
        writeln!(out, "\n── {label} ──")
    } else {
        writeln!(out, "\n── {label} [{status}] ──")
    }
}

fn parts(out: &mut dyn Write, parts: &[Part]) -> std::io::Result<()> {
    for part in parts {
        match part {
            Part::Text { text } => writeln!(out, "{text}")?,
            Part::ToolCall { id, name, arguments } => writeln!(out, "→ call {name} ({id}) {arguments}")?,
            Part::ToolResult { call_id, content, is_error } => {
                let kind = if *is_error { "error" } else { "result" };
                writeln!(out, "← {kind} for {call_id}:\n{content}")?;
            }
            Part::Thinking { text, signature } => {
                let signed = if signature.is_some() { ", signed" } else { "" };
                writeln!(out, "(thinking{signed}) {text}")?;
            }
            Part::RedactedThinking { data } => writeln!(out, "(redacted thinking, {} bytes)", data.len())?,
        }
    }
    Ok(())
}

fn render_full(out: &mut dyn Write, full: &Full) -> std::io::Result<()> {
    header(out, &full.session)?;
    writeln!(
        out,
        "Full history: {}, {}, {}.",
        format::count(full.messages.len(), "message", "messages"),
        format::count(full.compactions.len(), "compaction", "compactions"),
        format::count(full.trims.len(), "trim", "trims")
    )?;
    lineage(out, &full.session, &full.forks)?;
    let mut compactions = full.compactions.iter().peekable();
    for m in &full.messages {
        for r in full.rewinds.iter().filter(|r| r.from_seq == m.seq) {
            writeln!(
                out,
                "\n┄┄ rewound at {}: messages {} to {} are a branch out of the live view (`seshat sessions fork {} \
                 --at {}` continues from it) ┄┄",
                format::time(r.created_at),
                r.from_seq,
                r.through_seq,
                full.session.id,
                r.through_seq
            )?;
        }
        rule(out, &format!("{} #{}", m.role.as_str(), m.seq), m.status.as_str())?;
        parts(out, &m.parts)?;
        for t in full.trims.iter().filter(|t| t.seq == m.seq) {
            writeln!(
                out,
                "  [trim of part {} at {}: {} → {} bytes, the live view shows: {}]",
                t.part,
                format::time(t.created_at),
                t.original_size,
                t.new_size,
                format::clip(&t.replacement, 120),
            )?;
        }
        while let Some(c) = compactions.next_if(|c| c.through_seq <= m.seq) {
            compaction(out, c)?;
        }
        if full.rewinds.iter().any(|r| r.through_seq == m.seq) {
            writeln!(out, "\n┄┄ end of the rewound branch ┄┄")?;
        }
    }
    for c in compactions {
        compaction(out, c)?;
    }
    Ok(())
}

fn compaction(out: &mut dyn Write, c: &Compaction) -> std::io::Result<()> {
    let trigger = match c.trigger {
        seshat::store::CompactionTrigger::Auto => "auto",
        seshat::store::CompactionTrigger::Manual => "manual",
    };
    match c.status {
        CompactionStatus::Ok => {
            writeln!(
                out,
                "\n══ compaction ({trigger}) through #{}: {} → {} tokens, kept from #{}{}, model {} ══",
                c.through_seq,
                c.tokens_before,
                c.tokens_after.map_or("?".into(), |t| t.to_string()),
                c.first_kept_seq.unwrap_or(c.through_seq + 1),
                c.pinned_seq.map_or(String::new(), |p| format!(", pinned #{p}")),
                c.model.as_deref().unwrap_or("-"),
            )?;
            if let Some(e) = &c.error {
                // Used, but counted as a failure (a summary that freed too little).
                writeln!(out, "(counted as a failed compaction: {e})")?;
            }
            writeln!(out, "{}", c.summary.as_deref().unwrap_or_default())
        }
        CompactionStatus::Failed => writeln!(
            out,
            "\n══ compaction ({trigger}) through #{} failed: {} ══",
            c.through_seq,
            c.error.as_deref().unwrap_or("no reason recorded")
        ),
    }
}
