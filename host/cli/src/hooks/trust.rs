//! `seshat hooks trust`.

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// `seshat hooks trust`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// No longer trust it: its hooks stop running.
    #[arg(long)]
    revoke: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let config = ctx.config()?;
    let path = ctx.project_dir.join(".seshat").join("config.toml");
    let mut trust = seshat::hooks::trust::Trust::load(&ctx.dirs.data)?;
    let mut out = format::stdout();
    if args.revoke {
        if trust.revoke(&path)? {
            writeln!(out, "{} is no longer trusted: its hooks do not run.", path.display())?;
        } else {
            writeln!(out, "{} was not trusted.", path.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(project) = config.project_hooks else {
        anyhow::bail!("{} declares no hooks: there is nothing to trust", path.display());
    };
    trust.trust(&project.path, &project.digest)?;
    writeln!(out, "Trusted {} as it is now. Its hooks run as you:", project.path.display())?;
    for (event, hooks) in &project.hooks {
        for h in hooks {
            match (&h.command, &h.plugin) {
                (Some(command), _) => writeln!(out, "  {event}: {}", command)?,
                (None, Some(plugin)) => writeln!(out, "  {event}: plugin {}", plugin)?,
                (None, None) => {}
            }
        }
    }
    writeln!(out, "When the file changes, its hooks stop until you trust it again.")?;
    Ok(ExitCode::SUCCESS)
}
