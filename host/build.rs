//! Builds the default plugins in `plugins/` for `wasm32-wasip2` and leaves them in `OUT_DIR` for
//! `include_bytes!`.
//!
//! A nested cargo runs in its own fixed target directory (`target/wasm-plugins`), with the outer
//! build's wrapper and flag variables removed, so `cargo build`, `cargo clippy`, `cargo test` and
//! `cargo build --release` all share one set of plugin artefacts. Nothing is precompiled here:
//! that would build wasmtime a second time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The default plugins: (cargo package, file name in OUT_DIR).
const PLUGINS: &[(&str, &str)] = &[("seshat-trimmer", "trimmer")];

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ has a parent").to_path_buf();
    println!("cargo::rerun-if-changed={}", root.join("plugins").display());
    println!("cargo::rerun-if-changed={}", root.join("wit").display());

    let out = PathBuf::from(env("OUT_DIR")).join("plugins");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/plugins");
    let target_dir = root.join("target").join("wasm-plugins");
    build_guests(&root.join("plugins").join("Cargo.toml"), &target_dir, PLUGINS, &out);
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("cargo sets {key}"))
}

/// Builds each package with its own cargo invocation (so each gets only its own SDK features)
/// and copies `<file>.wasm` into `out`.
fn build_guests(manifest: &Path, target_dir: &Path, packages: &[(&str, &str)], out: &Path) {
    check_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, file) in packages {
        let status = Command::new(&cargo)
            .args(["build", "--release", "--quiet", "--target", TARGET, "-p", package, "--manifest-path"])
            .arg(manifest)
            .arg("--target-dir")
            .arg(target_dir)
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("RUSTC_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("CARGO_MAKEFLAGS")
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
        assert!(status.success(), "building the {package} plugin for {TARGET} failed (see the errors above)");
        let artefact = target_dir.join(TARGET).join("release").join(format!("{}.wasm", package.replace('-', "_")));
        std::fs::copy(&artefact, out.join(format!("{file}.wasm")))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", artefact.display()));
    }
}

/// Fails early, with the fix, when the target's standard library is not installed.
fn check_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !sysroot.join("lib").join("rustlib").join(TARGET).exists() {
        panic!(
            "\n\nerror: the {TARGET} target is not installed, and Seshat's plugins are built for it.\n\
             Run `rustup target add {TARGET}` (or `.ci/setup`) and build again.\n\n"
        );
    }
}
