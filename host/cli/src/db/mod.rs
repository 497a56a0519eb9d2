//! `seshat db`: the store as a whole (its schema, copying it between backends).

mod copy;
mod merge;
mod migrate;
mod status;

use std::process::ExitCode;

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
