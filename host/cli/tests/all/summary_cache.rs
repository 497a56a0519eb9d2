//! A summary that shares the chat's cached prefix: the conversation exactly as the chat's last
//! request sent it, the instruction after it, against loopback servers whose prompt caches work
//! as Anthropic's and OpenAI's are documented to (`support::prompt_cache`); and the separate
//! request it replaces as the default, measured against it in the same run.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::chat::{chat, home_for, json_of};
use crate::support::prompt_cache::{self, CacheUsage};
use crate::support::server::{Reply, Server, anthropic, openai};

/// One request the server saw: whether it was the summary (not streamed), its body and what its
/// cache read and wrote.
type Seen = (bool, Value, CacheUsage);

/// A streamed or whole text answer in `provider`'s wire format, reporting `usage`.
fn answer(provider: &str, streamed: bool, text: &str, usage: CacheUsage) -> Reply {
    match (provider, streamed) {
        ("anthropic", true) => {
            let start = anthropic::event(
                "message_start",
                &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                    "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
                    "usage": {"input_tokens": usage.input, "cache_read_input_tokens": usage.read,
                        "cache_creation_input_tokens": usage.written, "output_tokens": 1}}}),
            );
            let mut pieces = vec![start];
            pieces.extend(anthropic::text_block(0, &[text]));
            pieces.extend(anthropic::stop("end_turn", 9));
            Reply::Stream { pieces }
        }
        ("anthropic", false) => Reply::json(
            200,
            &json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": usage.input, "cache_read_input_tokens": usage.read,
                    "cache_creation_input_tokens": usage.written, "output_tokens": 40}})
            .to_string(),
        ),
        (_, streamed) => {
            let tokens = json!({"prompt_tokens": usage.read + usage.input, "completion_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": usage.read}});
            if streamed {
                let mut pieces: Vec<String> = openai::text_answer(&[text], false);
                let done = pieces.pop().unwrap();
                pieces.push(openai::chunk(&json!({"id": "c1", "choices": [], "usage": tokens})));
                pieces.push(done);
                Reply::Stream { pieces }
            } else {
                Reply::json(
                    200,
                    &json!({"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}], "usage": tokens})
                    .to_string(),
                )
            }
        }
    }
}

