//! The compaction pipeline with the real default plugins and a scripted model.

use std::sync::{Arc, Mutex};

use seshat::compaction::{Compactor, Frame, ModelClient, Settings};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::plugins::{
    Catalog, Completion, CompletionRequest, LimitRequest, ModelError, PluginKind, Runtime, StopReason,
    SummariserPlugin, TrimmerPlugin,
};
use seshat::store::{COMPACTION_MARKER, NewSession, Origin, Store};

use crate::support::Home;
use crate::support::shared_cache;

/// A model whose answers are scripted; it counts and keeps every request.
#[derive(Default)]
pub struct Scripted {
    pub answers: Mutex<Vec<Result<String, String>>>,
    pub requests: Mutex<Vec<(String, CompletionRequest)>>,
    pub window: Option<u64>,
}

impl Scripted {
    pub fn answering(answers: &[Result<&str, &str>]) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.iter().rev().map(|a| a.map(str::to_string).map_err(str::to_string)).collect()),
            ..Self::default()
        })
    }
    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl ModelClient for Scripted {
    fn complete(&self, model: &str, request: CompletionRequest) -> Result<Completion, ModelError> {
        self.requests.lock().unwrap().push((model.to_string(), request));
        match self.answers.lock().unwrap().pop() {
            Some(Ok(text)) => Ok(Completion { text, usage: None, stop_reason: StopReason::EndTurn }),
            Some(Err(message)) => Err(ModelError::new("http_500", message)),
            None => Err(ModelError::new("script", "no scripted answer left")),
        }
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        self.window
    }
}

pub struct Plugins {
    pub trimmer: TrimmerPlugin,
    pub summariser: SummariserPlugin,
}

impl Plugins {
    /// A compactor over these plugins, calling `model` for summaries.
    pub fn compactor(&mut self, model: Arc<Scripted>) -> Compactor<'_> {
        Compactor { trimmer: &mut self.trimmer, summariser: &mut self.summariser, models: model }
    }
}

pub fn plugins(summariser: &str) -> Plugins {
    let catalog = Catalog::builtin();
    let runtime = Runtime::new(Some(shared_cache()));
    let load = |kind, id| runtime.load(catalog.find(kind, id).unwrap(), LimitRequest::default()).unwrap();
    Plugins {
        trimmer: TrimmerPlugin::new(&load(PluginKind::Trimmer, "trimmer")).unwrap(),
        summariser: SummariserPlugin::new(&load(PluginKind::Summariser, summariser)).unwrap(),
    }
}

pub fn settings(window: Option<u64>) -> Settings {
    Settings {
        auto_compact: true,
        context_window: window,
        max_output_tokens: 1_000,
        model: "test-model".into(),
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

pub fn text(role: Role, s: impl Into<String>) -> NewMessage {
    NewMessage::text(role, s)
}

pub fn tool_pair(id: &str, output: &str) -> [NewMessage; 2] {
    [
        NewMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall { id: id.into(), name: "run".into(), arguments: "{\"cmd\":\"make\"}".into() }],
            usage: None,
            status: MessageStatus::Complete,
        },
        NewMessage {
            role: Role::Tool,
            parts: vec![Part::ToolResult { call_id: id.into(), content: output.into(), is_error: false }],
            usage: None,
            status: MessageStatus::Complete,
        },
    ]
}

fn session(store: &mut Store, window: u64) -> String {
    store
        .create_session(NewSession { project: "/p".into(), context_window: Some(window), ..Default::default() })
        .unwrap()
        .id
}

/// `turns` exchanges of a request and a ~`size`-token answer.
fn chat(store: &mut Store, id: &str, turns: usize, size: usize) {
    for t in 0..turns {
        store
            .append(
                id,
                &[
                    text(Role::User, format!("request {t}")),
                    text(Role::Assistant, format!("answer {t} {}", "w ".repeat(size * 2))),
                ],
            )
            .unwrap();
    }
}

pub fn frame() -> Frame {
    Frame { system: "You are a helpful agent.".into(), tools: String::new(), specs: Vec::new() }
}

/// A session of a 40k window: a build's six long tool results, then two short turns (the latest
/// two user turns are protected; the results are older than both).
fn long_build(store: &mut Store) -> String {
    let id = session(store, 40_000);
    store.append(&id, &[text(Role::User, "build it")]).unwrap();
    for k in 0..6 {
        store.append(&id, &tool_pair(&format!("c{k}"), &"compiler output line\n".repeat(1_200))).unwrap();
    }
    store.append(&id, &[text(Role::User, "thanks"), text(Role::Assistant, "ok")]).unwrap();
    store.append(&id, &[text(Role::User, "and now?"), text(Role::Assistant, "done")]).unwrap();
    id
}

/// A session at a 20k window: a request, `outputs` long compiler outputs, then `turns` chat turns.
fn builds_then_chat(store: &mut Store, outputs: usize, turns: usize) -> String {
    let id = session(store, 20_000);
    store.append(&id, &[text(Role::User, "build it")]).unwrap();
    for k in 0..outputs {
        store.append(&id, &tool_pair(&format!("c{k}"), &"compiler output line\n".repeat(1_200))).unwrap();
    }
    chat(store, &id, turns, 300);
    id
}

#[test]
fn trims_alone_can_suffice_without_a_model_call() {
    let home = Home::new();
    let mut store = home.store();
    let id = long_build(&mut store);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(40_000))).unwrap();
    let report = prepared.compaction.expect("compaction ran");
    assert!(report.trimmed > 0 && !report.summarised, "{report:?}");
    assert_eq!((report.model_calls, model.calls()), (0, 0), "no model call");
    assert!(report.tokens_after <= seshat::window::Marks::new(40_000).target, "{report:?}");
    assert_eq!(store.trims(&id).unwrap().len(), report.trimmed);
    let full = store.full_history(&id).unwrap();
    assert!(matches!(&full[2].parts[0], Part::ToolResult { content, .. } if content.len() > 20_000), "originals stay");
}

#[test]
fn the_summary_path_rebuilds_the_history() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("The user made 40 requests; all answered.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    let report = prepared.compaction.unwrap();
    assert!(report.summarised && report.model_calls == 1, "{report:?}");
    assert!(prepared.tokens <= seshat::window::Marks::new(20_000).target + 2_000, "{}", prepared.tokens);
    let (model_name, request) = &model.requests.lock().unwrap()[0];
    assert_eq!(model_name, "test-model", "the session's own model by default");
    let system = request.system.as_deref().unwrap();
    assert!(system.contains("Active requests"), "the prompt file");
    for asked in ["Constraints and preferences", "mark it replaced", "test-summary lines", "its share of the space"] {
        assert!(system.contains(asked), "the prompt asks for {asked:?}: {system}");
    }
    assert!(request.max_tokens <= 2_000, "capped at the reserve");
    let view = store.live_view(&id).unwrap();
    assert_eq!(view.entries[0].origin, Origin::Summary);
    let Part::Text { text } = &view.entries[0].parts[0] else { panic!() };
    assert!(text.contains("The user made 40 requests") && text.ends_with(COMPACTION_MARKER));
    // The request starts with the summary; the request kept after it is in the same user message
    // (user and assistant alternate).
    assert_eq!(prepared.messages[0].parts[..1], view.entries[0].parts[..], "the request starts with the summary");
    assert_eq!(prepared.messages[0].parts[1..], view.entries[1].parts[..], "then the kept request");
    assert!(seshat::compaction::pairing::alternates(&prepared.messages));
    assert_eq!(store.full_history(&id).unwrap().len(), 80, "nothing deleted");
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0);
}

#[test]
fn failures_end_the_turn_then_trip_the_breaker_then_compact_full() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Err("overloaded"), Err("overloaded"), Err("overloaded")]);
    let mut p = plugins("summariser");
    for n in 1..=3u32 {
        store.append(&id, &[text(Role::User, format!("try {n}"))]).unwrap();
        let mut c = p.compactor(model.clone());
        let err = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap_err();
        assert_eq!(err.code(), "compact_failed");
        assert!(
            err.to_string().contains(&format!("({n} in a row)")) && err.to_string().contains("overloaded"),
            "{err}"
        );
        let last = store.full_history(&id).unwrap().pop().unwrap();
        assert_eq!(last.parts, vec![Part::Text { text: format!("try {n}") }], "the user's message stays saved");
    }
    assert_eq!(model.calls(), 3);
    // The counter survives a restart.
    drop(store);
    let mut store = home.store();
    assert_eq!(store.session(&id).unwrap().compaction_failures, 3);
    // Grow past the hard limit: no more summary attempts, the request fails locally.
    chat(&mut store, &id, 40, 300);
    let mut c = p.compactor(model.clone());
    let err = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap_err();
    assert_eq!(err.code(), "compact_full", "{err}");
    assert!(err.to_string().contains("compact the session by hand"), "{err}");
    assert_eq!(model.calls(), 3, "zero model calls once the breaker tripped");

    // Manual compaction ignores the breaker and its success clears it.
    let ok = Scripted::answering(&[Ok("part one"), Ok("summary after manual compaction"), Ok("more")]);
    let mut c = p.compactor(ok.clone());
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    assert!(report.summarised && ok.calls() >= 1 && report.model_calls as usize == ok.calls(), "{report:?}");
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0);
}

