//! What only a PostgreSQL store has: a server to reach, users and passwords, privileges, a schema
//! other binaries may have moved on — each failure named with its server (never the password),
//! coded, and saying what to do; nothing written.

use std::path::Path;

use seshat::conversation::{NewMessage, Role};
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
    assert!(err.to_string().contains("User ann may not create Seshat's tables in database"), "{err}");
    assert_eq!(c.psql(&db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0");

    // Granted what the hint says, the same user opens it and the store works.
    assert!(err.to_string().contains("grant ann CREATE on the database and on its schema"), "{err}");
    c.psql(&db, &format!("GRANT CREATE ON DATABASE {db} TO ann"));
    c.psql(&db, "GRANT CREATE ON SCHEMA public TO ann");
    let mut store = connect(&url_as(&db, "ann", "right-one")).unwrap();
    let id = store.create_session(Default::default()).unwrap().id;
    assert_eq!(store.session(&id).unwrap().id, id);

    // Ann owns the tables now; a superuser takes her privileges on one away. The hint names the
    // table and the grant that gives them back, not ownership she already has.
    c.psql(&db, "REVOKE ALL ON messages FROM ann");
    let err = store.full_history(&id).unwrap_err();
    assert_eq!(failure(&err), Some(Failure::PermissionDenied), "{err}");
    let text = err.to_string();
    assert!(text.contains("ann may not use table messages") && text.contains("GRANT ALL ON ALL TABLES"), "{text}");
    assert!(!text.contains("owner of the database") && !text.contains("CREATE on"), "{text}");
    c.psql(&db, "GRANT ALL ON ALL TABLES IN SCHEMA public TO ann");
    assert_eq!(store.full_history(&id).unwrap().len(), 0, "granted back, it reads again");
}

#[test]
fn a_schema_newer_than_the_binary_is_refused_and_left_alone() {
    let home = Home::postgres();
    let id = home.session("/p");
    let current = "SELECT version FROM seshat_schema";
    let was = home.sql_value(current, current);
    // As a newer build's migration that changes what exists (not additive) leaves it.
    let newer = "UPDATE seshat_schema SET version = 99, compatible_from = 99";
    home.sql(newer, newer).unwrap();
    let err = Store::connect(&home.location()).unwrap_err();
    assert_eq!(err.code(), "newer_schema", "{err}");
    assert!(err.to_string().contains("schema version 99") && err.to_string().contains("postgres://"), "{err}");
    let count = "SELECT count(*) FROM sessions";
    assert_eq!(home.sql_value(count, count), 1, "the sessions are still there");
    let back = format!("UPDATE seshat_schema SET version = {was}, compatible_from = {was}");
    home.sql(&back, &back).unwrap();
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

/// A store holding what PostgreSQL's types cannot take as they are: NUL in text (`text` holds
/// none), the escape character Seshat uses for it, JSON whose key order matters to a byte-exact
/// export (`jsonb` would reorder it), a message past the 1 MB a `tsvector` holds; and every kind
/// of record: compactions, trims, pins, a rewind, a fork, memory, notes, a document, vectors.
fn awkward_store(home: &Home) -> String {
    use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
    let mut store = home.store();
    let metadata = serde_json::from_str(r#"{"zeta": 1, "alpha": {"nested\u0000key": "v\u0000al"}}"#).unwrap();
    let id = store
        .create_session(seshat::store::NewSession {
            project: "/work/awkward".into(),
            title: Some("nul \u{0} and \u{10FFFF} in a title".into()),
            metadata: Some(metadata),
            ..Default::default()
        })
        .unwrap()
        .id;
    let big = format!("{}needle at the end", "0123456789abcdef\u{0}".repeat(80_000));
    let call = NewMessage {
        role: Role::Assistant,
        parts: vec![Part::ToolCall {
            id: "c\u{0}1".into(),
            name: "read".into(),
            arguments: "{\"b\":1,\"a\":2}".into(),
        }],
        usage: None,
        status: MessageStatus::Complete,
    };
    let result = NewMessage {
        role: Role::Tool,
        parts: vec![Part::ToolResult { call_id: "c\u{0}1".into(), content: "x\u{0}".repeat(3000), is_error: false }],
        usage: None,
        status: MessageStatus::Complete,
    };
    store
        .append(
            &id,
            &[
                NewMessage::text(Role::User, "first \u{0} request"),
                call,
                result,
                NewMessage::text(Role::Assistant, big),
                NewMessage::text(Role::User, "second request"),
                NewMessage::text(Role::Assistant, "done \u{10FFFF}\u{10FFFF}0"),
            ],
        )
        .unwrap();
    store.record_trims(&id, &[(3, 0, "[trimmed \u{0}]".into())]).unwrap();
    store.pin(&id, 1, |_, _| Ok(())).unwrap();
    store.fork(&id, Some(4), Some("a fork")).unwrap();
    store.rewind(&id, 6, |_| Ok(())).unwrap();
    let mut memory = store.memory(Some("/work/awkward"));
    let entity: seshat::memory::NewEntity = serde_json::from_value(serde_json::json!(
        {"name": "Ærø service", "entityType": "component", "observations": ["holds a \u{0} byte", "plain"]}
    ))
    .unwrap();
    memory.create_entities(&[entity], None).unwrap();
    memory.set_note(seshat::memory::Scope::User, "style", "short \u{0} answers").unwrap();
    drop(store);
    let doc = home.path().join("notes.md");
    std::fs::write(&doc, "# Guide\n\nThe warp drive needs a calibrated flux capacitor.\n").unwrap();
    home.ok(&["knowledge", "add", doc.to_str().unwrap()]);
    let vectors = [
        (
            "INSERT INTO entity_vectors (entity_id, vector) SELECT id, X'00010203' FROM memory_entities",
            "INSERT INTO entity_vectors (entity_id, vector) SELECT id, '\\x00010203'::bytea FROM memory_entities",
        ),
        (
            "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) VALUES ('memory', 'e', 'm', 4, 1)",
            "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) VALUES ('memory', 'e', 'm', 4, 1)",
        ),
    ];
    for (sqlite, postgres) in vectors {
        home.sql(sqlite, postgres).unwrap();
    }
    id
}

#[test]
fn db_copy_takes_a_store_to_postgresql_and_back_byte_for_byte() {
    let file = Home::new();
    let id = awkward_store(&file);
    let original = file.ok(&["sessions", "export", &id]);
    let pg = Home::postgres();
    let url = pg.location();
    let url = url.to_string();
    // SQLite to PostgreSQL, verified by the command itself.
    let report = file.ok(&["db", "copy", file.db().to_str().unwrap(), &url, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!((report["rows"]["sessions"].as_u64(), report["rows"]["messages"].as_u64()), (Some(2), Some(6)));
    assert_eq!(pg.ok(&["sessions", "export", &id]), original, "the export on PostgreSQL differs");
    // What PostgreSQL holds is searchable there: the big message by its excerpt, memory, knowledge.
    let found = file.ok(&["sessions", "search", "needle", "--all", "--json"]);
    assert!(found.contains(&id), "sqlite: {found}");
    let found = pg.ok(&["sessions", "search", "needle", "--all", "--json"]);
    assert!(found.contains(&id), "postgres: {found}");
    // (The document belongs to the project the file's home is: searched from there.)
    let out = pg.cmd().current_dir(file.path()).args(["knowledge", "search", "capacitor"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("notes.md"), "{}", String::from_utf8_lossy(&out.stderr));

    // And back to a new SQLite file: the same bytes again.
    let back = Home::new();
    let text = back.ok(&["db", "copy", &url, back.db().to_str().unwrap()]);
    assert!(text.contains("Copied 2 sessions (6 messages)") && text.contains("Verified"), "{text}");
    assert_eq!(back.ok(&["sessions", "export", &id]), original, "the round trip changed the export");
    let titles = back.ok(&["sessions", "list", "--all", "--json"]);
    assert!(titles.contains("\\u0000") || titles.contains("nul"), "{titles}");

    // A store that holds anything already is not a target; nothing is written to it.
    let err = file.fails(&["db", "copy", back.db().to_str().unwrap(), &url]);
    assert!(err.contains("is not empty (sessions has 2 rows)") && err.contains("nothing was copied"), "{err}");
    let count = "SELECT count(*) FROM messages";
    assert_eq!(pg.sql_value(count, count), 6);
}

/// The server restarts under a running `seshat serve`: the next request opens a new connection
/// (or fails with the cannot-connect code, and the one after works); nothing written is lost.
#[test]
fn serve_goes_on_after_the_database_server_restarts() {
    let cluster = crate::support::postgres::Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE restarting");
    let home = Home::at(cluster.url("restarting", crate::support::postgres::SUPERUSER));
    let mut serve = crate::serve::ServeClient::start(&home);
    serve.initialize(serde_json::json!({}));
    let first = serve.ok("session/new", serde_json::json!({}))["session"]["id"].as_str().unwrap().to_string();
    cluster.restart();
    let answer = serve.call("session/new", serde_json::json!({}));
    let second = match answer.get("error") {
        None => answer["result"]["session"]["id"].as_str().unwrap().to_string(),
        Some(error) => {
            assert_eq!(error["data"]["code"], "database_cannot_connect", "{answer}");
            serve.ok("session/new", serde_json::json!({}))["session"]["id"].as_str().unwrap().to_string()
        }
    };
    let listed = serve.ok("session/list", serde_json::json!({}));
    let ids: Vec<&str> = listed["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&first.as_str()) && ids.contains(&second.as_str()), "{listed}");
}

/// A session's claim is held by the claiming store's own connection (a turn opens no connection
/// of its own), refused to another store while held, and holds nothing once given back; after
/// the server restarts, the store's next claim is held on its connection opened again.
#[test]
fn a_claim_is_held_by_the_claiming_stores_own_connection_and_nothing_once_given_back() {
    let cluster = crate::support::postgres::Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE claims");
    let location = Home::at(cluster.url("claims", crate::support::postgres::SUPERUSER)).location();
    let holders = || {
        cluster.psql(
            "claims",
            "SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_locks \
             WHERE locktype = 'advisory' AND granted \
             AND database = (SELECT oid FROM pg_database WHERE datname = 'claims')",
        )
    };
    let connections = || {
        cluster.psql(
            "claims",
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'claims' AND pid <> pg_backend_pid()",
        )
    };
    let (mut ours, theirs) = (Store::connect(&location).unwrap(), Store::connect(&location).unwrap());
    let ids: Vec<String> = (0..3).map(|_| ours.create_session(Default::default()).unwrap().id).collect();
    let (s1, s2, s3) = (ids[0].as_str(), ids[1].as_str(), ids[2].as_str());
    let first = ours.claim_session(s1).unwrap().expect("a free session");
    let pid = holders();
    assert!(pid.parse::<u32>().is_ok(), "one connection holds the claim: {pid:?}");
    assert_eq!(connections(), "2", "the two stores' connections and no other");
    assert!(theirs.claim_session(s1).unwrap().is_none(), "a held session is refused to another store");
    ours.release_session(first).unwrap();
    assert_eq!(holders(), "", "a released claim holds nothing");
    let second = theirs.claim_session(s1).unwrap().expect("free again for another store");
    let other = holders();
    assert!(other.parse::<u32>().is_ok_and(|p| p.to_string() != pid), "the other store's connection: {other:?}");
    theirs.release_session(second).unwrap();
    let again = ours.claim_session(s2).unwrap().expect("a free session");
    assert_eq!(holders(), pid, "the same store claims on the same connection");
    assert_eq!(connections(), "2");
    ours.release_session(again).unwrap();
    cluster.restart();
    let third = ours.claim_session(s3).unwrap().expect("a free session after the restart");
    let after = holders();
    assert!(
        after.parse::<u32>().is_ok_and(|p| p.to_string() != pid),
        "the connection opened again holds it: {after:?}"
    );
    assert!(theirs.claim_session(s3).unwrap().is_none(), "and holds it for real");
    ours.release_session(third).unwrap();
    assert_eq!(holders(), "");
}

/// TLS to a server on a loopback port, with a certificate authority made for the test: verified
/// against the root certificate given and the host's name; refused when the certificate cannot
/// be verified; encrypted without verifying under `require` (as libpq); never in clear text
/// where the server asks for TLS.
#[test]
fn tls_to_the_server_is_verified_against_the_root_certificate_given() {
    let (cluster, tls) = crate::support::postgres::Cluster::with_tls();
    cluster.psql("postgres", "ALTER ROLE seshat PASSWORD 'over-tls'");
    cluster.psql("postgres", "CREATE DATABASE secure");
    let ca = cluster.dir().join("ca.pem");
    let url = |host: &str, mode: &str| {
        format!("postgres://seshat:over-tls@{host}:{}/secure?sslmode={mode}&sslrootcert={}", tls.port, ca.display())
    };
    // Verified: the store opens over TLS and works.
    let mut store = connect(&url("localhost", "verify-full")).unwrap();
    let id = store.create_session(Default::default()).unwrap().id;
    assert_eq!(store.session(&id).unwrap().id, id);
    let encrypted = cluster.psql(
        "secure",
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE s.ssl AND a.client_addr IS NOT NULL AND a.datname = 'secure'",
    );
    assert_eq!(encrypted, "1", "the store's connection is not encrypted");
    drop(store);
    // The certificate names 127.0.0.1 too.
    assert_eq!(connect(&url("127.0.0.1", "verify-full")).unwrap().session(&id).unwrap().id, id);

    // Without the test's authority (the system's roots only), nothing verifies the certificate.
    let unverified = format!("postgres://seshat:over-tls@localhost:{}/secure?sslmode=verify-full", tls.port);
    let err = connect(&unverified).unwrap_err();
    assert_eq!(err.code(), "database_cannot_connect", "{err}");
    assert!(!err.to_string().contains("over-tls"), "the password leaked: {err}");
    // `require` encrypts without verifying, as libpq does; `disable` is refused by the server.
    let required = format!("postgres://seshat:over-tls@localhost:{}/secure?sslmode=require", tls.port);
    assert_eq!(connect(&required).unwrap().session(&id).unwrap().id, id);
    let clear = format!("postgres://seshat:over-tls@localhost:{}/secure?sslmode=disable", tls.port);
    let err = connect(&clear).unwrap_err();
    assert!(err.to_string().contains("no encryption") || err.to_string().contains("pg_hba.conf"), "{err}");
}

/// PostgreSQL schema 1 as committed (`tests/fixtures/store-postgres-v1.sql`: the v11 SQLite
/// fixture copied by `db copy`, dumped): this binary refuses to open it until it is migrated
/// explicitly, then every session exports as the SQLite fixture's upgraded copy does, every table
/// holds the same rows, and it takes writes.
#[test]
fn the_schema_1_fixture_opens_and_holds_what_the_sqlite_fixture_holds() {
    let (_, url) = database();
    crate::support::postgres::psql_file(&url, &crate::support::fixture("store-postgres-v1.sql"));
    let version = || crate::support::postgres::psql_url(&url, "SELECT version FROM seshat_schema").unwrap();
    assert_eq!(version(), "1", "the fixture must stay at schema 1");
    let location = Location::parse(&url, Path::new("/")).unwrap();
    let err = Store::connect(&location).unwrap_err();
    assert_eq!(err.code(), "schema_outdated", "{err}");
    assert_eq!(version(), "1", "opening a shared store never upgrades it");
    let applied = Store::migrate(&location).unwrap();
    assert_eq!(applied.first().map(|m| m.version), Some(2), "{applied:?}");
    assert_eq!(version(), Store::schema_status(&location).unwrap().latest.to_string());
    let mut pg = Store::connect(&location).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v11.db");
    std::fs::copy(crate::support::fixture("store-v11.sqlite"), &db).unwrap();
    let mut sqlite = Store::open(&db).unwrap();
    assert_eq!(sqlite.differences(&mut pg).unwrap(), Vec::<String>::new());
    let s1 = "01JFV1AAAA0000000000000001";
    let before = pg.session(s1).unwrap().message_count;
    let seqs = pg.append(s1, &[NewMessage::text(Role::User, "after the fixture")]).unwrap();
    assert_eq!(seqs, [before + 1]);
    let (graph, _) = pg.memory(Some("/work/alpha")).search("upload", None, 5).unwrap();
    assert_eq!(graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["Upload service"]);
}

/// The committed schema-1 fixture upgraded by this binary has exactly the schema a new database
/// gets (tables, columns, indexes, constraints, functions, triggers): the migrations after 1 make
/// of it what they make of an empty database, and migration 1 is frozen (a change to it, rather
/// than a new migration, shows here).
#[test]
fn the_schema_1_fixture_upgraded_has_the_schema_of_a_new_database() {
    let (_, fixture) = database();
    crate::support::postgres::psql_file(&fixture, &crate::support::fixture("store-postgres-v1.sql"));
    Store::migrate(&Location::parse(&fixture, Path::new("/")).unwrap()).unwrap();
    let (_, fresh) = database();
    Store::connect(&Location::parse(&fresh, Path::new("/")).unwrap()).unwrap();
    let schema = |url: &str| -> Vec<String> {
        [
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || \
             coalesce(column_default, '') || ' ' || coalesce(generation_expression, '') \
             FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1",
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
            "SELECT conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE connamespace = 'public'::regnamespace ORDER BY 1",
            "SELECT proname || ' ' || md5(prosrc) FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1",
            "SELECT tgrelid::regclass || ' ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
            "SELECT cfgname FROM pg_ts_config WHERE cfgnamespace = 'public'::regnamespace ORDER BY 1",
        ]
        .iter()
        .flat_map(|sql| crate::support::postgres::psql_url(url, sql).unwrap().lines().map(str::to_string).collect::<Vec<_>>())
        .collect()
    };
    let (made, committed) = (schema(&fresh), schema(&fixture));
    assert!(made.len() > 100, "the schema was read: {made:?}");
    let differ: Vec<(&String, &String)> = made.iter().zip(&committed).filter(|(a, b)| a != b).collect();
    assert!(
        made == committed,
        "a new database and the upgraded tests/fixtures/store-postgres-v1.sql differ: put schema changes in a new \
         migration, never in an applied one ({} lines against {}; first differences: {:?})",
        made.len(),
        committed.len(),
        differ.iter().take(3).collect::<Vec<_>>()
    );
}

/// `db copy`'s verifier catches a difference of each kind planted in a copy: a message's text, a
/// part inside a message, a memory row, a vector, a rewind — each named.
#[test]
fn the_copy_verifier_names_a_planted_difference_of_each_kind() {
    let file = Home::new();
    awkward_store(&file);
    let plants: [(&str, &str, &str); 5] = [
        (
            "a message",
            "DROP TRIGGER messages_append_only_update; \
             UPDATE messages SET parts = replace(parts, 'second request', 'second reqvest') WHERE seq = 5",
            "exports differently",
        ),
        (
            "a part",
            "DROP TRIGGER messages_append_only_update; \
             UPDATE messages SET parts = replace(parts, '{\\\"b\\\":1,\\\"a\\\":2}', '{\\\"a\\\":2,\\\"b\\\":1}') \
             WHERE seq = 2",
            "messages differs",
        ),
        (
            "a memory row",
            "UPDATE memory_observations SET content = 'Plain' WHERE content = 'plain'",
            "memory_observations differs",
        ),
        ("a vector", "UPDATE entity_vectors SET vector = X'00010204'", "entity_vectors differs"),
        ("a rewind", "UPDATE rewinds SET undone_at = 1", "rewinds differs"),
    ];
    let mut source = Store::open(&file.db()).unwrap();
    for (kind, plant, named) in plants {
        let copy = Home::new();
        copy.ok(&["db", "copy", file.db().to_str().unwrap(), copy.db().to_str().unwrap()]);
        let mut target = Store::open(&copy.db()).unwrap();
        assert_eq!(source.differences(&mut target).unwrap(), Vec::<String>::new(), "the copy as made");
        drop(target);
        copy.sql(plant, plant).unwrap();
        let mut target = Store::open(&copy.db()).unwrap();
        let found = source.differences(&mut target).unwrap();
        assert!(found.iter().any(|d| d.contains(named)), "{kind}: {found:?}");
    }
}
