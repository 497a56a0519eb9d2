//! A turn's outcome is the truth of what was stored, and a request sent again never stores its
//! exchange twice: `turn/start`'s idempotency key, through `seshat serve` on both backends, and
//! the CLI's remote mode sending a turn again across a connection the test cuts.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::chat::home_for;
use crate::serve::ServeClient;
use crate::support::server::{Reply, Server, openai};
use crate::support::{Home, text_of};

/// Writes a config for `server` into `home` (whichever its backend).
fn configure(home: &Home, server: &Server) {
    let config = std::fs::read_to_string(home_for("openai", server, "").path().join("config.toml")).unwrap();
    let config = config.replace("idle_timeout_secs = 1\n", "idle_timeout_secs = 60\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
}

/// Starts a turn and returns its outcome.
fn turn(c: &mut ServeClient, params: Value) -> Value {
    let turn = c.ok("turn/start", params)["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(turn);
    notes.last().unwrap()["params"]["outcome"].clone()
}

fn texts(home: &Home, session: &str) -> Vec<String> {
    home.store().full_history(session).unwrap().iter().map(|m| text_of(m).to_string()).collect()
}

crate::on_both_backends! {
/// The same request sent again with its key stores nothing and asks no model: the outcome is
/// what was stored. The key with other text is refused; a malformed key is refused up front.
fn a_request_sent_again_with_its_key_replays_what_was_stored(home) {
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::text_answer(&["Hello ", "there."], true) },
        Reply::Stream { pieces: openai::text_answer(&["Second."], true) },
    ]);
    configure(&home, &server);
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let id = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let first = turn(&mut c, json!({"session": id, "text": "hi", "idempotency_key": "k-1"}));
    assert_eq!((first["text"].as_str(), first.get("replayed")), (Some("Hello there."), None), "{first}");
    let again = turn(&mut c, json!({"session": id, "text": "hi", "idempotency_key": "k-1"}));
    assert_eq!((again["text"].as_str(), again["replayed"].as_bool()), (Some("Hello there."), Some(true)), "{again}");
    assert_eq!(again["error"], Value::Null, "{again}");
    assert_eq!(server.requests().len(), 1, "the model was asked once");
    assert_eq!(texts(&home, &id), ["hi", "Hello there."]);
    // The key with other text is another request: refused, nothing stored.
    let reused = turn(&mut c, json!({"session": id, "text": "something else", "idempotency_key": "k-1"}));
    assert_eq!(reused["error_code"], "turn_key_reused", "{reused}");
    assert_eq!(texts(&home, &id), ["hi", "Hello there."]);
    // A key that cannot be one is refused before anything runs.
    for bad in ["", &"k".repeat(256), "a\nb"] {
        let refused = c.call("turn/start", json!({"session": id, "text": "x", "idempotency_key": bad}));
        assert_eq!(refused["error"]["data"]["code"], "invalid_params", "{refused}");
    }
    // A new key is a new turn.
    let second = turn(&mut c, json!({"session": id, "text": "hi", "idempotency_key": "k-2"}));
    assert_eq!(second["text"], "Second.", "{second}");
    assert_eq!(texts(&home, &id), ["hi", "Hello there.", "hi", "Second."]);
    assert!(c.close().success());
}
}

crate::on_both_backends! {
/// The server running a keyed turn dies mid-answer; the request sent again to another server
/// on the same store stores the user's message once: what the dead one streamed is stored as
/// interrupted, and the turn goes on from there.
fn a_request_whose_server_died_goes_on_when_sent_again_and_stores_its_message_once(home) {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![
        Reply::Stall { pieces, pause: Duration::from_secs(30) },
        Reply::Stream { pieces: openai::text_answer(&["Done."], true) },
    ]);
    configure(&home, &server);
    let mut a = ServeClient::start(&home);
    a.initialize(json!({"model": "gpt-4o"}));
    let id = a.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let params = json!({"session": id, "text": "go", "idempotency_key": "only-once"});
    a.ok("turn/start", params.clone());
    let draft = format!("SELECT count(*) FROM drafts WHERE session_id = '{id}'");
    crate::support::wait_for("the answer's draft", || home.sql_value(&draft, &draft) == 1);
    a.kill();
    let mut b = ServeClient::start(&home);
    b.initialize(json!({"model": "gpt-4o"}));
    let outcome = turn(&mut b, params);
    assert_eq!((outcome["text"].as_str(), outcome["error"].as_str()), (Some("Done."), None), "{outcome}");
    assert_eq!(outcome.get("replayed"), None, "the turn went on: {outcome}");
    assert_eq!(texts(&home, &id), ["go", "Partial answer", "Done."]);
    assert_eq!(server.requests().len(), 2);
    // What the model was sent the second time: the user's message once, and what had arrived.
    let sent = server.requests()[1].json();
    let users = sent["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 1, "{sent}");
    assert!(b.close().success());
}
}

