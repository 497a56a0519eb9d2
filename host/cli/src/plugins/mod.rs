//! `seshat plugins …`: what is installed, whether a file would load, and a new plugin crate.

mod check;
mod install;
mod interpreted;
mod list;
mod new;
mod test;
mod uninstall;
mod wit;

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
    /// Remove an installed plugin (a built-in one it replaced is used again).
    Uninstall(uninstall::Args),
    /// Print the plugin contract (WIT) this seshat speaks, to build a plugin in any language.
    #[command(disable_version_flag = true)]
    Wit(wit::Args),
}

/// Runs a `plugins` subcommand.
pub fn run(ctx: &Context, cmd: PluginsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PluginsCommand::List(args) => list::run(ctx, &args),
        PluginsCommand::Check(args) => quick_tier_note(check::run(ctx, &args)),
        PluginsCommand::New(args) => new::run(ctx, &args),
        PluginsCommand::Install(args) => install::run(ctx, &args),
        PluginsCommand::Test(args) => quick_tier_note(test::run(ctx, &args)),
        PluginsCommand::Uninstall(args) => uninstall::run(ctx, &args),
        PluginsCommand::Wit(args) => wit::run(&args),
    }
}

/// A failed check or test on the quick tier says how to rule the tier out: Winch lacks some
/// proposals Cranelift compiles (exceptions, tail calls, GC), and its slower code can run out of a
/// time budget the installed plugin keeps to.
fn quick_tier_note(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    let failed = !matches!(&result, Ok(code) if *code == ExitCode::SUCCESS);
    if failed && seshat::plugins::engine_started() && seshat::plugins::compile_tier() == seshat::plugins::Tier::Quick {
        eprintln!(
            "note: the plugin was compiled with the quick tier (Winch); run again with --optimised to compile it as an \
             installed plugin is"
        );
    }
    result
}

/// Chooses the compile tier for checking or testing the file `wasm`: the quick one (a large
/// component compiles several times faster; its code runs slower), unless `optimised` is asked
/// for or an installed plugin has the same bytes (its compiled artefact is then in the cache).
/// Returns a sentence saying which, for the report.
pub(crate) fn choose_tier(ctx: &Context, wasm: &std::path::Path, optimised: bool) -> Option<&'static str> {
    if optimised {
        return None;
    }
    let bytes = std::fs::read(wasm).ok()?;
    let installed = ctx.catalog().entries().iter().any(|e| match &e.wasm {
        seshat::plugins::WasmSource::File(path) => {
            std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64)
                && std::fs::read(path).is_ok_and(|b| b == bytes)
        }
        seshat::plugins::WasmSource::Embedded(b) => *b == bytes.as_slice(),
    });
    if installed || !seshat::plugins::use_quick_tier() {
        return None;
    }
    Some(
        "compiled with the quick tier (a baseline compiler: much faster to compile, slower to run; guest times are \
         higher than in sessions, where the installed plugin runs optimised; --optimised compiles as installed)",
    )
}
