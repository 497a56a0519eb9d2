//! Owners: a store shared by several users keeps each user's sessions, memory and documents to
//! that user, and a team's scope to the users it grants it to — on both backends, every check
//! made in the store's own queries.

use seshat::conversation::{NewMessage, Role};
use seshat::memory::{NewEntity, Scope};
use seshat::store::{Access, HistoryScope, KnowledgeFilter, NewChunk, NewDocument, NewSession, Store};

use crate::on_both_backends;
use crate::support::Home;

/// The store of `home` acting for `user`.
fn as_user(home: &Home, user: &str) -> Store {
    home.store().acting_for(user)
}

fn entity(name: &str, observation: &str) -> NewEntity {
    NewEntity { name: name.into(), entity_type: "thing".into(), observations: vec![observation.into()] }
}

/// The names of the entities `store`'s memory finds for `query` from project `/p`, sorted.
fn found(store: &mut Store, query: &str, scope: Option<&Scope>) -> Vec<String> {
    let (graph, _) = store.memory(Some("/p")).search(query, scope, 10).unwrap();
    let mut names: Vec<String> = graph.entities.into_iter().map(|e| e.name).collect();
    names.sort();
    names
}

fn code(e: &seshat::store::Error) -> &'static str {
    e.code()
}

fn memory_code(e: &seshat::memory::Error) -> &'static str {
    match e {
        seshat::memory::Error::Database(e) => e.code(),
        other => panic!("expected a database refusal, got {other}"),
    }
}

on_both_backends! {
fn another_users_sessions_are_not_found_by_any_operation_and_nothing_is_written(home) {
    {
        let mut local = home.store();
        local.add_user("alice").unwrap();
        local.add_user("bob").unwrap();
    }
    let mut alice = as_user(&home, "alice");
    let id = alice.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
    alice.append(&id, &[NewMessage::text(Role::User, "the quokka plan"), NewMessage::text(Role::Assistant, "ok")]).unwrap();
    alice.pin(&id, 1, |_, _| Ok(())).unwrap();
    assert_eq!(alice.list_sessions(&Default::default()).unwrap().len(), 1);

    let mut bob = as_user(&home, "bob");
    assert!(bob.list_sessions(&Default::default()).unwrap().is_empty(), "bob lists none of alice's sessions");
    assert!(bob.latest_session("/p").unwrap().is_none());
    let not_found = |r: Result<(), seshat::store::Error>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(code(&e), "session_not_found", "{what}: {e}");
    };
    not_found(bob.session(&id).map(drop), "session");
    not_found(bob.resolve(&id[..10]).map(drop), "resolve");
    not_found(bob.live_view(&id).map(drop), "live view");
    not_found(bob.full_history(&id).map(drop), "full history");
    not_found(bob.message(&id, 1).map(drop), "message");
    not_found(bob.history_range(&id, 1, 2).map(drop), "history range");
    not_found(bob.compactions(&id).map(drop), "compactions");
    not_found(bob.trims(&id).map(drop), "trims");
    not_found(bob.pins(&id).map(drop), "pins");
    not_found(bob.retractions(&id).map(drop), "retractions");
    not_found(bob.live_rewinds(&id).map(drop), "rewinds");
    not_found(bob.forks(&id).map(drop), "forks");
    not_found(bob.export(&id, &mut Vec::new()), "export");
    not_found(bob.search_history(HistoryScope::Session(&id), "quokka", 5).map(drop), "search one session");
    not_found(bob.append(&id, &[NewMessage::text(Role::User, "bob was here")]).map(drop), "append");
    not_found(bob.fork(&id, None, None).map(drop), "fork");
    not_found(bob.rewind(&id, 2, |_| Ok(())).map(drop), "rewind");
    not_found(bob.pin(&id, 2, |_, _| Ok(())).map(drop), "pin");
    not_found(bob.unpin(&id, 1).map(drop), "unpin");
    not_found(bob.retract_latest(&id, |_| Ok(())).map(drop), "undo");
    not_found(bob.record_trims(&id, &[(2, 0, "x".into())]).map(drop), "trims");
    not_found(bob.set_compaction_state(&id, 3, true), "compaction state");
    not_found(bob.delete_session(&id), "delete");
    // Searches across sessions find none of alice's messages.
    assert!(bob.search_history(HistoryScope::All, "quokka", 5).unwrap().is_empty());
    assert!(bob.search_history(HistoryScope::Project("/p"), "quokka", 5).unwrap().is_empty());
    // The local user is another user too.
    assert!(home.store().search_history(HistoryScope::All, "quokka", 5).unwrap().is_empty());
    assert!(home.store().list_sessions(&Default::default()).unwrap().is_empty());

    // Alice's session is as she left it.
    let alice = as_user(&home, "alice");
    let info = alice.session(&id).unwrap();
    assert_eq!((info.message_count, info.compaction_failures, info.auto_compact_disabled), (2, 0, false));
    assert_eq!(alice.pins(&id).unwrap(), [1]);
    assert!(alice.live_rewinds(&id).unwrap().is_empty() && alice.trims(&id).unwrap().is_empty());
    let hits = alice.search_history(HistoryScope::All, "quokka", 5).unwrap();
    assert_eq!(hits.iter().map(|h| (h.session_id.as_str(), h.seq)).collect::<Vec<_>>(), [(id.as_str(), 1)]);
    assert_eq!(home.sql_value("SELECT count(*) FROM sessions", "SELECT count(*) FROM sessions"), 1);
}
}

