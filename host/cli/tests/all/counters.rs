//! Token counting where the server can: each local server's counting endpoint in its real shape
//! (llama.cpp's and vLLM's `/tokenize`, llama-cpp-python's `/extras/tokenize/count`), Anthropic's
//! `/v1/messages/count_tokens`, a server without one and a failing one. The servers count as
//! their chat endpoint does — a token a byte, denser than anything Seshat's estimate assumes — and
//! refuse whatever does not fit, so a request sized by the estimate alone would be refused.

use serde_json::{Value, json};

use crate::chat::KEY;
use crate::local::{
    Counter, Kind, Local, MODEL, Over, Seen, claude, coding_history, compact_at_8k, history, home_at, ok_json, run,
    stderr,
};

/// Resumes a 60-message coding session at an 8,192-token window with one prompt.
fn resume_at_8k(local: &Local) -> (crate::support::Home, String, Value) {
    let home = home_at("openai", &local.base(), "");
    let id = coding_history(&home, 60);
    let out = run(&home, &["--resume", &id, "--model", MODEL, "--window", "8192", "--json", "-p", "go on"]);
    let v = ok_json(&out);
    (home, id, v)
}

#[test]
fn each_local_servers_counter_is_asked_in_its_own_shape_and_nothing_is_refused() {
    for (counter, name, path) in [
        (Counter::LlamaCpp, "llama.cpp-tokenize", "/tokenize"),
        (Counter::Vllm, "vllm-tokenize", "/tokenize"),
        (Counter::LlamaCppPython, "llama-cpp-python-count", "/extras/tokenize/count"),
    ] {
        let local = Local::with_counter(Kind::Bare, 8_192, Some(Over::ByteTokenizer), Some(counter));
        let (home, id, v) = resume_at_8k(&local);
        assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{name}: the answer arrived: {v}");
        assert_eq!(v["context"]["counting"], json!({"by": "server", "counter": name}), "{name}: {v}");
        // Counted by the server, nothing was refused: not the chat requests, not the summaries.
        let seen = local.seen();
        assert_eq!((seen.refusals, seen.refused_bodies.len()), (0, 0), "{name}: {v}");
        assert!(seen.overflows.is_empty(), "{name}: {:?}", seen.overflows);
        // The compaction is announced and reported with the size the server counted.
        let before = v["compactions"][0]["tokens_before"].as_u64().unwrap_or_else(|| panic!("{name}: {v}"));
        assert!(seen.counted.contains(&before), "{name}: {before} is not among the counts {:?}", seen.counted);
        drop(seen);
        assert_eq!(home.store().session(&id).unwrap().compaction_failures, 0, "{name}");
        assert!(!home.store().compactions(&id).unwrap().is_empty(), "{name}: the session was compacted");

        let counts = local.counts();
        let answered: Vec<_> = counts.iter().filter(|r| r.path == path).collect();
        assert!(!answered.is_empty(), "{name}: {counts:?}");
        for r in &counts {
            assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "{name}: {}", r.path);
            assert_eq!(r.header("content-type"), Some("application/json"), "{name}");
        }
        let bodies: Vec<Value> = answered.iter().map(|r| r.json()).collect();
        let shaped = |b: &Value| match counter {
            Counter::LlamaCpp => b["content"].as_str().is_some_and(|t| t.contains("<|im_start|>user\n")),
            Counter::Vllm => b["model"] == MODEL && b["messages"].as_array().is_some_and(|m| m.len() > 1),
            _ => b["input"].as_str().is_some_and(|t| t.contains("<|im_start|>user\n")),
        };
        assert!(bodies.iter().any(shaped), "{name}: {bodies:?}");
        // Once a counter answered, only it is asked; each request is counted once (cached).
        let first = counts.iter().position(|r| r.path == path && shaped(&r.json())).unwrap();
        let after: Vec<&str> = counts[first..].iter().map(|r| r.body.as_str()).collect();
        let mut distinct = after.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), after.len(), "{name}: a request was counted twice");
        let asked: Vec<(String, bool)> = counts.iter().map(|r| (r.path.clone(), shaped(&r.json()))).collect();
        assert!(asked[first..].iter().all(|(p, s)| p == path && *s), "{name}: {asked:?}");
    }
}

