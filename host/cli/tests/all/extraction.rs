//! Memory extraction (`[memory] extract`): after each turn of a real `seshat chat` (against a
//! loopback provider), the default extractor writes what the user stated as lasting — recorded as
//! the extractor's at the user's message, redacted — never the assistant's echo, and a later
//! correction replaces what it corrects; `memory extract` reads only what was not read; with no
//! extractor set nothing is written. And the labelled benchmark's fixed tuning seeds, run through
//! the same path.

use serde_json::{Value, json};

use crate::chat::{chat, home_for, json_of};
use crate::support::server::{Reply, Server, anthropic};

#[path = "../extraction/mod.rs"]
mod bench;

const EXTRACT: &str = "[memory]\nextract = \"extractor\"\n";

/// The `user` entity's current observations and their sources, and its replaced ones.
fn user_memory(home: &crate::support::Home) -> (Vec<String>, Vec<Value>, Vec<String>) {
    let shown: Value =
        serde_json::from_str(&home.ok(&["memory", "--show-source", "--history", "--json", "--scope", "user"])).unwrap();
    let Some(user) = shown["entities"].as_array().unwrap().iter().find(|e| e["name"] == "user") else {
        return (Vec::new(), Vec::new(), Vec::new());
    };
    let current = serde_json::from_value(user["observations"].clone()).unwrap();
    let sources = user["observationSources"].as_array().cloned().unwrap_or_default();
    let past = user["pastObservations"]
        .as_array()
        .map(|p| p.iter().map(|o| o["content"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    (current, sources, past)
}

#[test]
fn after_each_turn_the_users_lasting_statements_are_remembered_and_a_correction_replaces_one() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4).chars().take(36).collect::<String>());
    let server = Server::start(vec![
        // The assistant echoes a file's rule and the user's preference: neither is the user's.
        Reply::Stream {
            pieces: anthropic::text_answer(&[
                "Got it, you prefer tabs. CONTRIBUTING.md says we always squash merges and prefer Go.",
            ]),
        },
        Reply::Stream { pieces: anthropic::text_answer(&["Noted, spaces from now on."]) },
    ]);
    let home = home_for("anthropic", &server, EXTRACT);
    let first = format!("I prefer tabs over spaces. Remember that my deploy token is {token}. can you run the tests?");
    let out = chat(&home, &["-p", &first, "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = json_of(&out)["session"].as_str().unwrap().to_string();

    let (current, sources, _) = user_memory(&home);
    assert!(current.iter().any(|o| o == "the user prefers tabs over spaces"), "{current:?}");
    assert!(!current.iter().any(|o| o.contains("squash") || o.contains(" go")), "the assistant's echo: {current:?}");
    assert!(!current.iter().any(|o| o.contains("run the tests")), "a request for now: {current:?}");
    let all = home.ok(&["memory", "--json"]);
    assert!(!all.contains(&token), "the credential is redacted in memory: {all}");
    assert!(all.contains("[secret:"), "{all}");
    let source = &sources[0];
    assert_eq!(source["kind"], "extraction", "{source}");
    assert_eq!(source["plugin"], "extractor", "{source}");
    assert_eq!((source["session"].as_str(), source["seq"].as_u64()), (Some(session.as_str()), Some(1)), "{source}");

    let out = chat(&home, &["--resume", &session, "-p", "actually, I prefer spaces now", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (current, sources, past) = user_memory(&home);
    assert!(current.iter().any(|o| o.contains("prefers spaces now")), "{current:?}");
    assert!(!current.iter().any(|o| o.contains("tabs")), "the replaced preference is not current: {current:?}");
    assert!(past.iter().any(|o| o == "the user prefers tabs over spaces"), "kept as history: {past:?}");
    assert!(sources.iter().any(|s| s["seq"] == 3), "the correction's message: {sources:?}");
    let context = home.store().memory(None).context(4_000).unwrap().text;
    assert!(context.contains("prefers spaces now") && !context.contains("tabs"), "{context}");

    // Every message was read: reading the session again writes nothing.
    let again: Value =
        serde_json::from_str(&home.ok(&["memory", "extract", &session, "--extractor", "extractor", "--json"])).unwrap();
    assert_eq!(again["read"], Value::Null, "{again}");
    assert_eq!(again["written"], json!([]), "{again}");
}

#[test]
fn with_no_extractor_set_nothing_is_written_and_memory_extract_reads_a_stored_session_once() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Sure."]) }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "We decided to use Postgres 16 for the store.", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = json_of(&out)["session"].as_str().unwrap().to_string();
    let memory: Value = serde_json::from_str(&home.ok(&["memory", "--json"])).unwrap();
    assert_eq!(memory["entities"], json!([]), "off by default: {memory}");

    let err = home.fails(&["memory", "extract", &session]);
    assert!(err.contains("no extractor is set"), "{err}");
    let done: Value =
        serde_json::from_str(&home.ok(&["memory", "extract", &session[..12], "--extractor", "extractor", "--json"]))
            .unwrap();
    assert_eq!(done["read"], json!({"from": 1, "to": 2}), "{done}");
    let written = done["written"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{done}");
    assert_eq!(written[0]["scope"], "project");
    assert_eq!(written[0]["observation"], "we decided to use Postgres 16 for the store", "{done}");
    let text = home.ok(&["memory", "extract", &session, "--extractor", "extractor"]);
    assert!(text.contains("Nothing new to read"), "{text}");
}

/// The benchmark's first tuning seed of each generator, through the library's extraction path:
/// what was written records the user's facts, and nothing a correction replaced is current.
#[test]
fn on_the_benchmarks_tuning_seeds_what_is_written_is_the_users_and_replaced_facts_are_not_current() {
    let cache = crate::support::shared_cache();
    type Generator = fn(u64) -> bench::labels::Transcript;
    let generators: [(Generator, u64); 2] = [
        (bench::generate::transcript, bench::TUNING_SEEDS[0]),
        (bench::generate_b::transcript, bench::TUNING_SEEDS_B[0]),
    ];
    for (generate, seed) in generators {
        let t = generate(seed);
        let dir = tempfile::tempdir().unwrap();
        let written = bench::score::run(&t, bench::score::extractor("extractor", &cache), dir.path());
        let s = bench::score::score(&t, &written);
        assert!(s.written > 0 && s.facts > 0, "seed {seed}: {s:?}");
        assert_eq!(s.replaced_current, 0, "seed {seed}: {s:?}");
        assert!(s.precision() >= 90.0, "seed {seed}: {s:?}");
    }
}

/// A model that answers every call with one text and counts the calls.
struct Answers(&'static str, std::sync::atomic::AtomicU32);

impl seshat::compaction::ModelClient for Answers {
    fn complete(
        &self,
        _model: &str,
        _request: seshat::plugins::CompletionRequest,
    ) -> Result<seshat::plugins::Completion, seshat::plugins::ModelError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(seshat::plugins::Completion {
            text: self.0.into(),
            usage: None,
            stop_reason: seshat::plugins::StopReason::EndTurn,
        })
    }
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// An extractor plugin steered by its options, run by the library on a stored session, each run
/// reading only the messages the one before did not: a proposal naming a message it was not given
/// is refused alone, with why; of too many proposals the first 64 are taken; its model calls reach
/// the session's model; a replaced line memory does not hold is written beside what is there.
#[test]
fn the_host_checks_what_an_extractor_proposes_and_serves_its_model_calls() {
    use seshat::client::Extraction;
    use seshat::plugins::{ExtractMoment, ExtractorPlugin, LimitRequest, Runtime};
    let home = crate::support::Home::new();
    let runtime = Runtime::new(Some(crate::support::shared_cache()));
    let (loaded, _) =
        runtime.load_file(std::path::Path::new(seshat_test_plugins::EXTRACTOR), |_| LimitRequest::default()).unwrap();
    let mut store = home.store();
    let session = store
        .create_session(seshat::store::NewSession {
            project: "/work/steered".into(),
            title: None,
            provider: None,
            model: None,
            context_window: None,
            metadata: None,
        })
        .unwrap()
        .id;
    store
        .append(
            &session,
            &[
                seshat::conversation::NewMessage::text(seshat::conversation::Role::User, "hello"),
                seshat::conversation::NewMessage::text(seshat::conversation::Role::Assistant, "hi"),
            ],
        )
        .unwrap();
    let answers = std::sync::Arc::new(Answers("the user prefers vim", Default::default()));
    let run = |store: &mut seshat::store::Store, mode: &str| {
        let plugin = ExtractorPlugin::new(&loaded).unwrap();
        let mut x = Extraction::new(plugin, Default::default(), json!({"mode": mode}).to_string(), Default::default());
        let models: std::sync::Arc<dyn seshat::compaction::ModelClient> = answers.clone();
        x.run(store, &session, "/work/steered", ExtractMoment::SessionEnd, 1, (models, "m"))
    };
    let user_says = |store: &mut seshat::store::Store, text: &str| {
        store
            .append(&session, &[seshat::conversation::NewMessage::text(seshat::conversation::Role::User, text)])
            .unwrap()[0]
    };
    // A proposal naming a message it was not given is refused alone, and said why.
    let done = run(&mut store, "bad_seq").unwrap();
    assert_eq!(done.read, Some((1, 2)), "{done:?}");
    assert!(done.written.is_empty(), "{done:?}");
    assert_eq!(done.refused.len(), 1, "{done:?}");
    assert!(
        done.refused[0].contains("names message 999 as its source, which is not one of the messages it was given"),
        "{done:?}"
    );
    let memory = store.memory(Some("/work/steered")).read_graph(None, 0, 10).unwrap().0;
    assert!(memory.entities.is_empty(), "nothing written: {memory:?}");

    // More than 64 proposals: the first 64 are taken, the rest refused.
    user_says(&mut store, "many");
    let done = run(&mut store, "too_many").unwrap();
    assert_eq!((done.read, done.written.len()), (Some((3, 3)), 64), "{done:?}");
    assert_eq!(done.refused, ["1 of its 65 proposals: an extractor may propose at most 64 per call"], "{done:?}");

    // Its model calls reach the session's model.
    let seq = user_says(&mut store, "hello again");
    let done = run(&mut store, "model").unwrap();
    assert_eq!(answers.1.load(std::sync::atomic::Ordering::SeqCst), 1, "the model was asked once");
    assert_eq!(done.read, Some((seq, seq)), "only what was not read: {done:?}");
    assert_eq!(done.written.len(), 1, "{done:?}");
    assert_eq!((done.written[0].observation.as_str(), done.written[0].seq), ("the user prefers vim", seq));

    // A replaced line memory does not hold: written beside what is there.
    user_says(&mut store, "more");
    let done = run(&mut store, "stale").unwrap();
    assert_eq!(done.written.len(), 1, "{done:?}");
    assert!(done.written[0].replaced.is_empty(), "{done:?}");
    let user = store.memory(Some("/work/steered")).open_nodes(&["user".into()], None).unwrap();
    let observations = &user.entities[0].observations;
    assert_eq!(observations.len(), 66, "{observations:?}");
    assert_eq!(observations[64..], ["the user prefers vim", "the user prefers helix"]);
}

/// A long stored session is read in batches to its end; a fork reads its own messages from its
/// fork point, whatever its parent read; what a rewind hid is not read; a bare correction ("make
/// that …") replaces nothing another session wrote.
#[test]
fn long_sessions_are_read_whole_forks_from_their_fork_point_rewinds_hide_and_bare_corrections_stay_home() {
    use seshat::client::Extraction;
    use seshat::conversation::{NewMessage, Role};
    use seshat::plugins::ExtractMoment;
    let home = crate::support::Home::new();
    let cache = crate::support::shared_cache();
    let mut store = home.store();
    let new_session = |store: &mut seshat::store::Store| {
        store
            .create_session(seshat::store::NewSession {
                project: "/work/long".into(),
                title: None,
                provider: None,
                model: None,
                context_window: None,
                metadata: None,
            })
            .unwrap()
            .id
    };
    let run = |store: &mut seshat::store::Store, session: &str| {
        let plugin = bench::score::extractor("extractor", &cache);
        let mut x = Extraction::new(plugin, Default::default(), "{}".into(), Default::default());
        let models: std::sync::Arc<dyn seshat::compaction::ModelClient> =
            std::sync::Arc::new(seshat::compaction::NoModels);
        x.run(store, session, "/work/long", ExtractMoment::SessionEnd, 1, (models, "none")).unwrap()
    };
    let session = new_session(&mut store);
    let mut messages = vec![NewMessage::text(Role::User, "I prefer tabs over spaces.")];
    for i in 0..448 {
        let role = if i % 2 == 0 { Role::Assistant } else { Role::User };
        messages.push(NewMessage::text(role, format!("step {i} of the refactor")));
    }
    messages.push(NewMessage::text(Role::User, "We decided to use Postgres 16 for the store."));
    store.append(&session, &messages).unwrap();
    let done = run(&mut store, &session);
    assert_eq!(done.read, Some((1, 450)), "{done:?}");
    let written: Vec<(&str, u64)> = done.written.iter().map(|r| (r.observation.as_str(), r.seq)).collect();
    assert_eq!(
        written,
        [("the user prefers tabs over spaces", 1), ("we decided to use Postgres 16 for the store", 450)],
        "{done:?}"
    );

    let fork = store.fork(&session, Some(10), None).unwrap().session.id;
    store.append(&fork, &[NewMessage::text(Role::User, "We decided to use Zig for the tools.")]).unwrap();
    let done = run(&mut store, &fork);
    assert_eq!(done.read, Some((11, 11)), "the fork's own message, after its fork point: {done:?}");
    assert_eq!(done.written.len(), 1, "{done:?}");

    // What a rewind took out of the view is not read.
    store.append(&fork, &[NewMessage::text(Role::User, "We decided to use Rust 2024 for the tools.")]).unwrap();
    store.rewind(&fork, 12, |_| Ok(())).unwrap();
    store.append(&fork, &[NewMessage::text(Role::User, "Hi again.")]).unwrap();
    let done = run(&mut store, &fork);
    assert_eq!(done.read, Some((12, 13)), "{done:?}");
    assert!(done.written.is_empty(), "the rewound statement is not remembered: {done:?}");

    let other = new_session(&mut store);
    store.append(&other, &[NewMessage::text(Role::User, "actually, make that 4 spaces")]).unwrap();
    let done = run(&mut store, &other);
    assert!(done.written.is_empty(), "nothing of this session to correct: {done:?}");
    let user = store.memory(Some("/work/long")).open_nodes(&["user".into()], None).unwrap();
    assert_eq!(user.entities[0].observations, ["the user prefers tabs over spaces"], "{user:?}");
}
