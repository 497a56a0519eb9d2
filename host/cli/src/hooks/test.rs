//! `seshat hooks test EVENT --session ID`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use seshat::conversation::{Part, Role};
use seshat::hooks::{Data, HookEvent};

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
    let request =
        history.iter().rev().find(|m| m.role == Role::User && !text(&m.parts).is_empty()).map(|m| text(&m.parts));
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
    let last = info.message_count;
    let (call_id, call_arguments) = call.as_ref().map_or(("", "{}"), |c| (c.0.as_str(), c.2.as_str()));
    let tool_name = tool.as_deref().unwrap_or("");
    let data = match event {
        HookEvent::SessionStart => Data::SessionStart { source: "resumed" },
        HookEvent::UserPrompt => Data::UserPrompt { prompt: request.as_deref().unwrap_or("") },
        HookEvent::PreTool => Data::PreTool { call_id, tool: tool_name, arguments: call_arguments },
        HookEvent::MemoryWrite => Data::MemoryWrite { tool: tool_name, arguments: call_arguments },
        HookEvent::PostTool => Data::PostTool {
            call_id,
            tool: tool_name,
            arguments: call_arguments,
            result: result.as_ref().map_or("", |r| r.0.as_str()),
            is_error: result.as_ref().is_some_and(|r| r.1),
        },
        HookEvent::PreCompact => {
            let frame = seshat::compaction::Frame::default();
            let tokens = seshat::compaction::current_use(&frame, &store.live_view(&id)?);
            Data::PreCompact { trigger: "manual", tokens, window: info.context_window.unwrap_or(0) }
        }
        // (The latest compaction's record, in place of a pass's report.)
        HookEvent::PostCompact => Data::PostCompact { report: serde_json::to_value(store.live_view(&id)?.compaction)? },
        HookEvent::Fork => Data::Fork { parent: &id, at_seq: last, fork: "(a test: no fork made)" },
        HookEvent::Rewind => Data::Rewind { from_seq: last, through_seq: last },
        _ => Data::SessionEnd,
    };
    let payload = seshat::hooks::payload(&id, &info.project, last, &data);
    let outcome = hooks.run(&payload, data.tool());
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