#[test]
fn compact_full_is_checked_with_auto_compaction_off() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 10_000);
    chat(&mut store, &id, 30, 300);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let off = Settings { auto_compact: false, ..settings(Some(10_000)) };
    let err = c.before_call(&mut store, &id, &frame(), &off).unwrap_err();
    assert_eq!(err.code(), "compact_full");
    assert!(err.to_string().contains("auto-compaction is off"), "{err}");
    assert_eq!(model.calls(), 0);
}

#[test]
fn an_unknown_window_disables_auto_compaction_with_a_warning() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 10_000);
    chat(&mut store, &id, 30, 300);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model);
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(None)).unwrap();
    assert!(prepared.compaction.is_none());
    assert!(
        prepared.warnings[0].contains("context window of `test-model` is unknown: auto-compaction is off"),
        "{:?}",
        prepared.warnings
    );
}

#[test]
fn a_summary_that_frees_little_is_used_and_counted_and_the_request_is_sent_when_it_fits() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    // Small old messages (worth a summary, but not much), then one huge latest request that is
    // pinned: a summary frees little.
    chat(&mut store, &id, 3, 120);
    store.append(&id, &[text(Role::User, format!("please read {}", "x ".repeat(36_000)))]).unwrap();
    let model = Scripted::answering(&[Ok("short"), Ok("shorter")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model);
    // The request fits the 20k window with 1,000 tokens for the answer: it goes out.
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    let report = prepared.compaction.clone().unwrap();
    assert!(report.summarised && report.thrash, "{report:?}");
    assert!(prepared.tokens <= 19_000, "{}", prepared.tokens);
    assert_eq!(store.session(&id).unwrap().compaction_failures, 1, "the thrash counts as a failure");
    let applied = store.live_view(&id).unwrap().compaction.unwrap();
    assert_eq!(applied.summary.as_deref(), Some("short"), "the summary it paid for is used");
    assert!(applied.error.as_deref().unwrap_or_default().starts_with("thrash"), "{:?}", applied.error);
    assert_eq!(prepared.messages[0].seq, None, "the request starts with the summary");

    // With more room kept for the answer the same history does not fit: the summary is still
    // recorded and counted, and the turn ends locally with compact_full.
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 3, 120);
    store.append(&id, &[text(Role::User, format!("please read {}", "x ".repeat(36_000)))]).unwrap();
    let tight = Settings { max_output_tokens: 2_500, ..settings(Some(20_000)) };
    let err = c.before_call(&mut store, &id, &frame(), &tight).unwrap_err();
    assert_eq!(err.code(), "compact_full", "{err}");
    assert_eq!(store.session(&id).unwrap().compaction_failures, 1);
    assert_eq!(store.live_view(&id).unwrap().compaction.unwrap().summary.as_deref(), Some("shorter"));
}

#[test]
fn the_latest_request_is_pinned_when_a_tool_loop_puts_it_before_the_cut() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 3, 50);
    store.append(&id, &[text(Role::User, "fix every failing test")]).unwrap();
    for k in 0..60 {
        store.append(&id, &tool_pair(&format!("t{k}"), &"ok ".repeat(300))).unwrap();
    }
    let model = Scripted::answering(&[Ok("fixed 10 tests so far")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model);
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    assert!(prepared.compaction.unwrap().summarised);
    let view = store.live_view(&id).unwrap();
    assert_eq!(view.entries[1].origin, Origin::Pinned);
    assert_eq!(view.entries[1].parts, vec![Part::Text { text: "fix every failing test".into() }]);
    assert_eq!(view.entries[2].role, Role::Assistant, "the kept part opens a tool exchange");
    assert!(seshat::compaction::pairing::is_paired(&prepared.messages));
}

#[test]
fn a_dropped_part_larger_than_the_summary_models_window_is_summarised_in_chunks() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 60_000);
    chat(&mut store, &id, 100, 500);
    let model = Arc::new(Scripted {
        answers: Mutex::new((0..20).map(|i| Ok(format!("running summary {i}"))).collect()),
        window: Some(8_000),
        ..Scripted::default()
    });
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let report = c.before_call(&mut store, &id, &frame(), &settings(Some(60_000))).unwrap().compaction.unwrap();
    assert!(report.model_calls >= 3, "{report:?}");
    let requests = model.requests.lock().unwrap();
    for (i, (_, r)) in requests.iter().enumerate() {
        let Part::Text { text } = &r.messages[0].parts[0] else { panic!() };
        assert!(seshat::window::estimate_text(text) < 8_000, "chunk {i} does not fit the summary model");
        if i > 0 {
            assert!(text.starts_with("Previous summary:\nrunning summary"), "chunk {i} carries the running summary");
        }
    }
}

#[test]
fn switching_to_the_extractive_summariser_needs_no_model() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser-extractive");
    let mut c = p.compactor(model.clone());
    let report = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap().compaction.unwrap();
    assert!(report.summarised && report.model_calls == 0 && model.calls() == 0, "{report:?}");
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    assert!(summary.starts_with("User requests:\n- request 0"), "{summary}");
}

#[test]
fn unanswered_calls_get_a_stored_synthetic_result_and_orphans_are_not_sent() {
    let home = Home::new();
    let mut store = home.store();
    // An orphan can only come in through a repaired import (another agent's broken session): the
    // exchange `ghost` whose call was lost.
    let source = session(&mut store, 200_000);
    store.append(&source, &[text(Role::User, "go")]).unwrap();
    store.append(&source, &tool_pair("ghost", "the ghost's output")).unwrap();
    let mut export = Vec::new();
    store.export(&source, &mut export).unwrap();
    let mut lines: Vec<serde_json::Value> =
        String::from_utf8(export).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    lines.remove(2); // the `ghost` call: its result is now an orphan
    lines[0]["message_count"] = 2.into();
    for (seq, line) in lines.iter_mut().skip(1).filter(|l| l["record"] == "message").enumerate() {
        line["seq"] = (seq + 1).into();
    }
    let broken: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let options = seshat::store::ImportOptions { new_id: true, repair: true, ..Default::default() };
    let imported = store.import(&mut broken.as_bytes(), options).unwrap();
    assert_eq!(imported.orphans, 1, "{imported:?}");
    let id = imported.id;
    let full = store.full_history(&id).unwrap();
    assert!(
        full.iter()
            .any(|m| m.parts.iter().any(|p| matches!(p, Part::ToolResult { call_id, .. } if call_id == "ghost")))
    );
    // Then a call `lost` that is never answered, and the next request.
    let [call, _] = tool_pair("lost", "");
    store.append(&id, &[call]).unwrap();
    store.append(&id, &[text(Role::User, "what happened?")]).unwrap();

    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(200_000))).unwrap();
    assert!(seshat::compaction::pairing::is_paired(&prepared.messages));
    let sent = format!("{:?}", prepared.messages);
    assert!(!sent.contains("ghost"), "the orphan is not sent: {sent}");
    let roles: Vec<Role> = prepared.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::User], "the result follows its call");
    let last = store.full_history(&id).unwrap().pop().unwrap();
    assert_eq!(last.status, MessageStatus::Synthetic);
    assert!(matches!(&last.parts[0], Part::ToolResult { call_id, is_error: true, .. } if call_id == "lost"));
    // A second call adds nothing more.
    let before = store.full_history(&id).unwrap().len();
    let mut c = p.compactor(model);
    c.before_call(&mut store, &id, &frame(), &settings(Some(200_000))).unwrap();
    assert_eq!(store.full_history(&id).unwrap().len(), before);
}

