//! `seshat plugins uninstall`: remove an installed plugin (the user's, or with --project the
//! project's), saying what now stands in for it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::Serialize;
use seshat::plugins::{Catalog, Origin, PluginKind, cache};

use crate::{Context, format};

/// Arguments of `plugins uninstall`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The id of the installed plugin.
    id: String,
    /// Remove the project's plugin (`.seshat/plugins/` in it) instead of the user's.
    #[arg(long)]
    project: bool,
    /// Remove it even while the configuration selects it (sessions then fail to load it until
    /// another is selected).
    #[arg(long)]
    force: bool,
    /// Print what was removed as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Removed {
    id: String,
    kind: PluginKind,
    directory: PathBuf,
    /// What the id now names: `builtin`, `user` (a project plugin removed) or `none`.
    now: &'static str,
    /// Bytes of compiled code removed from the cache with it.
    freed_cache_bytes: u64,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let id = &args.id;
    let catalog = ctx.catalog();
    let from_here =
        |origin: &Origin| matches!((origin, args.project), (Origin::Project(_), true) | (Origin::User(_), false));
    let Some(entry) = catalog.entries().iter().rev().find(|e| e.manifest.id == *id && from_here(&e.origin)) else {
        let place = if args.project { "this project's" } else { "your" };
        let elsewhere = catalog.entries().iter().any(|e| {
            e.manifest.id == *id
                && matches!((&e.origin, args.project), (Origin::User(_), true) | (Origin::Project(_), false))
        });
        if elsewhere {
            let (there, flag) =
                if args.project { ("your own", "without --project") } else { ("this project's", "with --project") };
            bail!("`{id}` is one of {there} plugins, not {place}: run it again {flag}");
        }
        if Catalog::builtin().entries().iter().any(|e| e.manifest.id == *id) {
            bail!("`{id}` is a built-in plugin, which cannot be uninstalled (select another in the configuration)");
        }
        let other = if args.project { "without --project" } else { "with --project" };
        bail!("no plugin `{id}` is installed in {place} plugins: `seshat plugins list` shows them (try {other})");
    };
    let (Origin::User(directory) | Origin::Project(directory)) = entry.origin.clone() else {
        unreachable!("only user and project plugins are matched")
    };
    let kind = entry.manifest.kind;
    let config = ctx.config()?;
    let builtin = Catalog::builtin().find(kind, id).is_ok();
    let user_below = args.project
        && catalog
            .entries()
            .iter()
            .any(|e| e.manifest.id == *id && e.manifest.kind == kind && matches!(e.origin, Origin::User(_)));
    let now = if user_below {
        "user"
    } else if builtin {
        "builtin"
    } else {
        "none"
    };
    // A hook is chosen per event, in the user's and the project's `[[hooks.<event>]]` lists.
    let hooked = {
        let project = config.project_hooks.as_ref().map(|p| &p.hooks);
        let mut lists = config.hooks.values().chain(project.into_iter().flat_map(|h| h.values()));
        kind == PluginKind::Hook && lists.any(|list| list.iter().any(|h| h.plugin.as_deref() == Some(id.as_str())))
    };
    let selected = config.selected(kind) == Some(id.as_str()) || hooked;
    if selected && now == "none" && !args.force {
        let how = if hooked {
            "a hook your configuration runs (`[[hooks.<event>]]`)".to_string()
        } else {
            format!("the selected {kind}")
        };
        bail!("`{id}` is {how}: change your configuration first, or pass --force to remove it anyway");
    }
    let sha = entry.wasm.bytes().ok().map(|b| cache::sha256_hex(&b));
    std::fs::remove_dir_all(&directory).with_context(|| format!("cannot remove {}", directory.display()))?;
    // Its compiled code goes too, unless another installed plugin is the same wasm.
    let shared =
        |sha: &str| ctx.catalog().entries().iter().any(|e| e.wasm.bytes().is_ok_and(|b| cache::sha256_hex(&b) == sha));
    let freed_cache_bytes = match sha {
        Some(sha) if !shared(&sha) => cache::forget(&ctx.dirs.cache.join("plugins"), &sha),
        _ => 0,
    };
    let report = Removed { id: id.clone(), kind, directory: directory.clone(), now, freed_cache_bytes };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &report)?;
    } else {
        let after = match now {
            "user" => format!("; your own `{id}` is used again"),
            "builtin" => format!("; the built-in {kind} `{id}` is used again"),
            _ => String::new(),
        };
        let freed = if freed_cache_bytes > 0 {
            format!(" (and {} MiB of its compiled code)", freed_cache_bytes.div_ceil(1 << 20))
        } else {
            String::new()
        };
        writeln!(out, "Uninstalled {kind} `{id}` from {}{freed}{after}.", directory.display())?;
        if selected && now == "none" {
            writeln!(out, "warning: the configuration still selects it as the {kind}: select another")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