on_both_backends! {
fn each_user_has_their_own_memory_under_the_same_names(home) {
    {
        let mut local = home.store();
        local.add_user("alice").unwrap();
        local.add_user("bob").unwrap();
    }
    let mut alice = as_user(&home, "alice");
    let mut bob = as_user(&home, "bob");
    for (store, fact) in [(&mut alice, "prefers tabs"), (&mut bob, "prefers spaces")] {
        let mut m = store.memory(Some("/p"));
        m.create_entities(&[entity("Editor", fact)], Some(&Scope::User)).unwrap();
        m.create_entities(&[entity("Build", fact)], Some(&Scope::Project)).unwrap();
        m.set_note(Scope::Cross, "style", fact).unwrap();
    }
    let graph = alice.memory(Some("/p")).open_nodes(&["Editor".into(), "Build".into()], None).unwrap();
    let facts: Vec<&str> = graph.entities.iter().flat_map(|e| e.observations.iter().map(String::as_str)).collect();
    assert_eq!(facts, ["prefers tabs", "prefers tabs"], "alice reads only her own entities");
    assert_eq!(found(&mut bob, "tabs", None), Vec::<String>::new(), "bob finds nothing of alice's");
    assert_eq!(found(&mut bob, "spaces", None), ["Build", "Editor"]);
    let notes = bob.memory(Some("/p")).notes(&Scope::Cross).unwrap();
    assert_eq!(notes.iter().map(|n| n.value.as_str()).collect::<Vec<_>>(), ["prefers spaces"]);
    // Bob's deletions touch only his rows, and alice cannot restore them.
    let (deletion, n) = bob.memory(Some("/p")).delete_entities(&["Editor".into()], None).unwrap();
    assert_eq!(n, 1);
    assert_eq!(found(&mut alice, "tabs", None), ["Build", "Editor"]);
    assert!(alice.memory(None).deletions().unwrap().is_empty());
    let e = alice.memory(None).restore(deletion).unwrap_err();
    assert!(matches!(e, seshat::memory::Error::NoSuchDeletion(_)), "{e}");
    bob.memory(None).restore(deletion).unwrap();
    assert_eq!(found(&mut bob, "spaces", None), ["Build", "Editor"]);
    let context = alice.memory(Some("/p")).context(2_000).unwrap();
    assert!(context.text.contains("prefers tabs") && !context.text.contains("spaces"), "{}", context.text);
}
}

