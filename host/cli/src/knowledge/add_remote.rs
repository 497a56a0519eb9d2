//! `seshat --remote URL knowledge add`: the files read here, their text sent to the service
//! (`knowledge/add`) in batches, indexed there into the caller's scope or a team's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use seshat_protocol::methods::{DocumentText, KnowledgeAdd, KnowledgeAddParams, KnowledgeAddResult, SkippedDocument};

use super::Scope;
use crate::format;

/// Text sent in one request at most, in bytes (the service reads 16 MiB messages by default;
/// JSON may escape some of it).
const BATCH_BYTES: usize = 4 << 20;

pub(super) fn run(
    mut remote: crate::remote::Remote,
    paths: &[PathBuf],
    scope: &Scope,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (files, _) = seshat::knowledge::index::files(paths)?;
    let mut total = KnowledgeAddResult::default();
    let mut batch: Vec<DocumentText> = Vec::new();
    let mut size = 0;
    let bar = super::bar("sending {pos}/{len} files {wide_bar} {msg}");
    if let Some(bar) = &bar {
        bar.set_length(files.len() as u64);
    }
    let mut send = |batch: &mut Vec<DocumentText>, total: &mut KnowledgeAddResult| -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let params = KnowledgeAddParams { scope: Some(scope.clone()), documents: std::mem::take(batch) };
        let done = remote.request::<KnowledgeAdd>(&params)?;
        total.indexed += done.indexed;
        total.unchanged += done.unchanged;
        total.chunks += done.chunks;
        total.skipped.extend(done.skipped);
        Ok(())
    };
    for (i, file) in files.iter().enumerate() {
        if let Some(bar) = &bar {
            bar.set_position(i as u64);
            bar.set_message(format::visible(&file.display().to_string()).into_owned());
        }
        let path = file.display().to_string();
        let skip = |why: String| SkippedDocument { path: path.clone(), why };
        if seshat::knowledge::Kind::of(file).is_none() {
            total.skipped.push(skip("not a text format Seshat indexes (by its extension)".into()));
            continue;
        }
        let text = match seshat::knowledge::read_text(file)? {
            Ok(text) => text,
            Err(why) => {
                total.skipped.push(skip(why));
                continue;
            }
        };
        if let Some(why) = seshat::knowledge::refused(file, &text) {
            total.skipped.push(skip(why));
            continue;
        }
        // Sized as sent: JSON escapes control characters and quotes.
        let sent = serde_json::to_string(&text).map_or(text.len(), |t| t.len()) + path.len();
        if size + sent > BATCH_BYTES {
            send(&mut batch, &mut total)?;
            size = 0;
        }
        size += sent;
        batch.push(DocumentText { path, text });
    }
    send(&mut batch, &mut total)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut out = format::stdout();
    if json {
        let report = serde_json::json!({
            "files": files.len(),
            "indexed": total.indexed,
            "unchanged": total.unchanged,
            "chunks": total.chunks,
            "skipped": total.skipped,
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(
            out,
            "Indexed {} of {} files on the service ({} chunks), {} unchanged, {} skipped.",
            total.indexed,
            files.len(),
            total.chunks,
            total.unchanged,
            total.skipped.len()
        )?;
        for s in &total.skipped {
            writeln!(out, "  skipped {}: {}", format::visible(&s.path), format::visible(&s.why))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
