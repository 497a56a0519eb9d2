//! Long-term memory through the library: the reference server's behaviours, where Seshat
//! deliberately differs, search, index sync, scopes, context, restore and clear.

use serde_json::{Value, json};
use seshat::memory::{Scope, tools};

use crate::on_both_backends;
use crate::support::Home;

const PROJECT: &str = "/work/project-a";

/// Calls a tool as the agent would (with the `memory_` prefix) and returns the structured result.
fn call(home: &Home, project: Option<&str>, name: &str, args: Value) -> tools::ToolOutput {
    let mut store = home.store();
    let mut memory = store.memory(project);
    tools::call(&mut memory, &format!("memory_{name}"), &args)
}

fn ok(home: &Home, name: &str, args: Value) -> Value {
    let out = call(home, Some(PROJECT), name, args);
    assert!(!out.is_error, "{name} failed: {}", out.content());
    assert_eq!(
        serde_json::from_str::<Value>(&out.content()).unwrap(),
        out.structured,
        "the text is the structured result"
    );
    out.structured
}

fn names(v: &Value) -> Vec<String> {
    v["entities"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

fn seed(home: &Home) {
    ok(
        home,
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["works on the Seshat runtime", "prefers Rust"]},
            {"name": "Seshat", "entityType": "project", "observations": ["an agent memory runtime", "uses SQLite"]},
            {"name": "Café Zürich", "entityType": "place", "observations": ["serves rustacean coffee"]},
        ]}),
    );
    ok(
        home,
        "create_relations",
        json!({"relations": [
            {"from": "Alice", "to": "Seshat", "relationType": "works_on"},
            {"from": "Alice", "to": "Café Zürich", "relationType": "visits"},
        ]}),
    );
}

on_both_backends! {
fn add_observations_to_an_unknown_entity_is_an_error_and_writes_nothing(home) {
    seed(&home);
    let out = call(
        &home,
        Some(PROJECT),
        "add_observations",
        json!({"observations": [{"entityName": "Alice", "contents": ["new fact"]}, {"entityName": "Nobody", "contents": ["x"]}]}),
    );
    assert!(out.is_error);
    assert!(out.content().contains("Entity with name Nobody not found"), "{}", out.content());
    let alice = ok(&home, "open_nodes", json!({"names": ["Alice"]}));
    assert_eq!(alice["entities"][0]["observations"].as_array().unwrap().len(), 2, "the valid half was not kept either");
}
}

on_both_backends! {
fn deleting_missing_things_is_not_an_error(home) {
    seed(&home);
    assert_eq!(ok(&home, "delete_entities", json!({"entityNames": ["Nobody"]}))["success"], true);
    ok(
        &home,
        "delete_observations",
        json!({"deletions": [{"entityName": "Nobody", "observations": ["x"]}, {"entityName": "Alice", "observations": ["never said"]}]}),
    );
    ok(&home, "delete_relations", json!({"relations": [{"from": "A", "to": "B", "relationType": "c"}]}));
    assert_eq!(names(&ok(&home, "read_graph", json!({}))).len(), 3);
}
}

on_both_backends! {
fn deleting_an_entity_removes_its_relations_and_restore_brings_both_back(home) {
    seed(&home);
    let deleted = ok(&home, "delete_entities", json!({"entityNames": ["alice"]}));
    let graph = ok(&home, "read_graph", json!({}));
    let mut left = names(&graph);
    left.sort();
    assert_eq!(left, ["Café Zürich", "Seshat"]);
    assert!(graph["relations"].as_array().unwrap().is_empty(), "relations of a deleted entity remain: {graph}");
    assert!(names(&ok(&home, "search_nodes", json!({"query": "prefers Rust"}))).is_empty(), "the index still finds it");

    let id = deleted["deletion"].as_i64().unwrap();
    home.store().memory(Some(PROJECT)).restore(id).unwrap();
    let graph = ok(&home, "read_graph", json!({}));
    assert_eq!(graph["entities"].as_array().unwrap().len(), 3);
    assert_eq!(graph["relations"].as_array().unwrap().len(), 2);
    let alice = ok(&home, "open_nodes", json!({"names": ["ALICE"]}));
    assert_eq!(alice["entities"][0]["observations"], json!(["works on the Seshat runtime", "prefers Rust"]));
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "prefers rust"}))), ["Alice"]);
}
}

