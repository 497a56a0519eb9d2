//! Plugins in Python and JavaScript against the Rust one, in the same run: component size, the
//! first load's compile (optimised, as installed, and the quick tier `plugins check` and `plugins
//! test` use for a file), and the summariser's warm call on a 10,000-message session.
//!
//! Run: `cargo bench -p seshat-cli --bench languages` after `.ci/setup` (componentize-py and jco).
//! Every figure is a `seshat` process, so the process's own start (the same command on a warm
//! cache) is measured too and taken off.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn seshat(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seshat"));
    cmd.env("SESHAT_HOME", home).env_remove("SESHAT_CACHE_DIR").env_remove("SESHAT_DATABASE_URL");
    cmd
}

/// Runs `cmd`, failing the benchmark when it fails; how long it took and its stdout.
fn run(cmd: &mut Command) -> (Duration, String) {
    let started = Instant::now();
    let out = cmd.output().expect("run");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The summariser template in `lang`, built with its toolchain: its `plugin.wasm`.
fn build(root: &Path, lang: &str) -> PathBuf {
    let dir = root.join(format!("summariser-{lang}"));
    run(seshat(root).args(["plugins", "new", "--lang", lang, "summariser", "bench", "--dir", dir.to_str().unwrap()]));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if lang == "js" {
        std::os::unix::fs::symlink(repo.join("tests/toolchains/js/node_modules"), dir.join("node_modules"))
            .expect("link the toolchain .ci/setup installed");
        run(Command::new("npm")
            .args(["run", "build", "--silent"])
            .env("npm_config_update_notifier", "false")
            .env("npm_config_offline", "true")
            .current_dir(&dir));
    } else {
        run(Command::new("sh").arg("build.sh").current_dir(&dir));
    }
    dir.join("plugin.wasm")
}

/// A 10,000-message session as `sessions export` writes it: requests, answers, tool results.
fn long_session(file: &Path) {
    let mut lines = vec![
        serde_json::json!({"record": "session", "id": "01JFBENCHLANG0000000000001", "title": "long",
        "project": "/p", "provider": "openai", "model": "m", "context_window": 200000, "created_at": 1,
        "updated_at": 1, "message_count": 10000, "totals": {"input_tokens": 0, "output_tokens": 0,
        "cache_read_tokens": 0, "cache_creation_tokens": 0}, "context_tokens": null, "compaction_failures": 0,
        "auto_compact_disabled": false, "metadata": {}})
        .to_string(),
    ];
    let mut rng = Rng(7);
    for seq in 1..=10_000u64 {
        let (role, text) = match seq % 3 {
            1 => ("user", format!("request {seq}: please look at src/m{}.rs and fix the failing test", rng.below(90))),
            2 => (
                "assistant",
                format!("I changed src/m{}.rs: {}", rng.below(90), "the parser now keeps the date. ".repeat(4)),
            ),
            _ => (
                "assistant",
                format!(
                    "test result: ok. {} passed; 0 failed\n{}",
                    rng.below(400),
                    "   Compiling dep v0.1.0\n".repeat(6)
                ),
            ),
        };
        lines.push(
            serde_json::json!({"record": "message", "seq": seq, "role": role, "parts": [{"type": "text", "text": text}],
                "status": "complete", "created_at": 1})
            .to_string(),
        );
    }
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
}

/// The median of 3 first loads (`plugins check` with the plugin not in the cache, the built-in
/// plugins its check run loads already there) less the same command on a warm cache, with
/// `flags`; `warmed` is a cache with those built-ins at both tiers.
fn first_load(root: &Path, wasm: &Path, flags: &[&str], warmed: &Path, row: usize) -> Duration {
    let runs = (0..3)
        .map(|i| {
            let home = root.join(format!("home-{row}-{i}-{}", flags.len()));
            copy_dir(warmed, &home.join("cache/plugins"));
            let check = |home: &Path| {
                let mut args = vec!["plugins", "check", wasm.to_str().unwrap()];
                args.extend_from_slice(flags);
                run(seshat(home).args(&args)).0
            };
            let cold = check(&home);
            let warm = check(&home);
            cold.saturating_sub(warm)
        })
        .collect();
    median(runs)
}

/// The summariser's guest time on the 10,000-message session (`plugins test --optimised`, echo
/// model), median of 3.
fn warm_call(root: &Path, wasm: &Path, session: &Path) -> Duration {
    let home = root.join("home-calls");
    let runs = (0..3)
        .map(|_| {
            let (_, out) = run(seshat(&home).args([
                "plugins",
                "test",
                wasm.to_str().unwrap(),
                session.to_str().unwrap(),
                "--optimised",
                "--window",
                "60000",
                "--json",
            ]));
            let v: serde_json::Value = serde_json::from_str(&out).expect("json");
            let micros = v["results"][0]["usage"]["guest_micros"].as_u64().expect("guest time");
            Duration::from_micros(micros)
        })
        .collect();
    median(runs)
}

/// Copies a directory tree.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A cache holding the built-in plugins a check run loads, at both tiers: each home a first load
/// is measured in starts from a copy, so that only the plugin itself is compiled.
fn warm_builtins(root: &Path, wasm: &Path) -> PathBuf {
    let home = root.join("home-warm");
    run(seshat(&home).args(["plugins", "check", wasm.to_str().unwrap()]));
    run(seshat(&home).args(["plugins", "check", wasm.to_str().unwrap(), "--optimised"]));
    // The file checked (a copy of the built-in summariser with another custom section) is taken
    // out again: it is one of those measured.
    let sha = seshat::plugins::cache::sha256_hex(&std::fs::read(wasm).unwrap());
    seshat::plugins::cache::forget(&home.join("cache/plugins"), &sha);
    home.join("cache/plugins")
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    // The built-in summariser's bytes with a custom section added (the same code): a file, not the
    // built-in, so that it is compiled as the others are.
    let mut bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/plugins/summariser.wasm")).unwrap();
    let section = b"seshat-bench";
    bytes.extend_from_slice(&[0, 1 + section.len() as u8, section.len() as u8]);
    bytes.extend_from_slice(section);
    let rust = root.join("summariser-rust.wasm");
    std::fs::write(&rust, bytes).unwrap();
    let python = build(root, "python");
    let js = build(root, "js");
    let session = root.join("long.jsonl");
    long_session(&session);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    println!("| summariser | size | first load, optimised | first load, quick tier | warm call, 10,000 messages |");
    println!("|---|---|---|---|---|");
    let mut rows = Vec::new();
    let warmed = warm_builtins(root, &rust);
    let languages = [
        ("Rust (the built-in summariser)", &rust),
        ("Python (componentize-py 0.25.1)", &python),
        ("JavaScript (jco 1.34.0)", &js),
    ];
    for (row, (name, wasm)) in languages.into_iter().enumerate() {
        let optimised = first_load(root, wasm, &["--optimised"], &warmed, row);
        let quick = first_load(root, wasm, &[], &warmed, row);
        let call = warm_call(root, wasm, &session);
        println!(
            "| {name} | {:.2} MB | {} | {} | {} |",
            size(wasm) as f64 / 1e6,
            fmt(optimised),
            fmt(quick),
            fmt(call)
        );
        rows.push((name, size(wasm), optimised, quick, call));
    }
    println!();
    println!("| against Rust | size | first load, optimised | first load, quick tier | warm call |");
    println!("|---|---|---|---|---|");
    let base = &rows[0];
    for row in &rows[1..] {
        println!(
            "| {} | {:.0}× | {:.0}× | {:.0}× | {:.1}× |",
            row.0,
            row.1 as f64 / base.1 as f64,
            row.2.as_secs_f64() / base.2.as_secs_f64(),
            row.3.as_secs_f64() / base.3.as_secs_f64(),
            row.4.as_secs_f64() / base.4.as_secs_f64()
        );
    }
    println!();
    for row in &rows[1..] {
        report(&format!("{}: first load, quick tier (seshat) vs optimised (baseline)", row.0), row.3, row.2, "faster");
    }
}
