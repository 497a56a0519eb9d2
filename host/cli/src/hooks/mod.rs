//! `seshat hooks`: the lifecycle hooks in force here (`list`), trusting a project's (`trust`), and
//! running them on a session's recorded payload (`test`).

mod list;
mod test;
mod trust;

use std::process::ExitCode;

use crate::Context;

/// What `seshat hooks` does.
#[derive(Debug, clap::Subcommand)]
pub enum HooksCommand {
    /// What runs at each event, and where it was declared (a project's hooks that do not run yet
    /// are listed as such).
    List(list::Args),
    /// Trusts this project's `.seshat/config.toml` as it is now: its hooks run from then on (until
    /// the file changes). Read it first: its commands run as you.
    Trust(trust::Args),
    /// Runs the hooks of EVENT on a payload made from a recorded session, and prints what they
    /// decided (nothing is stored or sent).
    Test(test::Args),
}

pub fn run(ctx: &Context, cmd: HooksCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HooksCommand::List(args) => list::run(ctx, &args),
        HooksCommand::Trust(args) => trust::run(ctx, &args),
        HooksCommand::Test(args) => test::run(ctx, &args),
    }
}
