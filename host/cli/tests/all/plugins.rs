//! The plugin runtime through the library: sandbox limits, validation, kinds and versions,
//! resources, the built-in trimmer.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seshat::conversation::{Part, Role};
use seshat::plugins::{
    Catalog, CatalogEntry, ChatRequest, Completion, CompletionRequest, EmbedPurpose, EmbedRequest, EmbedderPlugin,
    EncodeOptions, Error, LimitRequest, ModelCall, ModelError, Origin, PluginKind, PluginMessage, ProviderPlugin,
    Runtime, StopReason, StreamEvent, SummariserPlugin, SummaryRequest, TrimBudget, TrimEdit, TrimMessage, TrimPart,
    TrimmerPlugin,
};

use crate::support::shared_cache;

/// Installs `wasm` as a plugin directory with a manifest and returns its catalog entry.
pub fn install(dir: &Path, id: &str, kind: &str, wasm: &str, extra_manifest: &str) -> CatalogEntry {
    let d = dir.join(id);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(wasm, d.join("plugin.wasm")).unwrap();
    std::fs::write(
        d.join("plugin.toml"),
        format!("id = \"{id}\"\nkind = \"{kind}\"\napi = \"0.1.0\"\n{extra_manifest}"),
    )
    .unwrap();
    CatalogEntry::from_dir(&d, Origin::User).unwrap()
}

fn runtime() -> Runtime {
    Runtime::new(Some(shared_cache()))
}

fn hostile(limits: LimitRequest) -> (tempfile::TempDir, TrimmerPlugin) {
    let dir = tempfile::tempdir().unwrap();
    let entry = install(dir.path(), "hostile", "trimmer", seshat_test_plugins::HOSTILE, "");
    let loaded = runtime().load(&entry, limits).unwrap();
    (dir, TrimmerPlugin::new(&loaded).unwrap())
}

fn history() -> Vec<TrimMessage> {
    let part = |kind, bytes| TrimPart { kind, bytes, tokens: bytes / 4 };
    vec![
        TrimMessage { id: 1, role: Role::User, parts: vec![part("text", 100)], tokens: 25, protected: false },
        TrimMessage {
            id: 2,
            role: Role::Tool,
            parts: vec![part("tool_result", 40_000)],
            tokens: 10_000,
            protected: false,
        },
        TrimMessage { id: 3, role: Role::User, parts: vec![part("text", 100)], tokens: 25, protected: true },
    ]
}

fn budget(extra: &str) -> TrimBudget {
    TrimBudget {
        current_tokens: 50_000,
        target_tokens: 20_000,
        threshold_tokens: 40_000,
        window_tokens: 60_000,
        extra: extra.to_string(),
    }
}

fn assert_recovers(plugin: &mut TrimmerPlugin) {
    let edits = plugin.trim(&history(), &budget("noop"), |_, _| None).expect("the next call re-instantiates and works");
    assert!(edits.is_empty());
}

#[test]
fn an_infinite_loop_is_stopped_by_the_time_budget() {
    let (_dir, mut plugin) = hostile(LimitRequest { time_ms: Some(300), ..Default::default() });
    // The loop never ends by itself: the call returning at all is the budget at work; the error
    // says which budget stopped it.
    let err = plugin.trim(&history(), &budget("loop"), |_, _| None).unwrap_err();
    assert!(matches!(err, Error::Timeout { budget_ms: 300, .. }), "{err}");
    assert_eq!(err.code(), "plugin_timeout");
    assert!(err.to_string().contains("plugin `hostile` (trimmer) ran past its time budget of 300 ms"), "{err}");
    assert_recovers(&mut plugin);
}

#[test]
fn guest_time_is_measured_not_wall_time_across_calls() {
    let (_dir, mut plugin) = hostile(LimitRequest { time_ms: Some(400), ..Default::default() });
    // Three calls of ~200 ms each: every call gets its own budget.
    for _ in 0..3 {
        plugin.trim(&history(), &budget("slow:200"), |_, _| None).unwrap();
    }
    let usage = plugin.usage();
    assert_eq!(usage.calls, 3, "{usage:?}");
    assert!(usage.guest_micros > 0 && usage.peak_memory_bytes > 0, "the calls' guest time and memory: {usage:?}");
    // A call that waits 600 ms inside a host function (a slow `read-part`) is within its 400 ms
    // budget: the wait is the host's time, not the plugin's.
    let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = reads.clone();
    let err = plugin
        .trim(&history(), &budget("read-part"), move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(600));
            Some("content".into())
        })
        .unwrap_err();
    assert_eq!(
        reads.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the plugin read the part once, through the slow host function"
    );
    assert_eq!(err.code(), "plugin_error", "the guest ran to its end and reported: {err}");
    assert!(err.to_string().contains("read 7 bytes"), "{err}");
    // And the plugin's own computing is still stopped at the budget.
    let err = plugin.trim(&history(), &budget("slow:1000"), |_, _| None).unwrap_err();
    assert_eq!(err.code(), "plugin_timeout", "{err}");
}

