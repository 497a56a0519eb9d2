//! The on-disk cache of compiled components, so the CLI never compiles on its hot path.
//!
//! An entry is `<sha256 of the wasm>-<engine compatibility hash>.cwasm` plus a `.sha256` file
//! holding the digest of the `.cwasm` as the host wrote it. An entry is only deserialised when
//! that digest matches the bytes read, so a truncated, corrupt or foreign file is recompiled,
//! never loaded.
//!
//! The cache is bounded: an entry read is marked used (its modification time), and after an entry
//! is written the least recently used others are removed until the whole fits the cap (an
//! interpreter's compiled component is tens of megabytes, and every rebuild is a new one).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::engine;

static COMPILED: AtomicU64 = AtomicU64::new(0);

/// How many components this process has compiled (rather than loaded from the cache).
pub fn compile_count() -> u64 {
    COMPILED.load(Ordering::Relaxed)
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The components this process has loaded, by their wasm's digest: each behind its own lock, so
/// that of the threads wanting the same plugin at once (a crowd of first turns in `seshat serve`),
/// one compiles it and the others wait for that and take it, and different plugins load in
/// parallel.
static LOADED: Mutex<BTreeMap<String, Arc<Mutex<Option<Component>>>>> = Mutex::new(BTreeMap::new());

/// The cache's default size cap ([`crate::config::PLUGIN_CACHE_BYTES`]).
pub const DEFAULT_CAP_BYTES: u64 = crate::config::PLUGIN_CACHE_BYTES;

/// A cache directory and its size cap.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dir<'a> {
    pub(super) path: &'a Path,
    pub(super) cap_bytes: u64,
}

/// Loads the component for `wasm`: the one this process loaded before, else from the cache in
/// `dir` when a valid entry exists, else compiling it (and writing the entry, best effort, then
/// pruning the cache to its cap). One thread at a time loads a given wasm; the others wait and
/// take its component.
pub(super) fn load(dir: Option<Dir<'_>>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<Component> {
    load_noting(dir, wasm, wasm_sha).map(|(component, _)| component)
}

/// [`load`], saying whether this call compiled the component.
fn load_noting(dir: Option<Dir<'_>>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<(Component, bool)> {
    let slot = {
        let mut loaded = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loaded.entry(wasm_sha.to_string()).or_default().clone()
    };
    let mut slot = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(component) = slot.as_ref() {
        return Ok((component.clone(), false));
    }
    let (component, compiled) = load_once(dir, wasm, wasm_sha)?;
    *slot = Some(component.clone());
    Ok((component, compiled))
}

/// The most the quick tier's entries may take (in their own `quick/` directory, so that checking
/// and testing files never pushes out what sessions load).
const QUICK_CAP_BYTES: u64 = 256 << 20;

/// Reads `wasm`'s component from the cache in `dir`, or compiles it; whether it compiled.
fn load_once(dir: Option<Dir<'_>>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<(Component, bool)> {
    let engine = engine::engine();
    let quick = dir.map(|d| d.path.join("quick"));
    let dir = match (dir, &quick) {
        (Some(d), Some(path)) if engine::tier() == engine::Tier::Quick => {
            Some(Dir { path, cap_bytes: d.cap_bytes.min(QUICK_CAP_BYTES) })
        }
        (d, _) => d,
    };
    let entry = dir.map(|d| d.path.join(format!("{wasm_sha}-{:016x}.cwasm", engine::compatibility_hash())));
    if let Some(entry) = &entry
        && let Some(component) = read_entry(entry)
    {
        return Ok((component, false));
    }
    let started = std::time::Instant::now();
    let compiled = engine.precompile_component(wasm)?;
    COMPILED.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        "compiled a plugin of {} KiB in {} ms ({:?} tier)",
        wasm.len().div_ceil(1024),
        started.elapsed().as_millis(),
        engine::tier()
    );
    if let (Some(entry), Some(dir)) = (&entry, dir) {
        match write_entry(entry, &compiled) {
            Ok(()) => prune(dir, entry),
            Err(e) => tracing::warn!("cannot write plugin cache entry {}: {e}", entry.display()),
        }
    }
    Ok((deserialize(&compiled)?, true))
}

/// Removes the least recently used entries of `dir` (never `keep`) until the rest fit its cap,
/// and what a killed writer left (temporary files an hour old).
fn prune(dir: Dir<'_>, keep: &Path) {
    let Ok(read) = std::fs::read_dir(dir.path) else { return };
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = read
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .filter(|(modified, _, path)| {
            let temporary = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(".tmp-"));
            if temporary && *modified < an_hour_ago {
                let _ = std::fs::remove_file(path);
            }
            path.extension().is_some_and(|x| x == "cwasm")
        })
        .collect();
    let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
    entries.sort();
    for (_, size, path) in entries {
        if total <= dir.cap_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            let _ = std::fs::remove_file(digest_path(&path));
            total -= size;
            tracing::debug!("removed the least recently used plugin cache entry {}", path.display());
        }
    }
}

/// Removes the cache entries of the wasm with digest `wasm_sha` (a plugin uninstalled), every
/// engine's and tier's; how many bytes that freed.
pub fn forget(dir: &Path, wasm_sha: &str) -> u64 {
    forget_in(dir, wasm_sha) + forget_in(&dir.join("quick"), wasm_sha)
}

