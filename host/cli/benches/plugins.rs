//! Plugin-runtime benchmarks, each beside a baseline measured in the same run.
//!
//! Run: `cargo bench -p seshat-cli --bench plugins`.

mod common;
use common::*;

use seshat_outcomes::trim as policy;

use std::collections::HashMap;
use std::sync::Arc;

use seshat::conversation::Role;
use seshat::plugins::{
    Catalog, LimitRequest, PluginKind, Runtime, TrimBudget, TrimEdit, TrimMessage, TrimPart, TrimmerPlugin,
};

fn main() {
    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    let catalog = Catalog::builtin();
    let entry = catalog.find(PluginKind::Trimmer, "trimmer").expect("builtin trimmer").clone();

    // Cold: compile into an empty cache. Warm: load the entry the cold run wrote.
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..7 {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(Some(dir.path().to_path_buf()));
        cold.push(time(|| drop(runtime.load(&entry, LimitRequest::default()).unwrap())));
        warm.push(time(|| drop(runtime.load(&entry, LimitRequest::default()).unwrap())));
    }
    let (cold, warm) = (median(cold), median(warm));
    report("load the default trimmer: from the cache (seshat) vs compiling it (baseline)", warm, cold, "≥ 20× faster");

    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(Some(dir.path().to_path_buf()));
    let loaded = runtime.load(&entry, LimitRequest::default()).unwrap();
    let instantiate = median(
        (0..51)
            .map(|_| {
                let mut p = TrimmerPlugin::new(&loaded).unwrap();
                time(|| p.warm().unwrap())
            })
            .collect(),
    );
    report("instantiate (seshat) vs load from the cache (baseline)", instantiate, warm, "-");

    let mut plugin = TrimmerPlugin::new(&loaded).unwrap();
    let empty =
        TrimBudget { current_tokens: 0, target_tokens: 0, threshold_tokens: 0, window_tokens: 0, extra: "{}".into() };
    plugin.trim(&[], &empty, |_, _| None).unwrap();
    let noop = median((0..1001).map(|_| time(|| drop(plugin.trim(&[], &empty, |_, _| None).unwrap()))).collect());
    let native_noop = median(
        (0..1001)
            .map(|_| time(|| drop(std::hint::black_box(native_trim(std::hint::black_box(&[]), &empty, |_, _| None)))))
            .collect(),
    );
    report("no-op trim call (seshat) vs the same trim step natively (baseline)", noop, native_noop, "-");

    // A 1M-token history: 4,000 messages, a third of them tool results of varied size — logs of
    // 40-byte lines with an error, a warning and a test summary somewhere in them, which the
    // trimmer reads (the parts it shortens) and keeps beside a head and a tail.
    let mut contents: HashMap<(u64, u32), String> = HashMap::new();
    let history: Vec<TrimMessage> = (0..4_000u64)
        .map(|i| {
            let (role, kind, tokens) = match i % 3 {
                0 => (Role::User, "text", 60),
                1 => (Role::Assistant, "tool_call", 40),
                _ => (Role::Tool, "tool_result", 200 + (i * 7919) % 1_300),
            };
            let mut bytes = tokens * 4;
            if kind == "tool_result" {
                let lines = (bytes / 40) as usize;
                let log: Vec<String> = (0..lines)
                    .map(|l| match (l * 7 + i as usize) % 97 {
                        13 => format!("error[E0308]: mismatched types src/m{i}.rs:{l}:9"),
                        41 => format!("warning: unused variable `x{l}` in m{i}"),
                        77 => format!("test result: ok. {l} passed; 0 failed"),
                        _ => format!("   Compiling dep_{l:05} v0.{i}.{l:<8}"),
                    })
                    .collect();
                let log = log.join("\n");
                bytes = log.len() as u64;
                contents.insert((i + 1, 0), log);
            }
            TrimMessage {
                id: i + 1,
                role,
                parts: vec![TrimPart { kind, bytes, tokens }],
                tokens,
                protected: i >= 3_994,
            }
        })
        .collect();
    let contents = Arc::new(contents);
    let total: u64 = history.iter().map(|m| m.tokens).sum();
    let window = 1_000_000u64;
    let budget = TrimBudget {
        current_tokens: total,
        target_tokens: window / 2,
        threshold_tokens: window * 85 / 100,
        window_tokens: window,
        extra: "{}".into(),
    };
    let reader = |c: &Arc<HashMap<(u64, u32), String>>| {
        let c = c.clone();
        move |m: u64, p: u32| c.get(&(m, p)).cloned()
    };
    let wasm_edits = plugin.trim(&history, &budget, reader(&contents)).unwrap();
    let native_edits = native_trim(&history, &budget, reader(&contents));
    assert_eq!(wasm_edits, native_edits, "the two decide the same");
    assert!(
        wasm_edits.iter().filter(|e| matches!(e, TrimEdit::KeepLines { .. })).count() * 10 > wasm_edits.len() * 9,
        "the logs are cut by lines"
    );
    // The host checks each edit against its content whichever trimmer made it.
    let checked = |edits: Vec<TrimEdit>| {
        for e in &edits {
            e.checked_apply(&contents[&e.target()], true).expect("shorter");
        }
        edits
    };
    let ours = median(
        (0..31).map(|_| time(|| drop(checked(plugin.trim(&history, &budget, reader(&contents)).unwrap())))).collect(),
    );
    let native = median(
        (0..31)
            .map(|_| time(|| drop(std::hint::black_box(native_trim(&history, &budget, reader(&contents))))))
            .collect(),
    );
    report(
        &format!(
            "default trimmer over a {}k-token, {}-message history (plugin vs native)",
            total / 1000,
            history.len()
        ),
        ours,
        native,
        "< 10 ms; ≤ 2×",
    );
    println!("\n{} edits proposed", wasm_edits.len());
}

