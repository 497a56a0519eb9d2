//! Hybrid search over history and memory when the user opts in to embedding them
//! (`[knowledge] embed_history`, `embed_memory`): the durable queue, drained by `seshat knowledge
//! embed`, in the background by chat, and by the next run after a process is killed.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use seshat::conversation::{NewMessage, Role};
use seshat::memory::NewEntity;
use seshat::store::Queued;

use crate::on_both_backends;
use crate::support::Home;
use crate::support::server::{Reply, Server, expect_route};

/// The deterministic test embedder (see `tests/plugins/guests/embedder`) at `server`, with
/// history and memory embedding as given.
fn configure(home: &Home, server: &Server, history: bool, memory: bool, extra: &str) {
    crate::knowledge::install_test_embedder(home);
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "{extra}[plugins]\nembedder = \"topics\"\n[knowledge]\nmodel = \"topics-long\"\nbase_url = \"{}/v1\"\n\
             embed_history = {history}\nembed_memory = {memory}\n",
            server.url()
        ),
    )
    .unwrap();
}

fn echo() -> Server {
    Server::route(|r| match expect_route(r, "POST", "/v1/echo") {
        Ok(()) => Reply::Full { status: 200, headers: vec![], body: r.body.clone().into_bytes() },
        Err(why) => Reply::Unexpected(why),
    })
}

/// A session of three messages and a memory of two entities, written before embedding is on.
fn history_and_memory(home: &Home) -> String {
    let session = home.session("/p");
    let mut store = home.store();
    store
        .append(
            &session,
            &[
                NewMessage::text(Role::User, "The automobile engine roared all night."),
                NewMessage::text(Role::Assistant, "A pear and apple pie, then."),
                NewMessage::text(Role::User, "My car needs new tyres before winter."),
            ],
        )
        .unwrap();
    let entities = [
        NewEntity {
            name: "Dashboard".into(),
            entity_type: "car".into(),
            observations: vec!["red, an automobile".into()],
        },
        NewEntity { name: "Orchard".into(), entity_type: "place".into(), observations: vec!["apple trees".into()] },
    ];
    store.memory(None).create_entities(&entities, Some(&seshat::memory::Scope::User)).unwrap();
    session
}

fn json(home: &Home, args: &[&str]) -> Value {
    let out = home.run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn opted_in_history_and_memory_are_searched_by_meaning_too() {
    let home = Home::new();
    let server = echo();
    configure(&home, &server, false, false, "");
    history_and_memory(&home);
    // Not opted in: "truck" is no word of any message or entity.
    assert_eq!(json(&home, &["sessions", "search", "truck", "--all", "--json"]).as_array().unwrap().len(), 0);
    let mem = json(&home, &["memory", "--action", "search", "--query", "truck", "--json"]);
    assert_eq!(mem["entities"].as_array().unwrap().len(), 0, "{mem}");
    assert_eq!(server.count(), 0, "nothing is sent without the opt-in");

    configure(&home, &server, true, true, "");
    let report = json(&home, &["knowledge", "embed", "--json"]);
    assert_eq!(
        (report["history"]["backfilled"].as_u64(), report["history"]["embedded"].as_u64()),
        (Some(3), Some(3)),
        "{report}"
    );
    assert_eq!(
        (report["memory"]["embedded"].as_u64(), report["memory"]["left"].as_u64()),
        (Some(2), Some(0)),
        "{report}"
    );
    let hits = json(&home, &["sessions", "search", "truck", "--all", "--json"]);
    let snippets: Vec<&str> = hits.as_array().unwrap().iter().map(|h| h["snippet"].as_str().unwrap()).collect();
    assert_eq!(snippets.len(), 3, "{hits}");
    assert!(snippets[0].contains("automobile"), "vehicles first: {snippets:?}");
    // A short message is embedded with the end of the one before it: the reply to the
    // automobile message carries its topic, and the car message after the reply carries the
    // reply's fruit with it.
    assert!(snippets[1].contains("pear"), "{snippets:?}");
    assert!(snippets[2].contains("car"), "{snippets:?}");
    let mem = json(&home, &["memory", "--action", "search", "--query", "truck", "--json"]);
    let names: Vec<&str> = mem["entities"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"Dashboard"), "{mem}");
    // Words still rank: "orchard" finds the orchard first.
    let mem = json(&home, &["memory", "--action", "search", "--query", "orchard", "--json"]);
    assert_eq!(mem["entities"][0]["name"], "Orchard", "{mem}");

    // A new message is queued in its own transaction (the corpus is on) and embedded by the next run.
    let session = home.store().list_sessions(&Default::default()).unwrap()[0].id.clone();
    home.store().append(&session, &[NewMessage::text(Role::User, "The truck broke down.")]).unwrap();
    assert_eq!(home.store().embed_queue_len(Queued::History).unwrap(), 1);
    let report = json(&home, &["knowledge", "embed", "--json"]);
    assert_eq!((report["history"]["embedded"].as_u64(), report["history"]["backfilled"].as_u64()), (Some(1), Some(0)));
    // Opting out stops queueing and keeps the vectors.
    configure(&home, &server, false, false, "");
    json(&home, &["knowledge", "embed", "--json"]);
    home.store().append(&session, &[NewMessage::text(Role::User, "Another car.")]).unwrap();
    assert_eq!(home.store().embed_queue_len(Queued::History).unwrap(), 0, "not queued once opted out");
}

