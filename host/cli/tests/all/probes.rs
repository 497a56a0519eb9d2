//! The service's plain-HTTP probes, asked as an operator's tools ask them: `curl` over real TLS
//! (trusting the test's CA) for `/healthz`, `/readyz` and `/metrics`, beside a WebSocket client
//! running a turn on the same listener.

use std::process::Command;

use serde_json::json;

use crate::chat::home_for;
use crate::network::{Service, token};
use crate::support::server::{Reply, Server, openai};
use crate::support::tls::Authority;
use crate::support::wait_for;

/// `curl` on `path` of the service trusting `ca`: the status code and the body.
fn curl(service: &Service, ca: &std::path::Path, path: &str) -> (u16, String) {
    let url = format!("https://localhost:{}{path}", service.port);
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20", "--cacert"])
        .arg(ca)
        .args(["--resolve", &format!("localhost:{}:127.0.0.1", service.port)])
        .args(["--write-out", "\n%{http_code}", &url])
        .output()
        .expect("curl runs (Debian's curl)");
    assert!(out.status.success(), "curl {url}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.parse().unwrap(), body.to_string())
}

/// The value of the sample `name` (with its labels, as printed) in a metrics text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn health_readiness_and_metrics_answer_curl_over_tls_and_count_a_turn_and_its_client() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Counted."], true) }]);
    let home = home_for("openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let authority = Authority::new();
    let (cert, key, ca) = (home.path().join("cert.pem"), home.path().join("key.pem"), home.path().join("ca.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    std::fs::write(&ca, &authority.ca).unwrap();
    let files = [cert.to_str().unwrap(), key.to_str().unwrap()];
    let service = Service::start(&home, "wss", &["--tls-cert", files[0], "--tls-key", files[1]]);

    assert_eq!(curl(&service, &ca, "/healthz"), (200, "ok\n".into()));
    assert_eq!(curl(&service, &ca, "/readyz"), (200, "ready\n".into()));
    let (status, body) = curl(&service, &ca, "/anything-else");
    assert_eq!(status, 404);
    assert!(body.contains("/healthz") && body.contains("not_found"), "{body}");
    let (status, before) = curl(&service, &ca, "/metrics");
    assert_eq!(status, 200);
    assert_eq!(sample(&before, "seshat_connections"), Some(0.0), "{before}");
    assert!(before.trim_end().ends_with("# EOF"), "OpenMetrics text ends so: {before}");

    let mut c = service.connect(Some(&alice), Some(&authority)).expect("TLS with the test CA");
    c.ok("initialize", json!({"model": "gpt-4o"}));
    let session = c.new_session();
    let turn = c.ok("turn/start", json!({"session": session, "text": "hi"}))["turn"].clone();
    c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(c.refused("session/get", json!({"session": "no-such-session"})), "session_not_found");
    let (_, during) = curl(&service, &ca, "/metrics");
    assert_eq!(sample(&during, "seshat_connections"), Some(1.0), "{during}");
    assert_eq!(sample(&during, r#"seshat_requests_total{method="turn/start",outcome="ok"}"#), Some(1.0), "{during}");
    assert_eq!(
        sample(&during, r#"seshat_requests_total{method="session/get",outcome="session_not_found"}"#),
        Some(1.0),
        "errors by code: {during}"
    );
    assert_eq!(sample(&during, r#"seshat_turns_total{outcome="ok"}"#), Some(1.0), "{during}");
    assert_eq!(sample(&during, "seshat_turn_first_event_seconds_count"), Some(1.0), "{during}");
    assert_eq!(sample(&during, "seshat_turn_duration_seconds_count"), Some(1.0), "{during}");
    assert_eq!(sample(&during, "seshat_turns_in_flight"), Some(0.0), "{during}");
    assert_eq!(sample(&during, r#"seshat_embedding_queue_depth{corpus="history"}"#), Some(0.0), "{during}");
    drop(c);
    wait_for("the closed connection to leave the count", || {
        sample(&curl(&service, &ca, "/metrics").1, "seshat_connections") == Some(0.0)
    });

    // A newer build migrated the store meanwhile: this one is no longer ready, and says why.
    let db = rusqlite::Connection::open(home.db()).unwrap();
    db.pragma_update(None, "user_version", seshat::store::SCHEMA_VERSION + 1).unwrap();
    let (status, body) = curl(&service, &ca, "/readyz");
    assert_eq!((status, body.as_str()), (503, "not ready: the store: newer_schema\n"));
    assert_eq!(curl(&service, &ca, "/healthz").0, 200, "the process itself is still up");
    assert_eq!(server.unexpected(), Vec::<String>::new());
}

/// `--log-format json`: every line one JSON object; a request's audit event and what its turn
/// logs on the worker that ran it carry the same request id; a provider's failure is logged at
/// the default level, naming the code.
#[test]
fn a_json_log_carries_each_requests_id_into_every_line_it_causes() {
    let refusal = br#"{"error":{"message":"the model refused this request","type":"invalid_request_error"}}"#;
    let server = Server::start(vec![Reply::Full { status: 400, headers: vec![], body: refusal.to_vec() }]);
    let home = home_for("openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &["--log-format", "json"]);
    let mut c = service.client(&alice);
    let session = c.new_session();
    let turn = c.ok("turn/start", json!({"session": session, "text": "hi"}))["turn"].clone();
    let done = c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    let code = done["params"]["outcome"]["error_code"].as_str().expect("the turn failed").to_string();
    let events = || -> Vec<serde_json::Value> {
        service
            .log_lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
            .collect()
    };
    wait_for("the turn's failure in the log", || events().iter().any(|e| e["fields"]["code"] == code.as_str()));
    let all = events();
    let audit = all
        .iter()
        .find(|e| e["target"] == "seshat::audit" && e["span"]["method"] == "turn/start")
        .unwrap_or_else(|| panic!("turn/start's audit event: {all:?}"));
    let failed = all.iter().find(|e| e["fields"]["code"] == code.as_str()).unwrap();
    assert_eq!(failed["level"], "WARN", "{failed}");
    assert!(audit["span"]["request_id"].as_str().is_some_and(|id| id.starts_with('r')), "{audit}");
    assert_eq!(failed["span"]["request_id"], audit["span"]["request_id"], "one request, one id: {failed} {audit}");
    let new = all.iter().find(|e| e["span"]["method"] == "session/new").expect("session/new's audit event");
    assert_ne!(new["span"]["request_id"], audit["span"]["request_id"], "each request its own id");
    assert_eq!(new["fields"]["target"], session.as_str(), "the audit names the session it made: {new}");
    assert_eq!(server.unexpected(), Vec::<String>::new());
}

/// Sends `request` to the service over plain TCP, `bytes` at a time, and reads the whole answer.
fn raw(service: &Service, request: &[u8], bytes: usize) -> String {
    use std::io::{Read as _, Write as _};
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", service.port)).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    for piece in request.chunks(bytes) {
        tcp.write_all(piece).unwrap();
        tcp.flush().unwrap();
    }
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    answer
}

/// The probes read HTTP as HTTP is written: a head sent a byte at a time or with bare LF line
/// ends, HEAD with the length a GET would get and no body, another method refused naming the
/// allowed ones.
#[test]
fn probes_read_heads_a_byte_at_a_time_answer_head_and_refuse_other_methods() {
    let home = crate::support::Home::new();
    let service = Service::start(&home, "ws", &[]);
    let answer = raw(&service, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", 1);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with("\r\n\r\nok\n"), "{answer}");
    let answer = raw(&service, b"GET /healthz HTTP/1.1\nHost: localhost\n\n", 3);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "bare LF: {answer}");
    let get = raw(&service, b"GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n", 4096);
    let head = raw(&service, b"HEAD /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n", 4096);
    assert!(get.ends_with("\r\n\r\nready\n"), "{get}");
    assert!(head.contains("content-length: 6\r\n") && head.ends_with("\r\n\r\n"), "{head}");
    let answer = raw(&service, b"POST /healthz HTTP/1.1\r\nHost: localhost\r\ncontent-length: 0\r\n\r\n", 4096);
    assert!(answer.starts_with("HTTP/1.1 405 ") && answer.contains("allow: GET, HEAD\r\n"), "{answer}");
}

/// `[serve] metrics_listen`: `/metrics` on an address of its own (plain HTTP, no upgrade), and no
/// longer on the clients' listener; the health probes on both.
#[test]
fn metrics_on_an_address_of_their_own_leave_the_clients_listener() {
    let server = Server::start(vec![]);
    let home = home_for("openai", &server, "[serve]\nmetrics_listen = \"127.0.0.1:0\"\n");
    let service = Service::start(&home, "ws", &[]);
    let mut metrics_port = None;
    wait_for("the metrics address in the log", || {
        metrics_port = service.log_lines().iter().find_map(|l| {
            l.strip_prefix("seshat serve: metrics on http://127.0.0.1:")?.strip_suffix("/metrics")?.parse::<u16>().ok()
        });
        metrics_port.is_some()
    });
    let port = metrics_port.unwrap();
    let get = |port: u16, path: &str| {
        use std::io::{Read as _, Write as _};
        let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        write!(tcp, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        answer
    };
    let there = get(port, "/metrics");
    assert!(there.starts_with("HTTP/1.1 200 ") && there.contains("seshat_connections 0"), "{there}");
    let clients = get(service.port, "/metrics");
    assert!(clients.starts_with("HTTP/1.1 404 "), "not on the clients' listener: {clients}");
    for port in [port, service.port] {
        assert!(get(port, "/healthz").starts_with("HTTP/1.1 200 "));
        assert!(get(port, "/readyz").starts_with("HTTP/1.1 200 "));
    }
    // No client is served on the metrics address: a token's upgrade there is not taken.
    let alice = token(&home, "alice", &[]);
    let url = format!("ws://127.0.0.1:{port}");
    let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url).unwrap();
    request.headers_mut().insert("Authorization", format!("Bearer {alice}").parse().unwrap());
    assert!(tokio_tungstenite::tungstenite::connect(request).is_err(), "no upgrade on the metrics address");
    assert!(service.client(&alice).ok("session/list", json!({})).is_object(), "clients go on");
}