on_both_backends! {
fn search_matches_name_type_and_observations_case_insensitively_with_relations_among_matches(home) {
    seed(&home);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "ALICE"}))), ["Alice"]);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "Project"}))), ["Seshat"], "by type");
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "sqlite"}))), ["Seshat"], "by observation");
    let both = ok(&home, "search_nodes", json!({"query": "seshat"}));
    let mut found = names(&both);
    found.sort();
    assert_eq!(found, ["Alice", "Seshat"], "a name and an observation");
    assert_eq!(
        both["relations"],
        json!([{"from": "Alice", "to": "Seshat", "relationType": "works_on", "scope": "project"}])
    );
    assert_eq!(names(&both)[0], "Seshat", "a name match ranks above an observation match");
}
}

on_both_backends! {
fn search_handles_words_diacritics_and_substrings(home) {
    seed(&home);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "cafe zurich"}))), ["Café Zürich"], "accents ignored");
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "ZÜRICH"}))), ["Café Zürich"]);
    assert_eq!(
        names(&ok(&home, "search_nodes", json!({"query": "ustacea"}))),
        ["Café Zürich"],
        "a substring (trigram)"
    );
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "memory runtime"}))), ["Seshat"], "multi-word");
    assert_eq!(
        names(&ok(&home, "search_nodes", json!({"query": "Ql"}))),
        ["Seshat"],
        "two letters: a scan, like the reference"
    );
    assert!(
        names(&ok(&home, "search_nodes", json!({"query": "\"AND OR NEAR("}))).is_empty(),
        "FTS syntax is never interpreted"
    );
}
}

on_both_backends! {
fn search_reads_a_question_by_the_shared_ranking_rules(home) {
    seed(&home);
    // Common and question words are left out: every remaining word is held ("prefers" by its stem).
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "What did Alice say she preferred?"}))), ["Alice"]);
    // Words matched by their stem: "serving" finds "serves".
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "serving"}))), ["Café Zürich"]);
    // No entity holds every word and nothing holds the whole text: the entities holding some of
    // them are found.
    assert_eq!(
        names(&ok(&home, "search_nodes", json!({"query": "which coffee does the team drink"}))),
        ["Café Zürich"]
    );
    // Partial matches only when nothing holds every word: "runtime" alone would add Alice.
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "the memory runtime"}))), ["Seshat"]);
}
}

on_both_backends! {
fn search_is_bounded_and_says_when_it_cut(home) {
    let entities: Vec<Value> =
        (0..30).map(|i| json!({"name": format!("Service {i}"), "entityType": "service", "observations": ["deployed on friday"]})).collect();
    ok(&home, "create_entities", json!({"entities": entities}));
    let all = ok(&home, "search_nodes", json!({"query": "friday"}));
    assert_eq!(all["entities"].as_array().unwrap().len(), 20, "default limit");
    assert!(all["note"].as_str().unwrap().contains("more matched"), "{all}");
    let five = ok(&home, "search_nodes", json!({"query": "friday", "limit": 5}));
    assert_eq!(five["entities"].as_array().unwrap().len(), 5);
    let exact = ok(&home, "search_nodes", json!({"query": "service 7"}));
    assert_eq!(names(&exact)[0], "Service 7");
}
}

on_both_backends! {
fn open_nodes_returns_the_named_entities_and_their_relations(home) {
    seed(&home);
    let g = ok(&home, "open_nodes", json!({"names": ["alice", "SESHAT", "missing"]}));
    assert_eq!(names(&g), ["Alice", "Seshat"]);
    assert_eq!(g["relations"].as_array().unwrap().len(), 1, "only relations between the opened entities: {g}");
}
}

#[test]
fn deliberate_difference_creating_an_existing_name_merges_and_names_fold_case() {
    // The reference server keeps the first entity and silently drops the second create. Seshat
    // treats `Ærø` and `ærø` as one entity and merges the new observations in.
    let home = Home::new();
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Ærø", "entityType": "island", "observations": ["in Denmark"]}]}),
    );
    let merged = ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "ærø", "entityType": "island", "observations": ["in Denmark", "has ferries"]}]}),
    );
    assert_eq!(merged["entities"][0]["observations"], json!(["in Denmark", "has ferries"]), "never stored twice");
    let graph = ok(&home, "read_graph", json!({}));
    assert_eq!(names(&graph), ["Ærø"]);
    let added = ok(
        &home,
        "add_observations",
        json!({"observations": [{"entityName": "ÆRØ", "contents": ["has ferries", "windy"]}]}),
    );
    assert_eq!(added["results"][0]["addedObservations"], json!(["windy"]));
}

