//! A session's claim across the loss of the PostgreSQL connection that holds it: the server
//! restarted, the holder's backend terminated, the network frozen (a loopback proxy the test
//! controls stops forwarding). Two stores stand for two instances. Once the claim is gone, the
//! first holder writes nothing more (`claim_lost`) while the second claims the session and writes
//! it; every acknowledged write is there afterwards, and none of the first's late ones.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use seshat::conversation::{NewMessage, Role};
use seshat::store::{NewSession, Store};

use crate::support::Home;
use crate::support::postgres::{Cluster, SUPERUSER};

/// The texts of a session's messages.
fn texts(store: &Store, session: &str) -> Vec<String> {
    store.full_history(session).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
}

fn say(text: &str) -> [NewMessage; 1] {
    [NewMessage::text(Role::User, text)]
}

/// The first holder's write after its claim went: refused, as `claim_lost` (a first attempt on
/// the connection that just died may fail as a lost connection instead); never stored.
fn refused_as_lost(a: &mut Store, session: &str) {
    let mut codes = Vec::new();
    for _ in 0..2 {
        match a.append(session, &say("A after the loss")) {
            Ok(_) => panic!("the first holder wrote after losing its claim"),
            Err(e) => codes.push(e.code().to_string()),
        }
    }
    assert!(codes.contains(&"claim_lost".to_string()), "{codes:?}");
    assert!(a.claim_lost(), "the holder knows its claim is gone");
}

/// The sequence every fault shares: A claims and writes; `fault` takes A's connection away; B
/// claims at once and writes; A's writes are refused, its claim cannot be taken back while B
/// holds it, and once B gave it back A takes it again and writes.
fn claim_survives_or_is_known_lost(location: &seshat::store::Location, fault: impl FnOnce(&Store)) {
    let mut a = Store::connect(location).unwrap();
    let mut b = Store::connect(location).unwrap();
    let session = a.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
    let held = a.claim_session(&session).unwrap().expect("a free session");
    a.append(&session, &say("A before")).unwrap();
    assert!(!a.claim_lost());
    fault(&a);
    let taken = b.claim_session(&session).unwrap().expect("the claim went with A's connection");
    b.append(&session, &say("B")).unwrap();
    refused_as_lost(&mut a, &session);
    assert!(!a.reclaim_session(&session).unwrap(), "B holds it");
    b.release_session(taken).unwrap();
    assert!(a.reclaim_session(&session).unwrap(), "free again: A holds it on its new connection");
    a.append(&session, &say("A again")).unwrap();
    assert!(b.claim_session(&session).unwrap().is_none(), "and holds it for real");
    a.release_session(held).unwrap();
    assert_eq!(texts(&b, &session), ["A before", "B", "A again"], "every acknowledged write, and no other");
}

#[test]
fn a_claim_lost_to_a_server_restart_fences_its_holder() {
    let cluster = Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE fenced_restart");
    let home = Home::at(cluster.url("fenced_restart", SUPERUSER));
    claim_survives_or_is_known_lost(&home.location(), |_| cluster.restart());
}

#[test]
fn a_claim_lost_to_a_terminated_backend_fences_its_holder() {
    let cluster = Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE fenced_terminate");
    let home = Home::at(cluster.url("fenced_terminate", SUPERUSER));
    claim_survives_or_is_known_lost(&home.location(), |_| {
        // The backend holding an advisory lock (A's); the call waits until it is gone.
        let done = cluster.psql(
            "fenced_terminate",
            "SELECT bool_and(pg_terminate_backend(pid, 30000)) FROM pg_locks WHERE locktype = 'advisory' AND granted",
        );
        assert_eq!(done, "t", "the holder's backend ended");
    });
}

/// A loopback proxy in front of the server's socket: `freeze` stops it forwarding (both sockets
/// stay open, as on a network that stopped carrying packets); `cut` closes what it holds.
struct Proxy {
    dir: tempfile::TempDir,
    frozen: Arc<AtomicBool>,
    conns: Arc<std::sync::Mutex<Vec<(UnixStream, UnixStream)>>>,
}

