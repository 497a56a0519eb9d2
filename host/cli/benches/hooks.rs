//! What hooks add to a turn: the same turn (a short session, a loopback server streaming
//! Anthropic's wire format) with no hook, with one no-op command hook at `user_prompt` (`true`,
//! run by `sh -c` as every command hook is), and with one hook plugin at `user_prompt` (the test
//! hook guest: it reads the payload's JSON and goes on), each agent opened through the library's
//! `Environment` from its own `config.toml`, in the same run.
//!
//! Run: `cargo bench -p seshat-cli --bench hooks`.

mod common;
use common::*;

use std::time::{Duration, Instant};

use seshat::client::{Environment, Overrides, Quiet, SessionChoice};
use seshat::providers::Cancel;

const RUNS: usize = 51;

/// A home whose `config.toml` points at `url` and holds `hooks`, with the test hook plugin
/// installed as `noop`.
fn home(url: &str, hooks: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"{url}\"\n[chat]\nauto_compact = false\n{hooks}"
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let plugin = dir.path().join("plugins/noop");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::copy(seshat_test_plugins::HOOK, plugin.join("plugin.wasm")).unwrap();
    std::fs::write(plugin.join("plugin.toml"), "id = \"noop\"\nkind = \"hook\"\napi = \"0.4.0\"\n").unwrap();
    dir
}

/// The median time of `RUNS` turns (after one to warm up) of a new session opened in `dir`.
fn turns(dir: &std::path::Path) -> Duration {
    let env = Environment::open(Overrides {
        dirs: Some(seshat::paths::Dirs::under(dir)),
        model: Some("claude-sonnet-4-5".into()),
        window: Some(200_000),
        ..Overrides::default()
    })
    .unwrap();
    let mut agent = env.agent(SessionChoice::New, Vec::new()).unwrap();
    let cancel = Cancel::default();
    agent.turn("warm up", &cancel, &mut Quiet).unwrap();
    let mut times = Vec::new();
    for i in 0..RUNS {
        let t = Instant::now();
        let out = agent.turn(&format!("question {i}"), &cancel, &mut Quiet).unwrap();
        times.push(t.elapsed());
        assert_eq!(out.text, "Hi");
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    }
    median(times)
}

fn main() {
    let (url, _) = provider::anthropic();
    let none = home(&url, "");
    let command = home(&url, "[[hooks.user_prompt]]\ncommand = \"true\"\n");
    let plugin = home(&url, "[[hooks.user_prompt]]\nplugin = \"noop\"\n");
    // Interleaved, so a drift of the machine touches all three alike.
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        a.push(turns(none.path()));
        b.push(turns(command.path()));
        c.push(turns(plugin.path()));
    }
    let (none, command, plugin) = (median(a), median(b), median(c));
    println!("A short session, a loopback model; medians of 3 × {RUNS} turns each.\n");
    println!("| measure | with the hook | no hook | ratio | target |");
    println!("|---|---|---|---|---|");
    report("a turn with one no-op command hook at user_prompt", command, none, "—");
    report("a turn with one no-op hook plugin at user_prompt", plugin, none, "—");
    println!(
        "\nA no-op command hook adds {} a turn; a no-op hook plugin adds {}.",
        fmt(command.saturating_sub(none)),
        fmt(plugin.saturating_sub(none))
    );
}