#[test]
fn a_memory_bomb_hits_the_cap() {
    let (_dir, mut plugin) = hostile(LimitRequest { memory_mib: Some(16), ..Default::default() });
    let err = plugin.trim(&history(), &budget("membomb"), |_, _| None).unwrap_err();
    assert!(matches!(err, Error::Memory { limit_mib: 16, .. }), "{err}");
    assert!(err.to_string().contains("past the 16 MiB limit"), "{err}");
    assert_recovers(&mut plugin);
}

#[test]
fn a_panic_is_a_clear_error_and_the_plugin_restarts() {
    let (_dir, mut plugin) = hostile(LimitRequest::default());
    let err = plugin.trim(&history(), &budget("panic"), |_, _| None).unwrap_err();
    assert_eq!(err.code(), "plugin_trap", "{err}");
    let text = err.to_string();
    // The SDK's panic hook handed the message and its place to the host before the trap.
    assert!(
        text.starts_with(
            "plugin `hostile` (trimmer) crashed: it panicked: hostile plugin panicked on purpose (at hostile/src/lib.rs:"
        ),
        "{text}"
    );
    assert!(!text.contains("wasm trap: wasm trap"), "{text}");
    assert_recovers(&mut plugin);
    // The message belonged to that call only: a later trap without one says what trapped.
    let err = plugin.trim(&history(), &budget("loop"), |_, _| None).unwrap_err();
    assert!(!err.to_string().contains("panicked"), "{err}");
}

#[test]
fn invalid_edits_are_rejected_whole() {
    let (_dir, mut plugin) = hostile(LimitRequest::default());
    for (mode, why) in [
        ("edit-protected", "which is protected"),
        ("edit-text", "only tool results may be trimmed"),
        ("edit-grow", "a replacement must be shorter than the part"),
        ("edit-unknown", "which it was not given"),
    ] {
        let err = plugin.trim(&history(), &budget(mode), |_, _| None).unwrap_err();
        assert_eq!(err.code(), "plugin_invalid_output", "{mode}: {err}");
        assert!(err.to_string().contains("rejected whole") && err.to_string().contains(why), "{mode}: {err}");
    }
}

#[test]
fn read_part_serves_content_on_request_only() {
    let (_dir, mut plugin) = hostile(LimitRequest::default());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let err = plugin
        .trim(&history(), &budget("read-part"), move |m, p| {
            log.lock().unwrap().push((m, p));
            Some("x".repeat(1234))
        })
        .unwrap_err();
    assert!(err.to_string().contains("read 1234 bytes"), "{err}");
    assert_eq!(*asked.lock().unwrap(), vec![(1, 0)]);
}