on_both_backends! {
fn bad_arguments_are_tool_errors_naming_the_field(home) {
    for (tool, args, expected) in [
        ("create_entities", json!({}), "missing field `entities`"),
        ("create_entities", json!({"entities": [{"name": "x", "entityType": "t"}]}), "missing field `observations`"),
        ("search_nodes", json!({"query": 3}), "invalid type"),
        ("read_graph", json!({"scope": "everywhere"}), "unknown scope `everywhere`"),
    ] {
        let out = call(&home, Some(PROJECT), tool, args);
        assert!(out.is_error && out.content().contains(expected), "{tool}: {}", out.content());
        assert!(out.content().starts_with(&format!("invalid arguments for {tool}")), "{}", out.content());
    }
    let out = call(&home, Some(PROJECT), "teleport", json!({}));
    assert!(out.is_error && out.content().contains("unknown memory tool"), "{}", out.content());
    let out = call(&home, None, "create_entities", json!({"entities": [], "scope": "project"}));
    assert!(out.is_error && out.content().contains("the project scope needs a project"), "{}", out.content());
}
}

on_both_backends! {
fn scopes_separate_user_project_and_cross_memory(home) {
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Tabs", "entityType": "preference", "observations": ["the user wants tabs"]}], "scope": "user"}),
    );
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Build", "entityType": "fact", "observations": ["cargo build"]}]}),
    );
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Rust", "entityType": "language", "observations": ["ownership"]}], "scope": "cross"}),
    );
    // Another project sees the user's and cross memory, not project A's.
    let other = call(&home, Some("/work/project-b"), "read_graph", json!({}));
    let mut seen = names(&other.structured);
    seen.sort();
    assert_eq!(seen, ["Rust", "Tabs"]);
    // Outside any project, graph writes go to cross.
    let out = call(
        &home,
        None,
        "create_entities",
        json!({"entities": [{"name": "Loose", "entityType": "x", "observations": []}]}),
    );
    assert_eq!(out.structured["entities"][0]["scope"], "cross");
    let only_user = ok(&home, "read_graph", json!({"scope": "user"}));
    assert_eq!(names(&only_user), ["Tabs"]);
    // The same name can live in two scopes; a change goes to this project's first.
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Rust", "entityType": "language", "observations": ["edition 2024 here"]}]}),
    );
    ok(&home, "add_observations", json!({"observations": [{"entityName": "rust", "contents": ["clippy clean"]}]}));
    let cross = ok(&home, "open_nodes", json!({"names": ["Rust"], "scope": "cross"}));
    assert_eq!(cross["entities"][0]["observations"], json!(["ownership"]));
}
}

#[test]
fn indexes_follow_updates_deletes_and_revivals() {
    let home = Home::new();
    seed(&home);
    ok(&home, "add_observations", json!({"observations": [{"entityName": "Seshat", "contents": ["written in zig"]}]}));
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "zig"}))), ["Seshat"]);
    ok(
        &home,
        "delete_observations",
        json!({"deletions": [{"entityName": "Seshat", "observations": ["written in zig"]}]}),
    );
    assert!(
        names(&ok(&home, "search_nodes", json!({"query": "zig"}))).is_empty(),
        "a deleted observation is still indexed"
    );
    assert!(
        names(&ok(&home, "search_nodes", json!({"query": "ritten in zi"}))).is_empty(),
        "still in the trigram index"
    );
    ok(&home, "add_observations", json!({"observations": [{"entityName": "Seshat", "contents": ["written in zig"]}]}));
    assert_eq!(
        names(&ok(&home, "search_nodes", json!({"query": "zig"}))),
        ["Seshat"],
        "a revived observation is indexed"
    );
    ok(&home, "delete_entities", json!({"entityNames": ["Seshat"]}));
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "seshat", "entityType": "library", "observations": ["new life"]}]}),
    );
    let revived = ok(&home, "open_nodes", json!({"names": ["Seshat"]}));
    assert_eq!(revived["entities"][0]["observations"], json!(["new life"]), "a re-created entity starts afresh");
    assert!(names(&ok(&home, "search_nodes", json!({"query": "sqlite"}))).is_empty());
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "library"}))), ["seshat"]);
    let store = home.store();
    let fts: i64 =
        store.sqlite_connection().unwrap().query_row("SELECT count(*) FROM memory_fts", [], |r| r.get(0)).unwrap();
    let tri: i64 =
        store.sqlite_connection().unwrap().query_row("SELECT count(*) FROM memory_trigram", [], |r| r.get(0)).unwrap();
    let live: i64 = store
        .sqlite_connection()
        .unwrap()
        .query_row("SELECT count(*) FROM memory_entities WHERE deleted_by IS NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!((fts, tri), (live, live), "one index row per live entity");
}

