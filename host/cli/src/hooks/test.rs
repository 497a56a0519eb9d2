//! `seshat hooks test EVENT --session ID`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Map, Value, json};
use seshat::conversation::{Part, Role};
use seshat::hooks::{HookEvent, HookPayload};

use crate::{Context, format};

/// `seshat hooks test`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The event: session_start, user_prompt, pre_tool, post_tool, pre_compact, post_compact,
    /// fork, rewind, session_end or memory_write.
    event: String,
    /// The session whose records make the payload (its latest request, tool call and result).
    #[arg(long)]
    session: String,
    /// The tool the payload names (default: the session's latest tool call's).
    #[arg(long)]
    tool: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(event) = HookEvent::parse(&args.event) else {
        let all: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        anyhow::bail!("`{}` is no hook event: the events are {}", args.event, all.join(", "));
    };
    let hooks = ctx.environment(seshat::client::Overrides::default())?.hooks()?;
    let store = ctx.store()?;
    let id = store.resolve(&args.session)?;
    let info = store.session(&id)?;
    let history = store.full_history(&id)?;
    let text = |parts: &[Part]| seshat::conversation::text_of(parts);
    let request = history.iter().rev().find(|m| m.role == Role::User && !text(&m.parts).is_empty());
    let call = history.iter().rev().flat_map(|m| m.parts.iter().rev()).find_map(|p| match p {
        Part::ToolCall { id, name, arguments } => Some((id.clone(), name.clone(), arguments.clone())),
        _ => None,
    });
    let result = call.as_ref().and_then(|(call_id, _, _)| {
        history.iter().flat_map(|m| m.parts.iter()).find_map(|p| match p {
            Part::ToolResult { call_id: c, content, is_error } if c == call_id => Some((content.clone(), *is_error)),
            _ => None,
        })
    });
    let tool = args.tool.clone().or_else(|| call.as_ref().map(|c| c.1.clone()));
    let arguments = call.as_ref().map_or(json!({}), |c| serde_json::from_str(&c.2).unwrap_or_else(|_| json!(c.2)));
    let last = info.message_count;
    let data: Vec<(&str, Value)> = match event {
        HookEvent::SessionStart => vec![("source", json!("resumed"))],
        HookEvent::UserPrompt => vec![("prompt", json!(request.map(|m| text(&m.parts)).unwrap_or_default()))],
        HookEvent::PreTool | HookEvent::MemoryWrite => vec![
            ("call_id", json!(call.as_ref().map(|c| c.0.clone()))),
            ("tool", json!(tool)),
            ("arguments", arguments),
        ],
        HookEvent::PostTool => vec![
            ("call_id", json!(call.as_ref().map(|c| c.0.clone()))),
            ("tool", json!(tool)),
            ("arguments", arguments),
            ("result", json!(result.as_ref().map(|r| r.0.clone()).unwrap_or_default())),
            ("is_error", json!(result.as_ref().is_some_and(|r| r.1))),
        ],
        HookEvent::PreCompact => {
            let window = info.context_window.unwrap_or(0);
            let marks = seshat::window::Marks::new(window);
            let frame = seshat::compaction::Frame::default();
            let tokens = seshat::compaction::current_use(&frame, &store.live_view(&id)?);
            vec![
                ("trigger", json!("manual")),
                ("tokens", json!(tokens)),
                ("window", json!(window)),
                ("threshold", json!(marks.threshold)),
                ("target", json!(marks.target)),
            ]
        }
        // (The latest compaction's record, in place of a pass's report.)
        HookEvent::PostCompact => vec![("report", serde_json::to_value(store.live_view(&id)?.compaction)?)],
        HookEvent::Fork => {
            vec![("parent", json!(id)), ("at_seq", json!(last)), ("fork", json!("(a test: no fork made)"))]
        }
        HookEvent::Rewind => vec![("from_seq", json!(last)), ("through_seq", json!(last))],
        _ => Vec::new(),
    };
    let payload = HookPayload {
        event,
        session: id.clone(),
        project: info.project,
        seq: last,
        data: data.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>(),
    };
    let outcome = hooks.run(
        &payload,
        tool.as_deref().filter(|_| matches!(event, HookEvent::PreTool | HookEvent::PostTool | HookEvent::MemoryWrite)),
    );
    let mut out = format::stdout();
    if args.json {
        let shown = json!({
            "payload": payload,
            "ran": outcome.ran,
            "blocked": outcome.blocked,
            "context": outcome.context,
            "instructions": outcome.instructions,
            "skip": outcome.skip,
            "failures": outcome.failures,
        });
        format::json(&mut out, &shown)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "{} hook(s) of {event} ran on session {id} (message {last}).", outcome.ran)?;
    match &outcome.blocked {
        Some(why) => writeln!(out, "Decision: block — {why}")?,
        None => writeln!(out, "Decision: continue")?,
    }
    for c in &outcome.context {
        writeln!(out, "Context added: {c}")?;
    }
    for i in &outcome.instructions {
        writeln!(out, "Summary instructions: {i}")?;
    }
    if outcome.skip {
        writeln!(out, "The compaction would be skipped this time.")?;
    }
    for f in &outcome.failures {
        writeln!(out, "Reported: {f}")?;
    }
    Ok(ExitCode::SUCCESS)
}
