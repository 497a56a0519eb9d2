//! Access on the network service is live, and users are managed: a revoked or expired token, a
//! disabled or removed user ends the connections already open with it (told why, closed 1008,
//! its turn stored as interrupted) while others go on; names are one user whatever their case;
//! admins manage, the operator cannot be locked out; tokens rotate and show their last use.

use std::time::Duration;

use serde_json::{Value, json};

use crate::chat::home_for;
use crate::network::{Service, refusal, token};
use crate::support::server::{Reply, Server, openai};
use crate::support::{Home, text_of};

/// The id part of a token (`seshat_<id>_<secret>`).
fn id_of(token: &str) -> &str {
    token.split('_').nth(1).unwrap()
}

/// The `access/revoked` notice among `seen`, and its code.
fn revoked_code(seen: &[Value]) -> Option<String> {
    seen.iter().find(|v| v["method"] == "access/revoked").and_then(|v| v["params"]["code"].as_str().map(String::from))
}

crate::on_both_backends! {
/// Revoking a token ends the connection open with it — told why, closed with 1008 — and stores
/// its running turn as interrupted; a connection with another token goes on. Disabling a user
/// ends theirs; enabled again, the same token connects.
fn a_revoked_token_or_a_disabled_user_ends_the_connections_open_with_it(home) {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![Reply::Stall { pieces, pause: Duration::from_secs(60) }]);
    let config = std::fs::read_to_string(home_for("openai", &server, "").path().join("config.toml")).unwrap();
    std::fs::write(home.path().join("config.toml"), config.replace("idle_timeout_secs = 1\n", "idle_timeout_secs = 60\n")).unwrap();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    let mut idle = service.client(&alice);
    let mut b = service.client(&bob);
    let session = a.new_session();
    a.ok("turn/start", json!({"session": session, "text": "go"}));
    a.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    home.ok(&["tokens", "revoke", id_of(&alice)]);
    for c in [&mut a, &mut idle] {
        let (seen, closed) = c.until_closed();
        assert_eq!(revoked_code(&seen).as_deref(), Some("token_revoked"), "{seen:?}");
        assert_eq!(closed.map(|(code, _)| code), Some(1008), "{seen:?}");
    }
    // The turn it was running is stored as it stood, interrupted.
    let stored = || home.store().acting_for("alice").full_history(&session).unwrap();
    crate::support::wait_for("the interrupted answer", || stored().len() == 2);
    assert_eq!(stored()[1].status, seshat::conversation::MessageStatus::Interrupted);
    assert_eq!(text_of(&stored()[1]), "Partial answer");
    // Bob's connection is untouched; then bob is disabled, and enabled again.
    assert_eq!(b.ok("session/list", json!({}))["sessions"], json!([]));
    home.ok(&["users", "disable", "BOB"]);
    let (seen, closed) = b.until_closed();
    assert_eq!((revoked_code(&seen).as_deref(), closed.map(|(c, _)| c)), (Some("user_disabled"), Some(1008)));
    assert_eq!(refusal(service.connect(Some(&bob), None)).1, "user_disabled");
    home.ok(&["users", "enable", "bob"]);
    let mut b = service.client(&bob);
    assert_eq!(b.ok("session/list", json!({}))["sessions"], json!([]));
    assert_eq!(refusal(service.connect(Some(&alice), None)).1, "token_revoked");
}
}

crate::on_both_backends! {
/// A token whose expiry passes while its connection is open ends that connection; removing a
/// user ends theirs and their token is unknown after.
fn an_expiry_that_passes_and_a_removed_user_end_open_connections(home) {
    let soon = token(&home, "carol", &["--expires", "5s"]);
    let dana = token(&home, "dana", &[]);
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&soon);
    let mut d = service.client(&dana);
    let (seen, closed) = c.until_closed();
    assert_eq!((revoked_code(&seen).as_deref(), closed.map(|(c, _)| c)), (Some("token_expired"), Some(1008)));
    home.ok(&["users", "remove", "dana"]);
    let (seen, closed) = d.until_closed();
    assert_eq!((revoked_code(&seen).as_deref(), closed.map(|(c, _)| c)), (Some("token_invalid"), Some(1008)));
    assert_eq!(refusal(service.connect(Some(&dana), None)).1, "token_invalid");
}
}