on_both_backends! {
fn the_queue_survives_a_killed_process_and_the_next_run_drains_it(home) {
    // An embedding server that takes the request and never answers; it says when it has one.
    let (tell, told) = mpsc::channel::<()>();
    let tell = Mutex::new(tell);
    let stuck = Server::route(move |_| {
        let _ = tell.lock().unwrap().send(());
        Reply::Silent { pause: Duration::from_secs(300) }
    });
    configure(&home, &stuck, true, false, "");
    history_and_memory(&home);
    let mut child = home.cmd().args(["knowledge", "embed"]).spawn().unwrap();
    told.recv_timeout(Duration::from_secs(120)).expect("the drain sent its first batch");
    child.kill().unwrap(); // SIGKILL, mid-request
    child.wait().unwrap();
    let store = home.store();
    assert_eq!(store.embed_queue_len(Queued::History).unwrap(), 3, "the backfill was committed before embedding");
    // The killed worker's claim on its batch went with it: the next run takes the rows at once.
    let held = "SELECT count(*) FROM embed_queue WHERE claimed_by IS NOT NULL";
    assert_eq!(home.sql_value(held, held), 3, "the killed worker had claimed its batch");
    assert_eq!(store.queued_index(Queued::History).unwrap().unwrap().0.vectors, 0);
    drop(store);
    let server = echo();
    configure(&home, &server, true, false, "");
    let report = json(&home, &["knowledge", "embed", "--json"]);
    assert_eq!(
        (report["history"]["embedded"].as_u64(), report["history"]["left"].as_u64()),
        (Some(3), Some(0)),
        "{report}"
    );
    assert_eq!(home.store().queued_index(Queued::History).unwrap().unwrap().0.vectors, 3);
}
}

#[test]
fn a_one_shot_chat_never_waits_for_the_embedder_and_leaves_the_rest_queued() {
    use crate::chat::{chat, json_of};
    use crate::support::server::anthropic;
    let home = Home::new();
    let (tell, told) = mpsc::channel::<()>();
    let tell = Mutex::new(tell);
    // The embedder never answers (within the hour the config allows it): were the model call or
    // the exit to wait for it, this test would hang.
    let stuck = Server::route(move |_| {
        let _ = tell.lock().unwrap().send(());
        Reply::Silent { pause: Duration::from_secs(3600) }
    });
    // The model answers only once the embedder holds the drain's request: the turn then finishes
    // while the drain is stuck.
    let told = Mutex::new(told);
    let model = Server::route(move |_| {
        told.lock().unwrap().recv_timeout(Duration::from_secs(120)).expect("the background drain had started");
        Reply::Stream { pieces: anthropic::text_answer(&["Hello."]) }
    });
    let provider = format!(
        "[chat]\nmax_output_tokens = 1000\n[providers.anthropic]\nbase_url = \"{}\"\nmax_retries = 0\n",
        model.url()
    );
    configure(&home, &stuck, true, false, &provider);
    let cfg = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        cfg.replace("[plugins]\n", "[plugins]\nprovider = \"anthropic\"\n") + "timeout_secs = 3600\n",
    )
    .unwrap();
    history_and_memory(&home);
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["text"], "Hello.");
    assert_eq!(model.count(), 1);
    let store = home.store();
    assert!(store.embed_queue_len(Queued::History).unwrap() >= 3, "what was not embedded stays queued");
    assert_eq!(store.queued_index(Queued::History).unwrap().unwrap().0.vectors, 0);
}