on_both_backends! {
fn a_team_scope_is_read_and_written_only_through_its_grants(home) {
    {
        let mut local = home.store();
        local.add_user("alice").unwrap();
        local.add_user("bob").unwrap();
    }
    let team = Scope::Team("infra".into());
    let mut alice = as_user(&home, "alice");
    alice.create_team("infra").unwrap();
    alice.memory(Some("/p")).create_entities(&[entity("Deploy", "blue-green on fridays")], Some(&team)).unwrap();
    alice.memory(None).set_note(team.clone(), "oncall", "alice").unwrap();
    assert_eq!(found(&mut alice, "fridays", None), ["Deploy"], "a member's searches cover the team");

    // Not a member: not found, not readable by name, not writable.
    let mut bob = as_user(&home, "bob");
    assert!(found(&mut bob, "fridays", None).is_empty());
    let e = bob.memory(None).search("fridays", Some(&team), 5).unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
    let e = bob.memory(None).create_entities(&[entity("Deploy", "bob's idea")], Some(&team)).unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
    let e = bob.grant("infra", "bob", Access::Write).unwrap_err();
    assert_eq!(code(&e), "scope_denied", "a non-member cannot grant himself: {e}");

    // Read-only: found and read, but writes are refused and write nothing.
    alice.grant("infra", "bob", Access::Read).unwrap();
    assert_eq!(found(&mut bob, "fridays", None), ["Deploy"]);
    assert_eq!(found(&mut bob, "fridays", Some(&team)), ["Deploy"]);
    let notes = bob.memory(None).notes(&team).unwrap();
    assert_eq!(notes.iter().map(|n| (n.key.as_str(), n.value.as_str())).collect::<Vec<_>>(), [("oncall", "alice")]);
    assert!(bob.memory(Some("/p")).context(2_000).unwrap().text.contains("## Team infra"));
    let e = bob.memory(None).add_observations(&[("Deploy".into(), vec!["bob's idea".into()])], Some(&team)).unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
    let e = bob.memory(None).set_note(team.clone(), "oncall", "bob").unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
    // Unnamed, a change looks only where the user may write: the team's entity is not found.
    let e = bob.memory(None).add_observations(&[("Deploy".into(), vec!["bob's idea".into()])], None).unwrap_err();
    assert!(matches!(e, seshat::memory::Error::EntityNotFound(_)), "{e}");
    let (_, removed) = bob.memory(None).delete_entities(&["Deploy".into()], None).unwrap();
    assert_eq!(removed, 0);
    let graph = alice.memory(None).open_nodes(&["Deploy".into()], Some(&team)).unwrap();
    assert_eq!(graph.entities[0].observations, ["blue-green on fridays"], "nothing bob tried was written");
    assert_eq!(graph.entities[0].scope, team);

    // Read-write: bob writes; revoked, he sees nothing again.
    alice.grant("infra", "bob", Access::Write).unwrap();
    bob.memory(None).add_observations(&[("Deploy".into(), vec!["canary first".into()])], Some(&team)).unwrap();
    assert_eq!(found(&mut alice, "canary", None), ["Deploy"]);
    let grants: Vec<(String, Access)> = alice.grants().unwrap().into_iter().map(|g| (g.user, g.access)).collect();
    assert_eq!(grants, [("alice".to_string(), Access::Write), ("bob".to_string(), Access::Write)]);
    // Bob deletes the team's entity while he may write, then is made read-only: restoring his
    // own deletion would write to the team, so it is refused and restores nothing.
    alice.memory(None).create_entities(&[entity("Runbook", "page the oncall")], Some(&team)).unwrap();
    let (_, removed) = bob.memory(None).delete_entities(&["Runbook".into()], Some(&team)).unwrap();
    assert_eq!(removed, 1);
    let deletion = bob.memory(None).deletions().unwrap()[0].id;
    alice.grant("infra", "bob", Access::Read).unwrap();
    let e = bob.memory(None).restore(deletion).unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
    assert!(alice.memory(None).open_nodes(&["Runbook".into()], Some(&team)).unwrap().entities.is_empty());
    alice.grant("infra", "bob", Access::Write).unwrap();
    bob.memory(None).restore(deletion).unwrap();
    assert_eq!(alice.memory(None).open_nodes(&["Runbook".into()], Some(&team)).unwrap().entities.len(), 1);

    assert!(alice.revoke("infra", "bob").unwrap());
    assert!(found(&mut bob, "canary", None).is_empty());
    let e = bob.memory(None).notes(&team).unwrap_err();
    assert_eq!(memory_code(&e), "scope_denied", "{e}");
}
}

