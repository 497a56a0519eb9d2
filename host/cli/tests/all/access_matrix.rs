//! Every method of the network service against every relation a caller can have to what it
//! touches: the owner, the owner through a read-only token, another user, a team member with
//! read access, with write access, a user whose grant was revoked, and a revoked token. What each
//! must get is derived from the method's access rule as the protocol declares it
//! (`methods::access`), so a method added without a case here fails this test, and a rule the
//! server does not enforce fails it too.

use serde_json::{Value, json};
use seshat_protocol::methods::{Access, CLIENT_METHODS};

use crate::chat::home_for;
use crate::network::{Client, Service, refusal, token};
use crate::support::server::{Reply, Server, openai};

/// What a method's params point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Nothing of anyone's: the caller's own, or the connection.
    Own,
    /// One of alice's sessions (a fresh one per call).
    Session,
    /// Alice's memory deletion.
    Deletion,
    /// The team scope `team:ops`.
    Team,
    /// A chunk of a document in the team scope.
    Chunk,
    /// Users and tokens: an admin's.
    Admin,
}

/// The callers, by their relation to alice's objects and to `team:ops`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// Alice: owns the sessions and the deletion, writes the team, is an admin.
    Owner,
    /// Alice through a read-only token.
    OwnerReadOnly,
    /// Bob: another user, not in the team.
    Other,
    /// Carol: the team granted read-only.
    TeamRead,
    /// Dave: the team granted read-write.
    TeamWrite,
    /// Erin: had write access, revoked.
    Revoked,
}

const EVERYONE: [Who; 6] = [Who::Owner, Who::OwnerReadOnly, Who::Other, Who::TeamRead, Who::TeamWrite, Who::Revoked];

/// The case of one method: what it targets and its params.
fn case(method: &str, ids: &Ids) -> Option<(Target, Value)> {
    let s = &ids.session;
    let team = "team:ops";
    let message = json!([{"role": "user", "parts": [{"type": "text", "text": "more"}]}]);
    Some(match method {
        "initialize" => (Target::Own, json!({"model": "gpt-4o"})),
        "config/get" => (Target::Own, json!({})),
        "session/new" => (Target::Own, json!({})),
        "session/list" => (Target::Own, json!({"all": true})),
        "session/get" => (Target::Session, json!({"session": s, "full": true})),
        "session/delete" => (Target::Session, json!({"session": s})),
        "turn/start" => (Target::Session, json!({"session": s, "text": "hello"})),
        "turn/interrupt" => (Target::Session, json!({"session": s})),
        "session/compact" => (Target::Session, json!({"session": s, "dry_run": true})),
        "session/fork" => (Target::Session, json!({"session": s})),
        "session/rewind" => (Target::Session, json!({"session": s, "last": 1})),
        "session/export" => (Target::Session, json!({"session": s})),
        "session/append" => (Target::Session, json!({"session": s, "messages": message})),
        "session/pins" => (Target::Session, json!({"session": s})),
        "session/pin" => (Target::Session, json!({"session": s, "seq": 1})),
        "session/unpin" => (Target::Session, json!({"session": s, "seq": 1})),
        "session/import" => (Target::Own, json!({"jsonl": ids.export, "new_id": true})),
        "session/bring_in" => (
            Target::Own,
            json!({"tool": "codex", "source_id": "matrix", "file": "/rollout.jsonl", "project": "/p", "items": []}),
        ),
        "history/search" => (Target::Own, json!({"query": "secret", "all": true})),
        "notes/set" => (Target::Team, json!({"key": "k", "value": "v", "scope": team})),
        "notes/list" => (Target::Team, json!({"scope": team})),
        "notes/search" => (Target::Team, json!({"query": "oncall", "scope": team})),
        "memory/context" => (Target::Own, json!({})),
        "memory/deletions" => (Target::Own, json!({})),
        "memory/restore" => (Target::Deletion, json!({"id": ids.deletion})),
        "memory/clear" => (Target::Team, json!({"scope": team})),
        "memory/history" => (Target::Team, json!({"scope": team, "name": "Runbook"})),
        "memory/revert" => (Target::Team, json!({"scope": team, "name": "Runbook", "to": 1})),
        // Only ever the caller's own writes.
        "memory/undo" => (Target::Own, json!({"session": "01JNOSUCHSESSION0000000000"})),
        // The caller's own and their teams' (a reviewer's); deciding one no one proposed is
        // `proposal_not_found`, not a denial.
        "memory/proposals" => (Target::Own, json!({"all": true})),
        "memory/approve" => (Target::Own, json!({"id": 999_999})),
        "memory/reject" => (Target::Own, json!({"id": 999_999, "reason": "no"})),
        "scopes/review" => (Target::Team, json!({"team": "ops", "required": false})),
        "knowledge/search" => (Target::Own, json!({"query": "kestrel"})),
        "knowledge/read" => (Target::Chunk, json!({"id": ids.chunk})),
        "knowledge/add" => {
            (Target::Team, json!({"scope": team, "documents": [{"path": "/notes/ops.md", "text": "# Ops\nkestrel"}]}))
        }
        // Each call acts on a user, a token and a team of its own, made for it.
        "users/list" => (Target::Admin, json!({})),
        "users/add" => (Target::Admin, json!({"name": format!("{}-added", ids.user)})),
        "users/set" => (Target::Admin, json!({"name": ids.user, "disabled": true})),
        "users/rename" => (Target::Admin, json!({"name": ids.user, "new_name": format!("{}-renamed", ids.user)})),
        "users/remove" => (Target::Admin, json!({"name": ids.user})),
        "tokens/list" => (Target::Admin, json!({})),
        "tokens/create" => (Target::Admin, json!({"user": ids.user})),
        "tokens/rotate" => (Target::Admin, json!({"id": ids.token})),
        "tokens/revoke" => (Target::Admin, json!({"id": ids.token})),
        "scopes/list" => (Target::Own, json!({})),
        "scopes/create" => (Target::Own, json!({"team": format!("{}-team", ids.user)})),
        "scopes/grant" => (Target::Team, json!({"team": "ops", "user": ids.user, "access": "read"})),
        "scopes/revoke" => (Target::Team, json!({"team": "ops", "user": ids.user})),
        "memory/create_entities" => {
            (Target::Team, json!({"scope": team, "entities": [{"name": "New", "entityType": "t", "observations": []}]}))
        }
        "memory/create_relations" => (
            Target::Team,
            json!({"scope": team, "relations": [{"from": "Runbook", "to": "Runbook", "relationType": "is"}]}),
        ),
        "memory/add_observations" => {
            (Target::Team, json!({"scope": team, "observations": [{"entityName": "Runbook", "contents": ["more"]}]}))
        }
        // A name the team does not have: refused all the same, so nobody probes a team they cannot
        // read for its names.
        "memory/delete_entities" => (Target::Team, json!({"scope": team, "entityNames": ["Nothing"]})),
        "memory/delete_observations" => {
            (Target::Team, json!({"scope": team, "deletions": [{"entityName": "Runbook", "observations": ["page"]}]}))
        }
        "memory/delete_relations" => {
            (Target::Team, json!({"scope": team, "relations": [{"from": "A", "to": "B", "relationType": "c"}]}))
        }
        "memory/read_graph" => (Target::Team, json!({"scope": team})),
        "memory/search_nodes" => (Target::Team, json!({"scope": team, "query": "runbook"})),
        "memory/open_nodes" => (Target::Team, json!({"scope": team, "names": ["Runbook"]})),
        _ => return None,
    })
}

