//! `seshat sessions fork`: a new session that continues from any message of another, whose live
//! view is the other's as it was at that message (nothing is copied but the view's records).

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// Arguments of `sessions fork`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to fork (id or unique prefix).
    id: String,
    /// The last message the fork keeps (its seq, as `sessions show` lists it); default: the last.
    #[arg(long, value_name = "SEQ")]
    at: Option<u64>,
    /// The fork's title (default: the parent's).
    #[arg(long)]
    title: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        return run_remote(args, &mut remote);
    }
    let mut store = ctx.store()?;
    let parent = store.resolve(&args.id)?;
    let forked = store.fork(&parent, args.at, args.title.as_deref())?;
    // The fork hooks are told, as the REPL's /fork tells them.
    let hooks = ctx.environment(seshat::client::Overrides::default())?.hooks()?;
    if hooks.any(seshat::hooks::HookEvent::Fork) {
        let data = seshat::hooks::Data::Fork { parent: &parent, at_seq: forked.at, fork: &forked.session.id };
        let payload = seshat::hooks::payload(&parent, &forked.session.project, forked.at, &data);
        for failure in hooks.run(&payload, None).failures {
            eprintln!("warning: {}", format::visible(&failure));
        }
    }
    print(args.json, &parent, &forked.session, forked.at, forked.moved_from)
}

/// `sessions fork --remote`: the service's `session/fork`, for the caller's own session.
fn run_remote(args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    let params = seshat_protocol::methods::SessionForkParams {
        session: args.id.clone(),
        at: args.at,
        title: args.title.clone(),
    };
    let forked = remote.request::<seshat_protocol::methods::SessionFork>(&params)?;
    let parent = forked.session.parent_id.clone().unwrap_or_else(|| args.id.clone());
    print(args.json, &parent, &forked.session, forked.at, forked.moved_from)
}

/// What a fork prints: the new session, or JSON.
fn print(
    json: bool,
    parent: &str,
    session: &seshat::store::SessionInfo,
    at: u64,
    moved_from: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    if json {
        format::json(
            &mut out,
            &serde_json::json!({"session": session, "parent": parent, "at": at, "moved_from": moved_from}),
        )?;
    } else {
        if let Some(asked) = moved_from {
            writeln!(
                out,
                "Message {asked} is inside a tool exchange: the fork starts before the exchange, after message {at}."
            )?;
        }
        writeln!(out, "{}", describe_parts(parent, at, &session.id))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what a fork made and how to continue in it.
pub fn describe(parent: &str, forked: &seshat::store::Forked) -> String {
    describe_parts(parent, forked.at, &forked.session.id)
}

/// [`describe`] from the fork's parts.
fn describe_parts(parent: &str, at: u64, fork: &str) -> String {
    format!("Forked session {parent} after message {at} into {fork}; continue it with `seshat chat --resume {fork}`.")
}