on_both_backends! {
fn documents_belong_to_their_owner_or_their_team(home) {
    {
        let mut local = home.store();
        local.add_user("alice").unwrap();
        local.add_user("bob").unwrap();
    }
    let doc = |scope: Scope, path: &str| NewDocument {
        project: if scope == Scope::Project { "/p".into() } else { String::new() },
        scope,
        path: path.into(),
        kind: "markdown".into(),
        sha256: "00".repeat(32),
        bytes: 20,
    };
    let chunk = |text: &str| NewChunk { start_line: 1, end_line: 1, heading: String::new(), text: text.into(), tokens: 4 };
    let team = Scope::Team("docs".into());
    let mut alice = as_user(&home, "alice");
    alice.create_team("docs").unwrap();
    alice.knowledge_put(&doc(Scope::Project, "/p/own.md"), &[chunk("zephyr runbook")]).unwrap();
    let shared = alice.knowledge_put(&doc(team.clone(), "/handbook.md"), &[chunk("zephyr handbook")]).unwrap();
    let filter = KnowledgeFilter { project: "/p", scope: None };
    let paths = |store: &Store| -> Vec<String> {
        store.knowledge_search(filter, "zephyr", 10).unwrap().into_iter().map(|h| h.path).collect()
    };
    assert_eq!(paths(&alice).len(), 2);
    let mut bob = as_user(&home, "bob");
    assert!(paths(&bob).is_empty(), "same project key, another user: nothing");
    assert!(bob.knowledge_documents(filter).unwrap().is_empty());
    let e = bob.knowledge_put(&doc(team.clone(), "/bob.md"), &[chunk("zephyr by bob")]).unwrap_err();
    assert_eq!(code(&e), "scope_denied", "{e}");
    assert_eq!(bob.knowledge_remove(&[shared]).unwrap(), 0);
    alice.grant("docs", "bob", Access::Read).unwrap();
    assert_eq!(paths(&bob), ["/handbook.md"]);
    let listed = bob.knowledge_documents(KnowledgeFilter { project: "/p", scope: Some(&team) }).unwrap();
    assert_eq!(listed.iter().map(|d| (d.path.as_str(), &d.scope)).collect::<Vec<_>>(), [("/handbook.md", &team)]);
    assert_eq!(bob.knowledge_remove(&[shared]).unwrap(), 0, "read-only access removes nothing");
    assert_eq!(alice.knowledge_remove(&[shared]).unwrap(), 1);
}
}

on_both_backends! {
fn user_and_team_names_are_checked(home) {
    let mut store = home.store();
    for bad in ["", "has space", "-dash", "ünï", &"x".repeat(65), "a:b"] {
        let e = store.add_user(bad).unwrap_err();
        assert_eq!(code(&e), "invalid_principal", "{bad:?}: {e}");
        let e = store.create_team(bad).unwrap_err();
        assert_eq!(code(&e), "invalid_principal", "{bad:?}: {e}");
    }
    store.add_user("carol").unwrap();
    let e = store.add_user("carol").unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(store.users().unwrap(), ["carol", "local"]);
    assert_eq!(Scope::parse("team:ops.eu-1"), Some(Scope::Team("ops.eu-1".into())));
    assert_eq!(Scope::parse("team:"), None);
    assert_eq!(serde_json::to_string(&Scope::Team("ops".into())).unwrap(), "\"team:ops\"");
}
}
