//! `seshat sessions …`: the saved conversations.

mod append;
mod delete;
mod export;
mod fork;
mod import;
mod list;
mod new;
mod pin;
mod purge;
mod redact;
mod rewind;
mod search;
mod show;

use std::process::ExitCode;

use clap::Subcommand;

use super::Context;

/// The `sessions` subcommands.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List this project's sessions, most recent first.
    List(list::Args),
    /// Create an empty session in this project and print its id (to append to, or test on).
    New(new::Args),
    /// Show a session: the live view the model sees, or with --full everything ever saved.
    Show(show::Args),
    /// Delete a session and everything saved with it.
    Delete(delete::Args),
    /// Write a session's full record (messages, compactions, trims) as JSON Lines on stdout.
    Export(export::Args),
    /// Import a session written by `sessions export`, or Claude Code's and Codex's sessions with
    /// `--from claude-code|codex` (their files, or directories of them).
    Import(import::Args),
    /// Append messages, read as JSON Lines from stdin, to a session (for scripts).
    Append(append::Args),
    /// Search the original messages of this project's sessions (or every session's, --all).
    Search(search::Args),
    /// Pin a message (and the other side of its tool exchanges): kept verbatim in every view.
    /// Without a seq, list the pins.
    Pin(pin::PinArgs),
    /// Unpin a message (and the other side of its tool exchanges).
    Unpin(pin::UnpinArgs),
    /// Fork a session at any message: a new session continuing from there, with the live view
    /// it had then.
    Fork(fork::Args),
    /// Rewind a session to before a message: the later ones leave the live view (nothing is
    /// deleted); --undo brings them back.
    Rewind(rewind::Args),
    /// Replace the credentials already stored in sessions (messages, titles, summaries, trims,
    /// drafts; their search index and vectors follow) by placeholders, as new text is.
    Redact(redact::Args),
    /// Delete sessions older than an age (--older-than 90d), or what [retention] in config.toml
    /// sets for sessions and memory.
    Purge(purge::Args),
}

pub use fork::describe as describe_fork;
pub use pin::describe_pin;
pub use rewind::describe_in_repl as describe_rewind_in_repl;

/// Runs a `sessions` subcommand.
pub fn run(ctx: &Context, cmd: SessionsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SessionsCommand::List(args) => list::run(ctx, &args),
        SessionsCommand::New(args) => new::run(ctx, &args),
        SessionsCommand::Show(args) => show::run(ctx, &args),
        SessionsCommand::Delete(args) => delete::run(ctx, &args),
        SessionsCommand::Export(args) => export::run(ctx, &args),
        SessionsCommand::Import(args) => import::run(ctx, &args),
        SessionsCommand::Append(args) => append::run(ctx, &args),
        SessionsCommand::Search(args) => search::run(ctx, &args),
        SessionsCommand::Pin(args) => pin::run_pin(ctx, &args),
        SessionsCommand::Unpin(args) => pin::run_unpin(ctx, &args),
        SessionsCommand::Fork(args) => fork::run(ctx, &args),
        SessionsCommand::Rewind(args) => rewind::run(ctx, &args),
        SessionsCommand::Redact(args) => redact::run(ctx, &args),
        SessionsCommand::Purge(args) => purge::run(ctx, &args),
    }
}