impl Proxy {
    fn start(server_socket: PathBuf, port: u16) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join(format!(".s.PGSQL.{port}"))).unwrap();
        let frozen = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (f, c) = (frozen.clone(), conns.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = UnixStream::connect(&server_socket) else { return };
                c.lock().unwrap().push((client.try_clone().unwrap(), server.try_clone().unwrap()));
                pump(client.try_clone().unwrap(), server.try_clone().unwrap(), f.clone());
                pump(server, client, f.clone());
            }
        });
        Proxy { dir, frozen, conns }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops forwarding: bytes read from here on are dropped.
    fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either closes; while frozen, what arrives is dropped.
fn pump(mut from: UnixStream, mut to: UnixStream, frozen: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if !frozen.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
}

#[test]
fn a_claim_behind_a_frozen_network_is_never_taken_while_held_and_its_holder_stops() {
    let cluster = Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE fenced_network");
    let port: u16 = cluster.psql("postgres", "SHOW port").parse().unwrap();
    let proxy = Proxy::start(cluster.socket_dir().join(format!(".s.PGSQL.{port}")), port);
    // A reaches the server through the proxy, with short timeouts so its wait ends soon.
    let through = format!(
        "postgres://{SUPERUSER}@/fenced_network?host={}&port={port}&sslmode=disable&statement_timeout=1000&lock_timeout=1000",
        proxy.dir().display()
    );
    let direct = Home::at(cluster.url("fenced_network", SUPERUSER)).location();
    let mut a = Store::connect(&Home::at(through).location()).unwrap();
    let mut b = Store::connect(&direct).unwrap();
    let session = a.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
    let held = a.claim_session(&session).unwrap().expect("a free session");
    a.append(&session, &say("A before")).unwrap();
    proxy.freeze();
    // The server still sees A's connection, so its claim holds: B cannot take the session.
    assert!(b.claim_session(&session).unwrap().is_none(), "held while A's connection lives");
    // A's write waits for an answer that never comes, then fails; nothing of it is stored.
    let err = a.append(&session, &say("A behind the frozen network")).unwrap_err();
    assert_eq!(err.code(), "database_timeout", "{err}");
    // The server ends the connection it can no longer reach (as its keepalives would).
    let done = cluster.psql(
        "fenced_network",
        "SELECT bool_and(pg_terminate_backend(pid, 30000)) FROM pg_locks WHERE locktype = 'advisory' AND granted",
    );
    assert_eq!(done, "t");
    let taken = b.claim_session(&session).unwrap().expect("free once A's connection is gone");
    b.append(&session, &say("B")).unwrap();
    proxy.frozen.store(false, Ordering::SeqCst);
    refused_as_lost(&mut a, &session);
    b.release_session(taken).unwrap();
    a.release_session(held).unwrap();
    assert!(!a.claim_lost(), "given back, the store writes again");
    a.append(&session, &say("A after giving it back")).unwrap();
    assert_eq!(texts(&b, &session), ["A before", "B", "A after giving it back"]);
    drop(proxy.conns.lock().unwrap().drain(..));
}

