//! `seshat db`: the store as a whole (copying it between backends).

mod copy;

use std::process::ExitCode;

use crate::Context;

/// What `seshat db` does.
#[derive(Debug, clap::Subcommand)]
pub enum DbCommand {
    /// Copy a whole store into a new, empty one: a SQLite file to a PostgreSQL database or back,
    /// then check the two hold the same.
    Copy(copy::Args),
}

pub fn run(ctx: &Context, cmd: DbCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DbCommand::Copy(args) => copy::run(ctx, &args),
    }
}
