//! `seshat plugins wit`: the plugin contract's WIT, from the binary, for building a plugin in any
//! language without the repository.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use seshat::plugins::{API_VERSION_CURRENT, wit, wit_versions};

use crate::format;

/// Arguments of `plugins wit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The contract version (default: the current one, which `plugins new` builds against).
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let version = args.version.as_deref().unwrap_or(API_VERSION_CURRENT);
    let Some(text) = wit(version) else {
        let known: Vec<&str> = wit_versions().collect();
        bail!("this seshat has no plugin contract `{version}`: it speaks {}", known.join(", "));
    };
    let mut out = format::stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