/// What the targets' ids are for one call.
struct Ids {
    session: String,
    export: String,
    deletion: i64,
    chunk: Value,
    /// A user made for this call.
    user: String,
    /// The id of a token of theirs.
    token: String,
}

/// The codes that say access was refused (or that the object is not the caller's to see).
const DENIALS: &[&str] =
    &["session_not_found", "scope_denied", "read_only_token", "chunk_not_found", "memory_failed", "admin_only"];

/// The code `who` must get calling a method with rule `access` on `target`; `None`: allowed (an
/// answer, or an error that is not a denial).
fn expected(access: Access, target: Target, who: Who) -> Option<&'static str> {
    if who == Who::OwnerReadOnly && access.writes() {
        return Some("read_only_token");
    }
    let alices = matches!(who, Who::Owner | Who::OwnerReadOnly);
    match target {
        Target::Own => None,
        Target::Session if alices => None,
        Target::Session => Some("session_not_found"),
        Target::Deletion if alices => None,
        Target::Deletion => Some("memory_failed"),
        Target::Admin if alices => None,
        Target::Admin => Some("admin_only"),
        Target::Team | Target::Chunk => match who {
            Who::Owner | Who::OwnerReadOnly | Who::TeamWrite => None,
            Who::TeamRead if !access.writes() => None,
            Who::TeamRead => Some("scope_denied"),
            Who::Other | Who::Revoked if target == Target::Chunk => Some("chunk_not_found"),
            Who::Other | Who::Revoked => Some("scope_denied"),
        },
    }
}