#[test]
fn a_version_8_database_upgrades_and_its_documents_and_history_get_vectors() {
    let home = Home::new();
    std::fs::copy(crate::support::fixture("store-v8.sqlite"), home.db()).unwrap();
    let before: u32 =
        rusqlite::Connection::open(home.db()).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 8, "the fixture must stay at version 8");
    {
        let store = home.store();
        let filter = seshat::store::KnowledgeFilter { project: "/work/alpha", scope: None };
        let hits = store.knowledge_search(filter, "mock clock", 5).unwrap();
        assert_eq!(hits.len(), 1, "version 8's chunks are searchable");
        assert_eq!((hits[0].start_line, hits[0].end_line, hits[0].heading.as_str()), (5, 7, "Upload > Flaky"));
        assert!(store.vector_index().unwrap().is_none(), "no vectors until an embedder makes them");
        assert_eq!(store.chunks_without_vectors_count().unwrap(), 2);
    }
    let count = |table: &str| -> u64 {
        rusqlite::Connection::open(home.db())
            .unwrap()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    let messages = count("messages");
    assert!(messages > 0);
    // With an embedder and history embedding on, the upgraded file's chunks and every message it
    // holds get their vectors.
    let server = echo();
    configure(&home, &server, true, false, "");
    let report = json(&home, &["knowledge", "embed", "--json"]);
    assert_eq!(report["history"]["embedded"].as_u64(), Some(messages), "{report}");
    let store = home.store();
    assert_eq!(store.chunks_without_vectors_count().unwrap(), 0, "{report}");
    assert_eq!((count("chunk_vectors"), count("message_vectors")), (2, messages));
    assert_eq!(store.embed_queue_len(Queued::History).unwrap(), 0);
}

on_both_backends! {
/// Workers draining the embedding queue at once, each with its own connection (as processes on
/// several machines would), claim disjoint rows: every queued row is claimed once while the
/// claims hold; a claim that lapsed (its worker died) frees its rows, a failure frees them too.
fn workers_claim_disjoint_rows_of_the_embedding_queue_and_a_lapsed_claim_frees_them(home) {
    drop(home.store());
    let insert = "INSERT INTO embed_queue (corpus, item, queued_at) \
        SELECT 'memory', n, 1000 + n FROM (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 200) \
        SELECT n FROM c) r";
    home.sql(insert, insert).unwrap();
    let hour = Duration::from_secs(3600);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let mut store = home.store();
            std::thread::spawn(move || {
                // Bounded: were claims not held, a worker would take the same rows forever.
                let mut mine = Vec::new();
                for _ in 0..200 {
                    let batch = store.embed_queue_claim(Queued::Memory, 7, hour).unwrap();
                    if batch.is_empty() {
                        break;
                    }
                    mine.extend(batch.into_iter().map(|(item, _)| item));
                }
                // Kept open until every worker is done: a worker gone frees what it claimed.
                (mine, store)
            })
        })
        .collect();
    let done: Vec<(Vec<i64>, seshat::store::Store)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let mut claimed: Vec<i64> = done.iter().flat_map(|(mine, _)| mine.iter().copied()).collect();
    claimed.sort_unstable();
    assert_eq!(claimed, (1..=200).collect::<Vec<i64>>(), "every row claimed exactly once");

    let mut store = home.store();
    assert!(store.embed_queue_claim(Queued::Memory, 10, hour).unwrap().is_empty(), "claimed rows are held");
    // The workers' connections close: what they claimed is free again (on SQLite their process,
    // this one, still runs: the claims hold until they lapse).
    drop(done);
    if home.is_postgres() {
        // The server ends each closed connection's backend on its own time: claimed as they go.
        let mut freed = Vec::new();
        crate::support::wait_for("the closed connections' claims to be free", || {
            freed.extend(store.embed_queue_claim(Queued::Memory, 500, hour).unwrap().into_iter().map(|(item, _)| item));
            freed.len() >= 200
        });
        freed.sort_unstable();
        assert_eq!(freed, (1..=200).collect::<Vec<i64>>(), "a closed connection's claims are free, each once");
    }
    // Oldest first; a claim of no time lapses at once, and a failure frees its rows for the next.
    let reset = "UPDATE embed_queue SET claimed_until = NULL";
    home.sql(reset, reset).unwrap();
    let lapsed: Vec<i64> =
        store.embed_queue_claim(Queued::Memory, 3, Duration::ZERO).unwrap().into_iter().map(|q| q.0).collect();
    assert_eq!(lapsed, [1, 2, 3]);
    let again: Vec<i64> = store.embed_queue_claim(Queued::Memory, 3, hour).unwrap().into_iter().map(|q| q.0).collect();
    assert_eq!(again, [1, 2, 3], "a lapsed claim's rows are claimed again");
    store.embed_queue_failed(Queued::Memory, &[2]).unwrap();
    let freed: Vec<i64> = store.embed_queue_claim(Queued::Memory, 1, hour).unwrap().into_iter().map(|q| q.0).collect();
    assert_eq!(freed, [2]);
    assert_eq!(store.embed_queue_len(Queued::Memory).unwrap(), 200, "claims take nothing off the queue");
}
}
