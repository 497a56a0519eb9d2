//! The command line's remote client end to end: plain `ws://` only to this machine unless asked,
//! `wss://` with a private CA from `--remote-ca` or `SESHAT_REMOTE_CA`, the errors an untrusted CA
//! and a certificate for another name give, and a service that goes away mid-answer.

use std::time::Duration;

use serde_json::Value;

use crate::chat::home_for;
use crate::network::{Service, token};
use crate::support::Home;
use crate::support::server::{Reply, Server, openai};
use crate::support::tls::Authority;

/// `seshat sessions list --all --json` on a machine with no store, against `url` with `env`.
fn list(url: &str, token: &str, env: &[(&str, &str)]) -> std::process::Output {
    let laptop = Home::new();
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", url).env("SESHAT_TOKEN", token).args(["sessions", "list", "--all", "--json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn plain_ws_goes_only_to_this_machine_and_wss_takes_a_private_ca_from_the_environment() {
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    // 0.0.0.0 is not a loopback address (a connection to it would reach this machine anyway).
    let out = list("ws://0.0.0.0:9", &alice, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("unencrypted") && err.contains("--insecure-remote"), "{err}");

    let authority = Authority::new();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("ca.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    std::fs::write(&ca, &authority.ca).unwrap();
    let files = [cert.to_str().unwrap(), key.to_str().unwrap()];
    let service = Service::start(&home, "wss", &["--tls-cert", files[0], "--tls-key", files[1]]);
    let url = format!("wss://localhost:{}", service.port);
    let out = list(&url, &alice, &[("SESHAT_REMOTE_CA", ca.to_str().unwrap())]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), serde_json::json!([]));
    // Without the CA, and with another one: the error says which flag gives it.
    let out = list(&url, &alice, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--remote-ca") && err.contains("SESHAT_REMOTE_CA"), "{err}");
    let other = dir.path().join("other.pem");
    std::fs::write(&other, Authority::new().ca).unwrap();
    let out = list(&url, &alice, &[("SESHAT_REMOTE_CA", other.to_str().unwrap())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("the one given did not sign it"), "{err}");
}

#[test]
fn a_certificate_for_another_name_is_refused_saying_so() {
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    let authority = Authority::for_names(&["seshat.test"]);
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("ca.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    std::fs::write(&ca, &authority.ca).unwrap();
    let service =
        Service::start(&home, "wss", &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    let out = list(&format!("wss://localhost:{}", service.port), &alice, &[("SESHAT_REMOTE_CA", ca.to_str().unwrap())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not for that host name"), "{err}");
}

/// A service answering `initialize` with another protocol version: the command line compares
/// and stops, naming both versions and which side to upgrade; its own `initialize` said its version.
#[test]
fn a_service_speaking_another_protocol_version_is_refused_naming_both() {
    use tokio_tungstenite::tungstenite::{Message, accept};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut ws = accept(stream).unwrap();
        let request: Value = loop {
            if let Message::Text(text) = ws.read().unwrap() {
                break serde_json::from_str(&text).unwrap();
            }
        };
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocol_version": "2099-01-01",
            "server_info": {"name": "seshat", "version": "9.0.0"},
            "capabilities": {"turns": true, "tools": true, "memory": true, "knowledge": true, "compaction": true}
        }});
        ws.send(Message::text(answer.to_string())).unwrap();
        let _ = ws.read();
        request
    });
    let out = list(&format!("ws://127.0.0.1:{port}"), "a-token", &[]);
    let request = fake.join().unwrap();
    assert_eq!(request["method"], "initialize");
    assert_eq!(request["params"]["protocol_version"], seshat_protocol::PROTOCOL_VERSION);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("2099-01-01")
            && err.contains(seshat_protocol::PROTOCOL_VERSION)
            && err.contains("upgrade this client")
            && err.contains("protocol_mismatch"),
        "{err}"
    );
}

/// The service dies while an answer streams: `chat --remote --json` still prints a JSON outcome,
/// saying what was kept and how to go on.
#[test]
fn a_service_gone_mid_answer_leaves_a_json_outcome_that_says_how_to_go_on() {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![Reply::Stall { pieces, pause: Duration::from_secs(60) }]);
    let home = home_for("openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let chat = crate::network::spawn_remote_chat(&laptop, &service.url, &alice);
    let draft = "SELECT count(*) FROM drafts";
    crate::support::wait_for("the answer streaming", || home.sql_value(draft, draft) == 1);
    drop(service);
    let out = chat.wait_with_output().unwrap();
    let outcome: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(outcome["error_code"], "connection_lost", "{outcome}");
    let said = outcome["error"].as_str().unwrap();
    assert!(said.contains("kept there") && said.contains("--resume"), "{said}");
    assert!(!out.status.success());
}

/// Empty remote settings in the environment are no settings: every command still runs locally.
#[test]
fn empty_remote_variables_are_ignored() {
    let home = Home::new();
    let out = home
        .cmd()
        .env("SESHAT_REMOTE", "")
        .env("SESHAT_REMOTE_CA", "")
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), serde_json::json!([]));
}
