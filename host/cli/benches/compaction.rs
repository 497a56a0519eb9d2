//! Compaction benchmarks.
//!
//! 1. The pre-call check on a 1k- and a 100k-message session (both compacted before, as a long
//!    session is): the 1k session is the baseline, and the ratio should be ~1 (flat).
//! 2. A whole compaction of a ~1M-token session, the model call excluded (the extractive
//!    summariser calls none), beside the raw cost of reading that history from SQLite; with the
//!    share of the time spent inside plugins.
//! 3. The pre-call check near the threshold of a 128k window for a model whose tokenizer runs
//!    here (gpt-4o: the request counted with o200k, the first time and then from the cache)
//!    beside the same check by the estimate alone: what counting adds to a turn.
//!
//! Run: `cargo bench -p seshat-cli --bench compaction`.

mod common;
use common::*;

use std::sync::Arc;
use std::time::{Duration, Instant};

use seshat::compaction::{Compactor, Frame, ModelClient, Settings};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::plugins::{Catalog, LimitRequest, PluginKind, Runtime, SummariserPlugin, TrimmerPlugin};
use seshat::store::{Compaction, CompactionStatus, CompactionTrigger, NewSession, Store};

fn plugins(dir: &std::path::Path) -> (TrimmerPlugin, SummariserPlugin) {
    let catalog = Catalog::builtin();
    let runtime = Runtime::new(Some(dir.join("cache")));
    let load = |k, id| runtime.load(catalog.find(k, id).unwrap(), LimitRequest::default()).unwrap();
    (
        TrimmerPlugin::new(&load(PluginKind::Trimmer, "trimmer")).unwrap(),
        SummariserPlugin::new(&load(PluginKind::Summariser, "summariser-extractive")).unwrap(),
    )
}

/// A chat-like turn: request, tool call, tool result of `result_tokens`, answer.
fn turn(i: usize, result_tokens: usize) -> [NewMessage; 4] {
    let id = format!("call{i}");
    [
        NewMessage::text(Role::User, format!("request {i}: run the build and tell me what failed")),
        NewMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall { id: id.clone(), name: "run".into(), arguments: "{\"cmd\":\"make\"}".into() }],
            usage: None,
            status: MessageStatus::Complete,
        },
        NewMessage {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: id,
                content: "error: line\n".repeat(result_tokens / 3),
                is_error: false,
            }],
            usage: None,
            status: MessageStatus::Complete,
        },
        NewMessage::text(Role::Assistant, format!("answer {i}: the build failed in module {}", i % 40)),
    ]
}

/// A model client that counts as Seshat's provider does for OpenAI's models.
struct Counting;

