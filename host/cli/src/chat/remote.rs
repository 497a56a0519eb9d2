//! `seshat chat -p … --remote wss://…`: one turn on a team's service. The session is chosen as
//! locally (`--continue`, `--resume`, `--fork`, else a new one, in this machine's project), the
//! answer streams to stdout and the rest to stderr exactly as a local turn prints them, and
//! `--json` prints the same outcome. A stop signal ends the connection: the service stores what
//! arrived as interrupted, as it does for any client that goes away.

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use seshat::client::{Observer, TurnOutcome};
use seshat_protocol::notifications::{self as n, Notification as _};

use super::{Args, Printer, exit_code, report};
use crate::{Context, format};

/// Runs `prompt` as one turn on the `--remote` service.
pub(super) fn one_shot(
    ctx: &Context,
    args: &Args,
    prompt: &str,
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
    signals.on_stop(|signal| std::process::exit(i32::from(crate::stop::exit_status(signal))));
    let session = match (&args.resume, &args.fork, args.r#continue) {
        (Some(id), _, _) => id.clone(),
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
    };
    let started = remote.call("turn/start", &json!({"session": session, "text": prompt}))??;
    let (session, turn) = (started["session"].as_str().unwrap_or_default().to_string(), started["turn"].clone());
    let mut printer = Printer::new(!args.json, &session);
    let mut outcome = None;
    remote.notifications(|notice| {
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
    })?;
    printer.end_line();
    let outcome: TurnOutcome = outcome.ok_or_else(|| anyhow::anyhow!("the service's turn/completed cannot be read"))?;
    if args.json {
        format::json(&mut format::stdout(), &outcome)?;
    } else {
        report(&outcome);
    }
    Ok(exit_code(&outcome))
}
