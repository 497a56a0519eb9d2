//! `seshat plugins list`.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::plugins::{LoadedPlugin, Origin, PluginKind, cache};

use crate::{Context, format};

/// Arguments of `plugins list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    id: String,
    kind: PluginKind,
    api_version: Option<String>,
    /// The plugin SDK it was built with, when it says.
    sdk_version: Option<String>,
    #[serde(flatten)]
    origin: Origin,
    description: String,
    allowed_hosts: Vec<String>,
    limits: Option<seshat::plugins::Limits>,
    selected: bool,
    overridden: bool,
    /// Asked-for limits lowered to the maxima.
    warnings: Vec<String>,
    /// The `.wasm`: its size, SHA-256 and when it was installed (none for built-ins).
    #[serde(skip_serializing_if = "Option::is_none")]
    wasm: Option<WasmFile>,
    error: Option<String>,
}

#[derive(Serialize)]
struct WasmFile {
    size: u64,
    /// As the runtime hashed it when loading (none when it did not load).
    sha256: Option<String>,
    installed_at: Option<i64>,
}

/// What `plugins list` says of an installed `.wasm`: its size and time from the file, its hash
/// from the load that just read it.
fn wasm_file(source: &seshat::plugins::WasmSource, sha256: Option<&str>) -> Option<WasmFile> {
    let seshat::plugins::WasmSource::File(path) = source else { return None };
    let meta = std::fs::metadata(path).ok()?;
    let installed_at =
        meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_millis() as i64);
    Some(WasmFile { size: meta.len(), sha256: sha256.map(str::to_string), installed_at })
}

#[derive(Serialize)]
struct Listing {
    plugins: Vec<Row>,
    /// Components compiled by this process (0 when everything came from the cache).
    compiled: u64,
    problems: Vec<String>,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let config = ctx.config()?;
    let catalog = ctx.catalog();
    let runtime = ctx.runtime();
    let mut rows = Vec::new();
    for (i, entry) in catalog.entries().iter().enumerate() {
        let kind = entry.manifest.kind;
        let overridden = catalog.is_overridden(i);
        let loaded: Result<LoadedPlugin, _> = runtime.load(entry, config.limits(kind));
        rows.push(Row {
            id: entry.manifest.id.clone(),
            kind,
            api_version: loaded.as_ref().ok().map(|l| l.api_version.clone()),
            sdk_version: loaded.as_ref().ok().and_then(|l| l.sdk_version.clone()),
            origin: entry.origin.clone(),
            description: entry.manifest.description.clone(),
            allowed_hosts: entry.manifest.allowed_hosts.clone(),
            limits: loaded.as_ref().ok().map(|l| l.limits),
            selected: !overridden && config.selected(kind) == Some(entry.manifest.id.as_str()),
            overridden,
            warnings: loaded.as_ref().map(|l| l.warnings.clone()).unwrap_or_default(),
            wasm: wasm_file(&entry.wasm, loaded.as_ref().ok().map(|l| l.sha256.as_str())),
            error: loaded.err().map(|e| e.to_string()),
        });
    }
    let listing = Listing { plugins: rows, compiled: cache::compile_count(), problems: catalog.problems };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &listing)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "{:<11} {:<22} {:<6} {:<9} {:<20} {:<8} HOSTS", "KIND", "ID", "API", "SELECTED", "LIMITS", "SOURCE")?;
    for r in &listing.plugins {
        let selected = if r.selected {
            "yes"
        } else if r.overridden {
            "overridden"
        } else {
            ""
        };
        let limits = r.limits.map_or("-".to_string(), |l| format!("{} MiB, {} ms", l.memory_mib, l.time_ms));
        let hosts = if r.allowed_hosts.is_empty() { "-".to_string() } else { r.allowed_hosts.join(",") };
        writeln!(
            out,
            "{:<11} {:<22} {:<6} {:<9} {:<20} {:<8} {}",
            r.kind.as_str(),
            format::clip(&r.id, 22),
            r.api_version.as_deref().unwrap_or("-"),
            selected,
            limits,
            r.origin.to_string(),
            hosts,
        )?;
        if let Some(e) = &r.error {
            writeln!(out, "  error: {e}")?;
        }
        if let Some(w) = &r.wasm {
            writeln!(
                out,
                "  wasm: {} KiB, sha256 {}, sdk {}, installed {}",
                w.size.div_ceil(1024),
                w.sha256.as_deref().map_or("-", |s| &s[..12]),
                r.sdk_version.as_deref().unwrap_or("none"),
                w.installed_at.map_or("?".to_string(), format::time)
            )?;
        }
        for w in &r.warnings {
            writeln!(out, "  warning: {w}")?;
        }
    }
    for kind in PluginKind::ALL {
        match config.selected(kind) {
            Some(id) if !listing.plugins.iter().any(|r| r.kind == kind && r.id == id) => {
                writeln!(out, "warning: the configured {kind} `{id}` is not installed")?;
            }
            _ => {}
        }
    }
    for p in &listing.problems {
        writeln!(out, "warning: {p}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
