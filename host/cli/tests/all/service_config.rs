//! `seshat serve --config FILE` as an operator runs it: the service's own file is its whole
//! configuration (the operator's `config.toml` is not read), and SIGHUP reloads it — a renewed
//! certificate, new limits and a new provider — while a client streams a turn, dropping nobody;
//! a bad file on reload is refused and the running configuration kept.

use serde_json::json;

use crate::network::{Service, nix_kill, refusal};
use crate::support::server::{Gate, Reply, Server, openai};
use crate::support::tls::Authority;
use crate::support::{Home, wait_for};

/// A service's directory: its file, TLS files and SQLite store side by side, the file naming
/// them by relative paths.
struct ServiceDir {
    dir: tempfile::TempDir,
}

impl ServiceDir {
    fn new(authority: &Authority) -> ServiceDir {
        let dir = tempfile::tempdir().unwrap();
        let service = ServiceDir { dir };
        service.certify(authority);
        service
    }

    fn file(&self) -> String {
        self.dir.path().join("service.toml").to_str().unwrap().to_string()
    }

    fn store(&self) -> String {
        self.dir.path().join("team.db").to_str().unwrap().to_string()
    }

    /// Puts `authority`'s server certificate and key in place (as a renewal does).
    fn certify(&self, authority: &Authority) {
        std::fs::write(self.dir.path().join("cert.pem"), &authority.cert).unwrap();
        std::fs::write(self.dir.path().join("key.pem"), &authority.key).unwrap();
    }

    /// Writes the service's file: its provider at `provider`, `serve` lines under [serve].
    fn configure(&self, provider: &Server, serve: &str) {
        let text = format!(
            "[serve]\nlisten = \"wss://127.0.0.1:0\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n{serve}\n\
             [store]\nurl = \"team.db\"\n\
             [plugins]\nprovider = \"openai\"\n[chat]\nmax_output_tokens = 1000\n\
             [providers.openai]\nbase_url = \"{}/v1\"\napi_key_env = \"OPENAI_API_KEY\"\nfirst_byte_timeout_secs = 5\n\
             max_retries = 0\n",
            provider.url()
        );
        std::fs::write(self.file(), text).unwrap();
    }
}

/// A token for `user` in the service's store.
fn team_token(home: &Home, service: &ServiceDir, user: &str) -> String {
    let db = service.store();
    let _ = home.run(&["--db", &db, "users", "add", user]);
    let out = home.run(&["--db", &db, "tokens", "create", "--user", user]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The service's file is all it reads; SIGHUP puts a renewed certificate, a higher per-user
/// limit and another provider in force while a client's turn streams, and that client is not
/// dropped: its turn finishes, and its next turn goes to the new provider.
#[test]
fn sighup_reloads_the_certificate_limits_and_provider_while_a_client_streams() {
    let gate = Gate::default();
    let mut pieces = openai::text_answer(&["Streamed ", "across the reload."], true);
    let rest = pieces.split_off(2);
    let before = Server::start(vec![Reply::Gated { pieces, rest, gate: gate.clone() }]);
    let after = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["From the new provider."], true) }]);
    // The operator's own configuration names a provider nobody may call.
    let personal = Server::start(vec![]);
    let home = crate::chat::home_for("openai", &personal, "");
    let (old_ca, new_ca) = (Authority::new(), Authority::new());
    let dir = ServiceDir::new(&old_ca);
    dir.configure(&before, "max_connections_per_user = 1");
    let alice = team_token(&home, &dir, "alice");
    let service = Service::start_args(&home, "wss", &["serve", "--config", &dir.file()]);

    let mut first = service.connect(Some(&alice), Some(&old_ca)).expect("TLS with the first certificate");
    first.ok("initialize", json!({"model": "gpt-4o"}));
    let session = first.new_session();
    let turn = first.ok("turn/start", json!({"session": session, "text": "go"}))["turn"].clone();
    first.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    let (status, code, _) = refusal(service.connect(Some(&alice), Some(&old_ca)));
    assert_eq!((status, code.as_str()), (503, "too_many_connections"), "one connection per user, as configured");

    dir.certify(&new_ca);
    dir.configure(&after, "max_connections_per_user = 2");
    nix_kill(service.pid(), "HUP");
    wait_for("the reload", || service.logged(&["reloaded"]));

    assert!(service.connect(Some(&alice), Some(&old_ca)).is_err(), "the old certificate is no longer presented");
    let mut second = service.connect(Some(&alice), Some(&new_ca)).expect("the renewed certificate, a second slot");
    second.ok("initialize", json!({"model": "gpt-4o"}));
    gate.open();
    let done = first.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Streamed across the reload.", "{done}");
    assert_eq!(done["params"]["outcome"]["interrupted"], false, "{done}");
    let next = first.ok("turn/start", json!({"session": session, "text": "again"}))["turn"].clone();
    let done = first.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == next);
    assert_eq!(done["params"]["outcome"]["text"], "From the new provider.", "{done}");
    let history = seshat::store::Store::open(std::path::Path::new(&dir.store()))
        .unwrap()
        .acting_for("alice")
        .full_history(&session)
        .unwrap();
    assert_eq!(history.len(), 4, "both turns in the service's own store: {history:?}");
    assert!(!service.logged(&["reload refused"]), "{:?}", service.log_lines());
    for server in [&before, &after, &personal] {
        assert_eq!(server.unexpected(), Vec::<String>::new());
    }
}