fn forget_in(dir: &Path, wasm_sha: &str) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else { return 0 };
    let prefix = format!("{wasm_sha}-");
    let mut freed = 0;
    for entry in read.filter_map(|e| e.ok()) {
        let path = entry.path();
        let ours = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix));
        if ours && path.extension().is_some_and(|x| x == "cwasm") {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if std::fs::remove_file(&path).is_ok() {
                let _ = std::fs::remove_file(digest_path(&path));
                freed += size;
            }
        }
    }
    freed
}

fn digest_path(entry: &Path) -> PathBuf {
    entry.with_extension("sha256")
}

fn read_entry(entry: &Path) -> Option<Component> {
    let bytes = std::fs::read(entry).ok()?;
    let recorded = std::fs::read_to_string(digest_path(entry)).ok()?;
    if recorded.trim() != sha256_hex(&bytes) {
        return None;
    }
    let component = deserialize(&bytes).ok()?;
    // Used now: the last entry pruning would remove (best effort: a read-only cache stays as is).
    if let Ok(file) = std::fs::File::options().append(true).open(entry) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
    Some(component)
}

/// Deserialises bytes this host compiled itself.
#[allow(unsafe_code)]
fn deserialize(bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `bytes` are either the output of `precompile_component` in this process, or a cache
    // entry whose SHA-256 matches the digest this host recorded when it wrote that output (in a
    // directory created 0700). wasmtime additionally checks the header against this engine's
    // configuration and rejects mismatches with an error.
    unsafe { Component::deserialize(engine::engine(), bytes) }
}

fn write_entry(entry: &Path, compiled: &[u8]) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    // Write to temporary names, then rename: a reader sees a whole entry or none.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&tmp, compiled)?;
    std::fs::rename(&tmp, entry)?;
    let tmp_digest = tmp.with_extension("sha256");
    std::fs::write(&tmp_digest, sha256_hex(compiled))?;
    std::fs::rename(&tmp_digest, digest_path(entry))
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component no other test loads: the embedded trimmer with a custom section naming `tag`
    /// appended (custom sections may come anywhere; the component is the same).
    fn unique_component(tag: &str) -> Vec<u8> {
        let mut wasm = include_bytes!("../../plugins/trimmer.wasm").to_vec();
        let name = format!("seshat-test-{tag}");
        let body_len = 1 + name.len();
        wasm.push(0);
        wasm.push(u8::try_from(body_len).expect("a short name"));
        wasm.push(u8::try_from(name.len()).expect("a short name"));
        wasm.extend_from_slice(name.as_bytes());
        wasm
    }

    #[test]
    fn threads_loading_one_plugin_at_once_compile_it_once_and_all_get_it() {
        for dir in [None, Some(tempfile::tempdir().unwrap())] {
            let wasm = unique_component(if dir.is_some() { "with-cache" } else { "no-cache" });
            let sha = sha256_hex(&wasm);
            let cache = dir.as_ref().map(|d| Dir { path: d.path(), cap_bytes: DEFAULT_CAP_BYTES });
            let compiled: Vec<bool> = std::thread::scope(|s| {
                let loads: Vec<_> =
                    (0..8).map(|_| s.spawn(|| load_noting(cache, &wasm, &sha).map(|(_, c)| c))).collect();
                loads.into_iter().map(|l| l.join().unwrap().unwrap()).collect()
            });
            assert_eq!(compiled.iter().filter(|c| **c).count(), 1, "{compiled:?}");
        }
    }

    #[test]
    fn the_cache_keeps_to_its_cap_removing_the_least_recently_used_entries() {
        let dir = tempfile::tempdir().unwrap();
        let wasms: Vec<Vec<u8>> = (0..3).map(|i| unique_component(&format!("lru-{i}"))).collect();
        let shas: Vec<String> = wasms.iter().map(|w| sha256_hex(w)).collect();
        let entries = |d: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".cwasm"))
                .map(|n| n[..8].to_string())
                .collect();
            names.sort();
            names
        };
        // No cap to speak of: the first two are written (compiled outside this process's memo:
        // `load_once` reads and writes the disk cache only).
        let roomy = Dir { path: dir.path(), cap_bytes: u64::MAX };
        load_once(Some(roomy), &wasms[0], &shas[0]).unwrap();
        load_once(Some(roomy), &wasms[1], &shas[1]).unwrap();
        let one = std::fs::metadata(
            dir.path().join(
                std::fs::read_dir(dir.path())
                    .unwrap()
                    .find_map(|e| {
                        let n = e.ok()?.file_name();
                        n.to_str()?.ends_with(".cwasm").then_some(n)
                    })
                    .unwrap(),
            ),
        )
        .unwrap()
        .len();
        // The first is older; reading it makes it the most recently used.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let path = e.unwrap().path();
            std::fs::File::options().append(true).open(&path).unwrap().set_modified(old).unwrap();
        }
        let (_, compiled) = load_once(Some(roomy), &wasms[0], &shas[0]).unwrap();
        assert!(!compiled, "read from the cache");
        // A cap of two entries: writing the third removes the least recently used, the second.
        let tight = Dir { path: dir.path(), cap_bytes: 2 * one + one / 2 };
        load_once(Some(tight), &wasms[2], &shas[2]).unwrap();
        let mut want = vec![shas[0][..8].to_string(), shas[2][..8].to_string()];
        want.sort();
        assert_eq!(entries(dir.path()), want);
        assert!(forget(dir.path(), &shas[2]) > 0);
        assert_eq!(entries(dir.path()), vec![shas[0][..8].to_string()]);
    }
}