#[test]
fn without_a_counter_the_estimate_serves_and_the_context_says_so() {
    // A server that answers no counting request (Ollama, a proxy): each counter is tried once,
    // then none again; the turn is answered and the session says its tokens are estimated.
    let local = Local::with_counter(Kind::Bare, 8_192, Some(Over::RealTokenizer), None);
    let (home, id, v) = resume_at_8k(&local);
    assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{v}");
    assert_eq!(v["context"]["counting"], json!({"by": "estimate", "server_has_none": true}), "{v}");
    let tried: Vec<String> = local.counts().iter().map(|r| r.path.clone()).collect();
    assert_eq!(tried, ["/tokenize", "/tokenize", "/extras/tokenize/count"], "each counter once");
    assert_eq!(home.store().session(&id).unwrap().compaction_failures, 0);
}

#[test]
fn a_failing_counter_falls_back_without_failing_the_turn() {
    let local = Local::with_counter(Kind::Bare, 8_192, Some(Over::RealTokenizer), Some(Counter::Failing));
    let (home, id, v) = resume_at_8k(&local);
    assert!(v["text"].as_str().unwrap().starts_with("Noted"), "{v}");
    assert!(v["error"].is_null(), "{v}");
    assert_eq!(v["context"]["counting"]["by"], "estimate", "{v}");
    assert_eq!(local.counts().len(), 3, "each counter failed once and was not asked again");
    let store = home.store();
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0);
    // Nothing sent was refused twice (the estimate's prior holds on GPT-2's counts).
    let seen = local.seen();
    let mut refused = seen.refused_bodies.clone();
    let n = refused.len();
    refused.sort();
    refused.dedup();
    assert_eq!(refused.len(), n);
}

#[test]
fn seshat_compact_with_a_counter_sends_summary_requests_that_fit_the_first_time() {
    // The same session and server as the refusal-recovery test in `local`, which refuses the
    // first summary request when Seshat can only estimate: with the server's counter, every
    // summary request is sized by the server's own count and none is refused.
    let local = Local::with_counter(Kind::Bare, 8_192, Some(Over::ByteTokenizer), Some(Counter::LlamaCppPython));
    let home = home_at("openai", &local.base(), "");
    let id = coding_history(&home, 60);
    let out = compact_at_8k(&home, &id);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["summarised"].as_bool(), report["refusals_recovered"].as_u64()),
        (Some(true), Some(0)),
        "{report}"
    );
    assert_eq!(local.seen().refused_bodies.len(), 0);
    assert!(!local.counts().is_empty(), "the summary requests were counted");
}

#[test]
fn anthropics_count_tokens_is_asked_near_the_threshold() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
    let server = claude(30_000, 64_000, seen.clone());
    let home = home_at("anthropic", &server.url(), "");
    let id = history(&home, 40, 600);
    let out =
        run(&home, &["--resume", &id, "--model", "claude-sonnet-4-5", "--window", "30000", "--json", "-p", "go on"]);
    let v = ok_json(&out);
    assert_eq!(v["context"]["counting"], json!({"by": "server", "counter": "count_tokens"}), "{}", stderr(&out));
    let counts: Vec<_> = server.requests().into_iter().filter(|r| r.path == "/v1/messages/count_tokens").collect();
    assert!(!counts.is_empty());
    let body = counts[0].json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(body["messages"].as_array().unwrap().len() > 10, "{body}");
    let seen = seen.lock().unwrap();
    assert!(seen.bad.is_empty(), "{:?}", seen.bad);
    assert_eq!(seen.refusals, 0);
}