crate::on_both_backends! {
/// A step after the answer is stored fails (the database refuses the session's figures): the
/// turn succeeded, and says so, with the failure as a warning.
fn a_failure_after_the_answer_is_stored_is_a_warning_on_a_successful_turn(home) {
    // The second answer's usage counts its long request, which the turn learns from after
    // storing the answer.
    let mut counted = openai::text_answer(&["Two."], false);
    let usage = json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 6_000, "completion_tokens": 3}});
    counted.insert(counted.len() - 1, openai::chunk(&usage));
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::text_answer(&["One."], true) },
        Reply::Stream { pieces: counted },
    ]);
    configure(&home, &server);
    let mut c = ServeClient::start(&home);
    // A model Seshat has no tokenizer for: its estimate is calibrated by what the server counts.
    c.initialize(json!({"model": "house-model", "window": 32_768}));
    let id = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let first = turn(&mut c, json!({"session": id, "text": "first"}));
    assert_eq!((first["error"].as_str(), first.get("warnings")), (None, None), "{first}");
    // From now on the session's metadata (where what a turn learns of the model's tokens is
    // kept) cannot change; messages still can.
    home.sql(
        "CREATE TRIGGER frozen BEFORE UPDATE OF metadata ON sessions WHEN OLD.metadata IS NOT NEW.metadata \
         BEGIN SELECT RAISE(ABORT, 'metadata is frozen by the test'); END;",
        "CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         RAISE EXCEPTION 'metadata is frozen by the test'; END $$; \
         CREATE TRIGGER frozen BEFORE UPDATE ON sessions FOR EACH ROW \
         WHEN (OLD.metadata IS DISTINCT FROM NEW.metadata) EXECUTE FUNCTION frozen();",
    )
    .unwrap();
    let long = "the second request is long enough to count ".repeat(200);
    let second = turn(&mut c, json!({"session": id, "text": long}));
    assert_eq!((second["text"].as_str(), second["error"].as_str()), (Some("Two."), None), "{second}");
    let warnings = second["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap_or_default().contains("metadata is frozen by the test")),
        "{second}"
    );
    assert_eq!(texts(&home, &id), ["first", "One.", long.as_str(), "Two."]);
    assert!(c.close().success());
}
}

/// A loopback TCP proxy the test can cut: every connection through it so far is closed at once
/// (as a dropped network does), and later ones go through.
struct Cutter {
    port: u16,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Cutter {
    fn start(to: u16) -> Cutter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(Mutex::new(Vec::new()));
        let kept = open.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else { return };
                kept.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Cutter { port, open }
    }

    /// Closes every connection through the proxy.
    fn cut(&self) {
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) if to.write_all(&buf[..n]).is_err() => break,
                Ok(_) => {}
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}

/// `seshat chat --remote`: the connection drops while the answer streams; the CLI connects again
/// and sends the turn again with its key. The user's message is stored once and the turn ends
/// with the answer.
#[test]
fn remote_chat_sends_a_turn_again_after_its_connection_drops_and_it_is_stored_once() {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![
        Reply::Stall { pieces, pause: Duration::from_secs(30) },
        Reply::Stream { pieces: openai::text_answer(&["Whole answer."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        config.replace("idle_timeout_secs = 1\n", "idle_timeout_secs = 60\n"),
    )
    .unwrap();
    let alice = crate::network::token(&home, "alice", &[]);
    let service = crate::network::Service::start(&home, "ws", &[]);
    let cutter = Cutter::start(service.port);
    let laptop = Home::new();
    let mut chat = crate::network::spawn_remote_chat(&laptop, &format!("ws://127.0.0.1:{}", cutter.port), &alice);
    let draft = "SELECT count(*) FROM drafts";
    crate::support::wait_for("the answer's draft on the service", || home.sql_value(draft, draft) == 1);
    cutter.cut();
    let status = crate::support::wait_with_deadline(&mut chat, Duration::from_secs(120));
    let (mut stdout, mut said) = (String::new(), String::new());
    chat.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    chat.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {said}");
    assert!(said.contains("sending the turn again"), "{said}");
    let outcome: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(outcome["text"], "Whole answer.", "{outcome}");
    let session = outcome["session"].as_str().unwrap();
    let history = home.store().acting_for("alice").full_history(session).unwrap();
    let texts: Vec<&str> = history.iter().map(text_of).collect();
    assert_eq!(texts, ["tell me", "Partial answer", "Whole answer."]);
}
