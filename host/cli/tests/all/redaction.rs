//! Secrets never at rest (#53): credentials planted through every path that stores text, then
//! looked for in the database's own files (SQLite's file and WAL; PostgreSQL's data files and
//! WAL), in exports, and in what was sent to the summary model, the embedder and the chat model —
//! on both backends.

use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::memory::{NewEntity, Scope};
use seshat::store::{ImportOptions, NewChunk, NewDocument, NewSession, Store};

use crate::on_both_backends;
use crate::support::Home;
use crate::support::server::{Reply, Server, expect_route, openai};

/// Credentials in real formats, made up fresh for each test (nothing else in the cluster or on
/// disk holds them).
struct Planted {
    aws: String,
    github: String,
    pem: String,
    password: String,
    dotenv: String,
    /// A value whose only sign of being a credential is its JSON key (`"api_key"`).
    generic: String,
}

impl Planted {
    fn new() -> Self {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ u64::from(std::process::id()));
        let mut pick =
            |set: &[u8], n: usize| -> String { (0..n).map(|_| set[rng.random_range(0..set.len())] as char).collect() };
        let upper = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        let alnum = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
        let b64 = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
        Planted {
            aws: format!("AKIA{}", pick(upper, 16)),
            github: format!("ghp_{}", pick(alnum, 36)),
            pem: format!(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE{}\n{}\n-----END RSA PRIVATE KEY-----",
                pick(b64, 60),
                pick(b64, 64)
            ),
            password: format!("Pw7{}", pick(alnum, 15)),
            dotenv: format!("Q8z{}", pick(alnum, 21)),
            generic: format!("Zk4{}", pick(alnum, 29)),
        }
    }

    /// Fragments only these credentials hold, lower-cased (the word indexes fold case), from
    /// their middles (a stemmer may cut a word's end).
    fn needles(&self) -> Vec<String> {
        let pem_line = self.pem.lines().nth(1).unwrap();
        [
            &self.aws[6..16],
            &self.github[8..30],
            &pem_line[8..40],
            &self.password[3..15],
            &self.dotenv[3..18],
            &self.generic[3..24],
        ]
        .iter()
        .map(|s| s.to_lowercase())
        .collect()
    }

    /// A text holding all of them, as pasted into a chat.
    fn pasted(&self) -> String {
        format!(
            "deploy with {} and push with {}\nthe key:\n{}\nand the database is postgres://ann:{}@db.internal:5432/team",
            self.aws, self.github, self.pem, self.password
        )
    }

    /// A `.env` file's text.
    fn env_file(&self) -> String {
        format!("APP_ENV=production\nSIGNING_SALT={}\nPORT=8080\n", self.dotenv)
    }
}