on_both_backends! {
fn context_lists_user_then_project_then_cross_within_budget_and_says_what_it_left_out(home) {
    let mut store = home.store();
    let mut m = store.memory(Some(PROJECT));
    m.set_note(Scope::User, "style", "short answers, no preamble").unwrap();
    drop(m);
    drop(store);
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Build", "entityType": "fact", "observations": ["cargo test --workspace"]}]}),
    );
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Rust", "entityType": "language", "observations": ["ownership"]}], "scope": "cross"}),
    );
    let mut store = home.store();
    let ctx = store.memory(Some(PROJECT)).context(2_000).unwrap();
    let (user, project, cross) = (
        ctx.text.find("style: short answers").unwrap(),
        ctx.text.find("Build (fact): cargo test").unwrap(),
        ctx.text.find("Rust (language): ownership").unwrap(),
    );
    assert!(user < project && project < cross, "{}", ctx.text);
    assert!(!ctx.text.contains("Left out"), "{}", ctx.text);

    let many: Vec<Value> = (0..200)
        .map(|i| json!({"name": format!("Fact {i}"), "entityType": "fact", "observations": [format!("a fairly long observation number {i} about the build")]}))
        .collect();
    drop(store);
    ok(&home, "create_entities", json!({"entities": many}));
    let mut store = home.store();
    let small = store.memory(Some(PROJECT)).context(300).unwrap();
    assert!(small.tokens <= 300, "{} tokens", small.tokens);
    let project_section = small.sections.iter().find(|s| s.scope == Scope::Project).unwrap();
    assert!(project_section.omitted_entities > 150, "{project_section:?}");
    assert!(
        small.text.contains(&format!("project: 0 notes and {} entities", project_section.omitted_entities)),
        "{}",
        small.text
    );
    assert!(small.text.contains("Left out to stay within 300 tokens"), "{}", small.text);
    assert!(small.text.contains("style: short answers"), "user memory comes first: {}", small.text);
    let empty = Home::new();
    assert_eq!(empty.store().memory(None).context(2_000).unwrap().text, "");
}
}

on_both_backends! {
fn clear_writes_a_backup_first(home) {
    seed(&home);
    let mut store = home.store();
    let mut m = store.memory(Some(PROJECT));
    let (backup, records) = m.clear(&Scope::Project, &home.path().join("backups")).unwrap();
    assert_eq!(records, 5, "3 entities and 2 relations");
    let lines: Vec<Value> =
        std::fs::read_to_string(&backup).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    let alice = lines.iter().find(|l| l["name"] == "Alice").unwrap_or_else(|| panic!("{lines:?}"));
    assert!(alice["observations"].as_array().unwrap().iter().any(|o| o["content"] == "prefers Rust"), "{alice}");
    assert!(m.read_graph(None, 0, 100).unwrap().0.entities.is_empty());
}
}

#[test]
fn published_schemas_are_a_superset_of_the_reference_servers() {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::support::fixture("mcp-memory-tools.json")).unwrap())
            .unwrap();
    let ours = tools::definitions();
    for tool in reference["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let mine = ours.iter().find(|d| d.name == name).unwrap_or_else(|| panic!("{name} is missing"));
        assert_superset(&tool["inputSchema"], &mine.input_schema, name);
        assert_eq!(tool["annotations"]["readOnlyHint"], mine.read_only, "{name}");
        assert_eq!(tool["annotations"]["destructiveHint"], mine.destructive, "{name}");
        assert!(mine.description.len() > tool["description"].as_str().unwrap().len(), "{name}: say when to use it");
    }
}

/// Every property, type and requirement of `reference` is in `ours`.
fn assert_superset(reference: &Value, ours: &Value, at: &str) {
    if let Some(t) = reference.get("type") {
        assert_eq!(ours.get("type"), Some(t), "{at}: type");
    }
    for req in reference.get("required").and_then(Value::as_array).into_iter().flatten() {
        assert!(ours["required"].as_array().unwrap().contains(req), "{at}: {req} must be required");
    }
    if let Some(props) = reference.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            assert_superset(v, &ours["properties"][k], &format!("{at}.{k}"));
        }
    }
    if let Some(items) = reference.get("items") {
        assert_superset(items, &ours["items"], &format!("{at}[]"));
    }
}