#[test]
fn a_provider_report_drives_the_check_until_the_next_compaction() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 4, 50);
    // The provider says the last request was much larger than the estimate (big system prompt).
    let reply = NewMessage {
        role: Role::Assistant,
        parts: vec![Part::Text { text: "ok".into() }],
        usage: Some(seshat::conversation::Usage {
            input_tokens: 17_000,
            output_tokens: 10,
            context_tokens: Some(17_000),
            ..Default::default()
        }),
        status: MessageStatus::Complete,
    };
    store.append(&id, &[text(Role::User, "next"), reply, text(Role::User, "and?")]).unwrap();
    let view = store.live_view(&id).unwrap();
    let estimate = seshat::compaction::estimate_request(&frame(), &view);
    let used = seshat::compaction::current_use(&frame(), &view);
    assert!(estimate < 2_000, "{estimate}");
    assert_eq!(used, 17_000 + 10 + seshat::window::estimate_parts(&[Part::Text { text: "and?".into() }]));
}

/// A session with a fixed id, imported, with `turns` long exchanges.
fn import_long(home: &Home, turns: usize) -> String {
    import_long_as(home, turns, "01JFCMPACT0000000000000001")
}

/// `import_long` under another session id.
fn import_long_as(home: &Home, turns: usize, id: &str) -> String {
    let mut lines = vec![json_line(
        serde_json::json!({"record": "session", "id": id, "title": "long", "project": "/p",
        "provider": null, "model": "m", "context_window": 8192, "created_at": 1, "updated_at": 1, "message_count": turns * 2,
        "totals": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_creation_tokens": 0},
        "context_tokens": null, "compaction_failures": 0, "auto_compact_disabled": false, "metadata": {}}),
    )];
    for t in 0..turns {
        for (k, (role, text)) in [
            ("user", format!("request {t}: please decide")),
            ("assistant", format!("We will use plan {t}. {}", "detail ".repeat(120))),
        ]
        .into_iter()
        .enumerate()
        {
            lines.push(json_line(serde_json::json!({"record": "message", "seq": t * 2 + k + 1, "role": role,
                "parts": [{"type": "text", "text": text}], "status": "complete", "created_at": 1})));
        }
    }
    let file = home.path().join("long.jsonl");
    std::fs::write(&file, lines.concat()).unwrap();
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    id.to_string()
}

fn json_line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

#[test]
fn seshat_compact_works_offline_with_the_extractive_summariser() {
    let home = Home::new();
    let id = import_long(&home, 20);
    // The default summariser needs a provider: a clear error, nothing changed.
    let err = home.fails(&["compact", &id]);
    assert!(err.contains("no provider is configured") && err.contains("summariser-extractive"), "{err}");
    let failed = home.store().compactions(&id).unwrap();
    assert_eq!(failed.len(), 1, "the failed attempt is recorded: {failed:?}");
    assert_eq!(failed[0].status, seshat::store::CompactionStatus::Failed);
    assert!(home.store().live_view(&id).unwrap().compaction.is_none(), "and nothing applied");

    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    insta::assert_snapshot!("compact_dry_run", home.ok(&["compact", "01JFCMPACT", "--dry-run"]));
    assert!(home.store().live_view(&id).unwrap().compaction.is_none(), "a dry run changes nothing");
    insta::assert_snapshot!("compact", home.ok(&["compact", "01JFCMPACT"]));
    let view = home.store().live_view(&id).unwrap();
    let compaction = view.compaction.unwrap();
    assert_eq!(compaction.model, None, "no model was called, so none is recorded");
    let summary = compaction.summary.unwrap();
    assert!(
        summary.contains("User requests:\n- request 0: please decide") && summary.contains("Decisions:"),
        "{summary}"
    );
    // A compaction that calls no model says so in --json too.
    let again = import_long_as(&home, 20, "01JFCMQ0000000000000000002");
    let report: serde_json::Value = serde_json::from_str(&home.ok(&["compact", &again, "--json"])).unwrap();
    assert!(report["summarised"] == true && report["summary_model"].is_null(), "{report}");
    assert_eq!(report["model_calls"], 0);
    assert_eq!(home.store().session(&id).unwrap().compaction_failures, 0, "a manual success clears the counter");
    let shown = home.ok(&["sessions", "show", "01JFCMPACT"]);
    assert!(shown.contains("── summary of the compacted history [synthetic] ──") && shown.contains(COMPACTION_MARKER));
}

#[test]
fn compact_summary_model_picks_another_model_for_the_summary() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("short summary"), Ok("more")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let s = Settings { summary_model: Some("small-model".into()), ..settings(Some(20_000)) };
    let report = c.before_call(&mut store, &id, &frame(), &s).unwrap().compaction.unwrap();
    assert_eq!(report.summary_model.as_deref(), Some("small-model"));
    let requests = model.requests.lock().unwrap();
    assert_eq!(requests.len() as u32, report.model_calls);
    assert!(!requests.is_empty() && requests.iter().all(|(m, _)| m == "small-model"));
    drop(requests);
    assert_eq!(store.live_view(&id).unwrap().compaction.unwrap().model.as_deref(), Some("small-model"));
}

#[test]
fn a_dry_run_predicts_the_trims_and_the_cut_of_the_real_run() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 30_000);
    for t in 0..12 {
        store.append(&id, &[text(Role::User, format!("run step {t}"))]).unwrap();
        store.append(&id, &tool_pair(&format!("s{t}"), &format!("line {t}\n").repeat(900))).unwrap();
        store.append(&id, &[text(Role::Assistant, format!("step {t} done {}", "w ".repeat(400)))]).unwrap();
    }
    drop(store);
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let report = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&home.ok(args)).unwrap() };
    let dry = report(&["compact", &id, "--dry-run", "--json"]);
    let said = home.ok(&["compact", &id, "--dry-run"]);
    assert!(said.contains("→ at most") && said.contains("(freed at least"), "{said}");
    assert!(home.store().trims(&id).unwrap().is_empty(), "a dry run records nothing");
    let real = report(&["compact", &id, "--json"]);
    assert!(dry["trimmed"].as_u64().unwrap() > 0, "{dry}");
    for field in ["trimmed", "trims_freed", "dropped", "kept", "tokens_before", "summarised"] {
        assert_eq!(dry[field], real[field], "{field}: dry {dry}\nreal {real}");
    }
    assert_eq!(home.store().trims(&id).unwrap().len() as u64, real["trimmed"].as_u64().unwrap());
    // No summary is written in a dry run: its after-figure counts the summary at its cap.
    assert!(dry["tokens_after"].as_u64() >= real["tokens_after"].as_u64(), "dry {dry}\nreal {real}");
}

#[test]
fn tool_results_inside_the_latest_two_user_turns_are_never_trimmed() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 40_000);
    let big = |k: usize| format!("output line {k}\n").repeat(1_500);
    store.append(&id, &[text(Role::User, "build it")]).unwrap();
    for k in 0..3 {
        store.append(&id, &tool_pair(&format!("old{k}"), &big(k))).unwrap();
    }
    // The latest two user turns, each with large results of their own.
    let thanks = store.append(&id, &[text(Role::User, "now the tests")]).unwrap()[0];
    for k in 3..5 {
        store.append(&id, &tool_pair(&format!("new{k}"), &big(k))).unwrap();
    }
    store.append(&id, &[text(Role::User, "and the docs")]).unwrap();
    store.append(&id, &tool_pair("new5", &big(5))).unwrap();
    let model = Scripted::answering(&[Ok("summary")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model);
    c.before_call(&mut store, &id, &frame(), &settings(Some(40_000))).unwrap();
    let trims = store.trims(&id).unwrap();
    assert_eq!(trims.len(), 3, "the three old results: {trims:?}");
    assert!(trims.iter().all(|t| t.seq < thanks), "a protected result was trimmed: {trims:?}");
}