impl ModelClient for Counting {
    fn complete(
        &self,
        _model: &str,
        _request: seshat::plugins::CompletionRequest,
    ) -> Result<seshat::plugins::Completion, seshat::plugins::ModelError> {
        Err(seshat::plugins::ModelError::new("none", "no model call in this benchmark"))
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
    fn count(&self, model: &str, text: &str) -> Option<u64> {
        seshat::providers::counting::count(model, text)
    }
}

fn settings(window: u64) -> Settings {
    Settings {
        auto_compact: true,
        context_window: Some(window),
        max_output_tokens: 8_000,
        model: "bench".into(),
        summary_model: None,
        trimmer_options: "{}".into(),
        summariser_options: "{}".into(),
        calibration: 1.0,
        recall: false,
        instructions: None,
        prompt: None,
        until: None,
        cancel: seshat::providers::Cancel::default(),
        summary_request: seshat::compaction::SummaryRequestKind::SharedPrefix,
        shape: None,
        summary_price: None,
        pre_compact: None,
    }
}

/// A session of `messages` messages whose last compaction keeps only the last 40.
fn compacted_session(store: &mut Store, messages: usize) -> String {
    let id = store
        .create_session(NewSession { project: "/bench".into(), context_window: Some(200_000), ..Default::default() })
        .unwrap()
        .id;
    for chunk in (0..messages / 4).collect::<Vec<_>>().chunks(250) {
        let batch: Vec<NewMessage> = chunk.iter().flat_map(|&i| turn(i, 60)).collect();
        store.append(&id, &batch).unwrap();
    }
    let count = store.session(&id).unwrap().message_count;
    store
        .record_compaction(
            &id,
            &Compaction {
                trigger: CompactionTrigger::Auto,
                tokens_before: 190_000,
                tokens_after: Some(9_000),
                through_seq: count,
                first_kept_seq: Some(count - 39),
                pinned_seq: None,
                summary: Some("earlier work".into()),
                model: Some("bench".into()),
                status: CompactionStatus::Ok,
                error: None,
                created_at: 0,
                instructions: None,
                plugin: None,
            },
        )
        .unwrap();
    id
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (mut trimmer, mut summariser) = plugins(dir.path());
    let models: Arc<dyn ModelClient> = Arc::new(NoModel);
    let frame = Frame { system: "You are a coding agent.".into(), tools: String::new(), specs: Vec::new() };
    println!("| benchmark | seshat | baseline | ratio | note |");
    println!("|---|---|---|---|---|");

    let mut store = Store::open(&dir.path().join("check.db")).unwrap();
    let small = compacted_session(&mut store, 1_000);
    let large = compacted_session(&mut store, 100_000);
    let mut check = |id: &str| {
        median(
            (0..51)
                .map(|_| {
                    let mut c =
                        Compactor { trimmer: &mut trimmer, summariser: &mut summariser, models: models.clone() };
                    let t = Instant::now();
                    let prepared = c.before_call(&mut store, id, &frame, &settings(200_000)).unwrap();
                    assert!(prepared.compaction.is_none());
                    t.elapsed()
                })
                .collect(),
        )
    };
    let (t_small, t_large) = (check(&small), check(&large));
    println!(
        "| pre-call check, 100k-message session (seshat) vs 1k-message session (baseline) | {} | {} | {:.2}× | flat = ~1× |",
        fmt(t_large),
        fmt(t_small),
        t_large.as_secs_f64() / t_small.as_secs_f64()
    );

    // Near the threshold of a 128k window (~80k tokens: counting starts at 70% of the threshold),
    // a session of prose that fits by either count, so neither check compacts.
    let mut store = Store::open(&dir.path().join("count.db")).unwrap();
    let near = store
        .create_session(NewSession { project: "/bench".into(), context_window: Some(128_000), ..Default::default() })
        .unwrap()
        .id;
    let batch: Vec<NewMessage> = (0..200)
        .flat_map(|i| {
            [
                NewMessage::text(Role::User, format!("request {i}: tell me what the build step does")),
                NewMessage::text(
                    Role::Assistant,
                    format!(
                        "answer {i}: {}",
                        "The build step writes the cache key to disk before the tests run. ".repeat(24)
                    ),
                ),
            ]
        })
        .collect();
    store.append(&near, &batch).unwrap();
    let tokens = seshat::compaction::estimate_request(&frame, &store.live_view(&near).unwrap());
    let threshold = seshat::window::Marks::new(128_000).threshold;
    assert!(tokens < threshold && tokens * 10 > threshold * 7, "{tokens} of {threshold}");
    let counting: Arc<dyn ModelClient> = Arc::new(Counting);
    let mut near_check = |model: &str, models: &Arc<dyn ModelClient>, runs: usize| {
        let settings = Settings { model: model.into(), ..settings(128_000) };
        median(
            (0..runs)
                .map(|_| {
                    let mut c =
                        Compactor { trimmer: &mut trimmer, summariser: &mut summariser, models: models.clone() };
                    let t = Instant::now();
                    let prepared = c.before_call(&mut store, &near, &frame, &settings).unwrap();
                    assert!(prepared.compaction.is_none(), "{model}: {:?}", prepared.compaction);
                    t.elapsed()
                })
                .collect(),
        )
    };
    let estimated = near_check("bench", &models, 51);
    let first = near_check("gpt-4o", &counting, 1);
    let cached = near_check("gpt-4o", &counting, 51);
    let view = store.live_view(&near).unwrap();
    println!(
        "| pre-call check near the threshold of a 128k window, ~{}k tokens: counted with o200k from the cache (seshat) vs the estimate alone (baseline), median of 51 | {} | {} | {:.2}× | the first, uncached count: {} |",
        seshat::compaction::estimate_request(&frame, &view) / 1000,
        fmt(cached),
        fmt(estimated),
        cached.as_secs_f64() / estimated.as_secs_f64(),
        fmt(first)
    );

    // ~1M tokens: 2,500 turns with ~400-token tool results, in five identical sessions so each
    // sample compacts a session of its own (a compaction is recorded, so it runs once per session).
    const SAMPLES: usize = 5;
    let mut store = Store::open(&dir.path().join("big.db")).unwrap();
    let batch: Vec<NewMessage> = (0..2_500).flat_map(|i| turn(i, 400)).collect();
    let ids: Vec<String> = (0..SAMPLES)
        .map(|_| {
            let id = store
                .create_session(NewSession {
                    project: "/bench".into(),
                    context_window: Some(1_000_000),
                    ..Default::default()
                })
                .unwrap()
                .id;
            store.append(&id, &batch).unwrap();
            id
        })
        .collect();
    let view = store.live_view(&ids[0]).unwrap();
    let tokens = seshat::compaction::estimate_request(&frame, &view);
    let read = median(
        ids.iter()
            .map(|id| {
                let t = Instant::now();
                let full = store.full_history(id).unwrap();
                let took = t.elapsed();
                assert_eq!(full.len(), 10_000);
                took
            })
            .collect(),
    );
    let mut reports = Vec::new();
    let whole = median(
        ids.iter()
            .map(|id| {
                let mut c = Compactor { trimmer: &mut trimmer, summariser: &mut summariser, models: models.clone() };
                let t = Instant::now();
                let report = c.compact(&mut store, id, &frame, &settings(1_000_000), false).unwrap();
                let took = t.elapsed();
                assert!(report.summarised && report.model_calls == 0 && report.dropped > 0, "{report:?}");
                reports.push(report);
                took
            })
            .collect(),
    );
    // The identical sessions compact identically; the plugin share is the median sample's.
    assert!(reports.iter().all(|r| r.dropped == reports[0].dropped && r.trimmed == reports[0].trimmed));
    let plugin = median(reports.iter().map(|r| Duration::from_micros(r.plugin_micros)).collect());
    println!(
        "| whole compaction of a {}k-token, 10,000-message session, no model call (seshat) vs reading its history (baseline), median of {SAMPLES} | {} | {} | {:.1}× | {:.0}% inside plugins ({}); {} trims, {} messages summarised |",
        tokens / 1000,
        fmt(whole),
        fmt(read),
        whole.as_secs_f64() / read.as_secs_f64(),
        100.0 * plugin.as_secs_f64() / whole.as_secs_f64(),
        fmt(plugin),
        reports[0].trimmed,
        reports[0].dropped
    );
}
