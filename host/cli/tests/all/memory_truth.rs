//! Memory that stays true: where each line came from (an agent's write names its session and
//! message), observations replaced and kept as history, contradictions flagged, every change a
//! version that can be reverted, one session's writes taken back, and memory that expires.

use serde_json::{Value, json};
use seshat::memory::{Scope, Ttls, Writer, tools};

use crate::chat::{chat, home_for, json_of};
use crate::memory::assert_indexes_exact;
use crate::on_both_backends;
use crate::support::Home;
use crate::support::server::{Reply, Server, anthropic};

const PROJECT: &str = "/work/project-truth";

/// Calls a memory tool as `writer`, asserting it succeeded; its structured result.
fn by(home: &Home, writer: Writer, name: &str, args: Value) -> Value {
    let mut store = home.store();
    let mut memory = store.memory(Some(PROJECT)).written_by(writer).with_sources(true);
    let out = tools::call(&mut memory, name, &args);
    assert!(!out.is_error, "{name} failed: {}", out.content());
    out.structured
}

/// Calls a memory tool as the user.
fn ok(home: &Home, name: &str, args: Value) -> Value {
    by(home, Writer::user(), name, args)
}

/// The current observations of `name`.
fn observations(home: &Home, name: &str) -> Vec<String> {
    let got = ok(home, "open_nodes", json!({"names": [name]}));
    serde_json::from_value(got["entities"][0]["observations"].clone()).unwrap()
}

fn context(home: &Home) -> String {
    home.store().memory(Some(PROJECT)).context(4_000).unwrap().text
}

