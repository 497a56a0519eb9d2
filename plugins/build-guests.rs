// Shared by `host/core/build.rs` (default plugins) and `tests/plugins/build.rs` (test plugins), each of
// which `include!`s this file: builds guest crates for wasm32-wasip2 with a nested cargo.
//
// The nested cargo runs in one fixed target directory (`target/wasm-plugins`), with the outer
// build's wrapper and flag variables removed, so `cargo build`, `cargo clippy`, `cargo test` and
// `cargo build --release` share one set of plugin artefacts. Nothing is precompiled here: that
// would build wasmtime a second time.
//
// The paths a build would embed (the repository's and cargo's own, in panic locations) are
// remapped to fixed ones, so a component is the same bytes wherever the repository is cloned:
// the default plugins shipped in `host/core/plugins/` are checked against a build from source.

/// The guest target.
const GUEST_TARGET: &str = "wasm32-wasip2";

/// Builds each `(package, file)` of the workspace at `manifest`, one cargo invocation per package
/// (so each gets only its own SDK features), and copies the result to `<out>/<file>.wasm`.
fn build_guests(manifest: &std::path::Path, target_dir: &std::path::Path, packages: &[(&str, &str)], out: &std::path::Path) {
    check_guest_target();
    std::fs::create_dir_all(out).expect("create the output directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = std::fs::canonicalize(manifest).expect("the guest workspace's manifest");
    let root = manifest
        .ancestors()
        .find(|d| d.join("plugins/build-guests.rs").exists())
        .expect("a guest workspace is inside the repository");
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME is set");
    let flags = format!(
        "--remap-path-prefix={}=/seshat\x1f--remap-path-prefix={}=/cargo",
        root.display(),
        cargo_home.display()
    );
    for (package, file) in packages {
        let status = std::process::Command::new(&cargo)
            .args(["build", "--release", "--quiet", "--target", GUEST_TARGET, "-p", package, "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target_dir)
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("RUSTC_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .env("CARGO_ENCODED_RUSTFLAGS", &flags)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
        assert!(status.success(), "building the {package} plugin for {GUEST_TARGET} failed (see the errors above)");
        let artefact = target_dir.join(GUEST_TARGET).join("release").join(format!("{}.wasm", package.replace('-', "_")));
        std::fs::copy(&artefact, out.join(format!("{file}.wasm")))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", artefact.display()));
    }
}

/// Fails early, with the fix, when the guest target's standard library is not installed.
fn check_guest_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = std::process::Command::new(&rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
    let sysroot = std::path::PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !sysroot.join("lib").join("rustlib").join(GUEST_TARGET).exists() {
        panic!(
            "\n\nerror: the {GUEST_TARGET} target is not installed, and Seshat's plugins are built for it.\n\
             Run `rustup target add {GUEST_TARGET}` (or `.ci/setup`) and build again.\n\n"
        );
    }
}
