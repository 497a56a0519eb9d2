//! Upgrading and backing up a team's PostgreSQL store as an operator does, with the commands the
//! README gives: a shared store is never migrated by opening it (`db status`, `db migrate
//! --dry-run`, `db migrate`); an instance keeps serving a newer schema its build is declared
//! compatible with, and refuses one that is not; `pg_dump`/`pg_restore` and `db copy` to a SQLite
//! file each bring a store back whole.

use std::process::Command;

use serde_json::{Value, json};

use crate::network::{Service, token};
use crate::support::postgres::{database, psql_file, psql_url};
use crate::support::server::{Reply, Server, openai};
use crate::support::{Home, fixture};

/// `seshat --db URL args…` in `home`: its exit, stdout and stderr.
fn seshat(home: &Home, url: &str, args: &[&str]) -> (bool, String, String) {
    let out = home.run(&[&["--db", url][..], args].concat());
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The schema-1 fixture, as an older build left it: refused (and left at 1) by every command
/// until `db migrate`, which `db status` and `--dry-run` describe first and which then applies
/// exactly what they listed.
#[test]
fn a_shared_store_is_upgraded_only_by_db_migrate_which_status_and_dry_run_describe() {
    let (_, url) = database();
    psql_file(&url, &fixture("store-postgres-v1.sql"));
    let version = || psql_url(&url, "SELECT version FROM seshat_schema").unwrap();
    let home = Home::new();
    let (ok, _, err) = seshat(&home, &url, &["users", "list"]);
    assert!(!ok && err.contains("schema version 1") && err.contains("seshat db migrate"), "{err}");
    assert_eq!(version(), "1", "an admin's command does not migrate it");

    let (ok, out, err) = seshat(&home, &url, &["db", "status", "--json"]);
    assert!(ok, "{err}");
    let status = json_of(&out);
    assert_eq!((status["state"].as_str(), status["version"].as_u64()), (Some("outdated"), Some(1)), "{status}");
    let latest = status["latest"].as_u64().unwrap();
    let pending: Vec<u64> =
        status["pending"].as_array().unwrap().iter().map(|m| m["version"].as_u64().unwrap()).collect();
    assert_eq!(pending, (2..=latest).collect::<Vec<_>>(), "{status}");
    assert!(!out.contains("postgres://seshat:") && !err.contains("password"), "no password shown: {out}");

    let (ok, out, err) = seshat(&home, &url, &["db", "migrate", "--dry-run"]);
    assert!(ok && out.contains("0010_schema_compatibility") && out.contains("Nothing was changed"), "{out}{err}");
    assert_eq!(version(), "1", "--dry-run changes nothing");

    let (ok, out, err) = seshat(&home, &url, &["db", "migrate", "--json"]);
    assert!(ok, "{err}");
    let migrated = json_of(&out);
    let applied: Vec<u64> =
        migrated["applied"].as_array().unwrap().iter().map(|m| m["version"].as_u64().unwrap()).collect();
    assert_eq!(applied, pending, "{migrated}");
    assert_eq!(version(), latest.to_string());
    // Schema 10 is not additive (the builds before it read no `compatible_from`); 11 only adds
    // the redaction key's table, 12 memory's sources, versions and expiry, 13 its review (columns the builds
    // before never set), so the builds of schema 10 still use the database.
    let additive: Vec<u64> = migrated["applied"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["additive"] == true)
        .map(|m| m["version"].as_u64().unwrap())
        .collect();
    assert_eq!(additive, [11, 12, 13], "{migrated}");
    assert_eq!(migrated["compatible_from"].as_u64(), Some(10), "{migrated}");
    let (ok, out, err) = seshat(&home, &url, &["db", "status", "--json"]);
    assert!(ok && json_of(&out)["state"] == "current", "{out}{err}");
    let (ok, out, err) = seshat(&home, &url, &["db", "migrate"]);
    assert!(ok && out.contains("nothing to do"), "{out}{err}");
    let (ok, out, err) = seshat(&home, &url, &["sessions", "list", "--all", "--json"]);
    assert!(ok && out.lines().count() >= 2, "the fixture's sessions: {out}{err}");
}

/// `GET path` on a plain-HTTP listener, with curl: the status and the body.
fn get(port: u16, path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20", "--write-out", "\n%{http_code}"])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl runs (Debian's curl)");
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.parse().unwrap(), body.to_string())
}