#[test]
fn the_sandbox_has_no_files_env_or_sockets() {
    let (dir, mut plugin) = hostile(LimitRequest::default());
    let canary = format!("canary-{}", std::process::id());
    let file = dir.path().join("canary.txt");
    std::fs::write(&file, &canary).unwrap();
    let err = plugin.trim(&history(), &budget(&format!("read-file:{}", file.display())), |_, _| None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("file error:") && !text.contains(&canary), "{text}");

    let err = plugin.trim(&history(), &budget("read-env:PATH"), |_, _| None).unwrap_err();
    assert!(err.to_string().contains("env error: environment variable not found; 0 variables visible"), "{err}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let err = plugin.trim(&history(), &budget(&format!("socket:{addr}")), |_, _| None).unwrap_err();
    assert!(err.to_string().contains("socket error:"), "{err}");
    assert_eq!(listener.accept().unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "the plugin reached the socket");
    assert_recovers(&mut plugin);
}

#[test]
fn a_plugin_of_another_world_or_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A summariser whose manifest claims to be a trimmer.
    let entry = install(dir.path(), "liar", "trimmer", seshat_test_plugins::SUMMARISER, "");
    let err = runtime().load(&entry, LimitRequest::default()).unwrap_err();
    assert_eq!(err.code(), "plugin_wrong_kind");
    assert!(err.to_string().contains("its manifest says trimmer but the component is a summariser"), "{err}");

    // A summariser asked to act as a trimmer.
    let entry = install(dir.path(), "summ", "summariser", seshat_test_plugins::SUMMARISER, "");
    let loaded = runtime().load(&entry, LimitRequest::default()).unwrap();
    let err = TrimmerPlugin::new(&loaded).unwrap_err();
    assert_eq!(err.to_string(), "plugin `summ` is not a trimmer: it is a summariser");

    // Built for seshat:plugin@0.5.0.
    let entry = install(dir.path(), "future", "trimmer", seshat_test_plugins::VERSION_0_5_0, "");
    let err = runtime().load(&entry, LimitRequest::default()).unwrap_err();
    assert_eq!(err.code(), "plugin_incompatible");
    assert!(
        err.to_string().contains("was built for seshat:plugin@0.5.0; this seshat speaks 0.1.x, 0.2.x, 0.3.x or 0.4.x"),
        "the message names what was expected and found: {err}"
    );
}

#[test]
fn trimmers_built_for_the_frozen_0_1_0_and_a_0_1_1_patch_load_and_work() {
    // The frozen contract: a trimmer built from `wit/v0.1.0` as released, and the same source
    // against a compatible patch version, both trim through the 0.1 bindings. (The summariser and
    // provider test plugins are built from the frozen WIT too; their tests run them.)
    let dir = tempfile::tempdir().unwrap();
    for (id, wasm, version) in [
        ("frozen", seshat_test_plugins::TRIMMER_0_1_0, "0.1.0"),
        ("newer-patch", seshat_test_plugins::SEMVER_0_1_1, "0.1.1"),
    ] {
        let entry = install(dir.path(), id, "trimmer", wasm, "");
        let loaded = runtime().load(&entry, LimitRequest::default()).unwrap();
        assert_eq!(loaded.api_version, version);
        let mut plugin = TrimmerPlugin::new(&loaded).unwrap();
        let edits = plugin.trim(&history(), &budget(""), |_, _| None).unwrap();
        assert_eq!(edits, vec![TrimEdit::HeadTail { message: 2, part: 0, head: 100, tail: 100 }], "{id}");
    }
    // The default trimmer is built for the current contract.
    let catalog = Catalog::discover(dir.path(), None);
    let loaded =
        runtime().load(catalog.find(PluginKind::Trimmer, "trimmer").unwrap(), LimitRequest::default()).unwrap();
    assert_eq!(loaded.api_version, "0.4.0");
}

#[test]
fn a_trimmer_built_for_the_frozen_0_2_0_loads_and_uses_what_0_2_0_added() {
    // 0.2.0 is released: `wit/v0.2.0` holds it as released, byte for byte (its digest when it
    // was frozen). So is 0.3.0, which only adds to it; the current contract (0.4.0, unstable) keeps
    // every line of 0.3.0.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let frozen = std::fs::read(root.join("wit/v0.2.0/seshat-plugin.wit")).unwrap();
    assert_eq!(
        seshat::plugins::cache::sha256_hex(&frozen),
        "bf1470b6c20a6055ff19fa7e8a4ff2a46bc0f8f4f9f8b05cbcf7ca11813f7827",
        "wit/v0.2.0 is frozen"
    );
    let current = std::fs::read_to_string(root.join("wit/seshat-plugin.wit")).unwrap();
    let frozen_0_3 = std::fs::read(root.join("wit/v0.3.0/seshat-plugin.wit")).unwrap();
    assert_eq!(
        seshat::plugins::cache::sha256_hex(&frozen_0_3),
        "85a83feef04b5220c56b458332e9224c66654c0dafc57fb5febd97952476d57a",
        "wit/v0.3.0 is frozen"
    );
    assert!(current.contains("package seshat:plugin@0.4.0;"));
    assert_eq!(seshat::plugins::API_VERSION_CURRENT, "0.4.0");
    const { assert!(seshat::plugins::API_VERSION_CURRENT_UNSTABLE, "0.4.0 is open until frozen") };
    // Every function and record 0.2.0 and 0.3.0 declare is still declared, the same way.
    let frozen_0_3 = String::from_utf8(frozen_0_3).unwrap();
    let frozen = String::from_utf8(frozen).unwrap();
    for (version, text) in [("0.2.0", &frozen), ("0.3.0", &frozen_0_3)] {
        for line in text.lines().map(str::trim).filter(|l| l.ends_with(';') || l.ends_with('{')) {
            if !line.starts_with("package ") {
                assert!(current.lines().any(|l| l.trim() == line), "0.4.0 lost or changed {version}'s `{line}`");
            }
        }
    }
    // A trimmer built without the SDK from each frozen file, using the keep-lines edit and `log`.
    let dir = tempfile::tempdir().unwrap();
    for (id, wasm, version) in [
        ("frozen-0-2", seshat_test_plugins::TRIMMER_0_2_0, "0.2.0"),
        ("frozen-0-3", seshat_test_plugins::TRIMMER_0_3_0, "0.3.0"),
    ] {
        let entry = install(dir.path(), id, "trimmer", wasm, "");
        let loaded = runtime().load(&entry, LimitRequest::default()).unwrap();
        assert_eq!(loaded.api_version, version);
        let mut plugin = TrimmerPlugin::new(&loaded).unwrap();
        let content = "a line of output\n".repeat(1000);
        let edits =
            plugin.trim(&history(), &budget(""), move |m, p| (m == 2 && p == 0).then(|| content.clone())).unwrap();
        assert_eq!(edits, vec![TrimEdit::KeepLines { message: 2, part: 0, lines: vec![(0, 1), (1000, 1001)] }], "{id}");
    }
}