/// Which needles `bytes` hold (compared lower-cased).
fn found_in(bytes: &[u8], needles: &[String]) -> Vec<String> {
    let lower = bytes.to_ascii_lowercase();
    let finder = aho_corasick::AhoCorasick::new(needles).unwrap();
    let mut hits: Vec<String> = finder.find_iter(&lower).map(|m| needles[m.pattern().as_usize()].clone()).collect();
    hits.sort();
    hits.dedup();
    hits
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Every file the home's database keeps on disk, with the needles each holds: SQLite's file, WAL
/// and shared memory; PostgreSQL's data files of the home's database and the cluster's WAL,
/// after a checkpoint has written every page out.
fn leaks(home: &Home, needles: &[String]) -> Vec<(PathBuf, Vec<String>)> {
    let files = match home.url() {
        None => ["", "-wal", "-shm"]
            .iter()
            .map(|s| PathBuf::from(format!("{}{s}", home.db().display())))
            .filter(|p| p.exists())
            .collect::<Vec<_>>(),
        Some(url) => {
            let cluster = crate::support::postgres::cluster();
            let database = url.split('/').nth(3).unwrap().split('?').next().unwrap().to_string();
            cluster.psql("postgres", "CHECKPOINT");
            let oid = cluster.psql("postgres", &format!("SELECT oid FROM pg_database WHERE datname = '{database}'"));
            let data = cluster.dir().join("data");
            let mut files = files_under(&data.join("base").join(oid.trim()));
            files.extend(files_under(&data.join("pg_wal")));
            files
        }
    };
    assert!(!files.is_empty(), "the database keeps files");
    files
        .into_iter()
        .filter_map(|f| {
            let hits = found_in(&std::fs::read(&f).unwrap_or_default(), needles);
            (!hits.is_empty()).then_some((f, hits))
        })
        .collect()
}

fn text(role: Role, s: impl Into<String>) -> NewMessage {
    NewMessage::text(role, s)
}

/// Every text-writing path of the library, each given the credentials: a session's title, its
/// messages (text, tool call arguments, tool results, thinking), a compaction's summary and
/// instructions, a trim, a draft, a fork's title, memory (entities, observations, notes),
/// a document's chunks and an imported session.
fn plant_everywhere(store: &mut Store, p: &Planted) -> String {
    let pasted = p.pasted();
    let id = store
        .create_session(NewSession {
            project: "/p".into(),
            title: Some(format!("keys {}", p.aws)),
            ..Default::default()
        })
        .unwrap()
        .id;
    let args =
        json!({"command": format!("git push https://x:{}@github.com/a/b", p.github), "api_key": p.generic}).to_string();
    let big_result = format!("{}\n{}", p.env_file(), "build line ok\n".repeat(200));
    store
        .append(
            &id,
            &[
                text(Role::User, pasted),
                NewMessage {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thinking {
                            text: format!("the token {} is theirs", p.github),
                            signature: Some("sig".into()),
                        },
                        Part::ToolCall { id: "c1".into(), name: "bash".into(), arguments: args },
                    ],
                    usage: None,
                    status: MessageStatus::Complete,
                },
                NewMessage {
                    role: Role::Tool,
                    parts: vec![Part::ToolResult { call_id: "c1".into(), content: big_result, is_error: false }],
                    usage: None,
                    status: MessageStatus::Complete,
                },
                text(Role::Assistant, format!("Your AWS key {} is set.", p.aws)),
            ],
        )
        .unwrap();
    store.record_trims(&id, &[(3, 0, format!("[trimmed]\nSIGNING_SALT={}\n", p.dotenv))]).unwrap();
    let count = store.session(&id).unwrap().message_count;
    store
        .record_compaction(
            &id,
            &seshat::store::Compaction {
                trigger: seshat::store::CompactionTrigger::Manual,
                tokens_before: 1000,
                tokens_after: Some(100),
                through_seq: count,
                first_kept_seq: Some(count),
                pinned_seq: None,
                summary: Some(format!("The user pasted {} and {}", p.aws, p.pem)),
                model: None,
                status: seshat::store::CompactionStatus::Ok,
                error: None,
                created_at: 1,
                instructions: Some(format!("keep postgres://ann:{}@db.internal/team", p.password)),
                plugin: None,
            },
        )
        .unwrap();
    // A draft: the credential still arriving is not kept; once whole, its placeholder is.
    store.save_draft(&id, count, &format!("Here: {}", &p.github[..34])).unwrap();
    store.save_draft(&id, count, &format!("Here: {} and more", p.github)).unwrap();
    store.fork(&id, None, Some(&format!("fork of postgres://ann:{}@db/x", p.password))).unwrap();

    let mut memory = store.memory(Some("/p"));
    memory
        .create_entities(
            &[NewEntity {
                name: "Deploy".into(),
                entity_type: "process".into(),
                observations: vec![format!("uses {}", p.aws)],
            }],
            Some(&Scope::Project),
        )
        .unwrap();
    memory.add_observations(&[("Deploy".into(), vec![format!("pushes with {}", p.github)])], None).unwrap();
    memory.set_note(Scope::User, "db", &format!("postgres://ann:{}@db.internal/team", p.password)).unwrap();

    let doc = NewDocument {
        scope: Scope::Project,
        project: "/p".into(),
        path: "/p/setup.md".into(),
        kind: "markdown".into(),
        sha256: "00".repeat(32),
        bytes: 100,
    };
    let chunk = NewChunk {
        start_line: 1,
        end_line: 3,
        heading: "Setup".into(),
        text: format!("Setup:\nSIGNING_SALT={}\nand AWS {}", p.dotenv, p.aws),
        tokens: 20,
    };
    store.knowledge_put(&doc, &[chunk]).unwrap();
    id
}

/// A session exported from a store that redacts nothing (what another install wrote).
fn unredacted_export(p: &Planted) -> Vec<u8> {
    let other = Home::new();
    let mut store = other.store();
    store.set_redaction(seshat::redaction::Policy::off());
    let id = store.create_session(NewSession { project: "/q".into(), ..Default::default() }).unwrap().id;
    store.append(&id, &[text(Role::User, p.pasted()), text(Role::Assistant, "noted")]).unwrap();
    let mut out = Vec::new();
    store.export(&id, &mut out).unwrap();
    assert_eq!(found_in(&out, &p.needles()).len(), 4, "the export holds the credentials (a redacting store would not)");
    out
}