/// A rolling upgrade, as the running instance sees it: a newer build's migrations that only add
/// leave the schema usable by this build (it stays ready and serves new clients); a migration that
/// changes what exists makes it refuse (`/readyz` 503 `newer_schema`, commands refused), untouched.
#[test]
fn an_instance_serves_a_newer_schema_declared_compatible_and_refuses_one_that_is_not() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Still served."], true) }]);
    let home = Home::postgres();
    crate::chat::configure(&home, "openai", &server, "");
    let url = home.url().unwrap().to_string();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    assert_eq!(get(service.port, "/readyz"), (200, "ready\n".into()));
    let latest: u32 = psql_url(&url, "SELECT version FROM seshat_schema").unwrap().parse().unwrap();

    // A newer build ran `db migrate` with an additive migration.
    let newer = format!("UPDATE seshat_schema SET version = {}", latest + 1);
    psql_url(&url, &newer).unwrap();
    assert_eq!(get(service.port, "/readyz"), (200, "ready\n".into()), "this build can still use it");
    let mut c = service.client(&alice);
    let session = c.new_session();
    let turn = c.ok("turn/start", json!({"session": session, "text": "hi"}))["turn"].clone();
    let done = c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Still served.", "{done}");
    let (ok, out, err) = seshat(&home, &url, &["db", "status", "--json"]);
    assert!(ok && json_of(&out)["state"] == "newer_compatible", "{out}{err}");
    // An instance of this build restarted mid-upgrade comes back and serves.
    let restarted = Service::start(&home, "ws", &[]);
    assert_eq!(get(restarted.port, "/readyz"), (200, "ready\n".into()));
    let mut again = restarted.client(&alice);
    assert_eq!(again.ok("session/get", json!({"session": session}))["session"]["id"], session.as_str());

    // Then one that changes what exists.
    let breaking = format!("UPDATE seshat_schema SET compatible_from = {}", latest + 1);
    psql_url(&url, &breaking).unwrap();
    assert_eq!(get(service.port, "/readyz"), (503, "not ready: the store: newer_schema\n".into()));
    let (ok, _, err) = seshat(&home, &url, &["sessions", "list"]);
    assert!(!ok && err.contains("newer than the"), "{err}");
    let (ok, _, err) = seshat(&home, &url, &["db", "migrate"]);
    assert!(!ok && err.contains("newer than the"), "an older build never migrates a newer schema: {err}");
    let recorded = psql_url(&url, "SELECT version || ' ' || compatible_from FROM seshat_schema").unwrap();
    assert_eq!(recorded, format!("{0} {0}", latest + 1), "left untouched");
    assert_eq!(server.unexpected(), Vec::<String>::new());
}

/// The README's backups: `pg_dump --format=custom` restored with `pg_restore` into a new database,
/// and `db copy` to a SQLite file copied back into a new PostgreSQL database, each export every
/// session as the original does.
#[test]
fn pg_dump_and_a_sqlite_copy_each_restore_the_store_whole() {
    let home = Home::postgres();
    let url = home.url().unwrap().to_string();
    let id = home.session("/work/p");
    let mut store = home.store();
    store
        .append(&id, &[seshat::conversation::NewMessage::text(seshat::conversation::Role::User, "kept in the backup")])
        .unwrap();
    store.memory(Some("/work/p")).set_note(seshat::memory::Scope::User, "backup", "a note in the backup").unwrap();
    let export = |url: &str| {
        let (ok, out, err) = seshat(&home, url, &["sessions", "export", &id]);
        assert!(ok, "{err}");
        out
    };
    let original = export(&url);
    assert!(original.contains("kept in the backup"), "{original}");

    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("seshat.dump");
    let bin = crate::support::postgres::cluster().bindir.clone();
    let dumped =
        Command::new(bin.join("pg_dump")).args(["--format=custom", "--file"]).arg(&dump).arg(&url).output().unwrap();
    assert!(dumped.status.success(), "{}", String::from_utf8_lossy(&dumped.stderr));
    let (_, restored) = database();
    let restore =
        Command::new(bin.join("pg_restore")).args(["--no-owner", "--dbname", &restored]).arg(&dump).output().unwrap();
    assert!(restore.status.success(), "{}", String::from_utf8_lossy(&restore.stderr));
    assert_eq!(export(&restored), original, "pg_restore");
    let (ok, out, err) = seshat(&home, &restored, &["memory", "--json"]);
    assert!(ok && out.contains("a note in the backup"), "{out}{err}");

    let backup = dir.path().join("backup.db");
    let (ok, _, err) = seshat(&home, &url, &["db", "copy", &url, backup.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (_, again) = database();
    let (ok, _, err) = seshat(&home, &url, &["db", "copy", backup.to_str().unwrap(), &again]);
    assert!(ok, "{err}");
    assert_eq!(export(&again), original, "db copy to SQLite and back");
}