#[test]
fn manifest_limits_are_capped_and_config_wins() {
    let dir = tempfile::tempdir().unwrap();
    let entry = install(
        dir.path(),
        "greedy",
        "trimmer",
        seshat_test_plugins::HOSTILE,
        "[limits]\nmemory_mib = 999999\ntime_ms = 5\n",
    );
    let loaded = runtime().load(&entry, LimitRequest { time_ms: Some(700), ..Default::default() }).unwrap();
    assert_eq!(loaded.limits.memory_mib, seshat::plugins::MAXIMUM_LIMITS.memory_mib);
    assert_eq!(loaded.limits.time_ms, 700);
}

struct ScriptedModel {
    delay: Duration,
    seen_max_tokens: Arc<Mutex<Vec<u32>>>,
}

impl ModelCall for ScriptedModel {
    fn complete(&mut self, request: CompletionRequest) -> Result<Completion, ModelError> {
        std::thread::sleep(self.delay);
        self.seen_max_tokens.lock().unwrap().push(request.max_tokens);
        Ok(Completion {
            text: format!("answer to {}", request.messages.len()),
            usage: None,
            stop_reason: StopReason::EndTurn,
        })
    }
}

fn summariser(limits: LimitRequest) -> (tempfile::TempDir, SummariserPlugin) {
    let dir = tempfile::tempdir().unwrap();
    let entry = install(dir.path(), "test-summariser", "summariser", seshat_test_plugins::SUMMARISER, "");
    let loaded = runtime().load(&entry, limits).unwrap();
    (dir, SummariserPlugin::new(&loaded).unwrap())
}

fn summary_request(extra: &str) -> SummaryRequest {
    SummaryRequest {
        messages: vec![PluginMessage { id: 1, role: Role::User, parts: vec![Part::Text { text: "hi".into() }] }],
        previous_summary: Some("before".into()),
        max_tokens: 2_000,
        model_window: 8_192,
        extra: extra.into(),
        instructions: None,
        prompt: None,
    }
}

#[test]
fn time_inside_complete_does_not_count_against_the_budget() {
    let (_dir, mut plugin) = summariser(LimitRequest { time_ms: Some(300), ..Default::default() });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel { delay: Duration::from_millis(400), seen_max_tokens: seen.clone() };
    let summary = plugin.summarise(&summary_request("2"), Box::new(model)).unwrap();
    assert_eq!(summary, "1 messages, previous Some(\"before\"), answers [answer to 1, answer to 1]");
    assert_eq!(*seen.lock().unwrap(), vec![2_000, 2_000], "max_tokens is capped by the host");

    let model = ScriptedModel { delay: Duration::ZERO, seen_max_tokens: seen };
    let err = plugin.summarise(&summary_request("loop"), Box::new(model)).unwrap_err();
    assert_eq!(err.code(), "plugin_timeout", "{err}");
}

