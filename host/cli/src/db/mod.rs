//! `seshat db`: the store as a whole (its schema, copying it between backends).

mod copy;
mod merge;
mod migrate;
mod status;

use std::process::ExitCode;

use seshat::store::Location;

use crate::Context;

/// What `seshat db` does.
#[derive(Debug, clap::Subcommand)]
pub enum DbCommand {
    /// Copy a whole store into a new, empty one: a SQLite file to a PostgreSQL database or back,
    /// then check the two hold the same.
    Copy(copy::Args),
    /// Bring a person's store into a team's as one user's: sessions, memory and documents (run
    /// again, it adds only what is new).
    Merge(merge::Args),
    /// Upgrade the store's schema to this build's (a shared store is never upgraded otherwise).
    Migrate(migrate::Args),
    /// Where the store's schema stands against this build: its version, what is pending.
    Status(status::Args),
}

pub fn run(ctx: &Context, cmd: DbCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DbCommand::Copy(args) => copy::run(ctx, &args),
        DbCommand::Merge(args) => merge::run(ctx, &args),
        DbCommand::Migrate(args) => migrate::run(ctx, &args),
        DbCommand::Status(args) => status::run(ctx, &args),
    }
}

/// FROM and TO of a command taking two stores, refused when they are one (`verb`: what the
/// command does into TO).
fn two_stores(from: &str, to: &str, verb: &str) -> anyhow::Result<(Location, Location)> {
    let cwd = std::env::current_dir()?;
    let from = seshat::client::location_from_argument(from, &cwd)?;
    let to = seshat::client::location_from_argument(to, &cwd)?;
    anyhow::ensure!(from != to, "`{from}` and `{to}` are the same store: {verb} into another one");
    Ok((from, to))
}

/// What a long store-wide command tells its progress bar (`bar`, drawn on a terminal only):
/// (what it is doing, done, in all).
fn progress(bar: &Option<indicatif::ProgressBar>) -> impl FnMut(&str, u64, u64) + '_ {
    move |what: &str, done: u64, total: u64| {
        if let Some(bar) = bar {
            bar.set_message(what.to_string());
            bar.set_length(total);
            bar.set_position(done);
        }
    }
}
