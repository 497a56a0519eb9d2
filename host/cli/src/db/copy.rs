//! `seshat db copy FROM TO`.

use std::process::ExitCode;

use seshat::store::Store;

use crate::Context;

/// Arguments of `db copy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store to copy: a SQLite file's path or a `postgres://` URL.
    from: String,
    /// The new, empty store to copy into: a path (created) or a `postgres://` URL.
    to: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(_ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (from, to) = super::two_stores(&args.from, &args.to, "copy")?;
    let mut source = Store::connect(&from)?;
    let mut target = Store::connect(&to)?;
    let bar = crate::knowledge::bar("{msg} {pos}/{len} rows {wide_bar} {eta}");
    let mut progress = super::progress(&bar);
    let copied = source.copy_to(&mut target, &mut progress)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let count = |table: &str| copied.tables.iter().find(|(t, _)| t == table).map_or(0, |(_, n)| *n);
    if args.json {
        let tables: serde_json::Map<String, serde_json::Value> =
            copied.tables.iter().map(|(t, n)| (t.clone(), (*n).into())).collect();
        let report =
            serde_json::json!({"from": from.to_string(), "to": to.to_string(), "rows": tables, "verified": true});
        println!("{report}");
    } else {
        println!(
            "Copied {} sessions ({} messages), {} memory entities, {} notes and {} documents from {from} to {to}.",
            count("sessions"),
            count("messages"),
            count("memory_entities"),
            count("memory_notes"),
            count("documents")
        );
        println!("Verified: every session exports the same and every table holds the same rows in both.");
    }
    Ok(ExitCode::SUCCESS)
}