#[test]
fn complete_is_bounded_per_summary() {
    let (_dir, mut plugin) = summariser(LimitRequest { complete_calls: Some(3), ..Default::default() });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel { delay: Duration::ZERO, seen_max_tokens: seen.clone() };
    let err = plugin.summarise(&summary_request("5"), Box::new(model)).unwrap_err();
    assert!(matches!(&err, Error::Plugin { code, .. } if code == "complete_limit"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 3, "the model was called past the bound");
}

/// A streamed chat request for `model` to the test provider's loopback base URL.
fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        system: None,
        tools: vec![],
        max_tokens: 10,
        stream: true,
        base_url: "http://127.0.0.1:1234".into(),
        extra: "{}".into(),
    }
}

#[test]
fn provider_decoder_resources_keep_their_own_state() {
    let dir = tempfile::tempdir().unwrap();
    let entry = install(
        dir.path(),
        "test-provider",
        "provider",
        seshat_test_plugins::PROVIDER,
        "allowed_hosts = [\"{base_url}\"]\n",
    );
    let loaded = runtime().load(&entry, LimitRequest::default()).unwrap();
    let mut provider = ProviderPlugin::new(&loaded).unwrap();
    assert_eq!(provider.allowed_hosts(), ["{base_url}"]);
    let info = provider.info().unwrap();
    assert_eq!((info.id.as_str(), info.models[0].context_window), ("test", 8_192));

    {
        let mut first = provider.decoder().unwrap();
        assert_eq!(first.push("", "a").unwrap(), vec![StreamEvent::TextDelta { text: "1:a".into() }]);
        assert_eq!(first.push("message", "b").unwrap(), vec![StreamEvent::TextDelta { text: "2:b".into() }]);
        let err = first.push("error", "overloaded").unwrap_err();
        assert!(matches!(&err, Error::Plugin { code, message, .. } if code == "stream" && message == "overloaded"));
        assert_eq!(first.finish().unwrap(), vec![StreamEvent::Stop { reason: StopReason::Other("after 2".into()) }]);
    }
    let mut second = provider.decoder().unwrap();
    assert_eq!(second.push("", "z").unwrap(), vec![StreamEvent::TextDelta { text: "1:z".into() }], "fresh state");
    drop(second);

    let http = provider.build_request(&request("test-1")).unwrap();
    assert_eq!(http.url, "http://127.0.0.1:1234/chat");
    let encode = |provider: &mut ProviderPlugin, id, last| {
        let message = PluginMessage { id, role: Role::User, parts: vec![Part::Text { text: "hi".into() }] };
        let options = EncodeOptions { model: "test-1".into(), same_model: true, cache_breakpoint: last };
        provider.encode_message(&message, &options).unwrap()
    };
    let fragments = [encode(&mut provider, 1, false), String::new(), encode(&mut provider, 2, true)];
    assert_eq!(
        String::from_utf8(http.body_with(fragments.iter().map(String::as_str))).unwrap(),
        r#"{"model":"test-1","messages":["1:Role::User:1","2:Role::User:1*"]}"#,
        "fragments joined in order, the empty one skipped"
    );
    let err = provider.build_request(&request("bad-splice")).unwrap_err();
    assert!(err.to_string().contains("past the end of the 0-byte body"), "{err}");
    let err = provider.build_request(&request("bad-url")).unwrap_err();
    assert_eq!(err.code(), "plugin_invalid_output", "{err}");
    let response = provider.parse_response(200, b"hello").unwrap();
    assert_eq!(response.message.parts, vec![Part::Text { text: "hello".into() }]);
    let err = provider.parse_response(401, b"bad key").unwrap_err();
    assert!(err.to_string().contains("[http_401]: bad key"), "{err}");
}

