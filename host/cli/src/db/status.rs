//! `seshat db status`: where the store's schema stands against this build, read without changing
//! anything.

use std::process::ExitCode;

use seshat::store::{SchemaState, SchemaStatus, Store};

use crate::Context;

/// Arguments of `db status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the status as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let status = Store::schema_status(&ctx.db)?;
    if args.json {
        println!("{}", json(&ctx.db, &status));
    } else {
        println!("store:  {}", ctx.db);
        print!("{}", text(&status));
    }
    Ok(ExitCode::SUCCESS)
}

/// The status as one JSON object (`store`, `version`, `latest`, `compatible_from`, `state`,
/// `pending`).
pub(super) fn json(location: &seshat::store::Location, status: &SchemaStatus) -> serde_json::Value {
    serde_json::json!({
        "store": location.to_string(),
        "version": status.version,
        "latest": status.latest,
        "compatible_from": status.compatible_from,
        "state": status.state(),
        "pending": status.pending,
    })
}

/// The status as lines for a person.
pub(super) fn text(status: &SchemaStatus) -> String {
    let (version, latest) = (status.version, status.latest);
    let state = match status.state() {
        SchemaState::Empty => "empty: the first use creates the schema".to_string(),
        SchemaState::Current => "current".to_string(),
        SchemaState::Outdated => format!(
            "outdated: {} migration(s) pending; `seshat db migrate` applies them (`--dry-run` lists them first)",
            status.pending.len()
        ),
        SchemaState::NewerCompatible => format!(
            "newer than this build's, and usable by it (migrations since {} only added): this build keeps serving",
            status.compatible_from
        ),
        SchemaState::NewerIncompatible => {
            format!("newer than this build's and not usable by it: upgrade seshat to version {version}'s build")
        }
        _ => "unknown".to_string(),
    };
    let mut out = format!("schema: version {version}; this build writes {latest}\nstate:  {state}\n");
    for m in &status.pending {
        let how = if m.additive { " (additive: builds of the schema before it keep working)" } else { "" };
        out.push_str(&format!("  pending {:>4}  {}{how}\n", m.version, m.name));
    }
    out
}
