//! `seshat db migrate [--dry-run]`: the explicit upgrade of a store's schema to this build's —
//! the only way a shared (PostgreSQL) store is upgraded.

use std::process::ExitCode;

use seshat::store::Store;

use crate::Context;

/// Arguments of `db migrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Say which migrations would run, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if args.dry_run {
        let status = Store::schema_status(&ctx.db)?;
        if args.json {
            let mut report = super::status::json(&ctx.db, &status);
            report["dry_run"] = true.into();
            println!("{report}");
        } else {
            println!("store:  {}", ctx.db);
            print!("{}", super::status::text(&status));
            println!("Nothing was changed (--dry-run).");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let applied = Store::migrate(&ctx.db)?;
    let status = Store::schema_status(&ctx.db)?;
    if args.json {
        let report = serde_json::json!({
            "store": ctx.db.to_string(),
            "applied": applied,
            "version": status.version,
            "compatible_from": status.compatible_from,
        });
        println!("{report}");
    } else {
        for m in &applied {
            println!("applied {:>4}  {}", m.version, m.name);
        }
        if applied.is_empty() {
            println!("{}: schema version {}, nothing to do.", ctx.db, status.version);
        } else {
            println!(
                "{}: schema version {} (builds of schema {} and later can use it).",
                ctx.db, status.version, status.compatible_from
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