crate::on_both_backends! {
    /// `db copy` of a store whose writers go on meanwhile: the copy is a verified moment of the
    /// source (every session's count matches its rows, seqs without gaps), and the copy's
    /// sessions take appends (no seq the copy left behind collides).
    fn a_copy_of_a_store_being_written_is_a_verified_moment_of_it(home) {
        let sessions: Vec<String> = {
            let mut store = home.store();
            (0..4)
                .map(|_| {
                    let id = store.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
                    for i in 0..100 {
                        store.append(&id, &say(&format!("seed {i}"))).unwrap();
                    }
                    id
                })
                .collect()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = sessions
            .iter()
            .map(|id| {
                let (id, stop, location) = (id.clone(), stop.clone(), home.location());
                std::thread::spawn(move || {
                    let mut store = Store::connect(&location).unwrap();
                    let mut written = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        store.append(&id, &say(&format!("live {written}"))).unwrap();
                        written += 1;
                    }
                    written
                })
            })
            .collect();
        let target = if home.is_postgres() { Home::new() } else { Home::postgres() };
        let to = target.url().map_or_else(|| target.db().display().to_string(), str::to_string);
        let from = home.url().map_or_else(|| home.db().display().to_string(), str::to_string);
        let mut copying = home
            .cmd()
            .args(["db", "copy", &from, &to, "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A copy that chased its source's writers would never end: bounded, it fails instead.
        let status = crate::support::wait_with_deadline(&mut copying, std::time::Duration::from_secs(300));
        stop.store(true, Ordering::SeqCst);
        let written: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        let (mut stdout, mut stderr) = (String::new(), String::new());
        copying.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        copying.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = status.unwrap_or_else(|| panic!("the copy of a live store did not end within 300 s: {stderr}"));
        assert!(status.success(), "the copy of a live store failed: {stderr}");
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["verified"], true, "{report}");
        let mut copy = target.store();
        for id in &sessions {
            let history = copy.full_history(id).unwrap();
            let count = copy.session(id).unwrap().message_count;
            assert_eq!(history.len() as u64, count, "the count and the rows agree in {id}");
            assert!(history.iter().enumerate().all(|(i, m)| m.seq == i as u64 + 1), "seqs without gaps in {id}");
            assert!(count >= 100, "the seeded messages are there");
            copy.append(id, &say("after the copy")).unwrap();
        }
        let source_total: usize = sessions.iter().map(|id| home.store().full_history(id).unwrap().len()).sum();
        assert_eq!(source_total as u64, 400 + written, "every acknowledged write is in the source");
    }
}

/// Tells the test when the answer's first words arrived.
struct FirstWords(Option<std::sync::mpsc::Sender<()>>);

impl seshat::client::Observer for FirstWords {
    fn event(&mut self, event: &seshat::plugins::StreamEvent) {
        if matches!(event, seshat::plugins::StreamEvent::TextDelta { .. })
            && let Some(tx) = self.0.take()
        {
            let _ = tx.send(());
        }
    }
}

/// A's turn streams its first words on one instance; the server restarts; `meanwhile` runs (given
/// the home, the model server and the session); then A's answer goes on. Returns the home, the
/// session and how A's turn ended (its text, or its error's code), with the cluster (running
/// while it is held).
fn lose_a_turns_claim(
    database: &str,
    second: Vec<crate::support::server::Reply>,
    meanwhile: impl FnOnce(&Home, &crate::support::server::Server, &str),
) -> (Cluster, Home, String, Result<String, String>) {
    use crate::support::server::{Gate, Reply, Server, anthropic};
    let cluster = Cluster::private();
    cluster.psql("postgres", &format!("CREATE DATABASE {database}"));
    let home = Home::at(cluster.url(database, SUPERUSER));
    let gate = Gate::default();
    let whole = anthropic::text_answer(&["Partial ", "answer from A"]);
    let first = whole.iter().position(|p| p.contains("Partial")).unwrap() + 1;
    let mut replies =
        vec![Reply::Gated { pieces: whole[..first].to_vec(), rest: whole[first..].to_vec(), gate: gate.clone() }];
    replies.extend(second);
    let server = Server::start(replies);
    let mut a = crate::chat::sdk_agent(&home, &server, seshat::client::Tools::none(), Default::default());
    let session = a.session().to_string();
    let (tx, words) = std::sync::mpsc::channel();
    let turn_a = std::thread::spawn(move || {
        let outcome = a.claimed_turn("from A", &seshat::providers::Cancel::default(), &mut FirstWords(Some(tx)));
        outcome.map(|o| o.text).map_err(|e| e.code().to_string())
    });
    words.recv().expect("A's first words");
    cluster.restart();
    meanwhile(&home, &server, &session);
    gate.open();
    let outcome = turn_a.join().unwrap();
    (cluster, home, session, outcome)
}

/// The fault campaign's turn: A's answer streams on one instance, the server restarts, B's turn
/// on the same session runs through another and ends; then A's answer goes on. A stops with
/// `claim_lost` and stores nothing after B's exchange; the session reads A's request, B's
/// request, B's answer — never A's answer after B's.
#[test]
fn a_turn_whose_claim_was_lost_to_a_restart_stops_and_is_not_interleaved_with_the_next() {
    use crate::support::server::{Reply, anthropic};
    let b_answer = vec![Reply::Stream { pieces: anthropic::text_answer(&["Answer from B"]) }];
    let (_cluster, home, session, outcome) = lose_a_turns_claim("fenced_turn", b_answer, |home, server, session| {
        let resume = seshat::client::AgentOptions {
            session: seshat::client::SessionChoice::Resume(session.to_string()),
            ..Default::default()
        };
        let mut b = crate::chat::sdk_agent(home, server, seshat::client::Tools::none(), resume);
        let out = b.claimed_turn("from B", &seshat::providers::Cancel::default(), &mut seshat::client::Quiet).unwrap();
        assert_eq!(out.text, "Answer from B");
    });
    assert_eq!(outcome, Err("claim_lost".to_string()), "A's turn knows its claim was lost");
    let store = home.store();
    assert_eq!(texts(&store, &session), ["from A", "from B", "Answer from B"], "nothing of A after B's exchange");
}

/// The same loss with nobody taking the session meanwhile: A stops with `claim_lost`, takes the
/// session back and stores what arrived, marked interrupted, right after its request.
#[test]
fn a_turn_whose_claim_was_lost_while_nobody_took_it_stores_what_arrived_as_interrupted() {
    let (_cluster, home, session, outcome) = lose_a_turns_claim("fenced_alone", Vec::new(), |_, _, _| {});
    assert_eq!(outcome, Err("claim_lost".to_string()));
    let history = home.store().full_history(&session).unwrap();
    assert_eq!(history.len(), 2, "A's request and what arrived of its answer: {history:?}");
    assert!(crate::support::text_of(&history[1]).starts_with("Partial"), "{history:?}");
    assert_eq!(history[1].status, seshat::conversation::MessageStatus::Interrupted);
    let store = home.store();
    let free = store.claim_session(&session).unwrap().expect("and the session is free again");
    store.release_session(free).unwrap();
}

/// The service's store stops answering (its network frozen, its waits set to an hour): a client
/// connecting meanwhile is refused within the handshake's time (503, `database_timeout`) instead
/// of waiting on the token check; so is the next, while the first check still waits.
#[test]
fn a_handshake_whose_token_check_the_store_does_not_answer_is_refused_in_its_time() {
    let cluster = Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE fenced_handshake");
    let port: u16 = cluster.psql("postgres", "SHOW port").parse().unwrap();
    let proxy = Proxy::start(cluster.socket_dir().join(format!(".s.PGSQL.{port}")), port);
    let through = format!(
        "postgres://{SUPERUSER}@/fenced_handshake?host={}&port={port}&sslmode=disable&statement_timeout=3600000&\
         lock_timeout=3600000",
        proxy.dir().display()
    );
    let home = Home::at(through);
    std::fs::write(home.path().join("config.toml"), "[serve]\nhandshake_timeout_secs = 2\n").unwrap();
    let alice = crate::network::token(&home, "alice", &[]);
    let service = crate::network::Service::start(&home, "ws", &[]);
    assert!(service.connect(Some(&alice), None).is_ok(), "served while the store answers");
    proxy.freeze();
    for attempt in ["first", "second"] {
        let (status, code, _) = crate::network::refusal(service.connect(Some(&alice), None));
        assert_eq!((status, code.as_str()), (503, "database_timeout"), "the {attempt} client");
    }
}
