//! `seshat db merge FROM TO --as USER`: a person's store brought into a team's as theirs.

use std::process::ExitCode;

use anyhow::bail;
use seshat::store::Store;

use crate::Context;

/// Arguments of `db merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store to bring in (a SQLite file's path or a `postgres://` URL): nothing of it changes.
    from: String,
    /// The store to merge into (a team's): nothing of it is changed or removed.
    to: String,
    /// The user of TO whose the merged sessions, memory and documents become (`seshat users
    /// add` makes one).
    #[arg(long = "as", value_name = "USER")]
    user: String,
    /// Whose sessions, memory and documents in FROM are brought (default: `local`, a personal
    /// store's only user).
    #[arg(long, value_name = "USER", default_value = seshat::store::LOCAL_USER)]
    from_user: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(_ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (from, to) = super::two_stores(&args.from, &args.to, "merge")?;
    if let seshat::store::Location::File(path) = &from
        && !path.is_file()
    {
        bail!("there is no store at {}: give the path of the SQLite file to bring in", path.display());
    }
    let mut source = Store::connect(&from)?.acting_for(&args.from_user);
    let target = Store::connect(&to)?;
    let known = target.users()?;
    let Some(user) = known.iter().find(|u| u.eq_ignore_ascii_case(&args.user)) else {
        bail!(
            "{to} has no user `{}`: add them first (`seshat --db {to} users add {}`), then merge again",
            args.user,
            args.user
        );
    };
    let mut target = target.acting_for(user);
    let bar = crate::knowledge::bar("{msg} {pos}/{len} {wide_bar} {eta}");
    let mut progress = super::progress(&bar);
    let merged = seshat::merge::merge(&mut source, &mut target, &mut progress)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if args.json {
        let mut report = serde_json::to_value(&merged)?;
        report["from"] = from.to_string().into();
        report["to"] = to.to_string().into();
        report["as"] = user.clone().into();
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Merged {from} into {to} as {user}: {} sessions added, {} grown by {} messages, {} unchanged; \
         {} entities, {} observations, {} relations and {} notes added; {} documents added, {} unchanged.",
        merged.sessions_added,
        merged.sessions_grown,
        merged.messages_added,
        merged.sessions_unchanged,
        merged.entities_added,
        merged.observations_added,
        merged.relations_added,
        merged.notes_added,
        merged.documents_added,
        merged.documents_unchanged,
    );
    let kept = [
        ("sessions continued on both sides, kept as they are there", &merged.sessions_diverged),
        ("sessions whose id another user holds there, not copied", &merged.sessions_taken),
        ("notes held there with another value, kept", &merged.notes_kept),
        ("documents held there with other content, kept", &merged.documents_kept),
    ];
    for (what, items) in kept {
        if !items.is_empty() {
            println!("Left alone — {what}: {}", crate::format::visible(&items.join(", ")));
        }
    }
    Ok(ExitCode::SUCCESS)
}