on_both_backends! {
fn the_context_is_snapshotted_into_the_session_at_its_start(home) {
    seed(&home);
    let session = home.session(PROJECT);
    let mut store = home.store();
    let taken = store.snapshot_memory_context(&session, Some(PROJECT), 2_000).unwrap();
    assert!(taken.text.contains("Alice (person)"));
    drop(store);
    ok(&home, "delete_entities", json!({"entityNames": ["Alice"]}));
    let store = home.store();
    let meta = store.session(&session).unwrap().metadata;
    assert_eq!(meta["memory_context"]["text"], taken.text.as_str(), "later changes do not touch the snapshot");
    assert_eq!(meta["memory_context"]["budget"], 2_000);
    let err = home.store().snapshot_memory_context("01NOPE", None, 10).unwrap_err();
    assert!(err.to_string().contains("no session 01NOPE"), "{err}");
}
}

#[test]
fn a_word_the_index_splits_in_two_is_still_found_by_substring() {
    // `Ⓐ` is alphabetic to Rust (so the query keeps "xⒶy" as one word) but a separator to the
    // word index (which would make it a two-word phrase, which the ranked index cannot answer).
    let home = Home::new();
    let mut store = home.store();
    let mut memory = store.memory(None);
    let e: seshat::memory::NewEntity =
        serde_json::from_value(serde_json::json!({"name": "xⒶy widget", "entityType": "thing", "observations": []}))
            .unwrap();
    memory.create_entities(&[e], None).unwrap();
    let (graph, _) = memory.search("xⒶy", None, 5).unwrap();
    assert_eq!(graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["xⒶy widget"]);
}

