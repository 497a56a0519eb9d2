//! `seshat plugins install`: check a plugin, copy it where Seshat finds it, say how to select it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::Serialize;
use seshat::plugins::{Catalog, cache};

use crate::{Context, format};

/// Arguments of `plugins install`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin directory (`plugin.toml` and `plugin.wasm`) or a `.wasm` file (with a
    /// `plugin.toml` beside it, or none: the manifest is then made from the component).
    path: PathBuf,
    /// Install for this project (`.seshat/plugins/` in it) instead of for the user.
    #[arg(long)]
    project: bool,
    /// Replace what this id names now: a different plugin installed under it, or a built-in plugin
    /// of the same kind and id (which it then stands in for everywhere).
    #[arg(long, alias = "force")]
    replace: bool,
    /// Print what was installed as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Installed {
    id: String,
    kind: String,
    api_version: String,
    directory: PathBuf,
    size: u64,
    sha256: String,
    /// `installed`, `replaced` or `unchanged` (the same plugin was there).
    outcome: &'static str,
    /// It has a built-in plugin's kind and id, and stands in for it (`--replace`).
    replaces_builtin: bool,
    select: String,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let wasm = if args.path.is_dir() {
        let file = args.path.join("plugin.wasm");
        if !file.is_file() {
            bail!(
                "{} holds no plugin.wasm: build the plugin (`cargo build --release --target wasm32-wasip2`) and copy \
                 its .wasm there as plugin.wasm, or pass the .wasm itself",
                args.path.display()
            );
        }
        file
    } else {
        args.path.clone()
    };
    let config = ctx.config()?;
    let (plugin, has_manifest) = ctx.runtime().load_file(&wasm, |k| config.limits(k))?;
    let manifest_text = if has_manifest {
        let path = wasm.with_file_name("plugin.toml");
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?
    } else {
        // Made from the component: its id (the file's name), its world and its contract version.
        let m = &plugin.manifest;
        format!("id = \"{}\"\nkind = \"{}\"\napi = \"{}\"\n", m.id, m.kind, plugin.api_version)
    };
    let id = plugin.manifest.id.clone();
    let kind = plugin.manifest.kind;
    // A file named `summariser.wasm` without a manifest is the plugin `summariser`: installed, it
    // would stand in for the built-in summariser in every session, so it is done only on request.
    let builtin = Catalog::builtin().find(kind, &id).is_ok();
    if builtin && !args.replace {
        bail!(
            "`{id}` is the id of a built-in {kind}: installed under it, this plugin would replace the built-in one \
             for every session. Give it another id (`id = \"…\"` in its plugin.toml, or rename the .wasm when it has \
             none), or pass --replace to replace the built-in"
        );
    }
    let root =
        if args.project { ctx.project_dir.join(".seshat").join("plugins") } else { ctx.dirs.config.join("plugins") };
    let directory = root.join(&id);
    let bytes = std::fs::read(&wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let outcome = match std::fs::read(directory.join("plugin.wasm")) {
        Ok(existing) if existing == bytes => {
            let same = std::fs::read_to_string(directory.join("plugin.toml")).is_ok_and(|t| t == manifest_text);
            if same { "unchanged" } else { replaced(&directory, &id, &existing, &bytes, args.replace)? }
        }
        Ok(existing) => replaced(&directory, &id, &existing, &bytes, args.replace)?,
        Err(_) if directory.exists() && !args.replace => bail!(
            "{} already exists and holds no plugin.wasm: pass --replace to install `{id}` there anyway",
            directory.display()
        ),
        Err(_) => "installed",
    };
    if outcome != "unchanged" {
        std::fs::create_dir_all(&directory).with_context(|| format!("cannot create {}", directory.display()))?;
        // The manifest last: a half-copied plugin is no plugin.
        let _ = std::fs::remove_file(directory.join("plugin.toml"));
        std::fs::write(directory.join("plugin.wasm"), &bytes)
            .with_context(|| format!("cannot write {}", directory.join("plugin.wasm").display()))?;
        std::fs::write(directory.join("plugin.toml"), &manifest_text)
            .with_context(|| format!("cannot write {}", directory.join("plugin.toml").display()))?;
    }
    let config_file = if args.project {
        ctx.project_dir.join(".seshat").join("config.toml")
    } else {
        ctx.dirs.config.join("config.toml")
    };
    let selected = config.selected(kind) == Some(id.as_str());
    let select = if selected {
        format!("it is already selected as the {kind}")
    } else {
        format!("select it with `{kind} = \"{id}\"` under [plugins] in {}", config_file.display())
    };
    let report = Installed {
        id: id.clone(),
        kind: kind.as_str().to_string(),
        api_version: plugin.api_version.clone(),
        directory: directory.clone(),
        size: bytes.len() as u64,
        sha256: plugin.sha256.clone(),
        outcome,
        replaces_builtin: builtin,
        select: select.clone(),
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &report)?;
    } else {
        let verb = match outcome {
            "unchanged" => "Already installed:",
            "replaced" => "Replaced",
            _ => "Installed",
        };
        writeln!(
            out,
            "{verb} {kind} `{id}` (seshat:plugin@{}, {} KiB, sha256 {}) in {}; {select}.",
            report.api_version,
            report.size.div_ceil(1024),
            &report.sha256[..12],
            directory.display()
        )?;
        if builtin {
            writeln!(
                out,
                "warning: it replaces the built-in {kind} `{id}`; `seshat plugins uninstall {id}` brings that back"
            )?;
        }
        for w in &plugin.warnings {
            writeln!(out, "warning: {w}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A different plugin is installed under `id`: replaced with `--replace`, else refused.
fn replaced(directory: &Path, id: &str, existing: &[u8], new: &[u8], replace: bool) -> anyhow::Result<&'static str> {
    if !replace {
        bail!(
            "a different plugin `{id}` is installed in {} (sha256 {}, this one {}): pass --replace to replace it, or give \
             this one another id in its plugin.toml",
            directory.display(),
            &cache::sha256_hex(existing)[..12],
            &cache::sha256_hex(new)[..12]
        );
    }
    Ok("replaced")
}
