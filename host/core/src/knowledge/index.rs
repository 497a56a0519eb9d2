//! Adding files to the knowledge index: walked as ripgrep walks them (`.gitignore`, `.ignore`
//! and hidden files respected, through the `ignore` crate), each file hashed and, when its content
//! changed, chunked and stored; documents under a walked directory whose file is gone are dropped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::chunk::{Kind, Sizing, chunks};
use crate::store::{KnowledgeFilter, NewChunk, NewDocument, Store};

/// The largest document indexed, in bytes: a larger file is skipped (a generated file, a dump is
/// not worth a chunk each).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Where added documents go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Whose documents they are.
    pub scope: seshat_protocol::memory::Scope,
    /// The project key (for `project`; empty otherwise).
    pub project: String,
}

/// What an `add` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AddReport {
    /// Files looked at.
    pub files: usize,
    /// Files (re)indexed because their content was new or changed.
    pub indexed: usize,
    /// Files whose content was already indexed.
    pub unchanged: usize,
    /// Chunks written.
    pub chunks: usize,
    /// Documents dropped because their file is gone.
    pub removed: usize,
    /// Files not indexed, each with why.
    pub skipped: Vec<Skipped>,
}

/// A file not indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

/// Errors adding files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path given does not exist or cannot be read.
    #[error("cannot read {path}: {cause}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}

/// The files under `paths`, walked as ripgrep walks them; a file named directly is taken even
/// when an ignore file would skip it. Sorted, deduplicated, absolute.
pub fn files(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for p in paths {
        let abs = std::fs::canonicalize(p).map_err(|cause| Error::Io { path: p.clone(), cause })?;
        if abs.is_dir() {
            for entry in ignore::WalkBuilder::new(&abs).build().flatten() {
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    files.push(entry.into_path());
                }
            }
            dirs.push(abs);
        } else {
            files.push(abs);
        }
    }
    files.sort();
    files.dedup();
    Ok((files, dirs))
}

/// What [`add_text`] did with one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Added {
    /// Indexed (new, or its content changed), in so many chunks.
    Indexed {
        /// Chunks written.
        chunks: usize,
    },
    /// Already indexed with this content: left as it is.
    Unchanged,
}

/// Indexes one document's `text` (of `kind`) at `path` into `target`, replacing what was indexed
/// for that path unless it holds this same content.
pub fn add_text(
    store: &mut Store,
    target: &Target,
    path: &str,
    kind: Kind,
    text: &str,
    sizing: Sizing,
) -> Result<Added, Error> {
    // Unchanged or not, only a writer of the scope is told so.
    store.knowledge_check_write(&target.scope)?;
    let sha256 = crate::plugins::cache::sha256_hex(text.as_bytes());
    if store.knowledge_document(&target.scope, &target.project, path)?.is_some_and(|(_, h)| h == sha256) {
        return Ok(Added::Unchanged);
    }
    let cut: Vec<NewChunk> = chunks(text, kind, sizing)
        .into_iter()
        .map(|c| NewChunk {
            start_line: c.start_line,
            end_line: c.end_line,
            heading: c.heading,
            text: c.text,
            tokens: c.tokens,
        })
        .collect();
    let doc = NewDocument {
        scope: target.scope.clone(),
        project: target.project.clone(),
        path: path.to_string(),
        kind: kind.as_str().into(),
        sha256,
        bytes: text.len() as u64,
    };
    store.knowledge_put(&doc, &cut)?;
    Ok(Added::Indexed { chunks: cut.len() })
}

/// A file's text as indexing takes it: `Ok(Err(why))` when it is not indexed (not a regular
/// file, too large, not UTF-8 text, binary); `Err` when it cannot be read.
pub fn read_text(file: &Path) -> Result<Result<String, String>, Error> {
    // Regular files only: a FIFO would block the walk forever, a device never ends.
    let bytes = match crate::input::read_regular(file, MAX_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(crate::input::Error::TooLarge { .. }) => {
            return Ok(Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20)));
        }
        Err(crate::input::Error::NotRegular { kind, .. }) => return Ok(Err(format!("a {kind}, not a regular file"))),
        Err(crate::input::Error::Io { path, cause, .. }) => return Err(Error::Io { path, cause }),
    };
    let Ok(text) = String::from_utf8(bytes) else { return Ok(Err("not UTF-8 text".into())) };
    if text.contains('\0') {
        return Ok(Err("binary (it holds NUL bytes)".into()));
    }
    Ok(Ok(text))
}

/// Why a document's text is not indexed (`None`: it is indexed): its kind, its size, NUL bytes.
pub fn refused(path: &Path, text: &str) -> Option<String> {
    if Kind::of(path).is_none() {
        return Some("not a text format Seshat indexes (by its extension)".into());
    }
    if text.len() as u64 > MAX_FILE_BYTES {
        return Some(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    text.contains('\0').then(|| "binary (it holds NUL bytes)".into())
}

/// Indexes `paths` into `target`; `progress` hears of each file (done, total, path).
pub fn add(
    store: &mut Store,
    paths: &[PathBuf],
    target: &Target,
    sizing: Sizing,
    progress: &mut dyn FnMut(usize, usize, &Path),
) -> Result<AddReport, Error> {
    let (files, dirs) = files(paths)?;
    let mut report = AddReport { files: files.len(), ..AddReport::default() };
    let seen: HashSet<String> = files.iter().map(|f| f.display().to_string()).collect();
    for (i, file) in files.iter().enumerate() {
        progress(i, files.len(), file);
        let skip = |why: String| Skipped { path: file.clone(), why };
        let Some(kind) = Kind::of(file) else {
            report.skipped.push(skip("not a text format Seshat indexes (by its extension)".into()));
            continue;
        };
        let text = match read_text(file)? {
            Ok(text) => text,
            Err(why) => {
                report.skipped.push(skip(why));
                continue;
            }
        };
        match add_text(store, target, &file.display().to_string(), kind, &text, sizing)? {
            Added::Indexed { chunks } => {
                report.indexed += 1;
                report.chunks += chunks;
            }
            Added::Unchanged => report.unchanged += 1,
        }
    }
    progress(files.len(), files.len(), Path::new(""));
    // Documents under a walked directory whose file the walk no longer finds are gone.
    let filter = KnowledgeFilter { project: &target.project, scope: Some(&target.scope) };
    let gone: Vec<i64> = store
        .knowledge_documents(filter)?
        .into_iter()
        .filter(|d| d.project == target.project)
        .filter(|d| dirs.iter().any(|dir| Path::new(&d.path).starts_with(dir)) && !seen.contains(&d.path))
        .map(|d| d.id)
        .collect();
    report.removed = store.knowledge_remove(&gone)?;
    Ok(report)
}