/// Both search indexes hold exactly one row per live entity with its live observations, and pass
/// FTS5's own integrity check against their stored content.
pub(crate) fn assert_indexes_exact(home: &Home) {
    if home.is_postgres() {
        // PostgreSQL's one index: a row per live entity, its text and its words as computed anew.
        let live = "SELECT e.id, e.name, e.entity_type, coalesce((SELECT string_agg(content, chr(10) ORDER BY content) \
            FROM memory_observations o WHERE o.entity_id = e.id AND o.deleted_by IS NULL AND o.valid_until IS NULL), '') \
            FROM memory_entities e WHERE e.deleted_by IS NULL AND e.staged = 0";
        let indexed = "SELECT s.entity_id, s.name, s.entity_type, (SELECT coalesce(string_agg(x, chr(10) ORDER BY x), '') \
            FROM unnest(string_to_array(s.observations, chr(10))) x WHERE x <> '') FROM memory_search s";
        for (a, b) in [(live, indexed), (indexed, live)] {
            let differ = home.sql_value("", &format!("SELECT count(*) FROM (({a}) EXCEPT ({b})) d"));
            assert_eq!(differ, 0, "memory_search differs from the live entities");
        }
        let stale = home.sql_value(
            "",
            "SELECT count(*) FROM memory_search s JOIN memory_entities e ON e.id = s.entity_id \
             WHERE s.words <> setweight(to_tsvector('seshat', e.name), 'A') \
             || setweight(to_tsvector('seshat', e.entity_type), 'B') || to_tsvector('seshat', seshat_words(s.observations))",
        );
        assert_eq!(stale, 0, "memory_search holds words its text does not");
        return;
    }
    let store = home.store();
    let conn = store.sqlite_connection().unwrap();
    let expected: Vec<(i64, String, String, Vec<String>)> = {
        let mut stmt = conn
            .prepare("SELECT id, name, entity_type FROM memory_entities WHERE deleted_by IS NULL ORDER BY id")
            .unwrap();
        let rows: Vec<(i64, String, String)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
        rows.into_iter()
            .map(|(id, name, kind)| {
                let mut obs: Vec<String> = conn
                    .prepare(
                        "SELECT content FROM memory_observations WHERE entity_id = ?1 AND deleted_by IS NULL \
                         AND valid_until IS NULL",
                    )
                    .unwrap()
                    .query_map([id], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                obs.sort();
                (id, name, kind, obs)
            })
            .collect()
    };
    for table in ["memory_fts", "memory_trigram"] {
        let indexed: Vec<(i64, String, String, Vec<String>)> = conn
            .prepare(&format!("SELECT rowid, name, entity_type, observations FROM {table} ORDER BY rowid"))
            .unwrap()
            .query_map([], |r| {
                let obs: String = r.get(3)?;
                let mut obs: Vec<String> = obs.split('\n').filter(|o| !o.is_empty()).map(str::to_string).collect();
                obs.sort();
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, obs))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(indexed, expected, "{table} differs from the live entities");
        conn.execute(&format!("INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"), [])
            .unwrap_or_else(|e| panic!("{table} fails its integrity check: {e}"));
    }
}

on_both_backends! {
fn batched_calls_keep_both_indexes_exact(home) {
    seed(&home);
    let many: Vec<Value> = (0..60)
        .map(|i| json!({"name": format!("Crate {i}"), "entityType": "crate", "observations": [format!("version {i}"), "on crates.io"]}))
        .chain([
            // Same name, other case, in the same call: one entity with both observations.
            json!({"name": "CRATE 7", "entityType": "crate", "observations": ["yanked once"]}),
            // An existing entity gains an observation.
            json!({"name": "alice", "entityType": "person", "observations": ["reviews memory code"]}),
        ])
        .collect();
    ok(&home, "create_entities", json!({ "entities": many }));
    assert_indexes_exact(&home);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "yanked"}))), ["Crate 7"]);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "reviews memory"}))), ["Alice"]);

    let adds: Vec<Value> = (0..20)
        .map(|i| json!({"entityName": format!("crate {i}"), "contents": ["audited", format!("version {i}")]}))
        .collect();
    ok(&home, "add_observations", json!({ "observations": adds }));
    assert_indexes_exact(&home);
    assert_eq!(
        ok(&home, "search_nodes", json!({"query": "audited", "limit": 100}))["entities"].as_array().unwrap().len(),
        20
    );

    let deletions: Vec<Value> = (0..10)
        .map(|i| json!({"entityName": format!("Crate {i}"), "observations": ["audited", "on crates.io"]}))
        .collect();
    let deleted = ok(&home, "delete_observations", json!({ "deletions": deletions }));
    assert_indexes_exact(&home);
    assert_eq!(
        ok(&home, "search_nodes", json!({"query": "audited", "limit": 100}))["entities"].as_array().unwrap().len(),
        10
    );

    let gone: Vec<String> =
        (30..45).map(|i| format!("Crate {i}")).chain(["Crate 31".into(), "missing".into()]).collect();
    let removed = ok(&home, "delete_entities", json!({ "entityNames": gone }));
    assert_indexes_exact(&home);
    // The deleted entity is not found (others holding "version" are, as partial matches).
    let found = names(&ok(&home, "search_nodes", json!({"query": "version 33", "limit": 100})));
    assert!(!found.is_empty() && !found.iter().any(|n| n == "Crate 33"), "{found:?}");

    let mut store = home.store();
    for d in [&deleted, &removed] {
        let id = d["deletion"].as_i64().unwrap_or_else(|| panic!("no deletion id in {d}"));
        store.memory(Some(PROJECT)).restore(id).unwrap();
    }
    drop(store);
    assert_indexes_exact(&home);
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "version 33"}))), ["Crate 33"]);
    assert_eq!(
        ok(&home, "search_nodes", json!({"query": "audited", "limit": 100}))["entities"].as_array().unwrap().len(),
        20
    );
}
}

on_both_backends! {
fn ranked_matches_hidden_in_other_projects_do_not_crowd_out_visible_ones(home) {
    // Older and visible from PROJECT: two cross entities.
    ok(
        &home,
        "create_entities",
        json!({"entities": [
            {"name": "Gizmo spec", "entityType": "doc", "observations": ["gizmo tolerances"]},
            {"name": "Gizmo vendor", "entityType": "org", "observations": ["sells the gizmo"]},
        ], "scope": "cross"}),
    );
    // Newer, better ranked, and in another project: never shown from PROJECT.
    let hidden: Vec<Value> = (0..150)
        .map(|i| json!({"name": format!("Gizmo {i}"), "entityType": "gizmo", "observations": ["gizmo gizmo"]}))
        .collect();
    let out = call(&home, Some("/work/project-b"), "create_entities", json!({ "entities": hidden }));
    assert!(!out.is_error, "{}", out.content());

    let found = ok(&home, "search_nodes", json!({"query": "gizmo", "limit": 2}));
    let mut got = names(&found);
    got.sort();
    assert_eq!(got, ["Gizmo spec", "Gizmo vendor"], "past 150 better-ranked hidden matches");
    let from_b = call(&home, Some("/work/project-b"), "search_nodes", json!({"query": "gizmo", "limit": 2}));
    let numbered = |n: &String| n.strip_prefix("Gizmo ").is_some_and(|i| i.parse::<u32>().is_ok());
    assert_eq!(names(&from_b.structured).len(), 2, "{}", from_b.content());
    assert!(names(&from_b.structured).iter().all(numbered), "project-b sees its own first: {}", from_b.content());
}
}