#[test]
fn the_builtin_trimmer_trims_oldest_large_results_and_never_protected_ones() {
    let catalog = Catalog::builtin();
    let entry = catalog.find(PluginKind::Trimmer, "trimmer").unwrap();
    let loaded = runtime().load(entry, LimitRequest::default()).unwrap();
    let mut plugin = TrimmerPlugin::new(&loaded).unwrap();
    let result = |id, tokens, protected| TrimMessage {
        id,
        role: Role::Tool,
        parts: vec![TrimPart { kind: "tool_result", bytes: tokens * 4, tokens }],
        tokens,
        protected,
    };
    let messages =
        vec![result(1, 300, false), result(2, 30_000, false), result(3, 30_000, false), result(4, 40_000, true)];
    let budget = TrimBudget {
        current_tokens: 110_000,
        target_tokens: 70_000,
        threshold_tokens: 100_000,
        window_tokens: 140_000,
        extra: "{}".into(),
    };
    let edits = plugin.trim(&messages, &budget, |_, _| None).unwrap();
    let targets: Vec<(u64, u32)> = edits.iter().map(TrimEdit::target).collect();
    assert_eq!(targets, vec![(2, 0), (3, 0)]);

    let under = TrimBudget { current_tokens: 60_000, ..budget };
    assert!(plugin.trim(&messages, &under, |_, _| None).unwrap().is_empty(), "under the target nothing is trimmed");
}

#[test]
fn head_tail_edits_keep_character_boundaries_and_name_the_original_size() {
    let content = "é".repeat(1000); // 2000 bytes
    let edit = TrimEdit::HeadTail { message: 1, part: 0, head: 101, tail: 51 };
    let out = edit.apply(&content, false);
    assert!(out.starts_with(&"é".repeat(50)) && out.ends_with(&"é".repeat(25)), "{out}");
    assert!(out.contains("[… 1850 of 2000 bytes trimmed by Seshat …]"), "{out}");
    assert!(out.len() < content.len());
    // With the history tools offered, the placeholder says how to read the original back…
    let out = edit.apply(&content, true);
    assert!(out.contains("[… 1850 of 2000 bytes trimmed by Seshat; history_read {\"seq\": 1} has them …]"), "{out}");
    // …unless that would not fit in what was cut: then the plain one.
    let tight = TrimEdit::HeadTail { message: 1, part: 0, head: 1000, tail: 940 };
    let out = tight.apply(&content, true);
    assert!(out.contains("[… 60 of 2000 bytes trimmed by Seshat …]"), "{out}");
    assert!(out.len() < content.len());
}

/// A 300-line test log whose one failure is in the middle.
fn log_with_failure_at(line: usize) -> String {
    let mut lines: Vec<String> = (0..300).map(|i| format!("test store::case_{i} ... ok")).collect();
    lines[line] = "test store::append_keeps_order ... FAILED".into();
    lines.join("\n")
}

#[test]
fn keep_lines_edits_keep_the_chosen_lines_and_say_what_went() {
    let content = log_with_failure_at(150);
    let edit = TrimEdit::KeepLines { message: 7, part: 0, lines: vec![(0, 3), (150, 151), (298, 300)] };
    let out = edit.checked_apply(&content, true).unwrap();
    assert_eq!(out, edit.apply(&content, true), "the checked edit is the edit");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..3], ["test store::case_0 ... ok", "test store::case_1 ... ok", "test store::case_2 ... ok"]);
    assert_eq!(
        lines[3],
        format!(
            "[… 147 lines ({} bytes) of {} bytes trimmed by Seshat; history_read {{\"seq\": 7}} has them all …]",
            content.lines().skip(3).take(147).map(|l| l.len() + 1).sum::<usize>(),
            content.len()
        )
    );
    assert_eq!(lines[4], "test store::append_keeps_order ... FAILED");
    assert_eq!(lines[5], "[… 147 lines trimmed …]");
    assert_eq!(&lines[6..], ["test store::case_298 ... ok", "test store::case_299 ... ok"]);
    assert!(!out.ends_with('\n'), "the content's own ending is kept");
    // Without the history tools the placeholder does not name them.
    let plain = edit.apply(&content, false);
    let named = format!("of {} bytes trimmed by Seshat …]", content.len());
    assert!(plain.contains(&named) && !plain.contains("history_read"), "{plain}");

    // Past the last line, or keeping nearly everything: refused with the rule.
    let past = TrimEdit::KeepLines { message: 7, part: 0, lines: vec![(0, 3), (299, 301)] };
    let err = past.checked_apply(&content, true).unwrap_err();
    assert!(err.contains("keeps lines up to 301, but the content has 300 lines"), "{err}");
    let most = TrimEdit::KeepLines { message: 7, part: 0, lines: vec![(0, 299)] };
    let err = most.checked_apply(&content, true).unwrap_err();
    assert!(err.contains("does not shorten it") && err.contains("keep fewer lines"), "{err}");
}

