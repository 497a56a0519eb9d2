//! `seshat sessions new`: an empty session in this project, to append to or test plugins on.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use seshat::store::NewSession;

use crate::{Context, format};

/// Arguments of `sessions new`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Its title (default: the first user message's first line).
    #[arg(long)]
    title: Option<String>,
    /// The provider it records.
    #[arg(long)]
    provider: Option<String>,
    /// The model it records.
    #[arg(long)]
    model: Option<String>,
    /// The model's context window it records, in tokens (at least 4096).
    #[arg(long, value_name = "TOKENS")]
    window: Option<u64>,
    /// Print the new session as JSON instead of its id alone.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(window) = args.window
        && let Some(e) = seshat::window::too_small(
            args.model.as_deref().unwrap_or("the model"),
            window,
            seshat::window::WindowSource::Flag,
        )
    {
        bail!(e);
    }
    let info = if let Some(mut remote) = ctx.remote()? {
        // The service files it under this machine's project key (sent when connecting).
        let params = seshat_protocol::methods::SessionNewParams {
            title: args.title.clone(),
            provider: args.provider.clone(),
            model: args.model.clone(),
            window: args.window,
        };
        remote.request::<seshat_protocol::methods::SessionNew>(&params)?.session
    } else {
        ctx.store()?.create_session(NewSession {
            project: ctx.project.clone(),
            title: args.title.clone(),
            provider: args.provider.clone(),
            model: args.model.clone(),
            context_window: args.window,
            metadata: None,
        })?
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &info)?;
    } else {
        writeln!(out, "{}", info.id)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
