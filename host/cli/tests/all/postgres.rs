//! What only a PostgreSQL store has: a server to reach, users and passwords, privileges, a schema
//! other binaries may have moved on — each failure named with its server (never the password),
//! coded, and saying what to do; nothing written.

use std::path::Path;

use seshat::store::{Error, Failure, Location, Store};

use crate::support::Home;
use crate::support::postgres::{cluster, database};

/// The store URL for `database` as `user` with `password`.
fn url_as(database: &str, user: &str, password: &str) -> String {
    let c = cluster();
    format!(
        "postgres://{user}:{password}@/{database}?host={}&port={}&sslmode=disable",
        c.socket_dir().display(),
        c.port
    )
}

fn connect(url: &str) -> Result<Store, Error> {
    Store::connect(&Location::parse(url, Path::new("/")).unwrap())
}

/// The failure kind of a located database error.
fn failure(e: &Error) -> Option<Failure> {
    match e {
        Error::Database { failure, .. } => Some(*failure),
        _ => None,
    }
}

#[test]
fn a_server_that_is_not_there_is_named_with_what_to_do() {
    let url = "postgres://ann:hunter2@/seshat?host=/nonexistent/socket-dir&port=5432&sslmode=disable";
    let err = connect(url).unwrap_err();
    assert_eq!(err.code(), "database_cannot_connect", "{err}");
    let text = err.to_string();
    assert!(text.contains("cannot open the database (postgres://ann@/seshat?host=/nonexistent/socket-dir"), "{text}");
    assert!(text.contains("pg_isready"), "says what to check: {text}");
    assert!(!text.contains("hunter2"), "the password leaked: {text}");

    // The command line says the same, with its code, and writes nothing anywhere.
    let home = Home::new();
    let out = home.cmd().env("SESHAT_DATABASE_URL", url).args(["sessions", "list"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("pg_isready") && !stderr.contains("hunter2"), "{stderr}");
    assert!(!home.db().exists(), "a SQLite file was made instead");
}

#[test]
fn a_wrong_password_and_a_missing_privilege_are_told_apart_and_name_the_user() {
    let (db, _) = database();
    let c = cluster();
    c.psql(
        "postgres",
        "DO $$ BEGIN CREATE ROLE ann LOGIN PASSWORD 'right-one'; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    );
    let err = connect(&url_as(&db, "ann", "wrong-one")).unwrap_err();
    assert_eq!(failure(&err), Some(Failure::Authentication), "{err}");
    assert_eq!(err.code(), "database_authentication");
    let text = err.to_string();
    assert!(text.contains("refused user ann for database") && text.contains("~/.pgpass"), "{text}");
    assert!(!text.contains("wrong-one") && !text.contains("right-one"), "a password leaked: {text}");

    // The right password, but no right to create the store's tables (PostgreSQL 15 gives nobody
    // CREATE on the public schema by default): refused before anything is written.
    let err = connect(&url_as(&db, "ann", "right-one")).unwrap_err();
    assert_eq!(failure(&err), Some(Failure::PermissionDenied), "{err}");
    assert!(err.to_string().contains("User ann lacks a privilege on database"), "{err}");
    assert_eq!(c.psql(&db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0");

    // Granted what the hint says, the same user opens it and the store works.
    assert!(err.to_string().contains("grant it CREATE on the database and on its schema"), "{err}");
    c.psql(&db, &format!("GRANT CREATE ON DATABASE {db} TO ann"));
    c.psql(&db, "GRANT CREATE ON SCHEMA public TO ann");
    let mut store = connect(&url_as(&db, "ann", "right-one")).unwrap();
    let id = store.create_session(Default::default()).unwrap().id;
    assert_eq!(store.session(&id).unwrap().id, id);
}

#[test]
fn a_schema_newer_than_the_binary_is_refused_and_left_alone() {
    let home = Home::postgres();
    let id = home.session("/p");
    let newer = "UPDATE seshat_schema SET version = 99";
    home.sql(newer, newer).unwrap();
    let err = Store::connect(&home.location()).unwrap_err();
    assert_eq!(err.code(), "newer_schema", "{err}");
    assert!(err.to_string().contains("schema version 99") && err.to_string().contains("postgres://"), "{err}");
    let count = "SELECT count(*) FROM sessions";
    assert_eq!(home.sql_value(count, count), 1, "the sessions are still there");
    let back = "UPDATE seshat_schema SET version = 1";
    home.sql(back, back).unwrap();
    assert_eq!(home.store().session(&id).unwrap().id, id);
}

#[test]
fn a_projects_configuration_cannot_point_the_store_elsewhere() {
    let home = Home::new();
    let project = home.path().join("repo");
    std::fs::create_dir_all(project.join(".seshat")).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join(".seshat/config.toml"), "[store]\nurl = \"postgres://evil@127.0.0.1/steal\"\n")
        .unwrap();
    let out = home.cmd().current_dir(&project).args(["chat", "-p", "hello"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("[store] url cannot be set in a project's configuration"), "{stderr}");
}