crate::on_both_backends! {
/// Users: names are one whatever their case; the operator gets no network token unless asked
/// for one and can be neither disabled nor removed; a user who owns things is removed only with
/// `--purge`; a rename keeps their token working; only admins manage.
fn users_are_managed_by_admins_and_the_operator_is_never_locked_out(home) {
    home.ok(&["users", "add", "alice"]);
    for taken in ["Alice", "ALICE"] {
        let err = home.fails(&["users", "add", taken]);
        assert!(err.contains("a user named `alice` already exists"), "{err}");
    }
    let err = home.fails(&["tokens", "create", "--user", "local"]);
    assert!(err.contains("the store's operator"), "{err}");
    let made: Value = serde_json::from_str(&home.ok(&["tokens", "create", "--user", "local", "--operator", "--json"])).unwrap();
    assert_eq!(made["user"], "local", "{made}");
    assert!(made["token"].as_str().unwrap().starts_with("seshat_"), "{made}");
    for act in [&["users", "disable", "local"][..], &["users", "remove", "local"], &["users", "admin", "local", "--off"]] {
        let err = home.fails(act);
        assert!(err.contains("is the store's operator"), "{act:?}: {err}");
    }
    // Alice owns a session: removing her needs --purge.
    let alice_token = token(&home, "alice", &[]);
    let mut store = home.store().acting_for("alice");
    let session = store.create_session(seshat::store::NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;
    let err = home.fails(&["users", "remove", "alice"]);
    assert!(err.contains("alice owns 1 sessions") && err.contains("nothing was changed"), "{err}");
    // Renamed, her token still works and her session is hers under the new name.
    home.ok(&["users", "rename", "alice", "alicia"]);
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice_token);
    assert_eq!(c.ok("session/list", json!({"all": true}))["sessions"][0]["id"], session.as_str());
    drop(c);
    let users: Value = serde_json::from_str(&home.ok(&["users", "list", "--json"])).unwrap();
    let names: Vec<&str> = users.as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alicia", "local"], "{users}");
    assert_eq!(users[1]["admin"], true, "the operator is an admin: {users}");
    // Only admins manage: alicia cannot add a user until she is made an admin.
    let mut alicia = home.store().acting_for("alicia");
    assert!(alicia.add_user("eve").unwrap_err().to_string().contains("only an admin may"));
    home.ok(&["users", "admin", "alicia"]);
    alicia.add_user("eve").unwrap();
    // A team whose every writer left is still managed by the operator.
    home.ok(&["scopes", "create", "platform"]);
    let revoke = "DELETE FROM team_members WHERE team = 'platform'";
    home.sql(revoke, revoke).unwrap();
    home.ok(&["scopes", "grant", "platform", "eve"]);
    let removed: String = home.ok(&["users", "remove", "alicia", "--purge"]);
    assert!(removed.contains("1 sessions"), "{removed}");
    assert!(home.store().acting_for("alicia").session(&session).is_err(), "purged");
}
}

/// A rotated token is refused and its successor works; the listing shows when each was last
/// used.
#[test]
fn a_rotated_token_is_replaced_and_the_listing_shows_last_use() {
    let home = Home::new();
    let old = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    drop(service.client(&old));
    let out = home.run(&["tokens", "rotate", id_of(&old), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rotated: Value = serde_json::from_slice(&out.stdout).unwrap();
    let new = rotated["token"].as_str().unwrap();
    assert_eq!(refusal(service.connect(Some(&old), None)).1, "token_revoked");
    drop(service.client(new));
    let listed: Value = serde_json::from_str(&home.ok(&["tokens", "list", "--json"])).unwrap();
    let used: Vec<bool> = listed.as_array().unwrap().iter().map(|t| t["last_used_at"].is_i64()).collect();
    assert_eq!(used, [true, true], "{listed}");
    let table = home.ok(&["tokens", "list"]);
    assert!(table.contains("LAST USED"), "{table}");
}

/// An error a network client is told names none of the server's places: a claim that fails on
/// the server's disk is reported without its path.
#[test]
fn a_network_clients_errors_name_no_server_path() {
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice);
    let session = c.new_session();
    // The claims' directory cannot be made: a file is in its place.
    let claims = home.path().join("seshat.db.claims");
    let _ = std::fs::remove_dir_all(&claims);
    std::fs::write(&claims, "not a directory").unwrap();
    let answer = c.call("turn/start", json!({"session": session, "text": "hi"}));
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("not refused: {answer}"));
    let home_path = home.path().display().to_string();
    assert!(!message.contains(&home_path), "{message}");
    assert!(message.contains("the server's"), "{message}");
}