fn search(home: &Home, query: &str) -> Vec<String> {
    let found = ok(home, "search_nodes", json!({"query": query}));
    found["entities"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

on_both_backends! {
fn a_replaced_observation_leaves_search_and_the_context_and_stays_as_history(home) {
    ok(&home, "create_entities", json!({"entities": [
        {"name": "Ada", "entityType": "person", "observations": ["editor: vim", "prefers short answers"]}]}));
    let replaced = ok(&home, "add_observations", json!({"observations": [
        {"entityName": "ada", "contents": ["editor: emacs"], "replaces": ["Editor: Vim"]}]}));
    assert_eq!(replaced["results"][0]["replacedObservations"], json!(["editor: vim"]), "matched ignoring case");
    assert!(replaced["results"][0].get("conflicts").is_none(), "a stated replacement is no conflict: {replaced}");
    assert_eq!(observations(&home, "Ada"), ["prefers short answers", "editor: emacs"]);
    assert!(search(&home, "vim").is_empty(), "the replaced text is out of the word index");
    assert_eq!(search(&home, "emacs"), ["Ada"]);
    let text = context(&home);
    assert!(text.contains("editor: emacs") && !text.contains("vim"), "{text}");

    let past = ok(&home, "open_nodes", json!({"names": ["Ada"], "history": true}));
    let past = &past["entities"][0]["pastObservations"];
    assert_eq!(past[0]["content"], "editor: vim", "{past}");
    assert_eq!(past[0]["replacedBy"], "editor: emacs");
    assert!(past[0]["validUntil"].as_i64().unwrap() > 0);

    // Naming an observation the entity does not hold writes nothing and lists what it holds.
    let mut store = home.store();
    let out = tools::call(&mut store.memory(Some(PROJECT)), "add_observations", &json!({"observations": [
        {"entityName": "Ada", "contents": ["editor: nano"], "replaces": ["editor: ed"]}]}));
    assert!(out.is_error);
    assert!(out.content().contains("holds no current observation `editor: ed` (nothing was written)"), "{}", out.content());
    assert!(out.content().contains("`editor: emacs`"), "{}", out.content());
    drop(store);
    assert_eq!(observations(&home, "Ada"), ["prefers short answers", "editor: emacs"]);

    // Written again, a replaced observation is current once more.
    ok(&home, "add_observations", json!({"observations": [
        {"entityName": "Ada", "contents": ["editor: vim"], "replaces": ["editor: emacs"]}]}));
    assert_eq!(observations(&home, "Ada"), ["editor: vim", "prefers short answers"]);
    assert_eq!(search(&home, "vim"), ["Ada"]);
    assert!(search(&home, "emacs").is_empty());
    assert_indexes_exact(&home);
}
}

on_both_backends! {
fn a_contradiction_written_without_replaces_is_flagged_and_both_are_kept(home) {
    ok(&home, "create_entities", json!({"scope": "user", "entities": [
        {"name": "Ada", "entityType": "person", "observations": ["Lives in Oslo", "uses Rust"]}]}));
    let added = ok(&home, "add_observations", json!({"observations": [
        {"entityName": "Ada", "contents": ["Lives in Berlin", "uses Go"]}]}));
    assert_eq!(
        added["results"][0]["conflicts"],
        json!([{"observation": "Lives in Berlin", "contradicts": "Lives in Oslo"}]),
        "one value of one attribute against another; `uses` adds up"
    );
    assert_eq!(observations(&home, "Ada"), ["Lives in Oslo", "uses Rust", "Lives in Berlin", "uses Go"]);
    let read = ok(&home, "open_nodes", json!({"names": ["Ada"]}));
    assert_eq!(read["entities"][0]["conflicts"][0]["contradicts"], "Lives in Oslo");
    // The user is shown it.
    let shown = home.ok(&["memory"]);
    assert!(shown.contains("! `Lives in Berlin` may contradict `Lives in Oslo`"), "{shown}");
    // Resolved by replacing: the flag goes.
    ok(&home, "add_observations", json!({"observations": [
        {"entityName": "Ada", "contents": ["Lives in Berlin"], "replaces": ["Lives in Oslo"]}]}));
    let read = ok(&home, "open_nodes", json!({"names": ["Ada"]}));
    assert!(read["entities"][0].get("conflicts").is_none(), "{read}");
    assert_eq!(observations(&home, "Ada"), ["uses Rust", "Lives in Berlin", "uses Go"]);
}
}

on_both_backends! {
fn every_change_is_a_version_and_revert_brings_one_back(home) {
    ok(&home, "create_entities", json!({"scope": "user", "entities": [
        {"name": "Release plan", "entityType": "decision", "observations": ["ship on Friday"]}]}));
    ok(&home, "add_observations", json!({"observations": [
        {"entityName": "Release plan", "contents": ["freeze on Wednesday"]}]}));
    by(&home, Writer::agent("01JSESSIONAGENT0000000000A", 7), "add_observations", json!({"observations": [
        {"entityName": "Release plan", "contents": ["ship on Monday"], "replaces": ["ship on Friday"]}]}));
    ok(&home, "delete_observations", json!({"deletions": [
        {"entityName": "Release plan", "observations": ["freeze on Wednesday"]}]}));

    let history = home.ok(&["memory", "history", "release PLAN", "--json"]);
    let history: Value = serde_json::from_str(&history).unwrap();
    let versions = history["versions"].as_array().unwrap();
    let changes: Vec<&str> = versions.iter().map(|v| v["change"].as_str().unwrap()).collect();
    assert_eq!(changes, ["created", "observed", "replaced", "forgot"]);
    assert_eq!(versions[1]["observations"], json!(["ship on Friday", "freeze on Wednesday"]));
    assert_eq!(versions[2]["observations"], json!(["freeze on Wednesday", "ship on Monday"]));
    assert_eq!(versions[2]["source"]["kind"], "agent");
    assert_eq!(versions[2]["source"]["session"], "01JSESSIONAGENT0000000000A");
    assert_eq!(versions[2]["source"]["seq"], 7);
    assert_eq!(versions[0]["source"]["kind"], "user");

    let text = home.ok(&["memory", "history", "Release plan"]);
    assert!(text.contains("v3") && text.contains("replaced") && text.contains("at message 7"), "{text}");

    let reverted: Value = serde_json::from_str(&home.ok(&["memory", "revert", "Release plan", "--to", "2", "--json"])).unwrap();
    assert_eq!(reverted["version"], 5);
    assert_eq!(reverted["entity"]["observations"], json!(["ship on Friday", "freeze on Wednesday"]));
    assert_eq!(observations(&home, "Release plan"), ["ship on Friday", "freeze on Wednesday"]);
    assert_eq!(search(&home, "Monday"), Vec::<String>::new(), "what the revert dropped left the index");
    // What it dropped is a deletion the user can restore.
    let deleted = home.ok(&["memory", "--action", "deleted"]);
    assert!(deleted.contains("memory_revert"), "{deleted}");

    let err = home.fails(&["memory", "revert", "Release plan", "--to", "9"]);
    assert!(err.contains("Release plan has no version 9: its versions are 1 to 5"), "{err}");
    let err = home.fails(&["memory", "history", "Nobody"]);
    assert!(err.contains("Nobody not found"), "{err}");

    // A deleted entity's history is still read, and a revert brings it back.
    ok(&home, "delete_entities", json!({"entityNames": ["Release plan"]}));
    assert!(search(&home, "Friday").is_empty());
    home.ok(&["memory", "revert", "Release plan", "--to", "5"]);
    assert_eq!(search(&home, "Friday"), ["Release plan"]);
    assert_indexes_exact(&home);
}
}

on_both_backends! {
fn undo_takes_back_what_one_sessions_agent_wrote_and_nothing_else(home) {
    const S1: &str = "01JSESSIONONE0000000000000";
    const S2: &str = "01JSESSIONTWO0000000000000";
    ok(&home, "create_entities", json!({"entities": [
        {"name": "Seshat", "entityType": "project", "observations": ["stores sessions in SQLite", "written in Rust"]},
        {"name": "Go SDK", "entityType": "project", "observations": ["talks to seshat serve"]}]}));
    ok(&home, "create_relations", json!({"relations": [{"from": "Go SDK", "to": "Seshat", "relationType": "wraps"}]}));
    let one = Writer::agent(S1, 4);
    by(&home, one.clone(), "create_entities", json!({"entities": [
        {"name": "Hallucination", "entityType": "fact", "observations": ["Seshat was written in 1987"]}]}));
    by(&home, one.clone(), "add_observations", json!({"observations": [
        {"entityName": "Seshat", "contents": ["stores sessions in MongoDB"], "replaces": ["stores sessions in SQLite"]},
        {"entityName": "Seshat", "contents": ["has a CLI"]}]}));
    by(&home, one.clone(), "create_relations", json!({"relations": [
        {"from": "Hallucination", "to": "Seshat", "relationType": "about"}]}));
    by(&home, one.clone(), "delete_relations", json!({"relations": [{"from": "Go SDK", "to": "Seshat", "relationType": "wraps"}]}));
    // What it wrote and then deleted itself stays gone when its deletions are undone.
    by(&home, one.clone(), "add_observations", json!({"observations": [{"entityName": "Seshat", "contents": ["scratch fact"]}]}));
    by(&home, one, "delete_observations", json!({"deletions": [{"entityName": "Seshat", "observations": ["scratch fact"]}]}));
    // Another session builds on what the first wrote.
    by(&home, Writer::agent(S2, 9), "add_observations", json!({"observations": [
        {"entityName": "Seshat", "contents": ["has a Go SDK"]}]}));

    let undone: Value = serde_json::from_str(&home.ok(&["memory", "undo", "--session", S1, "--json"])).unwrap();
    assert_eq!(undone["observations_removed"], 3, "{undone}");
    assert_eq!(undone["observations_restored"], 1);
    assert_eq!(undone["entities_removed"], 1);
    assert_eq!(undone["relations_removed"], 1);
    assert_eq!(undone["deletions_restored"], 2);
    // (Run from the home, the CLI is in another project: this test's entities are the library's.)
    let mut store = home.store();
    let graph = store.memory(Some(PROJECT)).read_graph(None, 0, 50).unwrap().0;
    let mut names: Vec<&str> = graph.entities.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["Go SDK", "Seshat"]);
    assert_eq!(graph.relations.len(), 1, "its deletion of a relation was restored: {:?}", graph.relations);
    drop(store);
    assert_eq!(
        observations(&home, "Seshat"),
        ["stores sessions in SQLite", "written in Rust", "has a Go SDK"],
        "what it replaced is current again; the other session's write stays"
    );
    assert!(search(&home, "MongoDB").is_empty());
    assert_eq!(search(&home, "SQLite"), ["Seshat"]);
    assert_indexes_exact(&home);

    // Nothing of another user's (or a second undo) changes: it holds nothing more of S1's.
    let again = home.ok(&["memory", "undo", "--session", S1]);
    assert!(again.contains("wrote nothing to your memory that is still there"), "{again}");
    // The undo is itself a deletion the user can restore.
    let id = undone["deletion"].as_i64().unwrap().to_string();
    home.ok(&["memory", "--action", "restore", "--id", &id]);
    assert!(observations(&home, "Seshat").contains(&"has a CLI".to_string()));
}
}

on_both_backends! {
fn expired_memory_leaves_the_context_and_search_at_once_and_is_purged(home) {
    let mut store = home.store();
    let ttls = Ttls::parse(&[("user".to_string(), "30d".to_string())].into_iter().collect()).unwrap();
    let before = seshat::store::now_ms();
    let note = store.memory(Some(PROJECT)).with_ttls(ttls).set_note(Scope::User, "sprint", "12").unwrap();
    let after = seshat::store::now_ms();
    let day = 86_400_000;
    let at = note.expires_at.expect("the scope's default applies");
    assert!(at >= before + 30 * day && at <= after + 30 * day, "{at}");
    drop(store);
    let made = ok(&home, "create_entities", json!({"ttl": "14d", "entities": [
        {"name": "Sprint 12", "entityType": "plan", "observations": ["demo on Thursday"]}]}));
    assert!(made["entities"][0]["expiresAt"].as_i64().unwrap() > before + 13 * day);
    ok(&home, "create_entities", json!({"entities": [
        {"name": "Sprint 11", "entityType": "plan", "observations": ["demo on Tuesday"]}]}));
    assert_eq!(search(&home, "demo").len(), 2);

    // Time passes (their expiry moved to the past): they are gone from every read at once.
    home.sql(
        "UPDATE memory_entities SET expires_at = 1 WHERE name = 'Sprint 12'; UPDATE memory_notes SET expires_at = 1",
        "UPDATE memory_entities SET expires_at = 1 WHERE name = 'Sprint 12'; UPDATE memory_notes SET expires_at = 1",
    )
    .unwrap();
    assert_eq!(search(&home, "demo"), ["Sprint 11"]);
    assert!(ok(&home, "open_nodes", json!({"names": ["Sprint 12"]}))["entities"].as_array().unwrap().is_empty());
    let text = context(&home);
    assert!(!text.contains("Thursday") && !text.contains("sprint: 12") && text.contains("Tuesday"), "{text}");
    assert!(home.store().memory(Some(PROJECT)).notes(&Scope::User).unwrap().is_empty());
    // Written again, the name starts afresh (nothing of the expired entity comes back).
    ok(&home, "create_entities", json!({"entities": [
        {"name": "Sprint 12", "entityType": "plan", "observations": ["retro on Friday"]}]}));
    assert_eq!(observations(&home, "Sprint 12"), ["retro on Friday"]);
    // An entity can be given a time to live, and have it taken away.
    let mut store = home.store();
    let (name, at) = store.memory(Some(PROJECT)).expire_entity("sprint 11", Some(7 * day), None).unwrap();
    assert_eq!(name, "Sprint 11");
    assert!(at.unwrap() > before + 6 * day);
    let (_, at) = store.memory(Some(PROJECT)).expire_entity("Sprint 11", None, None).unwrap();
    assert_eq!(at, None);
    // The purge removes what expired.
    home.sql("UPDATE memory_entities SET expires_at = 1 WHERE name = 'Sprint 11'", "UPDATE memory_entities SET expires_at = 1 WHERE name = 'Sprint 11'").unwrap();
    let purged = store.purge_expired_memory(seshat::store::now_ms()).unwrap();
    assert_eq!((purged.entities, purged.notes), (1, 1));
    let left = home.sql_value("SELECT count(*) FROM memory_entities", "SELECT count(*) FROM memory_entities");
    assert_eq!(left, 1, "Sprint 12 as written again");
}
}

#[test]
fn a_bad_ttl_or_as_of_is_refused_naming_what_to_write() {
    let home = Home::new();
    let err = home.fails(&["memory", "--action", "set", "--key", "k", "--value", "v", "--ttl", "soon"]);
    assert!(err.contains("--ttl") && err.contains("like 90d"), "{err}");
    let err = home.fails(&["memory", "--as-of", "yesterday-ish"]);
    assert!(err.contains("--as-of `yesterday-ish` is not a time"), "{err}");
    std::fs::write(home.path().join("config.toml"), "[memory.ttl]\nteam = \"30d\"\n").unwrap();
    let err = home.fails(&["memory", "--action", "set", "--key", "k", "--value", "v"]);
    assert!(err.contains("[memory.ttl] `team` is not a scope"), "{err}");
    std::fs::remove_file(home.path().join("config.toml")).unwrap();
    let shown: Value = serde_json::from_str(&home.ok(&["memory", "--json"])).unwrap();
    assert_eq!(shown["notes"], json!([]), "nothing was written");
}

/// A real agent's write through `seshat chat` names its session and message; `--show-source`
/// shows it, `sessions show --at` reaches the message, `memory undo` takes it back.
#[test]
fn an_agents_write_names_the_message_it_came_from_and_undo_takes_it_back() {
    let args = json!({"scope": "user", "entities": [
        {"name": "Ada", "entityType": "person", "observations": ["prefers short answers"]}]})
    .to_string();
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::tool_answer("toolu_1", "memory_create_entities", &args) },
        Reply::Stream { pieces: anthropic::text_answer(&["Noted."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    home.ok(&["memory", "--action", "set", "--key", "style", "--value", "terse"]);
    let out = chat(&home, &["-p", "Remember: I prefer short answers", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = json_of(&out)["session"].as_str().unwrap().to_string();

    let shown: Value = serde_json::from_str(&home.ok(&["memory", "--show-source", "--json"])).unwrap();
    let ada = &shown["entities"][0];
    assert_eq!(ada["source"]["kind"], "agent", "{shown}");
    assert_eq!(ada["source"]["session"], session.as_str());
    assert_eq!(ada["source"]["seq"], 2, "the assistant message that made the call");
    assert_eq!(ada["observationSources"][0]["session"], session.as_str());
    assert_eq!(shown["notes"][0]["source"]["kind"], "user");
    let plain: Value = serde_json::from_str(&home.ok(&["memory", "--json"])).unwrap();
    assert!(plain["entities"][0].get("source").is_none(), "only asked for: {plain}");

    let text = home.ok(&["memory", "--show-source"]);
    let line = format!("the agent in session {session} at message 2");
    assert!(text.contains(&line), "{text}");
    assert!(text.contains(&format!("seshat sessions show {session} --at 2")), "{text}");

    let around = home.ok(&["sessions", "show", &session, "--at", "2"]);
    assert!(around.contains("assistant #2 ◀ here"), "{around}");
    assert!(around.contains("Remember: I prefer short answers"), "the request before it: {around}");
    assert!(around.contains("memory_create_entities"), "{around}");
    let err = home.fails(&["sessions", "show", &session, "--at", "99"]);
    assert!(err.contains("has no message 99: its messages are 1 to 4"), "{err}");

    let undone = home.ok(&["memory", "undo", "--session", &session]);
    assert!(undone.contains("1 entities removed"), "{undone}");
    let after: Value = serde_json::from_str(&home.ok(&["memory", "--json"])).unwrap();
    assert_eq!(after["entities"], json!([]), "{after}");
    assert_eq!(after["notes"][0]["key"], "style", "the user's own note stays");
}

/// On a service: an agent's write in a user's session carries that session and message in the
/// answers; the user reads its history, reverts it and undoes the session, each write audited
/// under the user; another user's undo of that session takes nothing of theirs.
#[test]
fn on_a_service_history_revert_and_undo_act_on_the_callers_memory_and_are_audited() {
    use crate::network::{Service, token};
    use crate::support::server::openai;
    let args = json!({"scope": "user", "entities": [
        {"name": "Oncall", "entityType": "rota", "observations": ["alice this week"]}]})
    .to_string();
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::tool_answer("call_1", "memory_create_entities", &args) },
        Reply::Stream { pieces: openai::text_answer(&["Noted."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    a.ok("initialize", json!({"model": "gpt-4o"}));
    let session = a.new_session();
    let turn = a.ok("turn/start", json!({"session": session, "text": "remember the rota"}))["turn"].clone();
    a.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);

    let read = a.ok("memory/open_nodes", json!({"names": ["Oncall"]}));
    let source = &read["entities"][0]["source"];
    assert_eq!((source["kind"].as_str(), source["user"].as_str()), (Some("agent"), Some("alice")), "{read}");
    assert_eq!((source["session"].as_str(), source["seq"].as_u64()), (Some(session.as_str()), Some(2)), "{read}");
    a.ok(
        "memory/add_observations",
        json!({"observations": [
        {"entityName": "Oncall", "contents": ["bob this week"], "replaces": ["alice this week"]}]}),
    );
    let history = a.ok("memory/history", json!({"name": "oncall"}));
    assert_eq!(history["versions"].as_array().map(Vec::len), Some(2), "{history}");
    assert_eq!(history["versions"][1]["source"]["kind"], "user", "{history}");
    let reverted = a.ok("memory/revert", json!({"name": "Oncall", "to": 1}));
    assert_eq!(reverted["entity"]["observations"], json!(["alice this week"]), "{reverted}");

    // Bob undoing alice's session finds nothing of his own to take back.
    let mut b = service.client(&bob);
    let nothing = b.ok("memory/undo", json!({"session": session}));
    assert_eq!(nothing["entities_removed"], 0, "{nothing}");
    assert_eq!(a.ok("memory/open_nodes", json!({"names": ["Oncall"]}))["entities"].as_array().map(Vec::len), Some(1));
    let undone = a.ok("memory/undo", json!({"session": session}));
    assert_eq!(undone["entities_removed"], 1, "{undone}");
    assert_eq!(a.ok("memory/open_nodes", json!({"names": ["Oncall"]}))["entities"], json!([]));

    let out = home.ok(&["audit", "--json"]);
    let events: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for method in ["memory/revert", "memory/undo"] {
        let found = events.iter().find(|e| e["method"] == method && e["user"] == "alice");
        assert_eq!(found.map(|e| e["event"].as_str()), Some(Some("write")), "{method}: {events:?}");
    }
    let undo = events.iter().find(|e| e["method"] == "memory/undo" && e["user"] == "alice").unwrap();
    assert_eq!(undo["target"], session.as_str(), "{undo}");
}

on_both_backends! {
fn a_reviewed_teams_writes_are_proposals_until_a_reviewer_approves_them(home) {
    use seshat::store::Access;
    let mut operator = home.store();
    for user in ["alice", "bob", "carol"] {
        operator.add_user(user).unwrap();
    }
    drop(operator);
    let as_user = |user: &str| home.store().acting_for(user);
    let mut alice = as_user("alice");
    alice.create_team("infra").unwrap();
    alice.grant("infra", "bob", Access::Write).unwrap();
    alice.grant("infra", "carol", Access::Write).unwrap();
    let team = json!("team:infra");
    let tool = |store: &mut seshat::store::Store, writer: Writer, name: &str, mut args: Value| -> Value {
        args["scope"] = team.clone();
        let mut memory = store.memory(None).written_by(writer).with_sources(true);
        let out = tools::call(&mut memory, name, &args);
        assert!(!out.is_error, "{name}: {}", out.content());
        out.structured
    };
    let runbook = json!({"entities": [{"name": "Runbook", "entityType": "doc", "observations": ["page the on-call"]}]});
    tool(&mut alice, Writer::user(), "create_entities", runbook);
    // Only a reviewer turns review on; bob cannot.
    let mut bob = as_user("bob");
    let err = bob.set_review("infra", Some(true), None).unwrap_err().to_string();
    assert!(err.contains("only a reviewer of team:infra"), "{err}");
    alice.set_review("infra", Some(true), None).unwrap();

    // Bob's agent's writes become proposals: nothing is written yet.
    let proposed = tool(&mut bob, Writer::agent("01JBOBSESSION0000000000000", 5), "add_observations", json!({"observations": [
        {"entityName": "Runbook", "contents": ["restart the queue first"]}]}));
    let first = proposed["proposal"].as_i64().expect("a proposal");
    assert_eq!(proposed["results"], json!([]), "{proposed}");
    let deleted = tool(&mut bob, Writer::user(), "delete_entities", json!({"entityNames": ["Runbook"]}));
    let second = deleted["proposal"].as_i64().expect("a proposal");
    assert!(deleted["message"].as_str().unwrap().contains("Proposed for review"), "{deleted}");
    let read = |store: &mut seshat::store::Store| -> Vec<String> {
        let graph = store.memory(None).open_nodes(&["Runbook".to_string()], None).unwrap();
        graph.entities.first().map(|e| e.observations.clone()).unwrap_or_default()
    };
    assert_eq!(read(&mut alice), ["page the on-call"], "proposals change nothing");
    let context = alice.memory(None).context(2_000).unwrap().text;
    assert!(!context.contains("restart the queue"), "{context}");
    // A note cannot wait as a proposal: refused, naming why.
    let err = bob.memory(None).set_note(Scope::Team("infra".into()), "oncall", "bob").unwrap_err();
    assert_eq!(err.code(), "review_required", "{err}");

    // Who sees what: alice (a reviewer) both; carol (a member, not a reviewer) none; bob his own.
    let ids = |list: Vec<seshat::memory::Proposal>| list.iter().map(|p| p.id).collect::<Vec<_>>();
    assert_eq!(ids(alice.memory(None).proposals(None, false).unwrap()), [first, second]);
    assert!(ids(as_user("carol").memory(None).proposals(None, false).unwrap()).is_empty());
    let mine = bob.memory(None).proposals(Some("infra"), false).unwrap();
    assert_eq!(mine[0].source.as_ref().map(|s| s.session.as_deref()), Some(Some("01JBOBSESSION0000000000000")));
    // Nobody but a reviewer decides.
    assert!(matches!(bob.memory(None).approve(first), Err(seshat::memory::Error::NoSuchProposal(_))));
    assert!(matches!(as_user("carol").memory(None).reject(first, None), Err(seshat::memory::Error::NoSuchProposal(_))));

    let approved = alice.memory(None).approve(first).unwrap();
    assert_eq!((approved.status.as_str(), approved.decided_by.as_deref()), ("approved", Some("alice")));
    assert_eq!(read(&mut alice), ["page the on-call", "restart the queue first"]);
    // Written as bob's agent wrote it: its source is the proposal's.
    let sourced = alice.memory(None).with_sources(true).open_nodes(&["Runbook".to_string()], None).unwrap();
    let source = sourced.entities[0].observation_sources[1].clone().expect("a source");
    assert_eq!((source.user.as_str(), source.seq), ("bob", Some(5)));
    let rejected = alice.memory(None).reject(second, Some("we keep the runbook")).unwrap();
    assert_eq!(rejected.reason.as_deref(), Some("we keep the runbook"));
    assert_eq!(read(&mut alice), ["page the on-call", "restart the queue first"], "the rejected delete did nothing");
    assert!(alice.memory(None).approve(second).is_err(), "a decided proposal is not decided again");
    assert!(alice.memory(None).proposals(None, false).unwrap().is_empty());
    assert_eq!(bob.memory(None).proposals(None, true).unwrap().len(), 2, "all, decided ones too");

    // A reviewer's own writes, and an admin's, are made at once; with review off, a member's too.
    tool(&mut alice, Writer::user(), "add_observations", json!({"observations": [
        {"entityName": "Runbook", "contents": ["written by a reviewer"]}]}));
    alice.set_review("infra", None, Some(("carol", true))).unwrap();
    let mut carol = as_user("carol");
    let direct = tool(&mut carol, Writer::user(), "add_observations", json!({"observations": [
        {"entityName": "Runbook", "contents": ["written by a new reviewer"]}]}));
    assert!(direct.get("proposal").is_none(), "{direct}");
    alice.set_review("infra", Some(false), None).unwrap();
    let direct = tool(&mut bob, Writer::user(), "add_observations", json!({"observations": [
        {"entityName": "Runbook", "contents": ["written with review off"]}]}));
    assert!(direct.get("proposal").is_none(), "{direct}");
    assert_eq!(read(&mut alice).len(), 5);
}
}

/// Over the CLI and a service: review turned on with `scopes review`, a member's write over the
/// service answered with its proposal, listed and approved by the reviewer, and audited.
#[test]
fn on_a_service_a_reviewer_lists_and_approves_a_members_proposal() {
    use crate::network::{Service, token};
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    a.ok("scopes/create", json!({"team": "ops"}));
    a.ok("scopes/grant", json!({"team": "ops", "user": "bob", "access": "write"}));
    let mut b = service.client(&bob);
    let refused = b.call("scopes/review", json!({"team": "ops", "required": true}));
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("only a reviewer"), "{refused}");
    a.ok("scopes/review", json!({"team": "ops", "required": true}));
    let proposed = b.ok(
        "memory/create_entities",
        json!({"scope": "team:ops", "entities": [
        {"name": "Pager", "entityType": "tool", "observations": ["rotates weekly"]}]}),
    );
    let id = proposed["proposal"].as_i64().unwrap_or_else(|| panic!("{proposed}"));
    assert_eq!(proposed["entities"], json!([]));
    assert_eq!(a.ok("memory/open_nodes", json!({"scope": "team:ops", "names": ["Pager"]}))["entities"], json!([]));
    let listed = a.ok("memory/proposals", json!({}));
    assert_eq!(listed["proposals"][0]["id"], id, "{listed}");
    assert_eq!(listed["proposals"][0]["source"]["user"], "bob", "{listed}");
    let not_a_reviewer = b.call("memory/approve", json!({"id": id}));
    assert_eq!(not_a_reviewer["error"]["data"]["code"], "proposal_not_found", "{not_a_reviewer}");
    let approved = a.ok("memory/approve", json!({"id": id}));
    assert_eq!(approved["status"], "approved", "{approved}");
    let now = a.ok("memory/open_nodes", json!({"scope": "team:ops", "names": ["Pager"]}));
    assert_eq!(now["entities"][0]["observations"], json!(["rotates weekly"]), "{now}");
    let out = home.ok(&["audit", "--json"]);
    let events: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        events.iter().any(|e| e["method"] == "memory/approve" && e["user"] == "alice" && e["event"] == "write"),
        "{events:?}"
    );
    // The operator's CLI: the proposal is decided, listed with --all.
    let all = home.ok(&["memory", "proposals", "--all"]);
    assert!(all.contains("create_entities") && all.contains("approved") && all.contains("bob by hand"), "{all}");
}
