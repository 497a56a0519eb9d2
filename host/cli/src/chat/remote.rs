//! `seshat chat --remote wss://…`: turns on a team's service. The session is chosen as locally
//! (`--continue`, `--resume`, `--fork`, else a new one, in this machine's project), answers
//! stream to stdout and the rest to stderr exactly as a local turn prints them, `--json` prints
//! the same outcome, and signals take the same path as locally: Ctrl-C stops the turn (the
//! service stores what arrived as interrupted), a second quits; SIGTERM and SIGHUP stop it and
//! exit. The interactive session takes `/compact`, `/sessions`, `/help` and `/exit`.

use std::process::ExitCode;

use serde_json::{Map, Value};
use seshat::client::{Observer, TurnOutcome};
use seshat::providers::Cancel;
use seshat_protocol::methods::{self as m, Method as _};
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
            let got = remote.request::<m::SessionGet>(&m::SessionGetParams { session: id.clone(), full: false })?;
            got.session.id
        }
        (None, Some(id), _) => {
            let forked = remote
                .request::<m::SessionFork>(&m::SessionForkParams { session: id.clone(), ..Default::default() })?;
            let id = forked.session.id;
            eprintln!("[forked into session {}]", format::visible(&id));
            id
        }
        (None, None, true) => {
            let listed =
                remote.request::<m::SessionList>(&m::SessionListParams { limit: Some(1), ..Default::default() })?;
            match listed.sessions.into_iter().next() {
                Some(s) => s.id,
                None => anyhow::bail!("no session of this project ({}) on the service to continue", ctx.project),
            }
        }
        (None, None, false) => remote.request::<m::SessionNew>(&m::SessionNewParams::default())?.session.id,
    })
}

/// How many times a turn whose connection dropped is sent again (with its idempotency key, so
/// the service stores it once) before the failure is the turn's.
const RESENDS: u32 = 3;

/// How long, at most, a turn sent again waits for the service to finish the attempt its dropped
/// connection interrupted (it is `session_busy` meanwhile).
const BUSY_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Why one attempt at a turn ended without its outcome.
enum Failed {
    /// The connection ended: the service may or may not have stored the turn.
    Dropped(anyhow::Error),
    /// The session is busy (after a resend: the interrupted attempt is still being stored).
    Busy(anyhow::Error),
    /// Anything else: the turn's failure.
    Other(anyhow::Error),
}

/// Runs one turn of `session` with `text`, printing its progress; a cancel sends
/// `turn/interrupt` and the turn ends as the service stored it. The request carries an
/// idempotency key: when the connection drops before the outcome arrives, it is opened again
/// and the turn sent again with the same key — the service stores the exchange once, and either
/// replays its stored outcome or goes on with the turn it had begun.
fn turn(
    remote: &mut Remote,
    session: &str,
    text: &str,
    printer: &mut Printer,
    cancel: &Cancel,
) -> anyhow::Result<TurnOutcome> {
    let key = seshat::store::new_turn_key();
    // The answer's text shown so far, so a replayed outcome shows only what was not.
    let mut shown = String::new();
    let (mut resends, mut busy_since) = (0, None::<std::time::Instant>);
    loop {
        let failed = match attempt(remote, session, text, &key, printer, cancel, &mut shown) {
            Ok(outcome) => {
                if outcome.replayed {
                    let rest = outcome.text.strip_prefix(shown.as_str()).unwrap_or(&outcome.text);
                    printer.event(&seshat::plugins::StreamEvent::TextDelta { text: rest.to_string() });
                }
                return Ok(outcome);
            }
            Err(failed) => failed,
        };
        match failed {
            Failed::Dropped(e) if resends < RESENDS && !cancel.is_cancelled() => {
                resends += 1;
                printer.end_line();
                eprintln!("[{}: sending the turn again]", format::visible(&format!("{e:#}")));
                if let Err(again) = remote.reconnect() {
                    return Ok(connection_lost(session, &again));
                }
            }
            Failed::Dropped(e) => return Ok(connection_lost(session, &e)),
            Failed::Busy(e) if resends > 0 && !cancel.is_cancelled() => {
                let since = *busy_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > BUSY_FOR {
                    return Err(e);
                }
                // The service is still storing the attempt the dropped connection interrupted.
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Failed::Busy(e) | Failed::Other(e) => return Err(e),
        }
    }
}

/// The outcome of a turn whose connection ended and could not be opened again: what the service
/// had is kept there, and the user is told how to go on (as text, or in `--json`'s outcome).
fn connection_lost(session: &str, e: &anyhow::Error) -> TurnOutcome {
    let first = e.chain().next().map(ToString::to_string).unwrap_or_default();
    TurnOutcome {
        session: session.to_string(),
        interrupted: true,
        error_code: Some("connection_lost".into()),
        error: Some(format!(
            "the connection to the service ended mid-turn and could not be opened again ({first}): what the service \
             received is kept there, its answer marked interrupted; `seshat chat --remote … --resume {session}` goes \
             on from there"
        )),
        ..TurnOutcome::default()
    }
}

/// One attempt at a turn: `turn/start` with `key`, then its notifications until its outcome.
fn attempt(
    remote: &mut Remote,
    session: &str,
    text: &str,
    key: &str,
    printer: &mut Printer,
    cancel: &Cancel,
    shown: &mut String,
) -> Result<TurnOutcome, Failed> {
    let params = m::TurnStartParams {
        session: session.to_string(),
        text: text.to_string(),
        idempotency_key: Some(key.to_string()),
    };
    let started = match remote.try_request::<m::TurnStart>(&params) {
        Ok(Ok(started)) => started,
        Ok(Err(refused)) if refused.code == "session_busy" => return Err(Failed::Busy(refused.into())),
        Ok(Err(refused)) => return Err(Failed::Other(refused.into())),
        Err(e) => return Err(Failed::Dropped(e)),
    };
    let turn = Value::from(started.turn);
    let mut outcome = None;
    let mut asked = false;
    let read = remote.notifications(
        |notice| {
            if notice["params"]["turn"] != turn {
                return true;
            }
            let params = notice["params"].clone();
            match notice["method"].as_str().unwrap_or_default() {
                n::TurnEvent::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::TurnEventParams>(params) {
                        if let seshat::plugins::StreamEvent::TextDelta { text } = &p.event {
                            shown.push_str(text);
                        }
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
                n::CompactionSummarising::NAME => {
                    if let Ok(p) = serde_json::from_value::<n::CompactionSummarisingParams>(params) {
                        printer.compaction_summarising(&p.summarising);
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
            let params = m::SessionParams { session: session.to_string() };
            Some((m::TurnInterrupt::NAME, serde_json::to_value(params).unwrap_or_default()))
        },
    );
    read.map_err(Failed::Dropped)?;
    outcome.ok_or_else(|| Failed::Other(anyhow::anyhow!("the service's turn/completed cannot be read")))
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
            let params = m::SessionCompactParams {
                session: session.to_string(),
                instructions: Some(rest.trim().to_string()).filter(|i| !i.is_empty()),
                ..Default::default()
            };
            let report = remote.request::<m::SessionCompact>(&params)?.report;
            eprintln!("[{}]", crate::compact::describe(session, &report));
        }
        "/sessions" => {
            let listed =
                remote.request::<m::SessionList>(&m::SessionListParams { limit: Some(10), ..Default::default() })?;
            let sessions = listed.sessions;
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
