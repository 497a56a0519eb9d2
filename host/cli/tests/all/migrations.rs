//! Opening databases: upgrading old ones, refusing newer and foreign ones without touching them.

use std::fs;
use std::path::Path;

use rusqlite::Connection;
use seshat::conversation::{NewMessage, Part, Role};
use seshat::store::{DISCOVERY_TTL_MS, Error, ModelWindow, SCHEMA_VERSION, Store, WindowOrigin};

use crate::support::{Home, fixture};

fn bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap()
}

#[test]
fn version_1_fixture_upgrades_with_its_data() {
    let home = Home::new();
    let db = home.path().join("old.db");
    fs::copy(fixture("store-v1.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 1, "the fixture must stay at version 1");

    let mut store = Store::open(&db).unwrap();
    let version: u32 = store.sqlite_connection().unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);

    let s1 = store.session("01JFV1AAAA0000000000000001").unwrap();
    assert_eq!(s1.title.as_deref(), Some("Fix the flaky upload test"));
    assert_eq!((s1.message_count, s1.totals.input_tokens, s1.context_tokens), (4, 1500, Some(2640)));
    assert_eq!((s1.compaction_failures, s1.auto_compact_disabled), (0, false), "new columns take their defaults");
    assert_eq!(s1.metadata["origin"], "fixture-v1");
    let history = store.full_history(&s1.id).unwrap();
    assert_eq!(history.len(), 4);
    assert!(matches!(&history[1].parts[0], Part::Thinking { signature: Some(s), .. } if s == "sig-abc"));
    assert!(matches!(&history[1].parts[1], Part::ToolCall { id, .. } if id == "call_1"));
    assert_eq!(history[3].status, seshat::conversation::MessageStatus::Interrupted);

    // The upgraded database is fully usable: append, trim, compact.
    assert_eq!(store.append(&s1.id, &[NewMessage::text(Role::User, "go on")]).unwrap(), vec![5]);
    store.record_trims(&s1.id, &[(3, 0, "[trimmed]".into())]).unwrap();
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 3);

    // And the CLI reads it.
    let out = home.ok(&["--db", db.to_str().unwrap(), "sessions", "list", "--all"]);
    assert!(out.contains("Fix the flaky upload test") && out.contains("Plan the release"), "{out}");
}

#[test]
fn newer_schema_is_refused_and_left_untouched() {
    let home = Home::new();
    let db = home.db();
    drop(home.store());
    {
        let conn = Connection::open(&db).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        conn.pragma_update(None, "journal_mode", "delete").unwrap();
    }
    let before = bytes(&db);

    let err = Store::open(&db).unwrap_err();
    assert!(matches!(err, Error::NewerSchema { found: 99, supported, .. } if supported == SCHEMA_VERSION), "{err}");
    assert_eq!(err.code(), "newer_schema");
    let stderr = home.fails(&["sessions", "list"]);
    assert!(
        stderr.contains("99") && stderr.contains(&format!("the {SCHEMA_VERSION} this seshat supports")),
        "{stderr}"
    );
    assert!(stderr.contains("Upgrade seshat"), "{stderr}");
    assert_eq!(bytes(&db), before, "the newer database was modified");
}

#[test]
fn foreign_sqlite_database_is_refused_and_left_untouched() {
    let home = Home::new();
    let db = home.path().join("other-app.db");
    // Another application's live WAL database, with un-checkpointed changes in its -wal file.
    let other = Connection::open(&db).unwrap();
    other.pragma_update(None, "journal_mode", "wal").unwrap();
    other.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');").unwrap();
    let wal = home.path().join("other-app.db-wal");
    let (main_before, wal_before) = (bytes(&db), bytes(&wal));
    assert!(!wal_before.is_empty());

    let err = Store::open(&db).unwrap_err();
    assert_eq!(err.code(), "foreign_database", "{err}");
    let stderr = home.fails(&["--db", db.to_str().unwrap(), "sessions", "list"]);
    assert!(stderr.contains("is not a Seshat database") && stderr.contains("left untouched"), "{stderr}");

    assert_eq!(bytes(&db), main_before, "the foreign database file was modified");
    assert_eq!(bytes(&wal), wal_before, "the foreign database's WAL was modified");
    let body: String = other.query_row("SELECT body FROM notes", [], |r| r.get(0)).unwrap();
    assert_eq!(body, "keep me");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
    let home = Home::new();
    let path = home.path().join("notes.txt");
    fs::write(&path, "these are my notes, not a database\n".repeat(10)).unwrap();
    let before = bytes(&path);
    let stderr = home.fails(&["--db", path.to_str().unwrap(), "sessions", "list"]);
    assert!(stderr.contains("not a SQLite file"), "{stderr}");
    assert_eq!(bytes(&path), before);
}