/// A file that does not parse, TLS files that do not make an identity, and a file taking TLS off
/// the running address are each refused on SIGHUP with the reason logged; the service goes on
/// with what it ran.
#[test]
fn a_bad_file_on_reload_is_refused_and_the_running_configuration_kept() {
    let provider = Server::start(vec![]);
    let home = Home::new();
    let authority = Authority::new();
    let dir = ServiceDir::new(&authority);
    dir.configure(&provider, "max_connections_per_user = 1");
    let alice = team_token(&home, &dir, "alice");
    let service = Service::start_args(&home, "wss", &["serve", "--config", &dir.file()]);

    std::fs::write(dir.file(), "[serve]\nmax_connections_per_user = \"many\"\n").unwrap();
    nix_kill(service.pid(), "HUP");
    wait_for("the first refusal", || service.logged(&["reload refused", "max_connections_per_user"]));

    dir.configure(&provider, "max_connections_per_user = 2");
    std::fs::write(dir.dir.path().join("key.pem"), Authority::new().key).unwrap();
    nix_kill(service.pid(), "HUP");
    wait_for("the second refusal", || service.log_lines().iter().filter(|l| l.contains("reload refused")).count() == 2);
    assert!(service.logged(&["reload refused", "do they match"]), "{:?}", service.log_lines());

    // A file that now serves plain ws:// without TLS cannot take TLS off the running socket.
    let plain = "[serve]\nlisten = \"ws://127.0.0.1:0\"\n[store]\nurl = \"team.db\"\n";
    std::fs::write(dir.file(), plain).unwrap();
    nix_kill(service.pid(), "HUP");
    wait_for("the third refusal", || service.log_lines().iter().filter(|l| l.contains("reload refused")).count() == 3);
    assert!(service.logged(&["reload refused", "needs --tls-cert"]), "{:?}", service.log_lines());
    assert!(!service.logged(&["reloaded"]), "{:?}", service.log_lines());

    let mut c = service.connect(Some(&alice), Some(&authority)).expect("the running certificate");
    c.ok("initialize", json!({"model": "gpt-4o"}));
    let (status, code, _) = refusal(service.connect(Some(&alice), Some(&authority)));
    assert_eq!((status, code.as_str()), (503, "too_many_connections"), "the running limit: one per user");
}

/// Keys only a service's file may hold are refused in the operator's `config.toml`, which would
/// otherwise turn every `seshat serve` (the Go SDK's child among them) into a network service.
#[test]
fn listen_in_a_users_config_is_refused_with_where_it_belongs() {
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), "[serve]\nlisten = \"ws://127.0.0.1:0\"\n").unwrap();
    let out = home.run(&["sessions", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("listen") && err.contains("seshat serve --config FILE"), "{err}");
    std::fs::remove_file(home.path().join("config.toml")).unwrap();
    let missing = home.run(&["serve", "--config", "nowhere.toml"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success() && err.contains("nowhere.toml") && err.contains("no such file"), "{err}");
}
