//! `seshat chat --remote wss://…`: turns on a team's service. The session is chosen as locally
//! (`--continue`, `--resume`, `--fork`, else a new one, in this machine's project), answers
//! stream to stdout and the rest to stderr exactly as a local turn prints them, `--json` prints
//! the same outcome, and signals take the same path as locally: Ctrl-C stops the turn (the
//! service stores what arrived as interrupted), a second quits; SIGTERM and SIGHUP stop it and
//! exit. The interactive session takes `/compact`, `/sessions`, `/help` and `/exit`.

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use seshat::client::{Observer, TurnOutcome};
use seshat::providers::Cancel;
use seshat_protocol::notifications::{self as n, Notification as _};

use super::{Args, Printer, report};
use crate::remote::Remote;
use crate::{Context, format};

/// The slash commands a remote session takes.
const HELP: &str = "\
/compact [text]  compact now (summarise older turns), told what to keep
/sessions  this project's recent sessions on the service
/help      this list
/exit      leave (Ctrl-D too); Ctrl-C stops an answer";

/// Runs `prompt` as one turn on the `--remote` service, or the interactive session without one.
pub(super) fn run(
    ctx: &Context,
    args: &Args,
    prompt: Option<&str>,
    signals: crate::stop::Signals,
) -> anyhow::Result<ExitCode> {
    let mut setup = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            setup.insert(key.to_string(), v);
        }
    };
    put("provider", args.provider.clone().map(Value::from));
    put("model", args.model.clone().map(Value::from));
    put("window", args.window.map(Value::from));
    put("compact_summary_model", args.summary_model.clone().map(Value::from));
    put("auto_compact", args.no_auto_compact.then_some(Value::Bool(false)));
    let mut remote = ctx.remote_with(setup)?.expect("chat runs this with --remote only");
    let cancel = Cancel::default();
    let work = crate::stop::Work::default();
    super::on_signals(signals, &work, &cancel, prompt.is_none());
    let session = session(ctx, args, &mut remote)?;
    let Some(prompt) = prompt else {
        return repl(ctx, &mut remote, &session, &cancel, &work);
    };
    let mut printer = Printer::new(!args.json, &session);
    work.begin();
    let outcome = turn(&mut remote, &session, prompt, &mut printer, &cancel);
    let stopped = work.end();
    printer.end_line();
    super::finish(&outcome?, args.json, stopped)
}

/// The session the flags choose, on the service.
fn session(ctx: &Context, args: &Args, remote: &mut Remote) -> anyhow::Result<String> {
    Ok(match (&args.resume, &args.fork, args.r#continue) {
        (Some(id), _, _) => {
            let got = remote.call("session/get", &json!({"session": id}))??;
            got["session"]["id"].as_str().unwrap_or(id).to_string()
        }
        (None, Some(id), _) => {
            let forked = remote.call("session/fork", &json!({"session": id}))??;
            let id = forked["session"]["id"].as_str().unwrap_or_default().to_string();
            eprintln!("[forked into session {}]", format::visible(&id));
            id
        }
        (None, None, true) => {
            let listed = remote.call("session/list", &json!({"limit": 1}))??;
            match listed["sessions"][0]["id"].as_str() {
                Some(id) => id.to_string(),
                None => anyhow::bail!("no session of this project ({}) on the service to continue", ctx.project),
            }
        }
        (None, None, false) => {
            let made = remote.call("session/new", &json!({}))??;
            made["session"]["id"].as_str().unwrap_or_default().to_string()
        }
    })
}