#[test]
fn new_database_is_private_and_an_empty_file_is_adopted() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    home.ok(&["sessions", "list"]);
    let mode = fs::metadata(home.db()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "database mode is {mode:o}");
    let app_id: i32 =
        Connection::open(home.db()).unwrap().query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
    assert_eq!(app_id, seshat::store::APPLICATION_ID);

    let empty = home.path().join("empty.db");
    fs::write(&empty, b"").unwrap();
    let mut store = Store::open(&empty).unwrap();
    let id = store.create_session(Default::default()).unwrap().id;
    assert_eq!(store.session(&id).unwrap().id, id);
}

#[test]
fn two_processes_creating_one_database_at_once_both_succeed() {
    for _ in 0..5 {
        let home = Home::new();
        let children: Vec<_> = (0..4)
            .map(|_| home.cmd().args(["sessions", "list"]).stderr(std::process::Stdio::piped()).spawn().unwrap())
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let version: u32 =
            Connection::open(home.db()).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}

#[test]
fn version_2_fixture_upgrades_with_its_compactions_and_trims() {
    let home = Home::new();
    let db = home.path().join("v2.db");
    fs::copy(fixture("store-v2.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 2, "the fixture must stay at version 2");

    let mut store = Store::open(&db).unwrap();
    let s1 = "01JFV1AAAA0000000000000001";
    let compactions = store.compactions(s1).unwrap();
    assert_eq!(compactions.len(), 1);
    assert_eq!((compactions[0].first_kept_seq, compactions[0].pinned_seq), (Some(3), Some(1)));
    let view = store.live_view(s1).unwrap();
    let seqs: Vec<Option<u64>> = view.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![None, Some(1), Some(3), Some(4)], "summary, pinned request, kept messages");
    assert!(matches!(&view.entries[2].parts[0], Part::ToolResult { content, .. } if content == "[trimmed]"));
    let s2 = store.session("01JFV1AAAA0000000000000002").unwrap();
    assert_eq!(s2.compaction_failures, 1);

    // The new memory tables work on the upgraded file.
    let mut memory = store.memory(Some("/work/alpha"));
    let created = memory
        .create_entities(
            &[serde_json::from_value(
                serde_json::json!({"name": "Fixture", "entityType": "test", "observations": ["upgraded"]}),
            )
            .unwrap()],
            None,
        )
        .unwrap();
    assert_eq!(created[0].observations, ["upgraded"]);
    assert_eq!(memory.search("upgraded", None, 5).unwrap().0.entities.len(), 1);
}

#[test]
fn version_3_fixture_upgrades_and_remembers_what_servers_said_of_their_models() {
    let home = Home::new();
    let db = home.path().join("v3.db");
    fs::copy(fixture("store-v3.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 3, "the fixture must stay at version 3");

    let mut store = Store::open(&db).unwrap();
    assert_eq!(store.session("01JFV1AAAA0000000000000001").unwrap().model.as_deref(), Some("claude-sonnet-4-5"));
    let base = "http://127.0.0.1:8080/v1";
    assert_eq!(store.model_window(base, "qwen").unwrap(), None);
    let at = |origin, window, output, learnt_at| ModelWindow {
        context_window: window,
        max_output_tokens: output,
        origin,
        learnt_at,
    };
    store.record_model_window(base, "qwen", &at(WindowOrigin::Discovered, Some(8_192), None, 1_000)).unwrap();
    let found = store.model_window(base, "qwen").unwrap().unwrap();
    assert_eq!(found, at(WindowOrigin::Discovered, Some(8_192), None, 1_000));
    assert!(!found.is_stale(1_000 + DISCOVERY_TTL_MS - 1) && found.is_stale(1_000 + DISCOVERY_TTL_MS));
    // The same model on another server is another entry.
    assert_eq!(store.model_window("http://127.0.0.1:11434/v1", "qwen").unwrap(), None);

    // A refusal's window replaces the discovered one and never goes stale.
    store.record_model_window(base, "qwen", &at(WindowOrigin::Learnt, Some(6_000), None, 2_000)).unwrap();
    let learnt = store.model_window(base, "qwen").unwrap().unwrap();
    assert_eq!(learnt, at(WindowOrigin::Learnt, Some(6_000), None, 2_000));
    assert!(!learnt.is_stale(i64::MAX));
    // A later discovery does not overwrite it; an output limit is added beside it.
    store.record_model_window(base, "qwen", &at(WindowOrigin::Discovered, Some(8_192), None, 3_000)).unwrap();
    store.record_model_window(base, "qwen", &at(WindowOrigin::Learnt, None, Some(1_024), 4_000)).unwrap();
    assert_eq!(
        store.model_window(base, "qwen").unwrap().unwrap(),
        at(WindowOrigin::Learnt, Some(6_000), Some(1_024), 2_000)
    );
    // An output limit learnt alone does not keep a later discovery's window out.
    store.record_model_window(base, "other", &at(WindowOrigin::Learnt, None, Some(4_096), 5_000)).unwrap();
    store.record_model_window(base, "other", &at(WindowOrigin::Discovered, Some(32_768), None, 6_000)).unwrap();
    assert_eq!(
        store.model_window(base, "other").unwrap().unwrap(),
        at(WindowOrigin::Discovered, Some(32_768), Some(4_096), 6_000)
    );
}

#[test]
fn version_6_fixture_upgrades_and_its_records_say_their_plugin_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v6.db");
    fs::copy(fixture("store-v6.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 6, "the fixture must stay at version 6");
    let mut store = Store::open(&db).unwrap();
    let version: u32 = store.sqlite_connection().unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let s1 = "01JFV1AAAA0000000000000001";
    // Everything of version 6 is kept: the pin, the instructions, the trim.
    assert_eq!(store.pins(s1).unwrap(), [1]);
    let compactions = store.compactions(s1).unwrap();
    assert_eq!(compactions[0].instructions.as_deref(), Some("keep the upload test name"));
    assert_eq!(compactions[0].plugin, None, "written before plugins were recorded: unknown");
    let trims = store.trims(s1).unwrap();
    assert_eq!((trims[0].replacement.as_str(), &trims[0].plugin), ("[trimmed]", &None));
    let mut export = Vec::new();
    store.export(s1, &mut export).unwrap();
    assert!(!String::from_utf8(export).unwrap().contains("\"plugin\""), "unknown is left out of exports");
    // New records name theirs.
    let by = seshat::store::PluginRef { id: "my-trimmer".into(), sha256: "ab".repeat(32) };
    store.record_trims_by(s1, &[(3, 0, "[t]".into())], Some(&by)).unwrap();
    assert_eq!(store.trims(s1).unwrap().last().unwrap().plugin.as_ref(), Some(&by));
}

#[test]
fn version_9_fixture_upgrades_and_its_word_indexes_match_by_stem() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v9.db");
    fs::copy(fixture("store-v9.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 9, "the fixture must stay at version 9");
    // Before the upgrade, neither index finds "retry" in "retries" (they match whole words).
    let old = Connection::open(&db).unwrap();
    let count = |sql: &str| -> i64 { old.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH 'retry'"), 0);
    assert_eq!(count("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'retry'"), 0);
    drop(old);

    let mut store = Store::open(&db).unwrap();
    let version: u32 = store.sqlite_connection().unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // The document's chunks, rebuilt into the stemmed index: "retry" finds "retries".
    let filter = seshat::store::KnowledgeFilter { project: "/work/alpha", scope: None };
    let hits = store.knowledge_search(filter, "why does it retry?", 5).unwrap();
    assert_eq!(hits.iter().map(|h| h.heading.as_str()).collect::<Vec<_>>(), ["Upload"]);
    // The memory entity, moved into the stemmed index with its observations.
    let (graph, _) = store.memory(Some("/work/alpha")).search("retry", None, 5).unwrap();
    assert_eq!(graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["Upload service"]);
    assert_eq!(graph.entities[0].observations.len(), 2, "{:?}", graph.entities[0]);
    // Both indexes keep following their tables: a chunk removed, an observation added.
    store.knowledge_remove(&[1]).unwrap();
    assert!(store.knowledge_search(filter, "retry", 5).unwrap().is_empty());
    let mut memory = store.memory(Some("/work/alpha"));
    let args = serde_json::json!({"observations": [{"entityName": "Upload service", "contents": ["Compacts its logs nightly"]}]});
    let out = seshat::memory::tools::call(&mut memory, "memory_add_observations", &args);
    assert!(!out.is_error, "{}", out.content());
    let (graph, _) = memory.search("compacting", None, 5).unwrap();
    assert_eq!(graph.entities.iter().map(|e| e.observations.len()).collect::<Vec<_>>(), [3]);
}

#[test]
fn version_10_fixture_upgrades_and_its_records_are_dated_by_time_so_a_fork_sees_the_view_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v10.db");
    fs::copy(fixture("store-v10.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 10, "the fixture must stay at version 10");
    let mut store = Store::open(&db).unwrap();
    let s1 = "01JFV1AAAA0000000000000001";
    // Everything of version 10 is kept.
    assert_eq!(store.pins(s1).unwrap(), [1, 5]);
    assert_eq!(store.trims(s1).unwrap().len(), 1);
    let now = store.live_view(s1).unwrap();
    assert_eq!(now.compaction.as_ref().and_then(|c| c.first_kept_seq), Some(3));
    // Dated by time: the compaction, the trim and the pin of message 1 were made when message 4
    // was the last, the pin of message 5 after message 6.
    let made = |table: &str| -> Vec<u64> {
        let sql = format!("SELECT made_seq FROM {table} WHERE session_id = ?1 ORDER BY id");
        store
            .sqlite_connection()
            .unwrap()
            .prepare(&sql)
            .unwrap()
            .query_map([s1], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!((made("compactions"), made("trims"), made("pins")), (vec![4], vec![4], vec![4, 6]));
    // So a fork at 4 has the compaction and the trim and only the first pin; at 6, both pins.
    let at4 = store.fork(s1, Some(4), None).unwrap().session.id;
    assert_eq!(store.pins(&at4).unwrap(), [1]);
    let view = store.live_view(&at4).unwrap();
    assert_eq!(view.compaction, now.compaction);
    assert_eq!(view.entries.iter().filter_map(|e| e.seq).collect::<Vec<_>>(), [1, 3, 4]);
    let at6 = store.fork(s1, Some(6), None).unwrap().session.id;
    assert_eq!(store.live_view(&at6).unwrap().entries, now.entries);
    // Unpinning leaves a tombstone: the fork at 6 made before keeps its pin, a fork now has none.
    store.unpin(s1, 5).unwrap();
    assert_eq!(store.pins(&at6).unwrap(), [1, 5]);
    let later = store.fork(s1, None, None).unwrap().session.id;
    assert_eq!(store.pins(&later).unwrap(), [1]);
}

/// Version 11 to 12 (claims on the embedding queue): the queued rows stay, free to claim; the
/// forks and rewinds of version 11 are kept.
#[test]
fn version_11_fixture_upgrades_and_its_queue_can_be_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v11.db");
    fs::copy(fixture("store-v11.sqlite"), &db).unwrap();
    let before: u32 = Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 11, "the fixture must stay at version 11");
    let mut store = Store::open(&db).unwrap();
    assert_eq!(store.forks("01JFV1AAAA0000000000000001").unwrap(), [("01JFV1CCCC0000000000000004".to_string(), 4)]);
    assert_eq!(store.live_rewinds("01JFV1AAAA0000000000000002").unwrap().len(), 1);
    let hour = std::time::Duration::from_secs(3600);
    let claimed = store.embed_queue_claim(seshat::store::Queued::History, 10, hour).unwrap();
    assert_eq!(claimed.iter().map(|q| q.0).collect::<Vec<_>>(), [1, 2]);
    assert!(claimed[0].1.as_deref().is_some_and(|t| t.contains("flaky")), "{claimed:?}");
    assert!(store.embed_queue_claim(seshat::store::Queued::History, 10, hour).unwrap().is_empty());
}

/// Version 12 to 13 (owners): the memory and document tables are rebuilt with their rows, ids and
/// indexes; everything belongs to the local user, and another user sees none of it.
#[test]
fn version_11_fixture_upgrades_to_owners_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v11.db");
    fs::copy(fixture("store-v11.sqlite"), &db).unwrap();
    let mut store = Store::open(&db).unwrap();
    {
        let conn = store.sqlite_connection().unwrap();
        let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let broken: i64 = conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).unwrap();
        assert_eq!(broken, 0, "every reference still points at a row");
        let fks: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(fks, 1, "foreign keys are back on after the rebuild");
        let owners: Vec<String> = conn
            .prepare("SELECT DISTINCT owner FROM sessions UNION SELECT owner FROM memory_entities UNION SELECT owner FROM documents")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(owners, ["local"]);
        let observations: i64 =
            conn.query_row("SELECT count(*) FROM memory_observations WHERE entity_id = 1", [], |r| r.get(0)).unwrap();
        assert_eq!(observations, 2, "the entity's observations survived its table's rebuild");
    }
    let (graph, _) = store.memory(Some("/work/alpha")).search("upload", None, 5).unwrap();
    assert_eq!(graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["Upload service"]);
    assert_eq!(graph.entities[0].observations.len(), 2);
    let docs =
        store.knowledge_documents(seshat::store::KnowledgeFilter { project: "/work/alpha", scope: None }).unwrap();
    assert_eq!(docs.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["/work/alpha/docs/upload.md"]);
    store.add_user("ann").unwrap();
    let mut ann = store.acting_for("ann");
    let (graph, _) = ann.memory(Some("/work/alpha")).search("upload", None, 5).unwrap();
    assert!(graph.entities.is_empty() && ann.list_sessions(&Default::default()).unwrap().is_empty());
}

crate::on_both_backends! {
/// A database whose recorded schema version is older than its tables (put back by hand, or a
/// restore that mixed files) fails its upgrade naming both versions and the migration, with a
/// stable code; nothing of the upgrade is kept and the sessions are still there.
fn a_migration_that_fails_names_the_versions_and_keeps_nothing(home) {
    let id = home.session("/p");
    home.sql("PRAGMA user_version = 15", "UPDATE seshat_schema SET version = 5").unwrap();
    let err = Store::migrate(&home.location()).unwrap_err();
    assert_eq!(err.code(), "migration_failed", "{err}");
    let text = err.to_string();
    let (from, to, name) = if home.location().to_string().starts_with("postgres") {
        ("5", "6", "0006_turn_keys")
    } else {
        ("15", "16", "0016_turn_keys")
    };
    assert!(
        text.contains(&format!("from schema version {from} to {to} (migration {name})"))
            && text.contains("turn_keys")
            && text.contains("restore it from a backup"),
        "{text}"
    );
    let recorded = "SELECT version FROM seshat_schema";
    let recorded =
        if home.location().to_string().starts_with("postgres") { home.sql_value(recorded, recorded) } else { 15 };
    assert_eq!(recorded, from.parse::<i64>().unwrap(), "the recorded version is unchanged");
    let count = "SELECT count(*) FROM sessions WHERE id = '{id}'".replace("{id}", &id);
    assert_eq!(home.sql_value(&count, &count), 1, "the session is still there");
}
}

/// Version 20 to 21 (memory provenance): an entity written before keeps its observations, has no
/// source and no version; its first change records it as found (`existing`) so that change can be
/// reverted, and the word index holds its current observations only.
#[test]
fn memory_written_before_provenance_gets_its_first_version_at_its_first_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v11.db");
    fs::copy(fixture("store-v11.sqlite"), &db).unwrap();
    let mut store = Store::open(&db).unwrap();
    let mut memory = store.memory(Some("/work/alpha")).with_sources(true);
    let (_, _, versions) = memory.history("upload service", None).unwrap();
    assert!(versions.is_empty(), "{versions:?}");
    let open = memory.open_nodes(&["Upload service".to_string()], None).unwrap();
    assert_eq!(open.entities[0].source, None);
    assert_eq!(open.entities[0].observation_sources, [None, None]);
    let adds = [seshat::memory::ObservationsToAdd {
        entity_name: "Upload service".into(),
        contents: vec!["Owned by the platform team".into()],
        replaces: vec!["Owned by the storage team".into()],
    }];
    memory.add_observations_replacing(&adds, None).unwrap();
    let (_, _, versions) = memory.history("Upload service", None).unwrap();
    let changes: Vec<&str> = versions.iter().map(|v| v.change.as_str()).collect();
    assert_eq!(changes, ["existing", "replaced"]);
    assert_eq!(versions[0].observations, ["Retries failed uploads with backoff", "Owned by the storage team"]);
    assert_eq!(versions[0].source, None);
    let (_, entity) = memory.revert("Upload service", 1, None).unwrap();
    assert_eq!(entity.observations, ["Retries failed uploads with backoff", "Owned by the storage team"]);
    let (found, _) = memory.search("storage", None, 5).unwrap();
    assert_eq!(found.entities.len(), 1);
    let (found, _) = memory.search("platform", None, 5).unwrap();
    assert!(found.entities.is_empty(), "the revert's dropped observation left the index");
}