#[test]
fn keep_lines_ranges_must_be_sorted_disjoint_and_non_empty() {
    let messages = vec![TrimMessage {
        id: 1,
        role: Role::Tool,
        parts: vec![TrimPart { kind: "tool_result", bytes: 9_000, tokens: 2_250 }],
        tokens: 2_250,
        protected: false,
    }];
    let edit = |lines: Vec<(u32, u32)>| vec![TrimEdit::KeepLines { message: 1, part: 0, lines }];
    seshat::plugins::validate_edits(&edit(vec![(0, 2), (5, 6)]), &messages).unwrap();
    for (lines, what) in [
        (vec![(5, 6), (0, 2)], "range 1 is 0..2"),
        (vec![(0, 4), (3, 6)], "range 1 is 3..6"),
        (vec![(2, 2)], "range 0 is 2..2"),
    ] {
        let err = seshat::plugins::validate_edits(&edit(lines), &messages).unwrap_err();
        assert!(err.contains(what) && err.contains("non-empty, sorted and disjoint"), "{err}");
    }
    let err = seshat::plugins::validate_edits(&edit(vec![]), &messages).unwrap_err();
    assert!(err.contains("does not shorten") && err.contains("must keep at least one line range"), "{err}");
    let head_tail = vec![TrimEdit::HeadTail { message: 1, part: 0, head: 4_500, tail: 4_500 }];
    let err = seshat::plugins::validate_edits(&head_tail, &messages).unwrap_err();
    assert!(err.contains("head 4500 + tail 4500 + up to") && err.contains("for the placeholder is not below"), "{err}");
}

#[test]
fn the_builtin_trimmer_reads_only_what_it_shortens_and_keeps_the_failure_in_the_middle() {
    let catalog = Catalog::builtin();
    let loaded =
        runtime().load(catalog.find(PluginKind::Trimmer, "trimmer").unwrap(), LimitRequest::default()).unwrap();
    let mut plugin = TrimmerPlugin::new(&loaded).unwrap();
    let log = log_with_failure_at(171);
    let tokens = log.len() as u64 / 4;
    let result = |id, bytes: u64, tokens| TrimMessage {
        id,
        role: Role::Tool,
        parts: vec![TrimPart { kind: "tool_result", bytes, tokens }],
        tokens,
        protected: false,
    };
    // Message 1 is too small to be worth it; messages 2 and 3 are long logs.
    let messages = vec![result(1, 800, 200), result(2, log.len() as u64, tokens), result(3, log.len() as u64, tokens)];
    let budget = TrimBudget {
        current_tokens: 60_000,
        target_tokens: 50_000,
        threshold_tokens: 55_000,
        window_tokens: 100_000,
        extra: "{}".into(),
    };
    let read = Arc::new(Mutex::new(Vec::new()));
    let seen = read.clone();
    let served = log.clone();
    let edits = plugin
        .trim(&messages, &budget, move |m, p| {
            seen.lock().unwrap().push((m, p));
            Some(served.clone())
        })
        .unwrap();
    assert_eq!(*read.lock().unwrap(), vec![(2, 0), (3, 0)], "only the results it shortens are read");
    assert_eq!(edits.len(), 2);
    for e in &edits {
        assert!(matches!(e, TrimEdit::KeepLines { .. }), "{e:?}");
        let out = e.checked_apply(&log, true).unwrap();
        assert!(out.contains("test store::append_keeps_order ... FAILED"), "the failure stays: {out}");
        assert!(out.starts_with("test store::case_0 ... ok") && out.ends_with("test store::case_299 ... ok"));
        // Within the head-and-tail budget (1,800 bytes) plus the placeholders.
        assert!(out.len() < 2_100, "{} bytes", out.len());
    }
}

/// Runs `call` with each misbehaviour (`loop`, `membomb`, `panic`, under the 300 ms and 16 MiB
/// limits); `call` makes the failing call, checks the next one works and returns the error,
/// which must carry its code, name the plugin (`who`) and say what happened.
fn misbehaves_then_recovers(who: &str, panicked: &str, mut call: impl FnMut(&str) -> Error) {
    for (model, code, says) in [
        ("loop", "plugin_timeout", "ran past its time budget of 300 ms"),
        ("membomb", "plugin_memory", "past the 16 MiB limit"),
        ("panic", "plugin_trap", panicked),
    ] {
        let err = call(model);
        assert_eq!(err.code(), code, "{model}: {err}");
        assert!(err.to_string().contains(who) && err.to_string().contains(says), "{err}");
    }
}