#[test]
fn seshat_compact_with_a_hostile_trimmer_writes_nothing_and_leaves_the_view_as_it_was() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    // (The hostile trimmer grows the second message's first part: a tool result here.)
    for k in 0..8 {
        store.append(&id, &tool_pair(&format!("t{k}"), &"log line\n".repeat(800))).unwrap();
        store.append(&id, &[text(Role::User, format!("step {k}"))]).unwrap();
    }
    let before = store.live_view(&id).unwrap();
    drop(store);
    let dir = home.path().join("plugins/hostile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::HOSTILE, dir.join("plugin.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), "id = \"hostile\"\nkind = \"trimmer\"\napi = \"0.2.0\"\n").unwrap();
    for (probe, why) in [("edit-protected", "which is protected"), ("edit-grow", "does not shorten")] {
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "[plugins]\ntrimmer = \"hostile\"\nsummariser = \"summariser-extractive\"\n\
                 [plugins.options.trimmer]\nprobe = \"{probe}\"\n"
            ),
        )
        .unwrap();
        let err = home.fails(&["compact", &id, "--window", "20000"]);
        assert!(err.contains("hostile") && err.contains(why), "{probe}: {err}");
        let store = home.store();
        assert!(store.trims(&id).unwrap().is_empty(), "{probe}: no trim row");
        assert!(store.compactions(&id).unwrap().is_empty(), "{probe}: no compaction row");
        let after = store.live_view(&id).unwrap();
        assert_eq!(after.entries.len(), before.entries.len());
        assert!(after.entries.iter().zip(&before.entries).all(|(a, b)| a.parts == b.parts && a.seq == b.seq));
    }
}

#[test]
fn the_sdk_compacts_automatically_only_when_asked() {
    assert!(!seshat::ClientOptions::default().auto_compact, "off by default, as in the Go SDK");
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    drop(store);
    let client = |auto_compact| {
        seshat::Client::new(
            seshat::ClientOptions {
                auto_compact,
                store: Some(seshat::store::Location::File(home.db())),
                dirs: Some(seshat::paths::Dirs::under(home.path())),
                ..Default::default()
            },
            Scripted::answering(&[Ok("summary of forty turns")]),
        )
        .unwrap()
    };
    // Over the threshold (~12.4k; it is 10.8k), under the hard limit: by default it is sent as is.
    let mut off = client(false);
    let s = off.settings("test-model", Some(20_000), 1_000);
    let prepared = off.prepare(&id, &frame(), &s).unwrap();
    assert!(prepared.compaction.is_none());
    assert!(off.store().compactions(&id).unwrap().is_empty());
    drop(off);
    let mut on = client(true);
    let s = on.settings("test-model", Some(20_000), 1_000);
    let report = on.prepare(&id, &frame(), &s).unwrap().compaction.expect("compacted");
    assert!(report.summarised, "{report:?}");
    assert_eq!(on.store().compactions(&id).unwrap().len(), 1);
}

#[test]
fn instructions_and_a_prompt_reach_the_summary_model_and_are_recorded() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("Forty requests; the TF123 code kept.")]);
    let mut p = plugins("summariser");
    let s = Settings {
        instructions: Some("keep the TF123 code".into()),
        prompt: Some("MY PROMPT.".into()),
        ..settings(Some(20_000))
    };
    let report = p.compactor(model.clone()).before_call(&mut store, &id, &frame(), &s).unwrap().compaction.unwrap();
    assert!(report.summarised);
    let (_, request) = &model.requests.lock().unwrap()[0];
    assert_eq!(
        request.system.as_deref(),
        Some("MY PROMPT.\n\nThe user's instructions for this summary (follow them): keep the TF123 code"),
        "the user's prompt replaces the summariser's; the instructions follow it"
    );
    let recorded = store.live_view(&id).unwrap().compaction.unwrap();
    assert_eq!(recorded.instructions.as_deref(), Some("keep the TF123 code"));

    // Without a prompt, the summariser's own, then the instructions.
    let id = session(&mut store, 20_000);
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("summary")]);
    let s = Settings { instructions: Some("stress the deadline".into()), ..settings(Some(20_000)) };
    p.compactor(model.clone()).before_call(&mut store, &id, &frame(), &s).unwrap();
    let (_, request) = &model.requests.lock().unwrap()[0];
    let system = request.system.as_deref().unwrap();
    assert!(system.contains("Active requests") && system.ends_with("(follow them): stress the deadline"), "{system}");
}

#[test]
fn the_extractive_summariser_keeps_the_lines_the_instructions_name() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "deploy the service")]).unwrap();
    let log =
        format!("{}token rotation: every 90 days (policy SEC-7)\n{}", "step ok\n".repeat(50), "step ok\n".repeat(50));
    store.append(&id, &tool_pair("c1", &log)).unwrap();
    chat(&mut store, &id, 40, 300);
    let mut p = plugins("summariser-extractive");
    let s = Settings { instructions: Some("Keep the token rotation policy.".into()), ..settings(Some(20_000)) };
    p.compactor(Scripted::answering(&[])).before_call(&mut store, &id, &frame(), &s).unwrap();
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    assert!(summary.starts_with("As asked:\n- token rotation: every 90 days (policy SEC-7)\n"), "{summary}");
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "deploy the service")]).unwrap();
    store.append(&id, &tool_pair("c1", &log)).unwrap();
    chat(&mut store, &id, 40, 300);
    p.compactor(Scripted::answering(&[])).before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    // Without instructions there is no "As asked" section; the line, unlike the rest of its log,
    // is among the tool outcomes.
    assert!(
        !summary.contains("As asked") && summary.contains("- run({\"cmd\":\"make\"}) ok: token rotation"),
        "{summary}"
    );
}

#[test]
fn seshat_compact_takes_instructions_from_the_flag_or_the_config_and_a_prompt_file() {
    let home = Home::new();
    let id = import_long(&home, 20);
    let config = "[plugins]\nsummariser = \"summariser-extractive\"\n[compaction]\ninstructions = \"keep plan 3\"\n";
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home.ok(&["compact", &id]);
    let c = home.store().live_view(&id).unwrap().compaction.unwrap();
    assert_eq!(c.instructions.as_deref(), Some("keep plan 3"), "from [compaction] instructions");
    assert!(
        c.summary.unwrap().starts_with("As asked:\n- We will use plan 3."),
        "the extractive summariser followed them"
    );

    let other = home.path().join("other.jsonl");
    let exported = home.ok(&["sessions", "export", &id]);
    assert!(exported.contains(r#""instructions":"keep plan 3""#), "exported with the compaction");
    std::fs::write(&other, exported).unwrap();
    let copy = home.ok(&["sessions", "import", "--new-id", other.to_str().unwrap()]);
    assert!(copy.starts_with("Imported session "));

    // The flag wins for that compaction.
    home.ok(&["compact", &id, "--undo"]);
    home.ok(&["compact", &id, "--instructions", "keep plan 7"]);
    let c = home.store().live_view(&id).unwrap().compaction.unwrap();
    assert_eq!(c.instructions.as_deref(), Some("keep plan 7"));

    // A prompt file that cannot be read is a clear error naming it; nothing is compacted.
    let config = format!("{config}prompt_file = \"{}\"\n", home.path().join("missing.md").display());
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let err = home.fails(&["compact", &id]);
    assert!(err.contains("missing.md") && err.contains("cannot read [compaction] prompt_file"), "{err}");
}

/// A build log of `n` lines with one error in the middle.
fn build_log(n: usize) -> String {
    let mut lines: Vec<String> = (0..n).map(|i| format!("   Compiling crate_{i:03} v0.1.{i:03}")).collect();
    lines[n * 11 / 20] = "error[E0502]: cannot borrow `queue` as mutable --> src/queue/drain.rs:88:9".into();
    lines.join("\n")
}

#[test]
fn a_summary_request_carries_each_long_outputs_outcome_lines() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "build the queue crate")]).unwrap();
    // Too small for the trimmer (under twice what it keeps), larger than a summary request
    // carries whole.
    let log = build_log(110);
    assert!((3_000..3_600).contains(&log.len()), "{}", log.len());
    store.append(&id, &tool_pair("b1", &log)).unwrap();
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("Built; E0502 in src/queue/drain.rs:88.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    c.compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    let requests = model.requests.lock().unwrap();
    let sent: String = requests
        .iter()
        .flat_map(|(_, r)| r.messages.iter().flat_map(|m| m.parts.iter()))
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(sent.contains("error[E0502]: cannot borrow `queue` as mutable --> src/queue/drain.rs:88:9"), "{sent}");
    assert!(sent.contains("   Compiling crate_000 v0.1.000") && sent.contains("   Compiling crate_109 v0.1.109"));
    assert!(sent.contains("lines cut …]"), "the cut says so");
    assert!(!sent.contains("crate_070 "), "the middle is cut: {sent}");
}

/// The items of one section of an extractive summary (`Title:` then `- item` lines).
fn summary_section(summary: &str, title: &str) -> Vec<String> {
    let start = summary.find(&format!("{title}:\n")).unwrap_or_else(|| panic!("no {title} in {summary}"));
    summary[start..].lines().skip(1).take_while(|l| l.starts_with("- ")).map(str::to_string).collect()
}