/// A long first turn, then short ones at a 30,000-token window until one is compacted first
/// (`summary_request` as configured). Returns that compaction's report and what the server saw.
fn compacted(provider: &str, summary_request: &str) -> (Value, Vec<Seen>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let anthropic_cache = Arc::new(Mutex::new(prompt_cache::Anthropic::default()));
    let openai_cache = Arc::new(Mutex::new(prompt_cache::OpenAi::default()));
    let (p, log) = (provider.to_string(), seen.clone());
    let server = Server::route(move |r| {
        if r.path.ends_with("/count_tokens") || r.path.contains("/tokenize") || r.path.contains("/extras/tokenize") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        let body = r.json();
        let usage = match p.as_str() {
            "anthropic" => anthropic_cache.lock().unwrap().usage(&body),
            _ => openai_cache.lock().unwrap().usage(&body),
        };
        let streamed = body["stream"] == true;
        let turns = log.lock().unwrap().iter().filter(|(summary, _, _)| !summary).count();
        let text = if streamed { format!("Got {}.", turns + 1) } else { "SUMMARY: a long text was sent.".into() };
        log.lock().unwrap().push((!streamed, body, usage));
        answer(&p, streamed, &text, usage)
    });
    let model = if provider == "openai" { "gpt-4o" } else { "claude-sonnet-4-5" };
    // The model's prices (dollars per million tokens): the report says what the summary cost.
    let config = format!(
        "[compaction]\nsummary_request = \"{summary_request}\"\n[providers.{provider}.models.\"{model}\"]\n\
         price = {{ input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }}\n"
    );
    let home = home_for(provider, &server, &config);
    let w = ["--window", "30000", "--json", "--model", model];
    // OpenAI's models are counted here with their own tokenizer, which finds these words denser
    // than the estimate does.
    let big = format!("one {}", "alpha beta gamma delta ".repeat(if provider == "openai" { 3_000 } else { 2_000 }));
    let out = chat(&home, &[&["-p", big.as_str()], &w[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["compactions"], json!([]));
    for turn in 2..12 {
        let prompt = format!("turn {turn}: {}", "theta iota kappa ".repeat(150));
        let out = chat(&home, &[&["--continue", "-p", prompt.as_str()], &w[..]].concat(), &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let outcome = json_of(&out);
        if let Some(report) = outcome["compactions"].as_array().and_then(|c| c.first()) {
            return (report.clone(), seen.lock().unwrap().clone());
        }
    }
    panic!("{provider}: no turn was compacted first")
}

/// `v` without `cache_control` marks anywhere.
fn unmarked(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter().filter(|(k, _)| *k != "cache_control").map(|(k, v)| (k.clone(), unmarked(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

#[test]
fn a_summary_shares_the_chats_cached_prefix_and_processes_a_fraction_of_a_separate_ones() {
    for provider in ["anthropic", "openai"] {
        let (report, seen) = compacted(provider, "shared_prefix");
        let (separate_report, separate_seen) = compacted(provider, "separate");
        let summary = |seen: &[Seen]| {
            let at = seen.iter().position(|(s, _, _)| *s).unwrap_or_else(|| panic!("{provider}: no summary request"));
            assert!(at > 0, "{provider}: the summary came before any chat request");
            (at, seen[at].clone())
        };
        let (at, (_, body, usage)) = summary(&seen);
        // The chat's request before it: the second turn's.
        let (_, chat_body, _) = &seen[at - 1];
        assert_eq!(report["summary_request"], "shared_prefix", "{provider}: {report}");
        assert_eq!(unmarked(&body["tools"]), unmarked(&chat_body["tools"]), "{provider}: the same tools");
        assert_eq!(unmarked(&body["system"]), unmarked(&chat_body["system"]), "{provider}: the same system prompt");
        // The chat's last request, message for message, ending where it ended: its last user
        // message carries the instruction after its own text.
        let (sent, before) = (body["messages"].as_array().unwrap(), chat_body["messages"].as_array().unwrap());
        assert_eq!(sent.len(), before.len(), "{provider}: {body}");
        let n = before.len() - 1;
        assert_eq!(unmarked(&json!(sent[..n])), unmarked(&json!(before[..n])), "{provider}: the chat's messages first");
        let (last, asked) = (sent[n].to_string(), unmarked(&before[n]).to_string());
        let own = asked.find("turn ").map(|at| &asked[at..at + 40]).unwrap_or_else(|| panic!("{asked}"));
        let (at_own, at_instruction) = (last.find(own), last.find("[Seshat: compaction]"));
        assert!(at_own.is_some() && at_own < at_instruction, "{provider}: the instruction after its text: {last}");
        // The report carries what the provider said of its cache: the prefix was read.
        assert_eq!(report["summary_usage"]["cache_read_tokens"].as_u64(), Some(usage.read), "{provider}: {report}");
        assert!(usage.read > 0, "{provider}: {usage:?}");
        // And what that cost at the model's configured prices, in millionths of a dollar.
        let spent = |r: &Value, field: &str| r["summary_usage"][field].as_u64().unwrap_or(0) as f64;
        let cost = |r: &Value| {
            spent(r, "input_tokens") * 3.0
                + spent(r, "output_tokens") * 15.0
                + spent(r, "cache_read_tokens") * 0.3
                + spent(r, "cache_creation_tokens") * 3.75
        };
        // (Within a millionth of a dollar: the sums may round the other way.)
        let near = |r: &Value| r["summary_cost_micro_usd"].as_f64().is_some_and(|c| (c - cost(r)).abs() <= 1.0);
        assert!(near(&report), "{provider}: {report}");
        assert!(near(&separate_report), "{provider}: {separate_report}");
        assert!(
            report["summary_cost_micro_usd"].as_u64() < separate_report["summary_cost_micro_usd"].as_u64(),
            "{provider}: the shared prefix costs less: {report} against {separate_report}"
        );

        let (_, (_, separate_body, separate_usage)) = summary(&separate_seen);
        assert_eq!(separate_report["summary_request"], "separate", "{provider}: {separate_report}");
        assert!(separate_body.get("tools").is_none(), "{provider}: a separate request offers no tools");
        // What the provider had to process for the summary: a fraction of the separate request's.
        assert!(
            usage.processed() * 10 <= separate_usage.processed() * 3,
            "{provider}: shared {usage:?} against separate {separate_usage:?}"
        );
        // Both compactions replaced the same messages.
        assert_eq!(report["summarised_seqs"], separate_report["summarised_seqs"], "{provider}");
    }
}

/// A compaction long after the session's last answer (its provider's cache has expired) sends the
/// separate request, which condenses what it summarises.
#[test]
fn a_cache_long_expired_gets_the_separate_request() {
    let server = Server::route(|r| {
        if r.path.ends_with("/count_tokens") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        answer("anthropic", false, "SUMMARY: what happened.", CacheUsage::default())
    });
    let home = home_for("anthropic", &server, "");
    // Answered in 1970.
    let mut lines = vec![
        json!({"record": "session", "id": "01JFCACHE00000000000000001", "title": "old", "project": "/p",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "context_window": 8192, "created_at": 1, "updated_at": 1,
        "message_count": 40, "totals": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
        "cache_creation_tokens": 0}, "context_tokens": null, "compaction_failures": 0, "auto_compact_disabled": false,
        "metadata": {}})
        .to_string(),
    ];
    for seq in 1..=40 {
        let (role, text) =
            if seq % 2 == 1 { ("user", format!("request {seq}")) } else { ("assistant", "words ".repeat(120)) };
        lines.push(
            json!({"record": "message", "seq": seq, "role": role, "parts": [{"type": "text", "text": text}],
                "status": "complete", "created_at": 1})
            .to_string(),
        );
    }
    let file = home.path().join("old.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    let out = home
        .cmd()
        .env("ANTHROPIC_API_KEY", crate::chat::KEY)
        .args(["compact", "01JFCACHE", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary_request"], "separate", "{report}");
    let asked = server.requests().into_iter().map(|r| r.json()).find(|b| b.get("messages").is_some()).unwrap();
    assert!(asked.get("tools").is_none(), "{asked}");
}