/// Two users clearing their memory at the same moments never pick the same backup file.
#[test]
fn memory_clears_at_once_never_collide_on_their_backups() {
    let home = Home::new();
    home.ok(&["users", "add", "alice"]);
    home.ok(&["users", "add", "bob"]);
    let backups = home.path().join("backups");
    let failures: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = ["alice", "bob"]
            .into_iter()
            .map(|user| {
                let (home, backups) = (&home, &backups);
                s.spawn(move || {
                    let mut store = home.store().acting_for(user);
                    let mut failed = Vec::new();
                    for i in 0..100 {
                        let note = store.memory(None).set_note(seshat::memory::Scope::User, "k", &format!("{i}"));
                        let cleared =
                            note.and_then(|_| store.memory(None).clear(&seshat::memory::Scope::User, backups));
                        if let Err(e) = cleared {
                            failed.push(format!("{user} #{i}: {e}"));
                        }
                    }
                    failed
                })
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(std::fs::read_dir(&backups).unwrap().count(), 200, "one backup per clear");
}

/// The edge's hygiene: one `Authorization` header, its scheme in any case; a text frame that is
/// not UTF-8 closes with 1007; a TLS key others can read is warned about.
#[test]
fn the_edge_takes_one_authorization_any_scheme_case_and_closes_bad_frames_with_their_code() {
    use std::io::Write as _;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    let authority = crate::support::tls::Authority::new();
    let (cert, key) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let tls = Service::start(&home, "wss", &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    crate::support::wait_for("the key's warning", || tls.logged(&["can be read by other users", "chmod 600"]));
    drop(tls);

    let service = Service::start(&home, "ws", &[]);
    // The upgrade's HTTP status with these `Authorization` headers (101: switched).
    let status = |headers: &[String]| -> u16 {
        let mut request = service.url.as_str().into_client_request().unwrap();
        for h in headers {
            request.headers_mut().append("Authorization", h.parse().unwrap());
        }
        let tcp = std::net::TcpStream::connect(("127.0.0.1", service.port)).unwrap();
        match tokio_tungstenite::tungstenite::client::client(request, tcp) {
            Ok(_) => 101,
            Err(tokio_tungstenite::tungstenite::HandshakeError::Failure(
                tokio_tungstenite::tungstenite::Error::Http(r),
            )) => r.status().as_u16(),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(status(&[format!("BEARER {alice}")]), 101, "the scheme in capitals");
    assert_eq!(status(&[format!("bearer {alice}")]), 101);
    assert_eq!(status(&[format!("Bearer {alice}"), format!("Bearer {alice}")]), 400, "two headers");

    let mut c = service.client(&alice);
    // A masked text frame whose payload is not UTF-8.
    let (mask, payload) = ([1u8, 2, 3, 4], [0xffu8, 0xfe, 0xfd]);
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend(mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    c.ws.get_mut().write_all(&frame).unwrap();
    let (_, closed) = c.until_closed();
    assert_eq!(closed.map(|(code, _)| code), Some(1007));
}

/// How many of `sockets` the server closed (an end or a reset), read at once, each for `wait` at
/// most: a read that times out found its socket open.
fn closed_of(sockets: &mut [std::net::TcpStream], wait: Duration) -> usize {
    use std::io::Read as _;
    std::thread::scope(|scope| {
        let reads: Vec<_> = sockets
            .iter_mut()
            .map(|s| {
                scope.spawn(move || {
                    s.set_read_timeout(Some(wait)).unwrap();
                    let mut buf = [0u8; 64];
                    match s.read(&mut buf) {
                        Ok(0) => true,
                        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                        Ok(_) => false,
                    }
                })
            })
            .collect();
        reads.into_iter().map(|r| r.join().unwrap_or(false)).filter(|closed| *closed).count()
    })
}

/// A TCP connection to the service on 127.0.0.1 from `source` (another loopback address).
fn connect_from(source: &str, port: u16) -> std::net::TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let from: std::net::SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&from.into()).unwrap();
    let to: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    socket.connect(&to.into()).unwrap();
    socket.into()
}

/// Slow sockets that never finish their upgrade take none of the slots of users who prove who
/// they are, and one address gets only so many handshakes at once; one user holds only so many
/// connections, and others go on.
#[test]
fn slow_sockets_and_one_greedy_user_do_not_take_the_service_from_others() {
    use std::io::Write as _;
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[serve]\nmax_connections = 8\nmax_handshakes_per_address = 4\nmax_connections_per_user = 2\n\
         handshake_timeout_secs = 3600\n",
    )
    .unwrap();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    // Thirty half-sent upgrades from 127.0.0.2: four are kept waiting, the rest closed at once.
    let mut slow: Vec<std::net::TcpStream> = (0..30).map(|_| connect_from("127.0.0.2", service.port)).collect();
    for s in &mut slow {
        s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    }
    let closed = closed_of(&mut slow[4..], Duration::from_secs(60));
    assert_eq!(closed, 26, "all but four of one address's handshakes are closed");
    // Real users from 127.0.0.1 are served (the slow ones hold no connection slot); alice gets
    // two connections and no third, bob is not affected.
    let mut a1 = service.client(&alice);
    let _a2 = service.client(&alice);
    assert_eq!(refusal(service.connect(Some(&alice), None)), (503, "too_many_connections".into(), None));
    let mut b = service.client(&bob);
    assert_eq!(b.ok("session/list", json!({}))["sessions"], json!([]));
    assert_eq!(a1.ok("session/list", json!({}))["sessions"], json!([]));
    drop(slow);
}

crate::on_both_backends! {
/// The audit trail: a write names what it made, a refused write and a denied read their code, a
/// refused login its token's id and address, a revocation its token; `seshat audit` lists them by
/// user and time, as JSON Lines or a table.
fn the_audit_trail_holds_writes_refusals_logins_and_revocations(home) {
    let alice = token(&home, "alice", &[]);
    let reader = token(&home, "alice", &["--read-only"]);
    let bob = token(&home, "bob", &[]);
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    let session = a.new_session();
    let mut ro = service.client(&reader);
    assert_eq!(ro.refused("notes/set", json!({"key": "k", "value": "v"})), "read_only_token");
    let mut b = service.client(&bob);
    assert_eq!(b.refused("session/get", json!({"session": session})), "session_not_found");
    let mut wrong = alice.clone();
    wrong.replace_range(wrong.len() - 1.., if wrong.ends_with('0') { "1" } else { "0" });
    assert_eq!(refusal(service.connect(Some(&wrong), None)).1, "token_invalid");
    home.ok(&["tokens", "revoke", id_of(&bob)]);
    let _ = b.until_closed();
    let events = |args: &[&str]| -> Vec<Value> {
        let out = home.ok(&[&["audit", "--json"][..], args].concat());
        out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let all = events(&[]);
    let find = |event: &str| all.iter().find(|e| e["event"] == event).cloned().unwrap_or_else(|| panic!("no {event}: {all:?}"));
    let write = find("write");
    assert_eq!((write["user"].as_str(), write["method"].as_str(), write["target"].as_str()), (Some("alice"), Some("session/new"), Some(session.as_str())));
    assert_eq!(find("refused_write")["code"], "read_only_token");
    let denied = find("denied_read");
    assert_eq!((denied["user"].as_str(), denied["code"].as_str(), denied["target"].as_str()), (Some("bob"), Some("session_not_found"), Some(session.as_str())));
    let login = find("refused_login");
    assert_eq!((login["token"].as_str(), login["code"].as_str()), (Some(id_of(&alice)), Some("token_invalid")));
    assert!(login["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{login}");
    assert!(!all.iter().any(|e| e.to_string().contains(&wrong)), "a token is never in the trail");
    let revoked = find("revoked");
    assert_eq!((revoked["token"].as_str(), revoked["code"].as_str()), (Some(id_of(&bob)), Some("token_revoked")));
    // By user, and by time.
    let alices = events(&["--user", "ALICE"]);
    assert!(!alices.is_empty() && alices.iter().all(|e| e["user"] == "alice"), "{alices:?}");
    assert_eq!(events(&["--since", "2000-01-01T00:00:00Z"]).len(), all.len());
    assert_eq!(events(&["--since", "2100-01-01T00:00:00Z"]), Vec::<Value>::new());
    let table = home.ok(&["audit"]);
    assert!(table.contains("refused_login") && table.contains("session/new"), "{table}");
}
}

/// Importing a session whose id another user has says nothing of it: the import gets an id of
/// its own; the same import by the id's owner is `session_exists`, as ever.
#[test]
fn an_import_under_another_users_id_does_not_reveal_it() {
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    let session = a.new_session();
    a.ok(
        "session/append",
        json!({"session": session, "messages": [{"role": "user", "parts": [{"type": "text", "text": "alice's"}]}]}),
    );
    let export = a.ok("session/export", json!({"session": session}))["jsonl"].as_str().unwrap().to_string();
    let mut b = service.client(&bob);
    let imported = b.ok("session/import", json!({"jsonl": export}));
    let id = imported["id"].as_str().unwrap();
    assert_ne!(id, session, "{imported}");
    assert_eq!(b.ok("session/get", json!({"session": id}))["session"]["id"], id);
    assert_eq!(a.refused("session/import", json!({"jsonl": export})), "session_exists");
    assert_eq!(text_of(&home.store().acting_for("alice").full_history(&session).unwrap()[0]), "alice's");
}

/// One user keeps only so many sessions open at once over all their connections: a connection
/// first closes its own idle one; one with none to close is refused `too_many_sessions`, and
/// another user is not affected.
#[test]
fn one_user_keeps_only_so_many_sessions_open_and_others_go_on() {
    let server = Server::route(|_| Reply::Stream { pieces: openai::text_answer(&["Fine."], true) });
    let home = home_for("openai", &server, "[serve]\nmax_sessions_per_user = 2\n");
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let turn = |c: &mut crate::network::Client, session: &str| -> Value {
        let started = c.call("turn/start", json!({"session": session, "text": "hi"}));
        if let Some(turn) = started["result"]["turn"].as_u64() {
            c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
        }
        started
    };
    let mut a = service.client(&alice);
    let (one, two, three) = (a.new_session(), a.new_session(), a.new_session());
    for s in [&one, &two, &three] {
        // The third closes the connection's least recently used idle session first.
        assert!(turn(&mut a, s).get("error").is_none(), "on one connection");
    }
    let mut a2 = service.client(&alice);
    let fourth = a2.new_session();
    let refused = turn(&mut a2, &fourth);
    assert_eq!(refused["error"]["data"]["code"], "too_many_sessions", "{refused}");
    let mut b = service.client(&bob);
    let bobs = b.new_session();
    assert!(turn(&mut b, &bobs).get("error").is_none(), "bob is not affected");
    drop(a);
    // Alice's first connection gone, her sessions there are closed: the other may open one.
    crate::support::wait_for("alice's sessions to close", || turn(&mut a2, &fourth).get("error").is_none());
}

crate::on_both_backends! {
/// An admin manages users, tokens and team scopes over the service with the same commands and
/// `--remote`: the token they make works, the user they disable is cut off on their open
/// connection; a user who is not an admin is refused with `admin_only` and changes nothing.
fn an_admin_manages_users_tokens_and_scopes_over_the_service(home) {
    home.ok(&["users", "add", "ada", "--admin"]);
    let (ada, bob) = (token(&home, "ada", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let remote = |token: &str, args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).args(args);
        cmd.output().unwrap()
    };
    let ok = |token: &str, args: &[&str]| {
        let out = remote(token, args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    ok(&ada, &["users", "add", "carol"]);
    let made: Value = serde_json::from_str(&ok(&ada, &["tokens", "create", "--user", "carol", "--json"])).unwrap();
    let carol = made["token"].as_str().unwrap().to_string();
    ok(&ada, &["scopes", "create", "ops"]);
    ok(&ada, &["scopes", "grant", "ops", "carol", "--read-only"]);
    let grants: Value = serde_json::from_str(&ok(&ada, &["scopes", "list", "--json"])).unwrap();
    assert!(grants.as_array().unwrap().contains(&json!({"scope": "team:ops", "user": "carol", "access": "read"})), "{grants}");
    let mut c = service.client(&carol);
    assert_eq!(c.ok("notes/list", json!({"scope": "team:ops"}))["notes"], json!([]));
    // What the operator sees locally is what ada made remotely.
    let users: Value = serde_json::from_str(&home.ok(&["users", "list", "--json"])).unwrap();
    let names: Vec<&str> = users.as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ada", "bob", "carol", "local"], "{users}");
    let tokens: Value = serde_json::from_str(&ok(&ada, &["tokens", "list", "--user", "carol", "--json"])).unwrap();
    assert_eq!(tokens[0]["id"], made["id"], "{tokens}");
    // Bob is no admin: refused, and nothing changes.
    for args in [&["users", "list"][..], &["users", "add", "mallory"], &["tokens", "create", "--user", "bob"], &["users", "disable", "carol"]] {
        let out = remote(&bob, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("only an admin may") && err.contains("admin_only"), "{args:?}: {err}");
    }
    assert!(!home.ok(&["users", "list"]).contains("mallory"));
    // Disabled by ada over the service, carol's open connection ends.
    ok(&ada, &["users", "disable", "carol"]);
    let (seen, closed) = c.until_closed();
    assert_eq!((revoked_code(&seen).as_deref(), closed.map(|(c, _)| c)), (Some("user_disabled"), Some(1008)));
}
}

/// Under a low `ulimit -n` the service fits its limits to the files it may open and says so:
/// silent sockets from many addresses are dropped oldest first instead of holding descriptors, a
/// user at their bound and the server at its own get a code, and other users are served.
#[test]
fn a_low_open_file_limit_gets_codes_not_hangs_and_others_are_served() {
    use std::io::Write as _;
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[serve]\nmax_connections_per_user = 2\nhandshake_timeout_secs = 3600\n",
    )
    .unwrap();
    let [alice, bob, carol, dave] = ["alice", "bob", "carol", "dave"].map(|u| token(&home, u, &[]));
    let service = Service::start_with_files(&home, 425, &[]);
    crate::support::wait_for("the warning", || service.logged(&["ulimit -n", "max_connections is 4 (not 256)"]));
    // Forty half-sent upgrades from four addresses: past the four handshakes the files allow at
    // once, the oldest are dropped.
    let mut slow: Vec<std::net::TcpStream> =
        (0..40).map(|i| connect_from(&format!("127.0.0.{}", 2 + i % 4), service.port)).collect();
    for s in &mut slow {
        s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    }
    // Real users get in: each handshake drops a silent one to make room.
    let mut a = service.client(&alice);
    let _a2 = service.client(&alice);
    assert_eq!(refusal(service.connect(Some(&alice), None)), (503, "too_many_connections".into(), None));
    let mut b = service.client(&bob);
    let _c = service.client(&carol);
    // The server is at the four connections its files allow: one more is told so.
    let (status, code, _) = refusal(service.connect(Some(&dave), None));
    assert_eq!((status, code.as_str()), (503, "too_many_connections"));
    assert_eq!(b.ok("session/list", json!({}))["sessions"], json!([]));
    assert_eq!(a.ok("session/list", json!({}))["sessions"], json!([]));
    // The first thirty-six silent sockets were closed by the server.
    let closed = closed_of(&mut slow[..36], Duration::from_secs(20));
    assert_eq!(closed, 36);
}

/// The audit trail keeps 90 days: a service that starts removes what is older at once (and
/// every hour after), and keeps the rest.
#[test]
fn a_starting_service_prunes_the_audit_trail_past_ninety_days() {
    let home = Home::new();
    let day = 24 * 3_600_000_i64;
    let now = jiff::Timestamp::now().as_millisecond();
    drop(home.store()); // made and migrated
    for (at, event) in [(now - 91 * day, "write"), (now - 89 * day, "refused_write")] {
        let sql = format!("INSERT INTO audit_events (at, event) VALUES ({at}, '{event}')");
        home.sql(&sql, &sql).unwrap();
    }
    let _service = Service::start(&home, "ws", &[]);
    let count = "SELECT COUNT(*) FROM audit_events";
    crate::support::wait_for("the old event to go", || home.sql_value(count, count) == 1);
    let kept = "SELECT COUNT(*) FROM audit_events WHERE event = 'refused_write'";
    assert_eq!(home.sql_value(kept, kept), 1, "the newer event stays");
}