on_both_backends! {
    /// Each storing path is given every credential; afterwards the database's files, the read-back
    /// records and an export hold placeholders only.
    fn every_text_the_store_writes_is_redacted_and_no_file_of_the_database_holds_a_credential(home) {
        let p = Planted::new();
        let needles = p.needles();
        let mut store = home.store();
        let id = plant_everywhere(&mut store, &p);
        let mut imported = std::io::Cursor::new(unredacted_export(&p));
        let other = store.import(&mut imported, ImportOptions { new_id: true, ..Default::default() }).unwrap();

        // What is read back carries placeholders, one per kind of credential.
        let history = store.full_history(&id).unwrap();
        let all = serde_json::to_string(&history).unwrap();
        for rule in ["aws-access-token", "github-pat", "private-key", "url-password", "dotenv-value"] {
            assert!(all.contains(&format!("[secret:{rule}:")), "{rule} in {all}");
        }
        assert!(found_in(all.as_bytes(), &needles).is_empty(), "{all}");
        // The same secret gets the same placeholder everywhere.
        let aws = all.split("[secret:aws-access-token:").nth(1).unwrap()[..8].to_string();
        let title = store.session(&id).unwrap().title.unwrap();
        assert_eq!(title, format!("keys [secret:aws-access-token:{aws}]"));
        let Part::Thinking { signature, .. } = &history[1].parts[0] else { panic!("{:?}", history[1].parts) };
        assert_eq!(*signature, None, "a signature over the text as it was is dropped");
        let Part::ToolCall { arguments, .. } = &history[1].parts[1] else { panic!() };
        let args: Value = serde_json::from_str(arguments).expect("tool call arguments stay JSON");
        assert!(args["command"].as_str().unwrap().starts_with("git push https://x:[secret:"), "{args}");
        let records = format!(
            "{:?}{:?}{:?}",
            store.compactions(&id).unwrap(),
            store.trims(&id).unwrap(),
            store.take_draft(&id).unwrap()
        );
        assert!(records.contains("[secret:") && found_in(records.as_bytes(), &needles).is_empty(), "{records}");
        // Put a draft back for the file scan below.
        store.save_draft(&id, 4, &format!("again {} now", p.aws)).unwrap();
        let imported = serde_json::to_string(&store.full_history(&other.id).unwrap()).unwrap();
        assert!(imported.contains("[secret:aws-access-token:") && found_in(imported.as_bytes(), &needles).is_empty());

        let graph = store.memory(Some("/p")).read_graph(None, 0, 100).unwrap().0;
        let notes = store.memory(None).notes(&Scope::User).unwrap();
        let memory = format!("{graph:?}{notes:?}");
        assert!(memory.contains("uses [secret:aws-access-token:") && memory.contains("pushes with [secret:github-pat:"));
        assert!(memory.contains("[secret:url-password:") && found_in(memory.as_bytes(), &needles).is_empty(), "{memory}");
        let filter = seshat::store::KnowledgeFilter { project: "/p", scope: None };
        let docs = format!("{:?}", store.knowledge_search(filter, "SIGNING_SALT", 10).unwrap());
        assert!(docs.contains("[secret:dotenv-value:") && found_in(docs.as_bytes(), &needles).is_empty(), "{docs}");
        for session in [&id, &other.id] {
            let export = home.ok(&["sessions", "export", session]);
            assert!(export.contains("[secret:"), "{export}");
            assert!(found_in(export.as_bytes(), &needles).is_empty(), "{export}");
        }
        // What it exports imports again (trims' sizes are the stored text's).
        let export = home.ok(&["sessions", "export", &id]);
        let back = store.import(&mut std::io::Cursor::new(export), ImportOptions { new_id: true, ..Default::default() });
        assert!(back.is_ok(), "{back:?}");
        // A word of a credential finds nothing: the word indexes never saw it.
        let search = home.ok(&["sessions", "search", &p.github, "--all", "--json"]);
        assert_eq!(serde_json::from_str::<Value>(&search).unwrap(), json!([]), "{search}");
        drop(store);
        assert_eq!(leaks(&home, &needles), vec![], "no file of the database holds a credential");
    }
}

on_both_backends! {
    /// A team's memory and documents are read by every member: a credential written there is
    /// refused, naming the rule, and nothing is written.
    fn a_credential_is_refused_in_a_team_scope_and_nothing_is_written(home) {
        let p = Planted::new();
        let mut store = home.store();
        store.create_team("infra").unwrap();
        let team = Scope::Team("infra".into());
        let entity = |obs: String| NewEntity { name: "Deploy".into(), entity_type: "process".into(), observations: vec![obs] };
        let e = store.memory(None).create_entities(&[entity(format!("key {}", p.aws))], Some(&team)).unwrap_err();
        assert_eq!(e.code(), "credential_refused", "{e}");
        assert!(e.to_string().contains("aws-access-token") && e.to_string().contains("team:infra"), "{e}");
        assert!(!e.to_string().contains(&p.aws), "the error does not repeat the credential: {e}");
        let e = store.memory(None).set_note(team.clone(), "db", &format!("postgres://ann:{}@db/x", p.password)).unwrap_err();
        assert_eq!(e.code(), "credential_refused", "{e}");
        // Nothing of either was written; the same write without the credential is.
        assert_eq!(store.memory(None).read_graph(Some(&team), 0, 10).unwrap().0.entities.len(), 0);
        assert_eq!(store.memory(None).notes(&team).unwrap().len(), 0);
        store.memory(None).create_entities(&[entity("blue-green".into())], Some(&team)).unwrap();
        assert_eq!(store.memory(None).read_graph(Some(&team), 0, 10).unwrap().0.entities.len(), 1);
        let e = store
            .memory(None)
            .add_observations(&[("Deploy".into(), vec![format!("token {}", p.github)])], Some(&team))
            .unwrap_err();
        assert_eq!(e.code(), "credential_refused", "{e}");
        let doc = NewDocument {
            scope: team.clone(),
            project: String::new(),
            path: "/handbook.md".into(),
            kind: "markdown".into(),
            sha256: "00".repeat(32),
            bytes: 10,
        };
        let chunk = NewChunk { start_line: 1, end_line: 1, heading: String::new(), text: p.env_file(), tokens: 9 };
        let e = store.knowledge_put(&doc, &[chunk]).unwrap_err();
        assert_eq!(e.code(), "credential_refused", "{e}");
        assert!(e.to_string().contains("dotenv-value") && e.to_string().contains("/handbook.md"), "{e}");
        let filter = seshat::store::KnowledgeFilter { project: "", scope: Some(&team) };
        assert_eq!(store.knowledge_documents(filter).unwrap().len(), 0, "no document was written");
        // In the caller's own scope the same note is kept, as its placeholder.
        let note = store.memory(None).set_note(Scope::User, "db", &format!("postgres://ann:{}@db/x", p.password)).unwrap();
        assert!(note.value.starts_with("postgres://ann:[secret:url-password:"), "{}", note.value);
    }
}