/// The same trim step compiled natively: the plugin body (candidates from the metadata, the
/// policy, reading each chosen result and choosing its lines) plus what the host does with any
/// trimmer's answer (edits, validation, the check against the content).
fn native_trim(
    messages: &[TrimMessage],
    budget: &TrimBudget,
    mut read: impl FnMut(u64, u32) -> Option<String>,
) -> Vec<TrimEdit> {
    use seshat::outcomes::{Shorten, shorten};
    let protected: std::collections::HashSet<u64> = messages.iter().filter(|m| m.protected).map(|m| m.id).collect();
    let candidates: Vec<policy::Candidate> = messages
        .iter()
        .filter(|m| !protected.contains(&m.id))
        .flat_map(|m| {
            m.parts.iter().enumerate().filter(|(_, p)| p.kind == "tool_result").map(|(i, p)| policy::Candidate {
                message: m.id,
                part: i as u32,
                bytes: p.bytes,
                tokens: p.tokens,
            })
        })
        .collect();
    let mut checks = Vec::new();
    let edits: Vec<TrimEdit> =
        policy::decide(&candidates, budget.current_tokens, budget.target_tokens, budget.window_tokens)
            .into_iter()
            .filter_map(|c| {
                let (message, part) = (c.message, c.part);
                let Some(content) = read(message, part) else {
                    return Some(TrimEdit::HeadTail { message, part, head: c.head, tail: c.tail });
                };
                let edit = match shorten(&content, c.head + c.tail)? {
                    Shorten::Lines(r) => TrimEdit::KeepLines {
                        message,
                        part,
                        lines: r.into_iter().map(|r| (r.start as u32, r.end as u32)).collect(),
                    },
                    Shorten::HeadTail { head, tail } => TrimEdit::HeadTail { message, part, head, tail },
                };
                checks.push(content);
                Some(edit)
            })
            .collect();
    seshat::plugins::validate_edits(&edits, messages).expect("valid");
    for (e, content) in edits.iter().zip(&checks) {
        e.checked_apply(content, true).expect("shorter");
    }
    edits
}
