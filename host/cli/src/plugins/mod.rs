//! `seshat plugins …`: what is installed, whether a file would load, and a new plugin crate.

mod check;
mod install;
mod list;
mod new;
mod test;

use std::process::ExitCode;

use clap::Subcommand;

use super::Context;

/// The `plugins` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List installed plugins and which one is selected for each kind.
    List(list::Args),
    /// Check that a plugin file would load, and print what it would be allowed to do.
    Check(check::Args),
    /// Write a new plugin crate, ready to build for wasm32-wasip2.
    New(new::Args),
    /// Check a plugin and copy it where Seshat finds it (the user's plugins, or --project's).
    Install(install::Args),
    /// Run a plugin on a session, an export or a directory of exports as compaction would, and
    /// show what it did (its edits, its summary, or the request it builds); changes nothing.
    Test(test::Args),
}

/// Runs a `plugins` subcommand.
pub fn run(ctx: &Context, cmd: PluginsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PluginsCommand::List(args) => list::run(ctx, &args),
        PluginsCommand::Check(args) => check::run(ctx, &args),
        PluginsCommand::New(args) => new::run(ctx, &args),
        PluginsCommand::Install(args) => install::run(ctx, &args),
        PluginsCommand::Test(args) => test::run(ctx, &args),
    }
}