on_both_backends! {
fn substring_matches_come_newest_first(home) {
    let parts: Vec<Value> = (1..=30)
        .map(|i| json!({"name": format!("Part {i}"), "entityType": "part", "observations": ["a sprocket"]}))
        .collect();
    ok(&home, "create_entities", json!({ "entities": parts }));
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Part 31", "entityType": "part", "observations": ["sprockets"]}]}),
    );
    // `procke` is no word of the index: only the trigram index finds it.
    let found = ok(&home, "search_nodes", json!({"query": "procke", "limit": 4}));
    assert_eq!(names(&found), ["Part 31", "Part 30", "Part 29", "Part 28"]);
    // When every match fits on the page (read forwards, then reversed).
    let all = ok(&home, "search_nodes", json!({"query": "procke", "limit": 40}));
    let newest_first: Vec<String> = (1..=31).rev().map(|i| format!("Part {i}")).collect();
    assert_eq!(names(&all), newest_first);
    // `%`, `_` and `\` in a substring are themselves, never wildcards.
    ok(
        &home,
        "create_entities",
        json!({"entities": [{"name": "Promo", "entityType": "offer", "observations": ["50%_off\\now"]}]}),
    );
    assert_eq!(names(&ok(&home, "search_nodes", json!({"query": "0%_off\\n"}))), ["Promo"]);
    for wildcard in ["ock%s", "spr_cket", "spr%et"] {
        assert!(names(&ok(&home, "search_nodes", json!({"query": wildcard}))).is_empty(), "{wildcard}");
    }
}
}

