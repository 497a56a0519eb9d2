//! The systemd unit the repository ships (`deploy/seshat.service`), checked as systemd checks it:
//! `systemd-analyze verify` (with its `ExecStart` pointed at the binary under test, which must
//! exist), `systemd-analyze security --offline` under an exposure threshold, and its `serve`
//! arguments taken by the binary, and the example service file it names loaded.

use std::path::{Path, PathBuf};
use std::process::Command;

fn unit() -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/seshat.service");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

/// The unit with `ExecStart` running the binary under test, written to a directory of its own.
fn under_test(dir: &Path) -> PathBuf {
    let (_, text) = unit();
    assert!(text.contains("ExecStart=/usr/local/bin/seshat serve"), "the unit runs `seshat serve`");
    let copy = dir.join("seshat.service");
    std::fs::write(&copy, text.replace("/usr/local/bin/seshat", env!("CARGO_BIN_EXE_seshat"))).unwrap();
    copy
}

fn analyze(args: &[&str], unit: &Path) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .arg(unit)
        .output()
        .expect("systemd-analyze runs (Debian's systemd; .ci/setup installs it)")
}

#[test]
fn the_systemd_unit_verifies_and_is_hardened() {
    let dir = tempfile::tempdir().unwrap();
    let copy = under_test(dir.path());
    let verify = analyze(&["verify"], &copy);
    let said = String::from_utf8_lossy(&verify.stderr).to_string() + &String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
    let security = analyze(&["security", "--offline=true", "--threshold=20"], &copy);
    let report = String::from_utf8_lossy(&security.stdout).to_string();
    assert!(security.status.success(), "exposure over 2.0: {report}");
    let (_, text) = unit();
    for hardening in ["User=seshat", "NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=\n"] {
        assert!(text.contains(hardening), "the unit sets {hardening:?}");
    }
}

#[test]
fn the_units_serve_arguments_are_ones_the_binary_takes() {
    let (_, text) = unit();
    let exec = text.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("an ExecStart line");
    let args: Vec<&str> = exec.split_whitespace().skip(1).collect();
    assert_eq!(args.first(), Some(&"serve"));
    // Parsed by the binary itself: every flag the unit passes is one `serve` takes (`--help`
    // after them stops before anything is opened).
    let out = Command::new(env!("CARGO_BIN_EXE_seshat")).args(&args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("ExecReload=/bin/kill -HUP $MAINPID"), "`systemctl reload` sends SIGHUP");
}

/// The example service file the unit names is one the binary loads, serving `wss://` with its
/// TLS files beside it and the provider's key by reference.
#[test]
fn the_example_service_file_loads() {
    let (_, unit) = unit();
    assert!(unit.contains("--config /etc/seshat/service.toml"), "the unit runs the service's own file");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/service.toml");
    let config = seshat::config::Config::load_service(&path).unwrap();
    assert!(config.serve.listen.as_deref().is_some_and(|l| l.starts_with("wss://")), "{:?}", config.serve);
    assert_eq!(config.serve.tls_cert, Some(path.parent().unwrap().join("tls/cert.pem")));
    let key = config.providers["anthropic"].api_key_env.as_deref();
    assert_eq!(key, Some("ANTHROPIC_API_KEY"), "credentials by reference, never in the file");
}