/// The `[redaction]` settings: a pattern of the user's, an allow-list entry, a project left
/// unredacted, and redaction turned off; a project's configuration may add patterns only.
#[test]
fn the_settings_add_patterns_allow_examples_and_turn_redaction_off_per_project_or_whole() {
    let home = Home::new();
    let p = Planted::new();
    let config = |body: &str| std::fs::write(home.path().join("config.toml"), body).unwrap();
    let append_line = |project: &str, text: &str| -> String {
        let session = home.session(project);
        let line = crate::support::append_line(None, text);
        let out = crate::support::output_with_stdin(home.cmd().args(["sessions", "append", &session]), &line);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        session
    };
    let stored = |session: &str| -> String {
        let store = home.store();
        crate::support::text_of(&store.full_history(session).unwrap()[0]).to_string()
    };
    config(&format!(
        "[redaction]\npatterns = [{{ id = \"ticket-token\", regex = \"TKT-[0-9A-F]{{12}}\" }}]\nallow = [\"^{}$\"]\n\
         off_projects = [\"/scratch\"]\n",
        p.github
    ));
    let s = append_line("/p", &format!("ticket TKT-0123456789AB with {} and {}", p.github, p.aws));
    let text = stored(&s);
    assert!(text.starts_with("ticket [secret:ticket-token:"), "the user's pattern: {text}");
    assert!(text.contains(&p.github), "the allow-list keeps what it names: {text}");
    assert!(text.contains("[secret:aws-access-token:") && !text.contains(&p.aws), "{text}");
    let s = append_line("/scratch", &format!("plain {}", p.aws));
    assert_eq!(stored(&s), format!("plain {}", p.aws), "a project left unredacted");
    config("[redaction]\nenabled = false\n");
    let s = append_line("/p", &format!("off {}", p.aws));
    assert_eq!(stored(&s), format!("off {}", p.aws));

    // Bad settings name what is wrong; a project's file may not turn anything off.
    config("[redaction]\npatterns = [{ id = \"bad\", regex = \"(unclosed\" }]\n");
    let err = home.fails(&["sessions", "list"]);
    assert!(err.contains("[redaction]") && err.contains("`bad`") && err.contains("config.toml"), "{err}");
    config("");
    let project = home.path().join("repo");
    std::fs::create_dir_all(project.join(".seshat")).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    for line in [
        "enabled = false",
        "allow = [\".*\"]",
        "off_projects = [\"x\"]",
        "patterns = [{ id = \"all\", regex = \"(?s).+\" }]",
    ] {
        std::fs::write(project.join(".seshat/config.toml"), format!("[redaction]\n{line}\n")).unwrap();
        let out = home.cmd().args(["memory", "--action", "show"]).current_dir(&project).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("a project's configuration"), "{line}: {err}");
    }
}