#[test]
fn the_extractive_summary_keeps_rules_outcome_lines_and_only_the_newest_decision() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "Never push to main directly; always open a PR.")]).unwrap();
    store.append(&id, &[text(Role::User, "Please add a retry to the upload path (UP-12).")]).unwrap();
    store.append(&id, &tool_pair("b1", &build_log(300))).unwrap();
    store.append(&id, &[text(Role::Assistant, "Decision: we will use sqlite for the cache (DEC-A1).")]).unwrap();
    // The same request again, and a replacement of the decision.
    store.append(&id, &[text(Role::User, "Please add a retry to the upload path (UP-12).")]).unwrap();
    store
        .append(
            &id,
            &[text(Role::Assistant, "Change of plan: redis instead of sqlite for the cache (DEC-B2 replaces DEC-A1).")],
        )
        .unwrap();
    store.append(&id, &[text(Role::Assistant, "The flaky upload test is still open (TODO-9).")]).unwrap();
    // Long filler that would once have pushed the later sections past the end of the summary.
    for t in 0..60 {
        store
            .append(
                &id,
                &[
                    text(Role::User, format!("Look at file {t} and tell me what it does, in detail, with examples.")),
                    text(Role::Assistant, format!("File {t} is fine. {}", "w ".repeat(600))),
                ],
            )
            .unwrap();
    }
    chat(&mut store, &id, 6, 200);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser-extractive");
    let mut c = p.compactor(model);
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    assert!(report.summarised, "{report:?}");
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    let section = |title: &str| summary_section(&summary, title);
    assert_eq!(section("Constraints and preferences"), ["- Never push to main directly; always open a PR"]);
    let requests = section("User requests");
    assert_eq!(requests.iter().filter(|r| r.contains("UP-12")).count(), 1, "duplicates dropped: {requests:?}");
    let outcomes = section("Tool outcomes");
    assert!(
        outcomes
            .iter()
            .any(|o| o.contains("error[E0502]: cannot borrow `queue` as mutable --> src/queue/drain.rs:88:9")),
        "the outcome line, not the first line: {outcomes:?}"
    );
    let decisions = section("Decisions");
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert!(decisions[0].contains("DEC-B2 replaces DEC-A1"), "{decisions:?}");
    assert!(!summary.contains("use sqlite for the cache"), "the replaced decision is gone: {summary}");
    assert!(section("Open items").iter().any(|o| o.contains("TODO-9")), "{summary}");
    let cap = seshat::window::Marks::new(20_000).summary_tokens();
    assert!(seshat::window::estimate_text(&summary) <= cap, "within its cap");
}

#[test]
fn the_extractive_summary_shows_choices_replaced_in_any_wording_and_a_runs_result() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    // Four choices, each replaced later in other words, none with an identifier to match by.
    let choices = [
        (
            "Decision: we will use Postgres for the job queue.",
            "Change of plan: switch from Postgres to SQLite for the job queue.",
        ),
        (
            "We decided to schedule the jobs with tokio-cron.",
            "We will schedule with a plain loop instead of tokio-cron.",
        ),
        ("Plan: we will deploy with Helm charts.", "Let's drop Helm and deploy with plain manifests."),
        ("We will use JSON for the export format.", "We no longer use JSON: the export format will be CBOR."),
    ];
    for (choice, _) in &choices {
        store.append(&id, &[text(Role::Assistant, *choice)]).unwrap();
    }
    // A benchmark's run: a noisy log, every line timed, ending with its result.
    let mut log: Vec<String> =
        (0..120).map(|i| format!("[10:00:{:02}] batch {i} processed in {}ms", i % 60, 200 + i % 50)).collect();
    log.push("result: 12400 req/s, p99 18.4 ms over 120 batches".into());
    store.append(&id, &tool_pair("bench1", &log.join("\n"))).unwrap();
    for (_, replacement) in &choices {
        store.append(&id, &[text(Role::Assistant, *replacement)]).unwrap();
    }
    chat(&mut store, &id, 40, 200);
    let mut p = plugins("summariser-extractive");
    let mut c = p.compactor(Scripted::answering(&[]));
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    assert!(report.summarised, "{report:?}");
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    let section = |title: &str| summary_section(&summary, title);
    let decisions = section("Decisions");
    for (choice, replacement) in &choices {
        let current = replacement.trim_end_matches('.');
        assert!(decisions.iter().any(|d| d.contains(current)), "the replacement is current: {decisions:?}");
        // The replaced choice is gone, or shown only as what the replacement replaces.
        let old = choice.trim_end_matches('.');
        let as_current = decisions.iter().filter(|d| d.contains(old) && !d.contains("(replaces: ")).count();
        assert_eq!(as_current, 0, "`{old}` is not shown as current: {decisions:?}");
    }
    let outcomes = section("Tool outcomes");
    let bench = outcomes.iter().find(|o| o.contains("ok:")).unwrap_or_else(|| panic!("{outcomes:?}"));
    assert!(bench.contains("12400 req/s, p99 18.4 ms"), "the run's result, not its first log line: {bench}");
    assert!(!bench.contains("batch 0 processed"), "{bench}");
}

#[test]
fn seshat_compact_refuses_a_window_below_the_minimum_and_records_nothing() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    for k in 0..40 {
        store.append(&id, &tool_pair(&format!("t{k}"), &"log line\n".repeat(1_500))).unwrap();
    }
    let before = store.live_view(&id).unwrap();
    drop(store);
    for window in ["0", "1", "100", "4095"] {
        let err = home.fails(&["compact", &id, "--window", window]);
        assert!(err.contains(&format!("is {window} tokens")) && err.contains("at least 4096"), "{window}: {err}");
        let err = home.fails(&["compact", &id, "--dry-run", "--window", window]);
        assert!(err.contains("at least 4096"), "{window}: {err}");
        let store = home.store();
        assert!(store.trims(&id).unwrap().is_empty(), "{window}: no trim row");
        assert!(store.compactions(&id).unwrap().is_empty(), "{window}: no compaction row");
        assert_eq!(store.live_view(&id).unwrap().entries.len(), before.entries.len());
    }
    // The smallest window that works does compact.
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let out = home.ok(&["compact", &id, "--window", "4096"]);
    assert!(out.starts_with("Compacted session"), "{out}");
    let help = home.ok(&["compact", "--help"]);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("instead of the session's recorded one") && help.contains("at least 4096"), "{help}");
}

/// A model call that keeps the request it was sent and answers "ok".
struct Keep(Arc<Mutex<Option<CompletionRequest>>>);

impl seshat::plugins::ModelCall for Keep {
    fn complete(&mut self, request: CompletionRequest) -> Result<Completion, ModelError> {
        *self.0.lock().unwrap() = Some(request);
        Ok(Completion { text: "ok".into(), usage: None, stop_reason: StopReason::EndTurn })
    }
}

#[test]
fn the_default_summarisers_transcript_keeps_a_long_results_outcome_not_its_bulk() {
    let mut p = plugins("summariser");
    let log: String = (0..800).map(|i| format!("test case_{i:03} ... ok\n")).collect::<String>()
        + "src/escape.rs:41:9: error[E0308]: mismatched types\ntest result: FAILED. 800 passed; 1 failed\n"
        + &(0..200).map(|i| format!("note {i}\n")).collect::<String>();
    let short = "exit 0: 3 files formatted";
    let call = |id: &str| Part::ToolCall { id: id.into(), name: "run".into(), arguments: "{}".into() };
    let result =
        |id: &str, content: &str| Part::ToolResult { call_id: id.into(), content: content.into(), is_error: false };
    let m = |id, role, parts| seshat::plugins::PluginMessage { id, role, parts };
    let request = seshat::plugins::SummaryRequest {
        messages: vec![
            m(1, Role::User, vec![Part::Text { text: "fix the build".into() }]),
            m(2, Role::Assistant, vec![call("a"), call("b")]),
            m(3, Role::Tool, vec![result("a", &log), result("b", short)]),
        ],
        previous_summary: None,
        max_tokens: 500,
        model_window: 100_000,
        extra: "{}".into(),
        instructions: None,
        prompt: None,
    };
    let kept = Arc::new(Mutex::new(None));
    p.summariser.summarise(&request, Box::new(Keep(kept.clone()))).unwrap();
    let sent = kept.lock().unwrap().take().expect("the model was called");
    let Part::Text { text } = &sent.messages[0].parts[0] else { panic!("{sent:?}") };
    assert!(text.contains("src/escape.rs:41:9: error[E0308]: mismatched types"), "{text}");
    assert!(text.contains("test result: FAILED. 800 passed; 1 failed"), "{text}");
    assert!(text.contains("lines left out …]"), "{text}");
    assert!(text.contains(&format!("[result of b] {short}")), "a short result stays whole: {text}");
    assert!(text.len() < 4_000 && text.len() < log.len() / 4, "the bulk went: {} bytes", text.len());
    assert!(text.contains("[user] fix the build"), "roles shown by their Display: {text}");
}