#[test]
fn every_method_gets_what_its_declared_rule_says_for_every_relation() {
    let server = Server::route(|_| Reply::Stream { pieces: openai::text_answer(&["Fine."], true) });
    let home = home_for("openai", &server, "");
    let tokens: Vec<(Who, String)> = vec![
        (Who::Owner, token(&home, "alice", &[])),
        (Who::OwnerReadOnly, token(&home, "alice", &["--read-only"])),
        (Who::Other, token(&home, "bob", &[])),
        (Who::TeamRead, token(&home, "carol", &[])),
        (Who::TeamWrite, token(&home, "dave", &[])),
        (Who::Revoked, token(&home, "erin", &[])),
    ];
    let revoked_token = token(&home, "alice", &[]);
    home.ok(&["tokens", "revoke", revoked_token.split('_').nth(1).unwrap()]);
    home.ok(&["users", "admin", "alice"]);
    home.ok(&["scopes", "create", "ops"]);
    for (user, access) in [("alice", "write"), ("carol", "read"), ("dave", "write"), ("erin", "write")] {
        let mut args = vec!["scopes", "grant", "ops", user];
        if access == "read" {
            args.push("--read-only");
        }
        home.ok(&args);
    }
    home.ok(&["scopes", "revoke", "ops", "erin"]);
    let doc = home.path().join("runbook.md");
    std::fs::write(&doc, "# Deploys\n\nThe kestrel cluster deploys on Tuesdays.\n").unwrap();
    home.ok(&["knowledge", "add", "--scope", "team:ops", doc.to_str().unwrap()]);
    let service = Service::start(&home, "ws", &[]);
    assert_eq!(refusal(service.connect(Some(&revoked_token), None)).1, "token_revoked");
    let mut clients: Vec<(Who, Client)> = tokens.iter().map(|(who, t)| (*who, service.client(t))).collect();
    let alice = &mut clients[0].1;
    alice.ok("notes/set", json!({"key": "oncall", "value": "alice", "scope": "team:ops"}));
    alice.ok(
        "memory/create_entities",
        json!({"scope": "team:ops", "entities": [{"name": "Runbook", "entityType": "doc", "observations": ["page"]}]}),
    );
    alice.ok(
        "memory/create_entities",
        json!({"entities": [{"name": "Mine", "entityType": "t", "observations": ["x"]}]}),
    );
    alice.ok("memory/delete_entities", json!({"entityNames": ["Mine"]}));
    let deletion = alice.ok("memory/deletions", json!({}))["deletions"][0]["id"].as_i64().unwrap();
    let chunk = alice.ok("knowledge/search", json!({"query": "kestrel"}))["hits"][0]["id"].clone();

    let methods: Vec<(String, Access)> = CLIENT_METHODS.iter().map(|(m, a)| (m.to_string(), *a)).collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (method, access) in &methods {
        for who in EVERYONE {
            // A fresh session of alice's with a secret in it, for each call: writes may change it.
            let mut store = home.store().acting_for("alice");
            let session = store
                .create_session(seshat::store::NewSession { project: "/p".into(), ..Default::default() })
                .unwrap()
                .id;
            store
                .append(
                    &session,
                    &[
                        seshat::conversation::NewMessage::text(seshat::conversation::Role::User, "the secret word"),
                        seshat::conversation::NewMessage::text(seshat::conversation::Role::Assistant, "noted"),
                    ],
                )
                .unwrap();
            let mut export = Vec::new();
            store.export(&session, &mut export).unwrap();
            let user = format!("u{checked}");
            let mut operator = home.store();
            operator.add_user(&user).unwrap();
            let made = operator.create_token(&user, false, None).unwrap();
            let ids = Ids {
                session: session.clone(),
                export: String::from_utf8(export).unwrap(),
                deletion,
                chunk: chunk.clone(),
                user,
                token: made.info.id,
            };
            let Some((target, params)) = case(method, &ids) else {
                panic!("{method} has no case in this test: add one (what it targets and its params)");
            };
            if target == Target::Team {
                // What the team's calls name is there, whatever an earlier call (a clear) did.
                let alice = &mut clients[0].1;
                let runbook = json!({"scope": "team:ops", "entities": [{"name": "Runbook", "entityType": "doc", "observations": ["page"]}]});
                alice.ok("memory/create_entities", runbook);
            }
            let client = &mut clients.iter_mut().find(|(w, _)| *w == who).unwrap().1;
            let answer = client.call(method, params);
            let code = answer["error"]["data"]["code"].as_str().map(str::to_string);
            let want = expected(*access, target, who);
            let ok = match (want, code.as_deref()) {
                (Some(w), got) => got == Some(w),
                (None, Some(got)) => !DENIALS.contains(&got),
                (None, None) => true,
            };
            if !ok {
                let answer: String = answer.to_string().chars().take(300).collect();
                wrong.push(format!("{method} as {who:?}: want {want:?}, got {answer}"));
            }
            // Nothing of alice's leaks to another user through an answer.
            if !matches!(who, Who::Owner | Who::OwnerReadOnly) && answer.to_string().contains("the secret word") {
                wrong.push(format!("{method} as {who:?} showed alice's session: {answer}"));
            }
            if let Some(turn) = answer["result"]["turn"].as_u64() {
                client.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
            }
            checked += 1;
        }
    }
    assert_eq!(wrong, Vec::<String>::new(), "{} of {checked} calls", wrong.len());
    assert!(checked >= 49 * 6, "{checked}");
}