on_both_backends! {
    /// The turn in progress goes to the model as typed, tool calls and results included; what is
    /// stored is redacted, so the next turn's request carries placeholders — and so do the
    /// summary model's request and the stored summary, and the answer streamed in pieces that
    /// split a credential.
    fn the_turn_in_progress_is_sent_as_typed_and_every_later_request_carries_placeholders(home) {
        let p = Planted::new();
        let needles = p.needles();
        let args = json!({"entities": [{"name": "Deploy", "entityType": "process",
            "observations": [format!("pushes with {}", p.github)]}]})
        .to_string();
        let split = p.aws.len() / 2;
        let server = Server::start(vec![
            Reply::Stream { pieces: openai::tool_answer("call_1", "memory_create_entities", &args) },
            Reply::Stream {
                pieces: openai::text_answer(&["Saved; your key ", &p.aws[..split], &p.aws[split..], " is noted."], true),
            },
            Reply::Stream { pieces: openai::text_answer(&["Still here."], true) },
        ]);
        crate::chat::configure(&home, "openai", &server, "");
        let run = |args: &[&str]| {
            let out = crate::chat::chat(&home, args, &[]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            out
        };
        let typed = format!("remember this: {}", p.pasted());
        run(&["-p", &typed, "--json", "--model", "gpt-4o"]);
        run(&["--continue", "-p", "and now?", "--json", "--model", "gpt-4o"]);
        let sent: Vec<String> = server.requests().iter().map(|r| r.body.clone()).collect();
        assert_eq!(sent.len(), 3);
        // The turn's own requests carry what was typed and what the model called with.
        for body in &sent[..2] {
            assert_eq!(found_in(body.as_bytes(), &needles[..4]).len(), 4, "as typed: {body}");
        }
        assert!(sent[1].contains(&p.github), "the tool call as the model wrote it");
        // The next turn's request carries placeholders only.
        assert!(found_in(sent[2].as_bytes(), &needles).is_empty(), "{}", sent[2]);
        assert!(sent[2].contains("[secret:aws-access-token:") && sent[2].contains("[secret:github-pat:"), "{}", sent[2]);

        // Stored: placeholders, the answer's split credential included.
        let store = home.store();
        let id = store.list_sessions(&Default::default()).unwrap()[0].id.clone();
        let history = serde_json::to_string(&store.full_history(&id).unwrap()).unwrap();
        assert!(found_in(history.as_bytes(), &needles).is_empty(), "{history}");
        assert!(history.contains("Saved; your key [secret:aws-access-token:"), "{history}");
        let mut store = store;
        let project = store.session(&id).unwrap().project;
        let memory = format!("{:?}", store.memory(Some(&project)).read_graph(None, 0, 10).unwrap().0);
        assert!(
            memory.contains("pushes with [secret:github-pat:"),
            "the tool ran with the arguments; memory keeps the placeholder: {memory}\n{history}"
        );
        drop(store);

        // A summary: the summary model is asked with placeholders, and what it writes is redacted.
        let summary = json!({"id": "s", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": format!("The user gave {} for deploys.", p.aws)}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 20}});
        let summariser = Server::start(vec![Reply::json(200, &summary.to_string())]);
        crate::chat::configure(&home, "openai", &summariser, "");
        let out = home
            .cmd()
            .env("OPENAI_API_KEY", crate::chat::KEY)
            .args(["compact", &id, "--summary-model", "gpt-4o", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let asked = summariser.requests();
        assert_eq!(asked.len(), 1, "one summary request");
        assert!(found_in(asked[0].body.as_bytes(), &needles).is_empty(), "{}", asked[0].body);
        assert!(asked[0].body.contains("[secret:"), "{}", asked[0].body);
        let store = home.store();
        let compactions = store.compactions(&id).unwrap();
        let kept = compactions.last().and_then(|c| c.summary.clone()).unwrap_or_default();
        assert!(kept.contains("The user gave [secret:aws-access-token:"), "{kept}");
        drop(store);
        assert_eq!(leaks(&home, &needles), vec![]);
    }
}

on_both_backends! {
    /// With history and memory embedded, the embedder is sent placeholders only.
    fn the_embedder_is_sent_placeholders(home) {
        let p = Planted::new();
        let server = Server::route(|r| match expect_route(r, "POST", "/v1/echo") {
            Ok(()) => Reply::Full { status: 200, headers: vec![], body: r.body.clone().into_bytes() },
            Err(why) => Reply::Unexpected(why),
        });
        crate::knowledge::install_test_embedder(&home);
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "[plugins]\nembedder = \"topics\"\n[knowledge]\nmodel = \"topics-long\"\nbase_url = \"{}/v1\"\n\
                 embed_history = true\nembed_memory = true\n",
                server.url()
            ),
        )
        .unwrap();
        let session = home.session("/p");
        let mut store = home.store();
        store.append(&session, &[text(Role::User, p.pasted()), text(Role::Assistant, "noted")]).unwrap();
        store
            .memory(None)
            .create_entities(
                &[NewEntity { name: "Ci".into(), entity_type: "x".into(), observations: vec![p.env_file()] }],
                Some(&Scope::User),
            )
            .unwrap();
        drop(store);
        home.ok(&["knowledge", "embed"]);
        let bodies: String = server.requests().iter().map(|r| r.body.clone()).collect();
        assert!(bodies.contains("[secret:aws-access-token:") && bodies.contains("[secret:dotenv-value:"), "{bodies}");
        assert!(found_in(bodies.as_bytes(), &p.needles()).is_empty(), "{bodies}");
        assert!(server.unexpected().is_empty(), "{:?}", server.unexpected());
    }
}

on_both_backends! {
    /// What a store held before it redacted (another build's, or redaction off) is rewritten by
    /// `sessions redact`: a dry run counts and changes nothing; a kill between two sessions
    /// leaves the first rewritten and the second whole, and the run again finishes the second;
    /// the search index and vectors follow the rewritten messages.
    fn sessions_redact_rewrites_what_was_stored_resumably_with_a_count_per_rule(home) {
        let p = Planted::new();
        let needles = p.needles();
        let mut store = home.store();
        store.set_redaction(seshat::redaction::Policy::off());
        let first = plant_everywhere(&mut store, &p);
        let second = store.create_session(NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;
        store.append(&second, &[text(Role::User, format!("again {}", p.aws))]).unwrap();
        // Credentials held by sessions alone (the planted memory and documents are not sessions').
        let only = Planted::new();
        store.append(&second, &[text(Role::Assistant, only.pasted())]).unwrap();
        let history_of = |store: &Store, id: &str| serde_json::to_string(&store.full_history(id).unwrap()).unwrap();
        assert!(!found_in(history_of(&store, &first).as_bytes(), &needles).is_empty(), "planted unredacted");
        // Its messages are embedded for history search: their vectors are made again once rewritten.
        let vector = if home.is_postgres() { "'\\x00'::bytea" } else { "x'00'" };
        home.sql(
            &format!(
                "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) VALUES ('history', 'e', 'm', 1, 0); \
                 INSERT INTO message_vectors (message_id, vector) SELECT id, {vector} FROM messages;"
            ),
            &format!(
                "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) VALUES ('history', 'e', 'm', 1, 0); \
                 INSERT INTO message_vectors (message_id, vector) SELECT id, {vector} FROM messages;"
            ),
        )
        .unwrap();
        drop(store);

        let json = |args: &[&str]| -> Value { serde_json::from_str(&home.ok(args)).unwrap() };
        let dry = json(&["sessions", "redact", "--all", "--dry-run", "--json"]);
        // The two sessions and the fork of the first (its title and the records it was given).
        assert_eq!((dry["dry_run"].as_bool(), dry["changed"].as_u64()), (Some(true), Some(3)), "{dry}");
        for rule in ["aws-access-token", "github-pat", "private-key", "url-password", "dotenv-value"] {
            assert!(dry["rules"][rule].as_u64() >= Some(1), "{rule}: {dry}");
        }
        assert!(!found_in(history_of(&home.store(), &first).as_bytes(), &needles).is_empty(), "a dry run changes nothing");

        // Killed before the second session's transaction commits.
        let killed = home.cmd().env("SESHAT_CRASH_AT", "redact:2").args(["sessions", "redact", "--all"]).output().unwrap();
        assert!(!killed.status.success(), "killed");
        let store = home.store();
        let (a, b) = (history_of(&store, &first), history_of(&store, &second));
        let done = |h: &str| found_in(h.as_bytes(), &needles).is_empty();
        assert!(done(&a) != done(&b), "one session rewritten, the other whole: {a}\n{b}");
        drop(store);
        home.assert_intact("after a kill mid-redaction");

        let again = json(&["sessions", "redact", "--all", "--json"]);
        assert_eq!(again["changed"].as_u64(), Some(2), "only the sessions the kill left: {again}");
        let store = home.store();
        for id in [&first, &second] {
            let h = history_of(&store, id);
            assert!(done(&h) && h.contains("[secret:aws-access-token:"), "{h}");
        }
        let records = format!(
            "{:?}{:?}{:?}{:?}",
            store.session(&first).unwrap().title,
            store.compactions(&first).unwrap(),
            store.trims(&first).unwrap(),
            store.take_draft(&first).unwrap()
        );
        assert!(found_in(records.as_bytes(), &needles).is_empty() && records.contains("[secret:"), "{records}");
        let search = home.ok(&["sessions", "search", &p.aws, "--all", "--json"]);
        assert_eq!(serde_json::from_str::<Value>(&search).unwrap(), json!([]), "the index forgot it: {search}");
        let placeholder = history_of(&store, &second).split("again ").nth(1).unwrap()[..35].to_string();
        let search = home.ok(&["sessions", "search", "again", "--all", "--json"]);
        assert!(search.contains("[secret:aws-access-token:"), "the index holds the new text: {search} {placeholder}");
        let vectors = home.sql_value("SELECT count(*) FROM message_vectors", "SELECT count(*) FROM message_vectors");
        let queued = home.sql_value(
            "SELECT count(*) FROM embed_queue WHERE corpus = 'history'",
            "SELECT count(*) FROM embed_queue WHERE corpus = 'history'",
        );
        let messages = home.sql_value("SELECT count(*) FROM messages", "SELECT count(*) FROM messages");
        assert_eq!((vectors + queued, messages - vectors), (messages, queued), "rewritten messages wait for new vectors");
        assert!(queued >= 4, "{queued}");
        let export = home.ok(&["sessions", "export", &first]);
        let mut store = store;
        let back = store.import(&mut std::io::Cursor::new(export), ImportOptions { new_id: true, ..Default::default() });
        assert!(back.is_ok(), "a rewritten session's export imports again: {back:?}");
        let nothing = json(&["sessions", "redact", "--all", "--json"]);
        assert_eq!(nothing["changed"].as_u64(), Some(0), "placeholders are never redacted again: {nothing}");
        drop(store);
        home.assert_intact("after redaction");
        if !home.is_postgres() {
            // The file keeps nothing of the old text (PostgreSQL's WAL keeps it until recycled).
            assert_eq!(leaks(&home, &only.needles()), vec![], "nothing of the old text left in the file");
        }
        let e = home.fails(&["sessions", "redact"]);
        assert!(e.contains("--all"), "{e}");
        // Messages stay append-only for everything else.
        let refused = home.sql("UPDATE messages SET parts = '[]' WHERE seq = 1", "UPDATE messages SET parts = '[]' WHERE seq = 1");
        assert!(refused.unwrap_err().contains("append-only"));
    }
}

/// Sets when `session` was last written to, `days` ago.
fn age_session(home: &Home, session: &str, days: i64) {
    let at = seshat::store::now_ms() - days * 86_400_000;
    let sql = format!("UPDATE sessions SET updated_at = {at} WHERE id = '{session}'");
    home.sql(&sql, &sql).unwrap();
}

on_both_backends! {
    /// `sessions purge --older-than AGE` deletes this project's sessions not written to for
    /// longer (every project's with --all) after a dry run lists them; a fork of a purged session
    /// keeps its own copy; without an age, [retention] decides for sessions and memory, per
    /// project.
    fn sessions_purge_lets_old_history_and_memory_go_and_forks_keep_their_copy(home) {
        let here = home.path().canonicalize().unwrap().to_str().unwrap().to_string();
        let mut store = home.store();
        let old = home.session(&here);
        store.append(&old, &[text(Role::User, "old request"), text(Role::Assistant, "old answer")]).unwrap();
        let fork = store.fork(&old, None, Some("the fork")).unwrap().session.id;
        let recent = home.session(&here);
        let elsewhere = home.session("/elsewhere");
        for s in [&old, &elsewhere] {
            age_session(&home, s, 100);
        }
        drop(store);
        let json = |args: &[&str]| -> Value { serde_json::from_str(&home.ok(args)).unwrap() };
        let ids = |v: &Value| -> Vec<String> {
            v["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
        };
        let dry = json(&["sessions", "purge", "--older-than", "90d", "--dry-run", "--json"]);
        assert_eq!(ids(&dry), [old.as_str()], "this project's old session only: {dry}");
        assert!(home.store().session(&old).is_ok(), "a dry run deletes nothing");
        let e = home.fails(&["sessions", "purge", "--older-than", "90d"]);
        assert!(e.contains("--yes"), "{e}");
        let e = home.fails(&["sessions", "purge", "--older-than", "ninety days", "--yes"]);
        assert!(e.contains("--older-than") && e.contains("90d"), "{e}");
        let done = json(&["sessions", "purge", "--older-than", "90d", "--yes", "--json"]);
        assert_eq!(ids(&done), [old.as_str()]);
        let store = home.store();
        assert_eq!(store.session(&old).unwrap_err().code(), "session_not_found");
        let kept: Vec<String> = store.full_history(&fork).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect();
        assert_eq!(kept, ["old request", "old answer"], "the fork keeps its own copy");
        assert!(store.session(&recent).is_ok() && store.session(&elsewhere).is_ok());
        drop(store);
        let all = json(&["sessions", "purge", "--older-than", "90d", "--all", "--yes", "--json"]);
        assert_eq!(ids(&all), [elsewhere.as_str()]);
        home.assert_intact("after purging");

        // [retention]: a project of its own keeps sessions a week; memory is kept a month.
        let mut store = home.store();
        let week = home.session("/weekly");
        age_session(&home, &week, 10);
        let mut memory = store.memory(Some("/weekly"));
        let entity = |name: &str| NewEntity { name: name.into(), entity_type: "x".into(), observations: vec!["seen".into()] };
        memory.create_entities(&[entity("Stale"), entity("Fresh")], Some(&Scope::User)).unwrap();
        memory.set_note(Scope::User, "old-note", "x").unwrap();
        drop(store);
        let long_ago = seshat::store::now_ms() - 60 * 86_400_000;
        home.sql(
            &format!("UPDATE memory_entities SET updated_at = {long_ago} WHERE name = 'Stale'; UPDATE memory_notes SET updated_at = {long_ago}"),
            &format!("UPDATE memory_entities SET updated_at = {long_ago} WHERE name = 'Stale'; UPDATE memory_notes SET updated_at = {long_ago}"),
        )
        .unwrap();
        let e = home.fails(&["sessions", "purge", "--yes"]);
        assert!(e.contains("--older-than") && e.contains("[retention]"), "{e}");
        std::fs::write(
            home.path().join("config.toml"),
            "[retention]\nsessions = \"90d\"\nmemory = \"30d\"\n[retention.projects.\"/weekly\"]\nsessions = \"1w\"\n",
        )
        .unwrap();
        let by_config = json(&["sessions", "purge", "--yes", "--json"]);
        assert_eq!(ids(&by_config), [week.as_str()], "{by_config}");
        assert_eq!((by_config["entities"].as_u64(), by_config["notes"].as_u64()), (Some(1), Some(1)), "{by_config}");
        let mut store = home.store();
        let graph = store.memory(None).read_graph(Some(&Scope::User), 0, 10).unwrap().0;
        assert_eq!(graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["Fresh"]);
        assert!(store.session(&recent).is_ok(), "90 days for the rest");
        std::fs::write(home.path().join("config.toml"), "[retention]\nsessions = \"ninety\"\n").unwrap();
        let e = home.fails(&["sessions", "purge", "--yes"]);
        assert!(e.contains("[retention] sessions") && e.contains("90d"), "{e}");
    }
}

/// A service on PostgreSQL purges what [retention] sets for every user, in the background.
#[test]
fn a_service_on_postgresql_purges_every_users_old_sessions_in_the_background() {
    let home = Home::postgres();
    let mut store = home.store();
    store.add_user("alice").unwrap();
    let theirs = home
        .store()
        .acting_for("alice")
        .create_session(NewSession { project: "/p".into(), ..Default::default() })
        .unwrap()
        .id;
    let mine = home.session("/p");
    let fresh = home.session("/p");
    store.create_team("infra").unwrap();
    let team = Scope::Team("infra".into());
    let entity = |name: &str| NewEntity { name: name.into(), entity_type: "x".into(), observations: vec!["y".into()] };
    store.memory(None).create_entities(&[entity("Stale"), entity("Fresh")], Some(&team)).unwrap();
    drop(store);
    for s in [&theirs, &mine] {
        age_session(&home, s, 40);
    }
    let long_ago = seshat::store::now_ms() - 200 * 86_400_000;
    let sql = format!("UPDATE memory_entities SET updated_at = {long_ago} WHERE name = 'Stale'");
    home.sql(&sql, &sql).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[retention]\nsessions = \"30d\"\nevery = \"1h\"\n[retention.teams.infra]\nmemory = \"180d\"\n",
    )
    .unwrap();
    let service = crate::network::Service::start(&home, "ws", &[]);
    crate::support::wait_for("the old sessions purged", || {
        let store = home.store();
        store.session(&mine).is_err() && store.acting_for("alice").session(&theirs).is_err()
    });
    assert!(home.store().session(&fresh).is_ok(), "a fresh session is kept");
    crate::support::wait_for("the team's stale memory purged", || {
        let graph = home.store().memory(None).read_graph(Some(&team), 0, 10).unwrap().0;
        graph.entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>() == ["Fresh"]
    });
    crate::support::wait_for("the purge logged", || service.logged(&["retention: purged", "alice"]));
}

on_both_backends! {
    /// A session brought in from Claude Code is redacted as it is written: its title (Claude's
    /// summary), the user's text and a tool's result.
    fn a_claude_code_session_is_redacted_as_it_is_imported(home) {
        let p = Planted::new();
        let dir = home.path().join("claude").join("-work-demo");
        std::fs::create_dir_all(&dir).unwrap();
        let line = |uuid: &str, parent: Option<&str>, kind: &str, minute: u32, message: Value| {
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/work/demo",
                "sessionId": "22222222-2222-4333-8444-555555555555", "version": "2.0.14", "type": kind,
                "uuid": uuid, "timestamp": format!("2025-11-21T10:{minute:02}:00.000Z"), "message": message})
            .to_string()
        };
        let lines = [
            json!({"type": "summary", "summary": format!("Rotate {}", p.aws), "leafUuid": "a2"}).to_string(),
            line("u1", None, "user", 1, json!({"role": "user", "content": format!("use {}", p.pasted())})),
            line("a1", Some("u1"), "assistant", 2, json!({"role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat .env"}}]})),
            line("u2", Some("a1"), "user", 3, json!({"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": p.env_file()}]})),
            line("a2", Some("u2"), "assistant", 4, json!({"role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "Read it."}]})),
        ];
        let file = dir.join("22222222-2222-4333-8444-555555555555.jsonl");
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let out = home.ok(&["sessions", "import", "--from", "claude-code", file.to_str().unwrap(), "--json"]);
        let reports: Value = serde_json::from_str(&out).unwrap();
        let id = reports[0]["session"].as_str().unwrap().to_string();
        let store = home.store();
        let title = store.session(&id).unwrap().title.unwrap_or_default();
        assert!(title.starts_with("Rotate [secret:aws-access-token:"), "{title}");
        let history = serde_json::to_string(&store.full_history(&id).unwrap()).unwrap();
        assert!(history.contains("[secret:dotenv-value:") && history.contains("[secret:private-key:"), "{history}");
        assert!(found_in(history.as_bytes(), &p.needles()).is_empty(), "{history}");
        drop(store);
        assert_eq!(leaks(&home, &p.needles()), vec![]);
    }
}
