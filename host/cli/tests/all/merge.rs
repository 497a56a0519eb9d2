//! `seshat db merge FROM TO --as USER`: a person's SQLite store brought into a team's store on a
//! real PostgreSQL as one user's — sessions with a fork, memory merged by name, notes, documents
//! — the team's own content untouched, other users seeing none of it; run again, only what is new.

use serde_json::Value;

use seshat::conversation::{NewMessage, Role};
use seshat::memory::{NewEntity, RelationSpec, Scope};
use seshat::store::{KnowledgeFilter, NewChunk, NewDocument, Store};

use crate::support::Home;

fn texts(store: &Store, session: &str) -> Vec<String> {
    store.full_history(session).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
}

fn entity(name: &str, observation: &str) -> NewEntity {
    NewEntity { name: name.into(), entity_type: "person".into(), observations: vec![observation.into()] }
}

fn merge(team: &Home, personal: &Home) -> Value {
    let (from, to) = (personal.db().to_str().unwrap().to_string(), team.url().unwrap().to_string());
    let out = team.run(&["db", "merge", &from, &to, "--as", "Ann", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_personal_store_merges_into_a_team_store_as_its_user_and_again_adds_only_what_is_new() {
    let personal = Home::new();
    let team = Home::postgres();
    let mut mine = personal.store();
    let id =
        mine.create_session(seshat::store::NewSession { project: "/work/p".into(), ..Default::default() }).unwrap().id;
    mine.append(
        &id,
        &[NewMessage::text(Role::User, "plan the upload"), NewMessage::text(Role::Assistant, "in three steps")],
    )
    .unwrap();
    let fork = mine.fork(&id, Some(1), None).unwrap().session.id;
    mine.append(&fork, &[NewMessage::text(Role::Assistant, "or in one")]).unwrap();
    mine.memory(Some("/work/p"))
        .create_entities(&[entity("Ada", "writes the uploader")], Some(&Scope::Project))
        .unwrap();
    mine.memory(None).create_entities(&[entity("Grace", "reviews")], Some(&Scope::User)).unwrap();
    let works = RelationSpec { from: "Grace".into(), to: "Grace".into(), relation_type: "mentors".into() };
    mine.memory(None).create_relations(&[works], Some(&Scope::User)).unwrap();
    mine.memory(None).set_note(Scope::User, "style", "terse").unwrap();
    mine.memory(None).set_note(Scope::User, "editor", "helix").unwrap();
    let doc = NewDocument {
        scope: Scope::User,
        project: String::new(),
        path: "/home/ann/notes/runbook.md".into(),
        kind: "markdown".into(),
        sha256: "ab".repeat(32),
        bytes: 30,
    };
    let chunk = NewChunk {
        start_line: 1,
        end_line: 2,
        heading: "Runbook".into(),
        text: "restart the zephyr queue".into(),
        tokens: 6,
    };
    mine.knowledge_put(&doc, &[chunk]).unwrap();

    // The team's store: Ann already there, with an Ada of her own and a note of another value;
    // Bob imported one of Ann's exports before (the same id, his).
    let shared =
        mine.create_session(seshat::store::NewSession { project: "/work/p".into(), ..Default::default() }).unwrap().id;
    mine.append(&shared, &[NewMessage::text(Role::User, "sent to bob")]).unwrap();
    let mut export = Vec::new();
    mine.export(&shared, &mut export).unwrap();
    let mut operator = team.store();
    operator.add_user("ann").unwrap();
    operator.add_user("bob").unwrap();
    team.store().acting_for("bob").import(&mut export.as_slice(), Default::default()).unwrap();
    let mut ann = team.store().acting_for("ann");
    ann.memory(Some("/work/p")).create_entities(&[entity("ADA", "leads the team")], Some(&Scope::Project)).unwrap();
    ann.memory(None).set_note(Scope::User, "style", "verbose").unwrap();

    let first = merge(&team, &personal);
    assert_eq!(first["sessions_added"], 2, "{first}");
    assert_eq!(first["sessions_taken"], serde_json::json!([shared]), "{first}");
    assert_eq!((first["entities_added"].as_u64(), first["observations_added"].as_u64()), (Some(1), Some(2)), "{first}");
    assert_eq!((first["relations_added"].as_u64(), first["notes_added"].as_u64()), (Some(1), Some(1)), "{first}");
    assert_eq!(first["notes_kept"], serde_json::json!(["user/style"]), "{first}");
    assert_eq!(first["documents_added"], 1, "{first}");
    assert_eq!(texts(&ann, &id), ["plan the upload", "in three steps"]);
    assert_eq!(texts(&ann, &fork), ["plan the upload", "or in one"]);
    let ada = ann.memory(Some("/work/p")).open_nodes(&["ada".into()], Some(&Scope::Project)).unwrap();
    assert_eq!(ada.entities[0].observations, ["leads the team", "writes the uploader"], "merged by name");
    let notes = ann.memory(None).notes(&Scope::User).unwrap();
    let note = |key: &str| notes.iter().find(|n| n.key == key).map(|n| n.value.clone());
    assert_eq!((note("style"), note("editor")), (Some("verbose".into()), Some("helix".into())), "the team's kept");
    let filter = KnowledgeFilter { project: "/work/p", scope: None };
    let hits = ann.knowledge_search(filter, "zephyr", 5).unwrap();
    assert_eq!(hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(), ["/home/ann/notes/runbook.md"]);
    let operators = team.store().list_sessions(&Default::default()).unwrap();
    assert!(operators.is_empty(), "the operator sees none of Ann's: {operators:?}");

    // Ann went on alone: one session grew, and one more entity.
    mine.append(&id, &[NewMessage::text(Role::User, "step two done")]).unwrap();
    mine.memory(None).create_entities(&[entity("Linus", "merges")], Some(&Scope::User)).unwrap();
    let second = merge(&team, &personal);
    assert_eq!((second["sessions_added"].as_u64(), second["sessions_grown"].as_u64()), (Some(0), Some(1)), "{second}");
    assert_eq!(
        (second["messages_added"].as_u64(), second["sessions_unchanged"].as_u64()),
        (Some(1), Some(1)),
        "{second}"
    );
    assert_eq!(
        (second["entities_added"].as_u64(), second["observations_added"].as_u64()),
        (Some(1), Some(1)),
        "{second}"
    );
    assert_eq!(
        (second["documents_added"].as_u64(), second["documents_unchanged"].as_u64()),
        (Some(0), Some(1)),
        "{second}"
    );
    assert_eq!(texts(&ann, &id), ["plan the upload", "in three steps", "step two done"]);
    assert_eq!(second["sessions_taken"], serde_json::json!([shared]), "never copied under an id of its own");
    assert_eq!(ann.list_sessions(&Default::default()).unwrap().len(), 2, "{second}");

    // Continued on both sides since: left as the team has it, and said.
    ann.append(&id, &[NewMessage::text(Role::Assistant, "on the service")]).unwrap();
    mine.append(&id, &[NewMessage::text(Role::Assistant, "at home")]).unwrap();
    let third = merge(&team, &personal);
    assert_eq!(third["sessions_diverged"], serde_json::json!([id]), "{third}");
    assert_eq!(texts(&ann, &id).last().map(String::as_str), Some("on the service"));
}

#[test]
fn merging_as_a_user_the_team_store_lacks_says_how_to_add_them_and_writes_nothing() {
    let personal = Home::new();
    personal.session("/work/p");
    let team = Home::postgres();
    let out = team.run(&["db", "merge", personal.db().to_str().unwrap(), team.url().unwrap(), "--as", "zed"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no user `zed`") && err.contains("users add zed"), "{err}");
    assert!(team.store().acting_for("zed").list_sessions(&Default::default()).unwrap().is_empty());
}