#[test]
fn a_word_in_every_entity_filters_but_the_rarer_words_rank() {
    let home = Home::new();
    let mut batch: Vec<Value> = (0..1100)
        .map(|i| {
            let mut observations = vec![json!("a widget part")];
            if i % 50 == 7 {
                observations.push(json!("turbo charged"));
            }
            json!({"name": format!("Item {i}"), "entityType": "item", "observations": observations})
        })
        .collect();
    // Old, with the rare word in its name; and one holding the rare word but not the common one.
    batch.insert(300, json!({"name": "Turbo widget", "entityType": "item", "observations": ["a widget part"]}));
    batch.insert(600, json!({"name": "Lonely turbo", "entityType": "item", "observations": ["nothing else"]}));
    for chunk in batch.chunks(100) {
        ok(&home, "create_entities", json!({ "entities": chunk }));
    }
    let found = ok(&home, "search_nodes", json!({"query": "widget turbo", "limit": 30}));
    let got = names(&found);
    assert_eq!(got[0], "Turbo widget", "the name match ranks first: {got:?}");
    assert_eq!(got.len(), 23, "the name match and the 22 charged items, nothing else: {got:?}");
    assert!(!got.contains(&"Lonely turbo".to_string()), "every word must be held");
    assert!(got[1..].iter().all(|n| n.starts_with("Item ")), "{got:?}");
    // The same order as bm25 over every word gives, as far as it tells them apart.
    let store = home.store();
    let bm25_first: String = store
        .sqlite_connection().unwrap()
        .query_row(
            "SELECT name FROM memory_fts WHERE memory_fts MATCH '\"widget\" \"turbo\"' ORDER BY bm25(memory_fts, 10.0, 4.0, 1.0) LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bm25_first, got[0]);
}

#[test]
fn ranking_happens_among_the_newest_two_thousand_matches() {
    // A strong match (the word in its name) created first, then `weak` entities holding the word
    // once in an observation. Within the window it ranks first; pushed out of it by 2,100 newer
    // matches, the ranked results come from the newest 2,000 only (as the README says).
    for (weak, strong_found) in [(1_900usize, true), (2_100, false)] {
        let home = Home::new();
        let mut store = home.store();
        let mut memory = store.memory(None);
        let entity = |name: String, observation: &str| -> seshat::memory::NewEntity {
            serde_json::from_value(json!({"name": name, "entityType": "part", "observations": [observation]})).unwrap()
        };
        memory.create_entities(&[entity("Sprocket prime".into(), "the sprocket sprocket sprocket")], None).unwrap();
        for batch in 0..weak.div_ceil(100) {
            let items: Vec<_> = (batch * 100..((batch + 1) * 100).min(weak))
                .map(|i| entity(format!("Item {i}"), &format!("item {i} uses one sprocket among many other parts")))
                .collect();
            memory.create_entities(&items, None).unwrap();
        }
        let (graph, more) = memory.search("sprocket", None, 5).unwrap();
        let got: Vec<&str> = graph.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(got.len(), 5, "{got:?}");
        assert!(more);
        assert_eq!(got[0] == "Sprocket prime", strong_found, "{weak} weak matches: {got:?}");
        if !strong_found {
            // Every result is among the newest 2,000 items.
            for name in &got {
                let i: usize = name.strip_prefix("Item ").unwrap().parse().unwrap();
                assert!(i >= weak - 2_000, "{name} is older than the window");
            }
        }
    }
}

on_both_backends! {
fn relations_to_entities_that_do_not_exist_are_refused_naming_them_and_write_nothing(home) {
    seed(&home);
    let out = call(
        &home,
        Some(PROJECT),
        "create_relations",
        json!({"relations": [
            {"from": "Alice", "to": "Seshat", "relationType": "maintains"},
            {"from": "Alice", "to": "Bob", "relationType": "knows"},
            {"from": "Carol", "to": "bob", "relationType": "knows"},
        ]}),
    );
    assert!(out.is_error, "{}", out.content());
    let text = out.content();
    assert!(
        text.contains("`Bob`, `Carol`") && text.contains("create_entities") && text.contains("no relation was written"),
        "{text}"
    );
    assert!(!text.contains("`bob`"), "one name per entity, as first given: {text}");
    let graph = ok(&home, "read_graph", json!({}));
    assert_eq!(graph["relations"].as_array().unwrap().len(), 2, "not even the valid first relation: {graph}");
    // A deleted entity does not exist either; once created, the relation is accepted.
    ok(&home, "delete_entities", json!({"entityNames": ["Café Zürich"]}));
    let gone = call(
        &home,
        Some(PROJECT),
        "create_relations",
        json!({"relations": [{"from": "Alice", "to": "café zürich", "relationType": "misses"}]}),
    );
    assert!(gone.is_error && gone.content().contains("`café zürich`"), "{}", gone.content());
    ok(&home, "create_entities", json!({"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}));
    ok(&home, "create_relations", json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}));
    assert_eq!(ok(&home, "read_graph", json!({}))["relations"].as_array().unwrap().len(), 2, "works_on and knows");
}
}

on_both_backends! {
fn read_graph_pages_with_offset_and_its_note_says_how(home) {
    let entities: Vec<Value> =
        (0..12).map(|i| json!({"name": format!("Node {i}"), "entityType": "thing", "observations": []})).collect();
    ok(&home, "create_entities", json!({"entities": entities}));
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = ok(&home, "read_graph", json!({"limit": 5, "offset": offset}));
        let got = names(&page);
        seen.extend(got.clone());
        match page["note"].as_str() {
            Some(note) => {
                assert_eq!(got.len(), 5);
                assert!(note.contains(&format!("\"offset\": {}", offset + 5)), "{note}");
                assert!(!note.contains("raise `limit`"), "{note}");
                offset += 5;
            }
            None => break,
        }
    }
    assert_eq!(seen.len(), 12, "{seen:?}");
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 12, "no entity twice across pages: {seen:?}");
    assert!(names(&ok(&home, "read_graph", json!({"offset": 12}))).is_empty());
    // At the largest limit, search does not tell the agent to raise it.
    let many: Vec<Value> =
        (0..501).map(|i| json!({"name": format!("Svc {i}"), "entityType": "svc", "observations": ["up"]})).collect();
    ok(&home, "create_entities", json!({"entities": many}));
    let found = ok(&home, "search_nodes", json!({"query": "up", "limit": 500}));
    let note = found["note"].as_str().unwrap();
    assert!(note.contains("Narrow the query") && !note.contains("raise"), "{note}");
    let tools = tools::definitions();
    let read = tools.iter().find(|t| t.name == "read_graph").unwrap();
    assert_eq!(read.input_schema["properties"]["offset"]["minimum"], 0);
}
}
