//! The on-disk cache of compiled components, so the CLI never compiles on its hot path.
//!
//! An entry is `<sha256 of the wasm>-<engine compatibility hash>.cwasm` plus a `.sha256` file
//! holding the digest of the `.cwasm` as the host wrote it. An entry is only deserialised when
//! that digest matches the bytes read, so a truncated, corrupt or foreign file is recompiled,
//! never loaded.

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

/// Loads the component for `wasm`: the one this process loaded before, else from the cache in
/// `dir` when a valid entry exists, else compiling it (and writing the entry, best effort). One
/// thread at a time loads a given wasm; the others wait and take its component.
pub(super) fn load(dir: Option<&Path>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<Component> {
    load_noting(dir, wasm, wasm_sha).map(|(component, _)| component)
}

/// [`load`], saying whether this call compiled the component.
fn load_noting(dir: Option<&Path>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<(Component, bool)> {
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

/// Reads `wasm`'s component from the cache in `dir`, or compiles it; whether it compiled.
fn load_once(dir: Option<&Path>, wasm: &[u8], wasm_sha: &str) -> wasmtime::Result<(Component, bool)> {
    let engine = engine::engine();
    let entry = dir.map(|d| d.join(format!("{wasm_sha}-{:016x}.cwasm", engine::compatibility_hash())));
    if let Some(entry) = &entry
        && let Some(component) = read_entry(entry)
    {
        return Ok((component, false));
    }
    let compiled = engine.precompile_component(wasm)?;
    COMPILED.fetch_add(1, Ordering::Relaxed);
    if let Some(entry) = &entry
        && let Err(e) = write_entry(entry, &compiled)
    {
        tracing::warn!("cannot write plugin cache entry {}: {e}", entry.display());
    }
    Ok((deserialize(&compiled)?, true))
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
    deserialize(&bytes).ok()
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
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), COMPILED.load(Ordering::Relaxed)));
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
            let compiled: Vec<bool> = std::thread::scope(|s| {
                let loads: Vec<_> = (0..8)
                    .map(|_| s.spawn(|| load_noting(dir.as_ref().map(|d| d.path()), &wasm, &sha).map(|(_, c)| c)))
                    .collect();
                loads.into_iter().map(|l| l.join().unwrap().unwrap()).collect()
            });
            assert_eq!(compiled.iter().filter(|c| **c).count(), 1, "{compiled:?}");
        }
    }
}