/// Runs one turn of `session` with `text`, printing its progress; a cancel sends
/// `turn/interrupt` and the turn ends as the service stored it.
fn turn(
    remote: &mut Remote,
    session: &str,
    text: &str,
    printer: &mut Printer,
    cancel: &Cancel,
) -> anyhow::Result<TurnOutcome> {
    let started = remote.call("turn/start", &json!({"session": session, "text": text}))??;
    let turn = started["turn"].clone();
    let mut outcome = None;
    let mut asked = false;
    remote.notifications(
        |notice| {
            if notice["params"]["turn"] != turn {
                return true;
            }
            let params = notice["params"].clone();
            match notice["method"].as_str().unwrap_or_default() {
                n::TurnEvent::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::TurnEventParams>(params) {
                        printer.event(&p.event);
                    }
                }
                n::CompactionStarted::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::CompactionStartedParams>(params) {
                        let starting =
                            seshat::compaction::Starting { trigger: p.trigger, tokens: p.tokens, window: p.window };
                        printer.compaction_started(&starting);
                    }
                }
                n::Compaction::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::CompactionParams>(params) {
                        printer.compaction(&p.report);
                    }
                }
                n::ToolCalled::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::ToolCalledParams>(params) {
                        printer.tool_call(&p.call_id, &p.name, &p.arguments);
                    }
                }
                n::ToolResult::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::ToolResultParams>(params) {
                        printer.tool_result(&p.call_id, &p.name, &p.content, p.is_error);
                    }
                }
                n::Warning::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::WarningParams>(params) {
                        printer.warning(&p.message);
                    }
                }
                n::Completed::NAME => {
                    outcome = serde_json::from_value::<n::CompletedParams>(params).ok().map(|p| p.outcome);
                    return false;
                }
                _ => {}
            }
            true
        },
        || {
            if asked || !cancel.is_cancelled() {
                return None;
            }
            asked = true;
            Some(("turn/interrupt", json!({"session": session})))
        },
    )?;
    outcome.ok_or_else(|| anyhow::anyhow!("the service's turn/completed cannot be read"))
}

/// The interactive session on the service.
fn repl(
    ctx: &Context,
    remote: &mut Remote,
    session: &str,
    cancel: &Cancel,
    work: &crate::stop::Work,
) -> anyhow::Result<ExitCode> {
    let mut editor = rustyline::DefaultEditor::new()?;
    let history = ctx.dirs.data.join("chat-history.txt");
    let _ = editor.load_history(&history);
    eprintln!("seshat · session {session} on {} · /help for commands", remote.url());
    let mut code = ExitCode::SUCCESS;
    while let Some(line) = super::repl::read(&mut editor, None)? {
        let input = line.as_str();
        if input.starts_with('/') {
            match command(ctx, remote, session, input) {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    eprintln!("error: {}", format::visible(&format!("{e:#}")));
                    continue;
                }
            }
        }
        cancel.reset();
        let mut printer = Printer::new(true, session);
        work.begin();
        let outcome = turn(remote, session, input, &mut printer, cancel);
        let stopped = work.end();
        printer.end_line();
        match outcome {
            Ok(o) => report(&o),
            Err(e) => eprintln!("error: {}", format::visible(&format!("{e:#}"))),
        }
        if let Some(signal) = stopped {
            code = ExitCode::from(crate::stop::exit_status(signal));
            break;
        }
    }
    if let Some(dir) = history.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = editor.save_history(&history);
    Ok(code)
}

/// Runs a slash command; false to leave.
fn command(ctx: &Context, remote: &mut Remote, session: &str, input: &str) -> anyhow::Result<bool> {
    let (name, rest) = input.split_once(' ').unwrap_or((input, ""));
    match name {
        "/exit" | "/quit" => return Ok(false),
        "/help" => eprintln!("{HELP}"),
        "/compact" => {
            let mut params = json!({"session": session});
            if !rest.trim().is_empty() {
                params["instructions"] = rest.trim().into();
            }
            let done = remote.call("session/compact", &params)??;
            let report: seshat::compaction::Report = serde_json::from_value(done["report"].clone())
                .map_err(|e| anyhow::anyhow!("the service's compaction report cannot be read: {e}"))?;
            eprintln!("[{}]", crate::compact::describe(session, &report));
        }
        "/sessions" => {
            let listed = remote.call("session/list", &json!({"limit": 10}))??;
            let sessions: Vec<seshat::store::SessionInfo> = serde_json::from_value(listed["sessions"].clone())
                .map_err(|e| anyhow::anyhow!("the service's session list cannot be read: {e}"))?;
            if sessions.is_empty() {
                eprintln!("No sessions of this project ({}) on the service.", ctx.project);
            }
            for s in &sessions {
                let here = if s.id == session { "*" } else { " " };
                eprintln!(
                    "{here} {}  {:>5} messages  {}",
                    s.id,
                    s.message_count,
                    format::clip(s.title.as_deref().unwrap_or("(untitled)"), 60)
                );
            }
        }
        other => eprintln!("{other} does not work against a remote service yet; /help lists what does"),
    }
    Ok(true)
}
