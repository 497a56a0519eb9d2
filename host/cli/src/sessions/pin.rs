//! `seshat sessions pin` / `unpin`: messages the user keeps verbatim in every live view, whatever
//! compaction does (a tool call and its results are pinned together).

use seshat_protocol::methods as m;
use std::io::Write;
use std::process::ExitCode;

use seshat::window::ASSUMED_WINDOW;

use crate::{Context, format};

/// Arguments of `sessions pin`.
#[derive(Debug, clap::Args)]
pub struct PinArgs {
    /// The session id, or any unique prefix of it.
    id: String,
    /// The message to pin (its seq, as `sessions show` lists it); without it, list the pins.
    seq: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `sessions unpin`.
#[derive(Debug, clap::Args)]
pub struct UnpinArgs {
    /// The session id, or any unique prefix of it.
    id: String,
    /// The message to unpin.
    seq: u64,
}

pub fn run_pin(ctx: &Context, args: &PinArgs) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        return run_pin_remote(args, &mut remote);
    }
    let mut store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let Some(seq) = args.seq else { return print_pins(args, &id, &store.pins(&id)?) };
    // Pins may take a share of the window the session works with (the assumed one when unknown).
    let window = store.session(&id)?.context_window.unwrap_or(ASSUMED_WINDOW);
    let added = seshat::compaction::pin(&mut store, &id, seq, window)?;
    print_pinned(args, &id, &added, &store.pins(&id)?)
}

/// `sessions pin --remote`: the service's `session/pins` or `session/pin`.
fn run_pin_remote(args: &PinArgs, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    let Some(seq) = args.seq else {
        let params = m::SessionParams { session: args.id.clone() };
        let listed = remote.request::<m::SessionPins>(&params)?;
        return print_pins(args, &listed.session, &listed.pins);
    };
    let pinned = remote.request::<m::SessionPin>(&m::SessionSeqParams { session: args.id.clone(), seq })?;
    print_pinned(args, &pinned.session, &pinned.pinned, &pinned.pins)
}

/// A session's pins.
fn print_pins(args: &PinArgs, id: &str, pins: &[u64]) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &serde_json::json!({"session": id, "pins": pins}))?;
    } else if pins.is_empty() {
        writeln!(out, "No pinned messages in session {id}.")?;
    } else {
        let list: Vec<String> = pins.iter().map(u64::to_string).collect();
        writeln!(out, "Pinned in session {id}: {}", list.join(", "))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What a pin added, and the pins now.
fn print_pinned(args: &PinArgs, id: &str, added: &[u64], pins: &[u64]) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &serde_json::json!({"session": id, "pinned": added, "pins": pins}))?;
    } else {
        writeln!(out, "{}", describe_pin(added))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_unpin(ctx: &Context, args: &UnpinArgs) -> anyhow::Result<ExitCode> {
    let (id, removed) = if let Some(mut remote) = ctx.remote()? {
        let params = m::SessionSeqParams { session: args.id.clone(), seq: args.seq };
        let unpinned = remote.request::<m::SessionUnpin>(&params)?;
        (unpinned.session, unpinned.unpinned)
    } else {
        let mut store = ctx.store()?;
        let id = store.resolve(&args.id)?;
        let removed = store.unpin(&id, args.seq)?;
        (id, removed)
    };
    let mut out = format::stdout();
    if removed.is_empty() {
        writeln!(out, "Message {} of session {id} was not pinned.", args.seq)?;
    } else {
        writeln!(out, "Unpinned {}.", seqs(&removed))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what a pin added.
pub fn describe_pin(added: &[u64]) -> String {
    if added.is_empty() {
        return "Already pinned.".to_string();
    }
    format!("Pinned {}: kept verbatim in every view, never trimmed.", seqs(added))
}

fn seqs(seqs: &[u64]) -> String {
    let list: Vec<String> = seqs.iter().map(u64::to_string).collect();
    if seqs.len() == 1 { format!("message {}", list[0]) } else { format!("messages {}", list.join(", ")) }
}