#[test]
fn a_provider_that_loops_hoards_memory_or_panics_is_stopped_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    let entry = install(dir.path(), "test-provider", "provider", seshat_test_plugins::PROVIDER, "");
    let limits = LimitRequest { time_ms: Some(300), memory_mib: Some(16), ..Default::default() };
    let mut provider = ProviderPlugin::new(&runtime().load(&entry, limits).unwrap()).unwrap();
    misbehaves_then_recovers("plugin `test-provider` (provider)", "crashed", |model| {
        let err = provider.build_request(&request(model)).unwrap_err();
        let http = provider.build_request(&request("test-1")).expect("the next call re-instantiates and works");
        assert_eq!(http.url, "http://127.0.0.1:1234/chat", "after {model}");
        err
    });
    // Inside a stream: the decoder that looped is gone, a new one starts from a fresh state.
    {
        let mut decoder = provider.decoder().unwrap();
        assert_eq!(decoder.push("", "a").unwrap(), vec![StreamEvent::TextDelta { text: "1:a".into() }]);
        let err = decoder.push("loop", "b").unwrap_err();
        assert_eq!(err.code(), "plugin_timeout", "{err}");
    }
    let mut decoder = provider.decoder().expect("a decoder after the trap");
    assert_eq!(decoder.push("", "c").unwrap(), vec![StreamEvent::TextDelta { text: "1:c".into() }]);
}

#[test]
fn an_embedder_that_loops_hoards_memory_or_panics_is_stopped_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("topics");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(seshat_test_plugins::EMBEDDER, d.join("plugin.wasm")).unwrap();
    std::fs::write(d.join("plugin.toml"), "id = \"topics\"\nkind = \"embedder\"\napi = \"0.2.0\"\n").unwrap();
    let entry = CatalogEntry::from_dir(&d, Origin::User).unwrap();
    let limits = LimitRequest { time_ms: Some(300), memory_mib: Some(16), ..Default::default() };
    let mut embedder = EmbedderPlugin::new(&runtime().load(&entry, limits).unwrap()).unwrap();
    let request = |model: &str| EmbedRequest {
        model: model.into(),
        texts: vec!["a car".into()],
        purpose: EmbedPurpose::Document,
        dimensions: None,
        base_url: "http://127.0.0.1:1234/v1".into(),
        extra: "{}".into(),
    };
    misbehaves_then_recovers("plugin `topics` (embedder)", "it panicked: test embedder panicked on purpose", |model| {
        let err = embedder.build_request(&request(model)).unwrap_err();
        let http = embedder.build_request(&request("topics")).expect("the next call re-instantiates and works");
        assert_eq!(http.url, "http://127.0.0.1:1234/v1/echo", "after {model}");
        let vectors = embedder.parse_response(200, b"a car", 1, None).unwrap();
        assert_eq!(vectors.len(), 1, "after {model}");
        err
    });
}

/// The default plugins ship built in `host/core/plugins/` (so building Seshat needs no wasm
/// target) and are byte for byte what their sources in `plugins/` build. After changing a plugin,
/// `SESHAT_WRITE_PLUGINS=1 cargo test -p seshat-cli --test all -- shipped_default_plugins` writes
/// them again.
#[test]
fn the_shipped_default_plugins_are_what_their_sources_build() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/plugins");
    let write = std::env::var_os("SESHAT_WRITE_PLUGINS").is_some();
    let mut stale = Vec::new();
    for (file, built) in seshat_test_plugins::DEFAULTS {
        let fresh = std::fs::read(built).unwrap();
        let path = shipped.join(format!("{file}.wasm"));
        if write {
            std::fs::write(&path, &fresh).unwrap();
        } else if std::fs::read(&path).ok() != Some(fresh) {
            stale.push(*file);
        }
    }
    assert!(
        stale.is_empty(),
        "host/core/plugins/ ships other bytes than plugins/ builds for {stale:?}: after changing a plugin's source, \
         run `SESHAT_WRITE_PLUGINS=1 cargo test -p seshat-cli --test all -- shipped_default_plugins` and commit the \
         components"
    );
    // Every component shipped is one the sources build (none left over, none missing).
    let mut on_disk: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".wasm").map(str::to_string))
        .collect();
    on_disk.sort();
    let mut built: Vec<String> = seshat_test_plugins::DEFAULTS.iter().map(|(f, _)| f.to_string()).collect();
    built.sort();
    assert_eq!(on_disk, built);
}