#[test]
fn trims_and_compactions_name_the_plugin_and_build_that_made_them() {
    let home = Home::new();
    let mut store = home.store();
    let id = builds_then_chat(&mut store, 3, 30);
    let model = Scripted::answering(&[Ok("Built; 30 requests answered."), Err("overloaded")]);
    let mut p = plugins("summariser");
    let (trimmer, summariser) = (p.trimmer.sha256().to_string(), p.summariser.sha256().to_string());
    assert_eq!((trimmer.len(), summariser.len()), (64, 64));
    assert_ne!(trimmer, summariser);
    let report = p.compactor(model.clone()).compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    assert!(report.trimmed > 0 && report.summarised, "{report:?}");
    let trims = store.trims(&id).unwrap();
    assert!(!trims.is_empty());
    for t in &trims {
        let by = t.plugin.as_ref().expect("a trim names its trimmer");
        assert_eq!((by.id.as_str(), by.sha256.as_str()), ("trimmer", trimmer.as_str()));
    }
    let compactions = store.compactions(&id).unwrap();
    let by = compactions[0].plugin.as_ref().expect("a compaction names its summariser");
    assert_eq!((by.id.as_str(), by.sha256.as_str()), ("summariser", summariser.as_str()));
    // A failed one too.
    store.append(&id, &[text(Role::User, "more"), text(Role::Assistant, "w ".repeat(4_000))]).unwrap();
    p.compactor(model).compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap_err();
    let failed = store.compactions(&id).unwrap().pop().unwrap();
    assert_eq!(failed.plugin.as_ref().map(|p| p.id.as_str()), Some("summariser"));
    // Export carries them and import keeps them.
    let mut export = Vec::new();
    store.export(&id, &mut export).unwrap();
    let text = String::from_utf8(export.clone()).unwrap();
    assert!(text.contains(&format!(r#""plugin":{{"id":"trimmer","sha256":"{trimmer}"}}"#)), "{}", &text[..400]);
    let other = Home::new();
    let mut copy = other.store();
    let imported = copy.import(&mut export.as_slice(), seshat::store::ImportOptions::default()).unwrap();
    assert_eq!(copy.trims(&imported.id).unwrap(), trims);
    assert_eq!(copy.compactions(&imported.id).unwrap(), store.compactions(&id).unwrap());
}

#[test]
fn an_open_breaker_or_a_disabled_session_sends_a_fitting_request_unsummarised_and_says_why() {
    for (failures, disabled, why) in [
        (3, false, "summarising is off after 3 failed compactions in a row"),
        (0, true, "automatic summarising is disabled for this session"),
    ] {
        let home = Home::new();
        let mut store = home.store();
        let id = session(&mut store, 20_000);
        // Over the threshold, under the hard limit.
        chat(&mut store, &id, 40, 300);
        store.set_compaction_state(&id, failures, disabled).unwrap();
        let model = Scripted::answering(&[Ok("never asked")]);
        let mut p = plugins("summariser");
        let mut c = p.compactor(model.clone());
        let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
        assert_eq!(model.calls(), 0, "{why}: no summary call");
        assert!(store.compactions(&id).unwrap().is_empty(), "{why}: nothing recorded");
        assert!(prepared.warnings.iter().any(|w| w.contains(why)), "{why}: {:?}", prepared.warnings);
        assert_eq!(prepared.messages.len(), store.full_history(&id).unwrap().len(), "{why}: sent whole");
    }
}

/// A call the user pinned while its result was still to come lies before the cut, and its
/// result was summarised away: the request sends the stored result right after the call
/// (nothing synthetic is made up, nothing is written).
#[test]
fn a_pinned_call_whose_result_was_summarised_is_sent_with_its_stored_result() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "build it")]).unwrap();
    let [call, result] = tool_pair("keep", "build ok: 3 warnings");
    store.append(&id, &[call]).unwrap();
    // Pinned before its result arrived (a client's tool still running): the pin holds the call.
    assert_eq!(seshat::compaction::pin(&mut store, &id, 2, 20_000).unwrap(), vec![2]);
    store.append(&id, &[result]).unwrap();
    chat(&mut store, &id, 40, 300);
    let model = Scripted::answering(&[Ok("The user built it and made 40 requests.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model);
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    assert!(prepared.compaction.is_some_and(|r| r.summarised), "the session was to be compacted");
    let view = store.live_view(&id).unwrap();
    assert!(view.entries.iter().any(|e| e.seq == Some(2) && e.pinned), "the pinned call is in the view");
    let seqs: Vec<_> = view.entries.iter().map(|e| (e.seq, e.origin)).collect();
    assert!(!view.entries.iter().any(|e| e.seq == Some(3)), "its result was summarised away: {seqs:?}");
    let at = prepared.messages.iter().position(|m| m.seq == Some(2)).expect("the pinned call is sent");
    let next = &prepared.messages[at + 1];
    assert_eq!(
        (next.role, &next.parts[..]),
        (
            Role::Tool,
            &[Part::ToolResult { call_id: "keep".into(), content: "build ok: 3 warnings".into(), is_error: false }][..]
        ),
        "the stored result follows its call"
    );
    assert!(prepared.messages.iter().all(|m| !m.parts.is_empty()), "an empty message is sent");
    let history = store.full_history(&id).unwrap();
    assert_eq!(history.len(), 83, "a synthetic result was written");
}

/// A compaction the user asks for runs far under the threshold: every turn before the latest
/// request is summarised. With one request only there is nothing to do, and the report says the
/// same size before and after.
#[test]
fn a_manual_compaction_under_the_threshold_summarises_all_but_the_latest_request() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 200_000);
    chat(&mut store, &id, 3, 50);
    let model = Scripted::answering(&[Ok("SUMMARY of the first two turns.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let dry = c.compact(&mut store, &id, &frame(), &settings(Some(200_000)), true).unwrap();
    assert!(dry.summarised && dry.tokens_after <= dry.tokens_before, "{dry:?}");
    assert_eq!((dry.dropped, dry.kept, model.calls()), (4, 2, 0), "the dry run calls nothing: {dry:?}");
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(200_000)), false).unwrap();
    assert!(report.summarised && report.tokens_after < report.tokens_before, "{report:?}");
    assert_eq!((report.dropped, model.calls()), (4, 1));
    let view = store.live_view(&id).unwrap();
    assert_eq!(view.entries.len(), 3, "the summary, the latest request and its answer");

    let one = session(&mut store, 200_000);
    chat(&mut store, &one, 1, 50);
    let nothing = c.compact(&mut store, &one, &frame(), &settings(Some(200_000)), false).unwrap();
    assert!(nothing.tokens_before > 0 && !nothing.summarised, "{nothing:?}");
    assert_eq!(nothing.tokens_after, nothing.tokens_before, "{nothing:?}");
    assert_eq!(model.calls(), 1, "no call for nothing");
}

/// The marks are exclusive: a request exactly at the threshold is not compacted (just over
/// it is), and a request exactly at the hard limit is sent (one token over is refused).
#[test]
fn a_request_exactly_at_the_threshold_or_the_hard_limit_goes_as_it_is_and_one_token_more_does_not() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 200_000);
    chat(&mut store, &id, 240, 300);
    // Grow the session a message at a time until some window's threshold falls exactly on it.
    let (tokens, window) = loop {
        let t = seshat::compaction::current_use(&frame(), &store.live_view(&id).unwrap());
        let guess = t * 100 / 85 + 2_000;
        if let Some(w) = (guess.saturating_sub(3)..guess + 3).find(|&w| seshat::window::Marks::new(w).threshold == t) {
            break (t, w);
        }
        store.append(&id, &[text(Role::User, "more")]).unwrap();
    };
    let model = Scripted::answering(&[Ok("summary")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let at = c.before_call(&mut store, &id, &frame(), &settings(Some(window))).unwrap();
    assert!(at.compaction.is_none() && model.calls() == 0, "compacted at exactly the threshold ({tokens})");
    // The next window down puts the threshold a token or two under the request.
    let below = window - 2;
    assert!((tokens - 2..tokens).contains(&seshat::window::Marks::new(below).threshold));
    let over = c.before_call(&mut store, &id, &frame(), &settings(Some(below))).unwrap();
    assert!(over.compaction.is_some(), "not compacted just over the threshold");

    // The hard limit, without compaction: the window less the answer's room.
    let id = session(&mut store, 200_000);
    chat(&mut store, &id, 30, 300);
    let off = Settings { auto_compact: false, ..settings(Some(500_000)) };
    let request = c.before_call(&mut store, &id, &frame(), &off).unwrap().tokens;
    let exactly = Settings { max_output_tokens: 500_000 - request, ..off.clone() };
    assert!(c.before_call(&mut store, &id, &frame(), &exactly).is_ok(), "refused at exactly the hard limit");
    let over = Settings { max_output_tokens: 500_000 - request + 1, ..off };
    let err = c.before_call(&mut store, &id, &frame(), &over).unwrap_err();
    assert_eq!(err.code(), "compact_full", "{err}");
}

/// A history too short to be worth a summary (a greeting before a long request): an automatic
/// pass calls no model for it and counts no failure — the request goes out as it is.
#[test]
fn too_little_to_summarise_calls_no_model_and_counts_no_failure() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "hi"), text(Role::Assistant, "hello")]).unwrap();
    // One long request, over the threshold but within the hard limit.
    store.append(&id, &[text(Role::User, format!("review this: {}", "w ".repeat(30_000)))]).unwrap();
    let model = Scripted::answering(&[Ok("A summary much longer than the greeting it replaces.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let prepared = c.before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    assert_eq!(model.calls(), 0, "no summary was asked for");
    assert!(prepared.compaction.as_ref().is_none_or(|r| !r.summarised), "{:?}", prepared.compaction);
    assert_eq!(prepared.messages.len(), 3, "the whole history goes out");
    assert!(store.compactions(&id).unwrap().is_empty());
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0);
}

/// A session over the target that trimming alone brings under it is not summarised, asked for by
/// hand or not (the seed's order: trims first, no model call when they suffice).
#[test]
fn a_manual_compaction_that_trims_enough_summarises_nothing() {
    let home = Home::new();
    let mut store = home.store();
    let id = long_build(&mut store);
    let model = Scripted::answering(&[Ok("A summary.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(40_000)), false).unwrap();
    let target = seshat::window::Marks::new(40_000).target;
    assert!(report.tokens_before > target && report.tokens_after <= target, "{report:?}");
    assert!(report.trimmed > 0 && !report.summarised && report.dropped == 0, "{report:?}");
    assert_eq!(model.calls(), 0, "no model call");
    assert!(store.compactions(&id).unwrap().is_empty());
}

/// A summary that would make the request larger than what it replaces is not applied, by hand
/// or not, and the report says why.
#[test]
fn a_summary_larger_than_what_it_replaces_is_not_applied_and_says_so() {
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 200_000);
    chat(&mut store, &id, 3, 5);
    let long = "A summary far longer than the few short turns it replaces. ".repeat(40);
    let model = Scripted::answering(&[Ok(&long)]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let view_before = store.live_view(&id).unwrap();
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(200_000)), false).unwrap();
    assert_eq!(model.calls(), 1);
    assert!(!report.summarised && report.tokens_after == report.tokens_before, "{report:?}");
    let why = report.not_applied.as_deref().unwrap_or_default();
    assert!(why.contains("larger") && why.contains("not applied"), "{report:?}");
    assert!(store.compactions(&id).unwrap().is_empty(), "nothing recorded");
    assert_eq!(store.live_view(&id).unwrap().entries.len(), view_before.entries.len());
    // The CLI says so (the extractive summary of three short turns is longer than they are).
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let said = home.ok(&["compact", &id, "--window", "200000"]);
    assert!(said.starts_with(&format!("Did not summarise session {id}: the summary would have made")), "{said}");
    assert!(store.compactions(&id).unwrap().is_empty(), "nothing recorded");
}

/// Before the summary model is called, a notice names what the summary will replace, with the
/// figures that called for it; the report then says what left the view (the messages, the tool
/// results trimmed and by how much), and the session's records say it again (what `sessions show
/// --compactions` lists).
#[test]
fn the_notice_before_a_summary_names_what_leaves_the_view_and_the_records_say_it_again() {
    use seshat::compaction::{Pass, Progress, SeqRange, WindowMarks};
    use std::collections::BTreeSet;
    let home = Home::new();
    let mut store = home.store();
    let id = builds_then_chat(&mut store, 2, 40);
    // A request the user pinned stays in the view, and is not named.
    seshat::compaction::pin(&mut store, &id, 8, 20_000).unwrap();
    let seqs = |store: &Store| -> BTreeSet<u64> {
        store.live_view(&id).unwrap().entries.iter().filter_map(|e| e.seq).collect()
    };
    let before = seqs(&store);
    let model = Scripted::answering(&[Ok("The user made 40 requests; all answered.")]);
    let mut p = plugins("summariser");
    let mut c = p.compactor(model.clone());
    let (mut told, mut notice) = (Vec::new(), None);
    let report = c
        .compact_with(&mut store, &id, &frame(), &settings(Some(20_000)), false, &mut |p| match p {
            Progress::Starting(s) => told.push(("starting", model.calls(), s.tokens)),
            Progress::Summarising(s) => {
                told.push(("summarising", model.calls(), s.tokens));
                notice = Some(s.clone());
            }
            _ => {}
        })
        .unwrap();
    assert!(report.summarised && report.trimmed > 0 && model.calls() == 1, "{report:?}");
    // Told in order, each before the model was called.
    assert_eq!(told, vec![("starting", 0, report.tokens_before), ("summarising", 0, report.tokens_before)]);
    let notice = notice.unwrap();
    let marks = seshat::window::Marks::new(20_000);
    assert_eq!(notice.marks, WindowMarks { window: 20_000, threshold: marks.threshold, target: marks.target });
    assert_eq!(notice.after_trims, report.tokens_before - report.trims_freed);
    assert!(notice.after_trims > marks.target, "trims alone did not reach the target: {notice:?}");
    assert_eq!((notice.messages, notice.kept), (report.dropped, report.kept));
    assert_eq!(notice.seqs, report.summarised_seqs, "the notice named what then left");

    // What left the view is what the report names: the view before less the view after.
    let after = seqs(&store);
    assert!(after.contains(&8), "the pinned request stays");
    assert_eq!(report.summarised_seqs, SeqRange::of(before.difference(&after).copied()));
    assert!(report.summary_tokens.is_some_and(|t| t > 0 && t < report.tokens_after), "{report:?}");
    // The trims, with their sizes: those the store recorded, the originals' own.
    let full = store.full_history(&id).unwrap();
    let recorded: Vec<(u64, u32, u64, u64)> =
        store.trims(&id).unwrap().iter().map(|t| (t.seq, t.part, t.original_size, t.new_size)).collect();
    let reported: Vec<(u64, u32, u64, u64)> =
        report.trims.iter().map(|t| (t.seq, t.part, t.bytes_before, t.bytes_after)).collect();
    assert_eq!(reported, recorded);
    for t in &report.trims {
        let original = match &full[t.seq as usize - 1].parts[t.part as usize] {
            Part::ToolResult { content, .. } => content.len() as u64,
            other => panic!("trimmed a {other:?}"),
        };
        assert_eq!(t.bytes_before, original);
    }
    // The records say it again, pass by pass.
    let passes = seshat::compaction::passes(
        &store.compactions(&id).unwrap(),
        &store.trims(&id).unwrap(),
        &full.iter().map(|m| m.seq).collect::<Vec<_>>(),
        &store.pins(&id).unwrap(),
        &store.live_rewinds(&id).unwrap(),
        &[],
    );
    match passes.as_slice() {
        [Pass::Trims { trims, .. }, Pass::Summary { summarised_seqs, .. }] => {
            assert_eq!((trims, summarised_seqs), (&report.trims, &report.summarised_seqs));
        }
        other => panic!("one pass of trims then one summary: {other:?}"),
    }
}

/// `seshat compact` says what left the view; `sessions show --compactions` lists each pass from
/// the records, the same figures.
#[test]
fn compact_and_sessions_show_compactions_say_what_left_the_view() {
    let home = Home::new();
    let mut store = home.store();
    let id = builds_then_chat(&mut store, 2, 40);
    let untouched = import_long(&home, 3);
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let never = home.ok(&["sessions", "show", &untouched, "--compactions"]);
    assert!(never.contains("Nothing was ever compacted in this session"), "{never}");

    let report: serde_json::Value = serde_json::from_str(&home.ok(&["compact", &id, "--json"])).unwrap();
    assert!(report["summarised"] == true && report["trimmed"].as_u64() > Some(0), "{report}");
    let shown: serde_json::Value =
        serde_json::from_str(&home.ok(&["sessions", "show", &id, "--compactions", "--json"])).unwrap();
    let passes = shown["passes"].as_array().unwrap();
    let kinds: Vec<&str> = passes.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["trims", "summary"], "{shown}");
    assert_eq!(passes[0]["trims"], report["trims"], "{shown}");
    assert_eq!(passes[1]["summarised_seqs"], report["summarised_seqs"], "{shown}");
    assert_eq!(passes[1]["tokens_after"], report["tokens_after"], "{shown}");
    // As text: each pass, its figures, and what the summary kept.
    let range = |r: &serde_json::Value| format!("#{}–#{}", r["from"], r["through"]);
    let seqs: Vec<String> = report["summarised_seqs"].as_array().unwrap().iter().map(range).collect();
    let text = home.ok(&["sessions", "show", &id, "--compactions"]);
    assert!(text.contains("2 compaction passes; the originals are kept"), "{text}");
    assert!(text.contains("── 2 tool results trimmed at ") && text.contains("  #3 part 0: 25,200 → "), "{text}");
    let left = format!("{} messages left the view: {}; kept from #", report["dropped"], seqs.join(", "));
    assert!(text.contains(&left), "{left:?} in {text}");
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    assert!(text.contains(&format!("What the summary kept:\n{summary}")), "{text}");
    // The text report of another pass names the same things.
    let again = home.ok(&["compact", &id, "--dry-run"]);
    assert!(again.lines().nth(1).is_some_and(|l| l.contains("would leave the view: #")), "{again}");
}

/// A successful run's log of repeated records with one line unlike the rest, in words no rule
/// names: the trimmer and the extractive summary keep that line (the log's own shapes single it
/// out), not only its head and tail.
#[test]
fn a_line_unlike_the_rest_of_a_successful_log_survives_trims_and_summaries() {
    let log = |service: &str, buried: &str| {
        let mut lines: Vec<String> = (0..180)
            .map(|i| {
                format!(
                    "ts=2026-11-{:02}T{:02}:{:02}:00Z level=info svc={service} op={} id={:08x} took_us={}",
                    1 + i % 28,
                    i % 24,
                    i % 60,
                    ["get", "put", "scan"][i % 3],
                    i * 2_654_435_761 % 4_294_967_296,
                    30 + i * 37 % 9_000
                )
            })
            .collect();
        lines.insert(97, buried.to_string());
        lines.push(format!("ts=2026-12-07T06:00:00Z level=info svc={service} op=close id=00000000 took_us=1"));
        lines.join("\n")
    };
    let home = Home::new();
    let mut store = home.store();
    let id = session(&mut store, 20_000);
    store.append(&id, &[text(Role::User, "run the jobs")]).unwrap();
    let buried = [
        "billing handed 12 fewer cursor records on than the day before",
        "the ledger table now holds 41 rows where it held 9",
    ];
    for (k, line) in buried.iter().enumerate() {
        store.append(&id, &tool_pair(&format!("c{k}"), &log(["billing", "ledger"][k], line))).unwrap();
    }
    chat(&mut store, &id, 30, 300);
    let model = Scripted::answering(&[]);
    let mut p = plugins("summariser-extractive");
    let mut c = p.compactor(model);
    let report = c.compact(&mut store, &id, &frame(), &settings(Some(20_000)), false).unwrap();
    assert!(report.trimmed == 2 && report.summarised, "{report:?}");
    // The trims kept them (the originals are 15 KB; what the view showed before the summary).
    for (t, line) in store.trims(&id).unwrap().iter().zip(buried) {
        assert!(t.replacement.contains(line), "trim of #{}: {}", t.seq, t.replacement);
    }
    // And the summary that replaced the results quotes them.
    let summary = store.live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    for line in buried {
        assert!(summary.contains(line), "{line:?} in {summary}");
    }
}

/// What a compaction leaves, over sessions of every shape (sizes, many large tool outputs, a
/// large output last), with the default trimmer and the extractive summariser, by hand and
/// automatically: nothing is summarised when trimming brought the request under the target, and
/// a summary lands as close under the target as the cut's granularity allows (one message more
/// would not have fitted).
mod shapes {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    struct Shape {
        turns: usize,
        /// Per turn: the tool outputs' sizes in lines (0: no tool call).
        outputs: Vec<Vec<usize>>,
        /// A large output in the last turn.
        large_last: bool,
        window: u64,
    }

    fn shape() -> impl Strategy<Value = Shape> {
        (3usize..24, prop::collection::vec(prop::collection::vec(0usize..600, 0..4), 24), any::<bool>(), 0usize..4)
            .prop_map(|(turns, outputs, large_last, w)| Shape {
                turns,
                outputs,
                large_last,
                window: [16_384, 32_768, 65_536, 131_072][w],
            })
    }

    fn fill(store: &mut Store, id: &str, s: &Shape) {
        let mut call = 0;
        for t in 0..s.turns {
            store.append(id, &[text(Role::User, format!("request {t}: look at the build"))]).unwrap();
            let mut outputs = s.outputs[t % s.outputs.len()].clone();
            if s.large_last && t + 1 == s.turns {
                outputs.push(1_500);
            }
            for lines in outputs.into_iter().filter(|l| *l > 0) {
                call += 1;
                let body: String =
                    (0..lines).map(|i| format!("step {i}: compiled module_{i} in {}ms\n", i % 97)).collect();
                store.append(id, &tool_pair(&format!("c{call}"), &body)).unwrap();
            }
            store.append(id, &[text(Role::Assistant, format!("answer {t}: {}", "done ".repeat(40)))]).unwrap();
        }
    }

    proptest! {
        #![proptest_config(crate::support::proptest_config(32, "tests/all/compaction.proptest-regressions"))]

        #[test]
        fn trims_first_then_a_summary_lands_under_the_target(s in shape(), manual in any::<bool>()) {
            let home = Home::new();
            let mut store = home.store();
            let id = session(&mut store, s.window);
            fill(&mut store, &id, &s);
            let model = Scripted::answering(&[]);
            let mut p = plugins("summariser-extractive");
            let mut c = p.compactor(model);
            let marks = seshat::window::Marks::new(s.window);
            let report = if manual {
                match c.compact(&mut store, &id, &frame(), &settings(Some(s.window)), false) {
                    Ok(r) => r,
                    Err(e) => return Err(TestCaseError::reject(format!("{e}"))),
                }
            } else {
                match c.before_call(&mut store, &id, &frame(), &settings(Some(s.window))) {
                    Ok(prepared) => match prepared.compaction {
                        Some(r) => r,
                        None => return Err(TestCaseError::reject("under the threshold")),
                    },
                    Err(e) => return Err(TestCaseError::reject(format!("{e}"))),
                }
            };
            let trimmed_to = report.tokens_before.saturating_sub(report.trims_freed);
            if report.tokens_before > marks.target && trimmed_to <= marks.target {
                prop_assert!(!report.summarised, "trimming sufficed, yet a summary: {report:?}");
            }
            if report.summarised && trimmed_to > marks.target {
                prop_assert!(report.tokens_after <= marks.context_window, "{report:?}");
                // As close under the target as the cut allows: the message just before the kept
                // part (its original, at least as large as it was in the view) would not have
                // fitted beside what was kept and the summary's room.
                let compaction = store.compactions(&id).unwrap().pop().unwrap();
                let first_kept = compaction.first_kept_seq.unwrap();
                let history = store.full_history(&id).unwrap();
                let before_cut = (1..first_kept)
                    .rev()
                    .find(|seq| Some(*seq) != compaction.pinned_seq)
                    .map(|seq| seshat::window::estimate_parts(&history[seq as usize - 1].parts) + 16)
                    .unwrap_or(0);
                prop_assert!(
                    report.tokens_after + before_cut + marks.summary_tokens() >= marks.target,
                    "kept too little: {} after, the message before the cut {before_cut}, target {}: {report:?}",
                    report.tokens_after, marks.target
                );
            }
        }
    }
}
