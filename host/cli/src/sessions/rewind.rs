//! `seshat sessions rewind`: take a session back to before a message. The later messages leave
//! the live view (a record; nothing is deleted) and new ones append after them; `--undo` brings
//! them back while nothing was added since.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use seshat::client::{Overrides, SessionChoice};
use seshat::compaction::Frame;

use crate::chat::{AgentFlags, open_agent};
use crate::{Context, format};

/// Arguments of `sessions rewind`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (id or unique prefix).
    id: String,
    /// The first message to take out of the live view (its seq); it and every later one go.
    #[arg(long, value_name = "SEQ", required_unless_present = "undo", conflicts_with = "undo")]
    to: Option<u64>,
    /// Undo the latest rewind (while no message was added after it).
    #[arg(long)]
    undo: bool,
    /// Check the restored view against this context window (tokens) instead of the session's.
    #[arg(long, value_name = "TOKENS")]
    window: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `sessions rewind --remote`: the service's `session/rewind` (checked against the window the
/// service knows for the session), for the caller's own session.
fn run_remote(args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.window.is_none(),
        "--window does not work against a remote service: it checks the restored view against the session's window"
    );
    let params = seshat_protocol::methods::SessionRewindParams {
        session: args.id.clone(),
        to: args.to,
        last: None,
        undo: args.undo,
    };
    let r = remote.request::<seshat_protocol::methods::SessionRewind>(&params)?;
    let rewound = serde_json::json!({
        "from_seq": r.from_seq, "through_seq": r.through_seq,
        "retracted_compactions": r.retracted_compactions, "moved_from": r.moved_from,
    });
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &serde_json::json!({"session": args.id, "undone": args.undo, "rewound": rewound}))?;
    } else {
        let line =
            describe_parts(&args.id, (r.from_seq, r.through_seq), r.retracted_compactions, r.moved_from, args.undo);
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        return run_remote(args, &mut remote);
    }
    let mut client = ctx.environment(Overrides::default())?.client()?;
    let id = client.store().resolve(&args.id)?;
    let session = client.store().session(&id)?;
    let rewound = if args.undo {
        client.store().undo_rewind(&id).with_context(|| format!("cannot undo the rewind of {id}"))?
    } else {
        let Some(to) = args.to else { bail!("pass --to SEQ (the first message to rewind) or --undo") };
        let flags = AgentFlags {
            session: SessionChoice::Resume(id.clone()),
            provider: session.provider.clone(),
            model: session.model.clone(),
            window: args.window,
            ..AgentFlags::default()
        };
        drop(client);
        // With chat's frame and window when a provider is configured, else the session's window.
        match open_agent(ctx, &flags)? {
            Ok(mut agent) => agent.rewind_to(to).with_context(|| format!("cannot rewind {id}"))?,
            Err(_) => {
                let mut client = ctx.environment(Overrides::default())?.client()?;
                let settings = client.settings("unknown-model", args.window.or(session.context_window), 0);
                seshat::compaction::rewind(client.store(), &id, to, &Frame::default(), &settings)
                    .with_context(|| format!("cannot rewind {id}"))?
            }
        }
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &serde_json::json!({"session": id, "undone": args.undo, "rewound": rewound}))?;
    } else {
        writeln!(out, "{}", describe(&id, &rewound, args.undo))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what a rewind (or its undo) did.
pub fn describe(id: &str, r: &seshat::store::Rewound, undone: bool) -> String {
    describe_parts(id, (r.from_seq, r.through_seq), r.retracted_compactions, r.moved_from, undone)
}

/// [`describe`] as the REPL says it: what to do next with its own commands, no session id.
pub fn describe_in_repl(r: &seshat::store::Rewound, undone: bool) -> String {
    let (from, through) = (r.from_seq, r.through_seq);
    let range = if from == through { format!("message {from}") } else { format!("messages {from} to {through}") };
    let compactions = match r.retracted_compactions {
        0 => String::new(),
        1 => " with the compaction that summarised them".to_string(),
        n => format!(" with the {n} compactions that summarised them"),
    };
    let moved = r
        .moved_from
        .map(|asked| format!(" (message {asked} is inside a tool exchange: rewound from its start)"))
        .unwrap_or_default();
    if undone {
        format!("Undid the rewind: {range} are back in the live view{compactions}.")
    } else {
        format!(
            "Rewound: {range} left the live view{compactions}{moved}; nothing was deleted (/rewind --undo brings them \
             back until you send something; /fork {through} continues from them after)."
        )
    }
}

/// [`describe`] from the rewind's parts: the messages `(from, through)`, the compactions
/// retracted, the seq asked for when the rewind moved.
fn describe_parts(
    id: &str,
    (from, through): (u64, u64),
    retracted: u64,
    moved_from: Option<u64>,
    undone: bool,
) -> String {
    let range = if from == through { format!("message {from}") } else { format!("messages {from} to {through}") };
    let compactions = match retracted {
        0 => String::new(),
        1 => " with the compaction that summarised them".to_string(),
        n => format!(" with the {n} compactions that summarised them"),
    };
    let moved = moved_from
        .map(|asked| format!(" (message {asked} is inside a tool exchange: rewound from its start)"))
        .unwrap_or_default();
    if undone {
        format!("Undid the rewind of session {id}: {range} are back in the live view{compactions}.")
    } else {
        format!(
            "Rewound session {id}: {range} left the live view{compactions}{moved}; nothing was deleted (`seshat \
             sessions rewind {id} --undo` brings them back until a message is added, `seshat sessions fork {id} --at \
             {through}` continues from them after)."
        )
    }
}
