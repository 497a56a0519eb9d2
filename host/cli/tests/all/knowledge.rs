//! `seshat knowledge …` (lexical so far): files walked as ripgrep walks them, chunked by
//! structure, re-indexed only when changed, searched with bm25 and filtered by scope and project.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::on_both_backends;
use crate::support::server::{Reply, Server, expect_header, expect_route};
use crate::support::{Home, fixture};

/// A project directory (a git repository) with a guide, a source file, an ignored build
/// directory, a hidden file and a binary.
fn project(home: &Home) -> std::path::PathBuf {
    let root = home.path().join("proj");
    for dir in [".git", "docs", "src", "target"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(
        root.join("docs/guide.md"),
        "# Guide\n\nIntro paragraph.\n\n## Install\n\nRun the installer, then restart the flux capacitor.\n",
    )
    .unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {\n    println!(\"warp drive engaged\");\n}\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join("target/out.txt"), "flux from a build\n").unwrap();
    std::fs::write(root.join(".secret.md"), "flux in a hidden file\n").unwrap();
    std::fs::write(root.join("logo.png"), b"\x89PNG\r\n").unwrap();
    root
}

fn run(home: &Home, dir: &Path, args: &[&str]) -> std::process::Output {
    home.cmd().current_dir(dir).args(args).output().unwrap()
}

fn json(home: &Home, dir: &Path, args: &[&str]) -> Value {
    let out = run(home, dir, args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

on_both_backends! {
fn add_walks_as_ripgrep_does_and_search_finds_exact_lines(home) {
    let root = project(&home);
    let report = json(&home, &root, &["knowledge", "add", ".", "--json"]);
    assert_eq!((report["files"].as_u64(), report["indexed"].as_u64()), (Some(3), Some(2)), "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert!(skipped[0]["path"].as_str().unwrap().ends_with("logo.png"));
    let found = json(&home, &root, &["knowledge", "search", "flux capacitor", "--json"]);
    assert_eq!(found["mode"], "lexical", "no embedder: said so");
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "the ignored and the hidden files were not indexed: {found}");
    let hit = &hits[0];
    assert!(hit["path"].as_str().unwrap().ends_with("docs/guide.md"));
    assert!(hit["snippet"].as_str().unwrap().contains("[flux] [capacitor]"), "{hit}");
    let text = std::fs::read_to_string(root.join("docs/guide.md")).unwrap();
    let (start, end) = (hit["start_line"].as_u64().unwrap(), hit["end_line"].as_u64().unwrap());
    assert_eq!((start, end), (1, text.lines().count() as u64), "the whole small guide, lines exact");
    let human = String::from_utf8(run(&home, &root, &["knowledge", "search", "warp"]).stdout).unwrap();
    assert!(human.starts_with("1 results (lexical: words matched by bm25; no embedder configured)"), "{human}");
    assert!(human.contains("src/main.rs:1-3"), "{human}");
}
}

on_both_backends! {
fn re_adding_indexes_only_what_changed_and_drops_what_is_gone(home) {
    let root = project(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);
    let before = json(&home, &root, &["knowledge", "list", "--json"]);
    let again = json(&home, &root, &["knowledge", "add", ".", "--json"]);
    assert_eq!((again["indexed"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(2)), "{again}");

    std::fs::write(root.join("docs/guide.md"), "# Guide\n\nNow about the hyperdrive.\n").unwrap();
    std::fs::remove_file(root.join("src/main.rs")).unwrap();
    let third = json(&home, &root, &["knowledge", "add", ".", "--json"]);
    assert_eq!((third["indexed"].as_u64(), third["removed"].as_u64()), (Some(1), Some(1)), "{third}");
    let after = json(&home, &root, &["knowledge", "list", "--json"]);
    let docs = after.as_array().unwrap();
    assert_eq!(docs.len(), 1, "the deleted file's document went: {after}");
    assert_ne!(docs[0]["sha256"], before[0]["sha256"], "the guide was indexed again");
    assert!(json(&home, &root, &["knowledge", "search", "warp", "--json"])["hits"].as_array().unwrap().is_empty());
    assert!(json(&home, &root, &["knowledge", "search", "flux", "--json"])["hits"].as_array().unwrap().is_empty());
    assert_eq!(
        json(&home, &root, &["knowledge", "search", "hyperdrive", "--json"])["hits"].as_array().unwrap().len(),
        1
    );
}
}

on_both_backends! {
fn scopes_and_projects_filter_and_remove_never_touches_files(home) {
    let root = project(&home);
    let other = home.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::write(other.join("notes.md"), "# Notes\n\nThe flux budget is 42.\n").unwrap();
    json(&home, &root, &["knowledge", "add", "docs", "--json"]);
    json(&home, &other, &["knowledge", "add", "notes.md", "--scope", "user", "--json"]);
    // From the project: its own guide and the user's notes; from elsewhere: only the user's.
    let here = json(&home, &root, &["knowledge", "search", "flux", "--json"]);
    assert_eq!(here["hits"].as_array().unwrap().len(), 2, "{here}");
    let elsewhere = json(&home, &other, &["knowledge", "search", "flux", "--json"]);
    let hits = elsewhere["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "another project's documents are not seen: {elsewhere}");
    assert!(hits[0]["path"].as_str().unwrap().ends_with("notes.md"));
    let only_user = json(&home, &root, &["knowledge", "search", "flux", "--scope", "user", "--json"]);
    assert_eq!(only_user["hits"].as_array().unwrap().len(), 1);

    let out = run(&home, &root, &["knowledge", "remove", "docs"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("Removed 1 documents from the index (the files themselves are untouched).")
    );
    assert!(root.join("docs/guide.md").is_file(), "the file stays");
    let out = run(&home, &root, &["knowledge", "remove", "999"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is neither an indexed document's id nor a path holding one")
    );
}
}

#[test]
fn a_version_7_database_upgrades_and_indexes_documents() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v7.db");
    std::fs::copy(fixture("store-v7.sqlite"), &db).unwrap();
    let before: u32 =
        rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 7, "the fixture must stay at version 7");
    let mut store = seshat::store::Store::open(&db).unwrap();
    let s1 = "01JFV1AAAA0000000000000001";
    let trims = store.trims(s1).unwrap();
    assert_eq!(trims[0].plugin.as_ref().map(|p| p.id.as_str()), Some("trimmer"), "version 7's records kept");
    let doc = seshat::store::NewDocument {
        scope: seshat::memory::Scope::User,
        project: String::new(),
        path: "/notes/a.md".into(),
        kind: "markdown".into(),
        sha256: "00".repeat(32),
        bytes: 20,
    };
    let chunk = seshat::store::NewChunk {
        start_line: 1,
        end_line: 2,
        heading: "A".into(),
        text: "# A\nquasar notes".into(),
        tokens: 5,
    };
    store.knowledge_put(&doc, &[chunk]).unwrap();
    let filter = seshat::store::KnowledgeFilter { project: "/p", scope: None };
    let hits = store.knowledge_search(filter, "quasar", 5).unwrap();
    assert_eq!((hits.len(), hits[0].start_line, hits[0].heading.as_str()), (1, 1, "A"));
}

/// Installs the deterministic test embedder (see `tests/plugins/guests/embedder`) as `topics`.
pub fn install_test_embedder(home: &Home) {
    let dir = home.path().join("plugins").join("topics");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::EMBEDDER, dir.join("plugin.wasm")).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        "id = \"topics\"\nkind = \"embedder\"\napi = \"0.2.0\"\nallowed_hosts = [\"{base_url}\"]\n",
    )
    .unwrap();
}

/// Installs the test embedder and points `[knowledge]` at `server` with `model`.
pub fn with_test_embedder(home: &Home, server: &Server, model: &str) {
    install_test_embedder(home);
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nembedder = \"topics\"\n[knowledge]\nmodel = \"{model}\"\nbase_url = \"{}/v1\"\n",
            server.url()
        ),
    )
    .unwrap();
}

/// Changes `[knowledge] model` to `to` (from `topics`).
fn switch_model(home: &Home, to: &str) {
    let cfg = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        cfg.replace("\"topics\"\nbase_url", &format!("\"{to}\"\nbase_url")),
    )
    .unwrap();
}

/// A loopback server that echoes the test embedder's texts back (it computes the vectors).
pub fn echo_server() -> Server {
    Server::route(|r| {
        let expected = expect_route(r, "POST", "/v1/echo")
            .and(expect_header(r, "content-type", Some("text/plain")))
            // No credential for an auth-less embedder.
            .and(expect_header(r, "authorization", None));
        match expected {
            Ok(()) => Reply::Full { status: 200, headers: vec![], body: r.body.clone().into_bytes() },
            Err(why) => Reply::Unexpected(why),
        }
    })
}

/// Four notes: two about cars (one says "automobile", one does not), one mostly about fruit that
/// says "automobile" once, one about the weather.
pub fn notes(home: &Home) -> std::path::PathBuf {
    let root = home.path().join("notes");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    for (name, text) in [
        ("a.md", "The automobile engine roared.\n"),
        ("b.md", "My car and the truck need new tyres.\n"),
        ("c.md", "An automobile drove past the orchard: apple, banana, pear, fruit everywhere.\n"),
        ("d.md", "Rain and a storm in the forecast.\n"),
    ] {
        std::fs::write(root.join(name), text).unwrap();
    }
    root
}

fn hit_names(found: &Value) -> Vec<String> {
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Path::new(h["path"].as_str().unwrap()).file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

on_both_backends! {
fn hybrid_search_fuses_words_and_vectors_by_reciprocal_rank_exactly(home) {
    let server = echo_server();
    with_test_embedder(&home, &server, "topics");
    let root = notes(&home);
    let report = json(&home, &root, &["knowledge", "add", ".", "--json"]);
    assert_eq!(report["embedding"]["embedded"], 4, "{report}");
    // Four chunks, at most four texts a request (the plugin's max-batch): one request.
    assert_eq!(report["embedding"]["requests"], 1, "{report}");
    assert_eq!(server.count(), 1);
    let found = json(&home, &root, &["knowledge", "search", "automobile", "--json"]);
    assert_eq!(found["mode"], "hybrid", "{found}");
    let hits = found["hits"].as_array().unwrap();
    // Words find a and c; meaning (the vehicle topic) finds a and b first, then c, then d. In
    // both rankings, c beats b, which no word finds but meaning does.
    let names = hit_names(&found);
    assert_eq!(names, ["a.md", "c.md", "b.md", "d.md"], "{found}");
    let a = &hits[0];
    assert_eq!((a["lexical_rank"].as_u64(), a["vector_rank"].as_u64()), (Some(1), Some(1)), "{a}");
    let b = &hits[2];
    assert_eq!((b["lexical_rank"].as_u64(), b["vector_rank"].as_u64()), (None, Some(2)), "b has no such word: {b}");
    assert!(b["snippet"].as_str().unwrap().starts_with("My car"), "a vector-only hit shows its opening: {b}");
    let c = &hits[1];
    assert_eq!((c["lexical_rank"].as_u64(), c["vector_rank"].as_u64()), (Some(2), Some(3)), "{c}");
    assert!((b["similarity"].as_f64().unwrap() - 1.0).abs() < 0.02, "b is all vehicle: {b}");
    // Every score is exactly 1/(60 + lexical rank) + 1/(60 + vector rank), and the order is by it.
    let mut last = f64::MAX;
    for h in hits {
        let part = |key: &str| h[key].as_u64().map_or(0.0, |r| 1.0 / (60.0 + r as f64));
        let expected = part("lexical_rank") + part("vector_rank");
        assert_eq!(h["score"].as_f64().unwrap(), expected, "{h}");
        assert!(expected <= last, "ordered by score: {found}");
        last = expected;
    }
    // The weights are the user's: meaning alone puts b (all vehicle) before c.
    let cfg = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    std::fs::write(home.path().join("config.toml"), format!("{cfg}lexical_weight = 0.0\n")).unwrap();
    let meaning = json(&home, &root, &["knowledge", "search", "automobile", "--json"]);
    assert_eq!(hit_names(&meaning), ["a.md", "b.md", "c.md", "d.md"], "{meaning}");
    let human = String::from_utf8(run(&home, &root, &["knowledge", "search", "automobile"]).stdout).unwrap();
    assert!(human.contains("(hybrid: words (bm25) and meaning (vectors), fused by rank)"), "{human}");
}
}

on_both_backends! {
fn vector_search_is_filtered_by_scope_and_project_before_ranking(home) {
    let server = echo_server();
    with_test_embedder(&home, &server, "topics");
    let root = notes(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);
    // Another project's car note, and a user-scope one seen everywhere.
    let other = home.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::write(other.join("o.md"), "A vehicle with a motor.\n").unwrap();
    json(&home, &other, &["knowledge", "add", ".", "--json"]);
    let user = home.path().join("mine.md");
    std::fs::write(&user, "Cars cars cars.\n").unwrap();
    json(&home, &root, &["knowledge", "add", user.to_str().unwrap(), "--scope", "user", "--json"]);
    let found = json(&home, &root, &["knowledge", "search", "engine", "--limit", "10", "--json"]);
    let names = hit_names(&found);
    assert!(names.contains(&"mine.md".to_string()), "user scope is seen in every project: {names:?}");
    assert!(!names.contains(&"o.md".to_string()), "another project's document never: {names:?}");
    // With one scope, the other scopes' vectors are not candidates at all.
    let only = json(&home, &root, &["knowledge", "search", "engine", "--scope", "user", "--json"]);
    assert_eq!(hit_names(&only), ["mine.md"], "{only}");
}
}

on_both_backends! {
fn a_new_model_is_refused_until_the_user_consents_and_search_stays_lexical_meanwhile(home) {
    let server = echo_server();
    with_test_embedder(&home, &server, "topics");
    let root = notes(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);
    switch_model(&home, "topics-long");
    let before = server.count();
    let err = String::from_utf8(run(&home, &root, &["knowledge", "embed"]).stderr).unwrap();
    assert!(
        err.contains("4 vectors were made by `topics (8 dimensions)`")
            && err.contains("re-embeds all 4 chunks")
            && err.contains("--re-embed"),
        "{err}"
    );
    assert_eq!(server.count(), before, "nothing was sent before consent");
    assert_eq!(home.store().vector_index().unwrap().unwrap().vectors, 4, "nothing was deleted");
    let found = json(&home, &root, &["knowledge", "search", "automobile", "--json"]);
    assert_eq!(found["mode"], "lexical", "{found}");
    assert!(found["note"].as_str().unwrap().contains("topics-long"), "{found}");
    let done = json(&home, &root, &["knowledge", "embed", "--re-embed", "--json"]);
    assert_eq!((done["embedded"].as_u64(), done["replaced"].as_u64()), (Some(4), Some(4)), "{done}");
    let index = home.store().vector_index().unwrap().unwrap();
    assert_eq!((index.model.as_str(), index.vectors), ("topics-long", 4));
    assert_eq!(json(&home, &root, &["knowledge", "search", "automobile", "--json"])["mode"], "hybrid");
}
}

on_both_backends! {
fn a_text_longer_than_the_model_takes_is_split_never_cut(home) {
    let server = echo_server();
    // `topics` takes 64 tokens; a chunk is up to 400.
    with_test_embedder(&home, &server, "topics");
    let root = home.path().join("long");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let filler: String = (0..60).map(|i| format!("Plain words number {i} say nothing much. ")).collect();
    std::fs::write(root.join("long.md"), format!("{filler}And at the very end: the automobile.\n")).unwrap();
    let report = json(&home, &root, &["knowledge", "add", ".", "--json"]);
    assert!(report["embedding"]["split"].as_u64().unwrap() >= 1, "{report}");
    let sent: usize = server.requests().iter().map(|r| r.body.split('\n').count()).sum();
    assert!(sent > report["chunks"].as_u64().unwrap() as usize, "pieces were sent, not chunks: {sent}");
    let every = server.requests().iter().map(|r| r.body.clone()).collect::<String>();
    assert!(every.contains("the automobile"), "the end of the text was embedded, not cut off");
    // The mean of the pieces points partly along the vehicle topic: found by meaning.
    // The file is two chunks; the one holding the end is the nearest to "truck".
    let found = json(&home, &root, &["knowledge", "search", "truck", "--json"]);
    assert_eq!(found["mode"], "hybrid");
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    assert_eq!(hits[0]["vector_rank"], 1, "{found}");
    assert!(hits[0]["similarity"].as_f64().unwrap() > 0.1, "{found}");
    assert_eq!(hits[1]["similarity"].as_f64().unwrap(), 0.0, "the other chunk says nothing of vehicles: {found}");
}
}

#[test]
fn embedder_openai_speaks_the_real_embeddings_json_with_the_key_added_by_the_host() {
    let home = Home::new();
    // The real /v1/embeddings shape, items out of order (the index says whose they are).
    let server = Server::route(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
        let fields = (body["model"].as_str(), body["encoding_format"].as_str(), body["dimensions"].as_u64());
        let expected = expect_route(r, "POST", "/v1/embeddings")
            .and(expect_header(r, "authorization", Some("Bearer sk-test-embed-123")))
            .and(expect_header(r, "content-type", Some("application/json")))
            .and(match fields {
                (Some("text-embedding-3-small"), Some("float"), Some(3)) => Ok(()),
                other => Err(format!("model, encoding_format, dimensions: {other:?}")),
            });
        if let Err(why) = expected {
            return Reply::Unexpected(why);
        }
        let inputs = body["input"].as_array().unwrap();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let car = t.as_str().unwrap().contains("car") || t.as_str().unwrap().contains("automobile");
                let v = if car { [0.9, 0.1, 0.0] } else { [0.0, 0.2, 0.9] };
                serde_json::json!({"object": "embedding", "index": i, "embedding": v})
            })
            .collect();
        data.reverse();
        let answer = serde_json::json!({
            "object": "list", "data": data, "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 12, "total_tokens": 12}
        });
        Reply::json(200, &answer.to_string())
    });
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"text-embedding-3-small\"\ndimensions = 3\n\
             base_url = \"{}/v1\"\n",
            server.url()
        ),
    )
    .unwrap();
    let root = notes(&home);
    let out = home
        .cmd()
        .current_dir(&root)
        .env("OPENAI_API_KEY", "sk-test-embed-123")
        .args(["knowledge", "add", ".", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["embedding"]["embedded"], 4, "{report}");
    let index = home.store().vector_index().unwrap().unwrap();
    assert_eq!(
        (index.embedder.as_str(), index.model.as_str(), index.dimensions),
        ("embedder-openai", "text-embedding-3-small", 3)
    );
    let out = home
        .cmd()
        .current_dir(&root)
        .env("OPENAI_API_KEY", "sk-test-embed-123")
        .args(["knowledge", "search", "car", "--json"])
        .output()
        .unwrap();
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["mode"], "hybrid", "{found}");
    let names = hit_names(&found);
    assert!(names[..2].contains(&"b.md".to_string()) && names[..3].contains(&"a.md".to_string()), "{names:?}");
    // The query went as a query: one more request with one input.
    let last = server.requests().last().unwrap().json();
    assert_eq!(last["input"].as_array().unwrap().len(), 1);
    for r in server.requests() {
        assert!(!r.body.contains("sk-test-embed-123"), "the key is a header, never in the body");
    }
    let db = std::fs::read(home.db()).unwrap();
    assert!(!db.windows(17).any(|w| w == b"sk-test-embed-123"), "the key never reaches the database");
}

on_both_backends! {
fn an_embedding_batch_refused_for_its_length_is_cut_again_and_sent_once_more(home) {
    // An OpenAI-compatible embeddings server whose model takes 256 tokens, counted with a real
    // tokenizer (GPT-2's), refusing longer inputs in OpenAI's words; the user's configuration
    // overstates the limit (1,024).
    let refused: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = refused.clone();
    let server = Server::route(move |r| {
        if let Err(why) = expect_route(r, "POST", "/v1/embeddings") {
            return Reply::Unexpected(why);
        }
        let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
        let inputs: Vec<String> = body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t.as_str().unwrap_or_default().to_string())
            .collect();
        let bpe = tiktoken_rs::r50k_base_singleton();
        if let Some(n) = inputs.iter().map(|t| bpe.count_ordinary(t)).find(|&n| n > 256) {
            seen.lock().unwrap().push(r.body.clone());
            let message = format!(
                "This model's maximum context length is 256 tokens, however you requested {n} tokens ({n} in your prompt; 0 for the completion). Please reduce your prompt; or completion length."
            );
            let error = serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
            return Reply::json(400, &error.to_string());
        }
        let data: Vec<Value> = (0..inputs.len())
            .map(|i| serde_json::json!({"object": "embedding", "index": i, "embedding": [0.5, 0.5, 0.1]}))
            .collect();
        Reply::json(200, &serde_json::json!({"object": "list", "data": data, "model": "m"}).to_string())
    });
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"text-embedding-3-small\"\ndimensions = 3\n\
             max_input_tokens = 1024\nbase_url = \"{}/v1\"\n",
            server.url()
        ),
    )
    .unwrap();
    let root = home.path().join("code");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let log: String = (0..200)
        .map(|i| {
            format!(
                "[2026-12-03T10:{:02}:{:02}Z] INFO worker-{i} rows={}/10000 in {}ms\n",
                i % 60,
                i % 60,
                i * 37,
                200 + i
            )
        })
        .collect();
    std::fs::write(root.join("run.log"), log).unwrap();
    let out = home
        .cmd()
        .current_dir(&root)
        .env("OPENAI_API_KEY", "sk-test")
        .args(["knowledge", "add", ".", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks = report["chunks"].as_u64().unwrap();
    assert_eq!(report["embedding"]["embedded"].as_u64(), Some(chunks), "every chunk has its vector: {report}");
    let refused = refused.lock().unwrap().clone();
    assert!(!refused.is_empty(), "the first batch was refused (the overstated limit): {report}");
    let mut distinct = refused.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), refused.len(), "no request was refused twice");
}
}

on_both_backends! {
fn an_embedder_that_fails_leaves_the_index_lexical_and_says_how_to_finish(home) {
    let server = Server::route(|r| match expect_route(r, "POST", "/v1/embeddings") {
        Ok(()) => {
            Reply::json(401, r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#)
        }
        Err(why) => Reply::Unexpected(why),
    });
    std::fs::write(
        home.path().join("config.toml"),
        format!("[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"nomic-embed-text\"\nbase_url = \"{}/v1\"\n", server.url()),
    )
    .unwrap();
    let root = notes(&home);
    let err = home.cmd().current_dir(&root).args(["knowledge", "add", "."]).output().unwrap();
    assert!(!err.status.success());
    let text = String::from_utf8_lossy(&err.stderr);
    assert!(text.contains("indexed 4 files (4 chunks), searchable by words; making their vectors failed"), "{text}");
    assert!(text.contains("auth_failed") || text.contains("HTTP 401"), "{text}");
    assert_eq!(text.matches("Incorrect API key provided").count(), 1, "said once: {text}");
    // The nomic model is asked with its document prefix.
    let body = server.requests()[0].json();
    assert!(body["input"][0].as_str().unwrap().starts_with("search_document: "), "{body}");
    // The index is there and searchable; the search says why it is lexical.
    let found = json(&home, &root, &["knowledge", "search", "automobile", "--json"]);
    assert_eq!(found["mode"], "lexical");
    assert_eq!(hit_names(&found), ["a.md", "c.md"], "{found}");
    assert!(found["note"].as_str().unwrap().contains("no chunk has a vector yet"), "{found}");
    let whence = format!("(embeddings: `nomic-embed-text` at {}/v1)", server.url());
    assert!(found["note"].as_str().unwrap().contains(&whence), "where the embeddings go: {found}");
}
}

on_both_backends! {
fn mcp_serves_knowledge_search_and_read_by_chunk_id_only_within_the_project(home) {
    let root = project(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);
    let other = home.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::write(other.join("secret.md"), "The other project's flux plans.\n").unwrap();
    json(&home, &other, &["knowledge", "add", ".", "--json"]);
    let mut client = crate::memory_cli::McpClient::start(&home, &root);
    let (found, err) = client.call("knowledge_search", serde_json::json!({"query": "flux capacitor"}));
    assert!(!err, "{found}");
    assert_eq!(found["mode"], "lexical");
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "only this project's guide: {found}");
    assert!(results[0]["file"].as_str().unwrap().ends_with("docs/guide.md"));
    assert_eq!(results[0]["lines"], "1-7");
    let id = results[0]["id"].as_i64().unwrap();
    let (chunk, err) = client.call("knowledge_read", serde_json::json!({"id": id}));
    assert!(!err, "{chunk}");
    assert_eq!(
        chunk["text"],
        std::fs::read_to_string(root.join("docs/guide.md")).unwrap().trim_end(),
        "the chunk whole"
    );
    // Another project's chunk is not readable by guessing its id; a path is not an argument.
    let other_id =
        json(&home, &other, &["knowledge", "search", "flux plans", "--json"])["hits"][0]["id"].as_i64().unwrap();
    let (error, err) = client.call("knowledge_read", serde_json::json!({"id": other_id}));
    assert!(err && error["error"].as_str().unwrap().contains("no chunk"), "{error}");
    let (error, err) = client.call("knowledge_read", serde_json::json!({"path": "/etc/passwd"}));
    assert!(err && error["error"].as_str().unwrap().contains("unknown field `path`"), "{error}");
    let (error, err) = client.call("knowledge_read", serde_json::json!({"id": id, "offset": 100000}));
    assert!(err && error["error"].as_str().unwrap().contains("past the chunk's end"), "{error}");
    let (error, err) = client.call("knowledge_search", serde_json::json!({"query": " "}));
    assert!(err && error["error"].as_str().unwrap().contains("`query` is empty"), "{error}");
    client.close();
}
}

#[test]
fn chat_offers_the_knowledge_tools_where_documents_are_and_the_model_reads_a_chunk() {
    use crate::chat::{chat, home_for, json_of};
    use crate::support::server::anthropic;
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["No documents here."]) },
        Reply::Stream {
            pieces: anthropic::tool_answer("toolu_k", "knowledge_search", r#"{"query":"flux capacitor"}"#),
        },
        Reply::Stream { pieces: anthropic::tool_answer("toolu_r", "knowledge_read", r#"{"id":1}"#) },
        Reply::Stream { pieces: anthropic::text_answer(&["Restart the flux capacitor."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hello", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names = |body: &Value| -> Vec<String> {
        body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let first = server.requests()[0].json();
    assert!(
        !names(&first).contains(&"knowledge_search".into()),
        "no documents, no knowledge tools: {:?}",
        names(&first)
    );
    // Index a guide in the same project (the home), then ask.
    let docs = home.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\n## Install\n\nRun the installer, then restart the flux capacitor.\n",
    )
    .unwrap();
    json(&home, home.path(), &["knowledge", "add", "docs", "--json"]);
    let out = chat(&home, &["-p", "how do I install?", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["text"], "Restart the flux capacitor.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let tools = names(&reqs[1].json());
    assert!(tools.contains(&"knowledge_search".into()) && tools.contains(&"knowledge_read".into()), "{tools:?}");
    let after_search = reqs[2].json()["messages"].to_string();
    assert!(after_search.contains("guide.md") && after_search.contains("[flux] [capacitor]"), "{after_search}");
    let after_read = reqs[3].json()["messages"].to_string();
    assert!(after_read.contains("Run the installer, then restart the flux capacitor."), "{after_read}");
}

/// An application's own corpus: notes in memory, matched by words and by the test embedder's
/// vectors, fused by Seshat.
struct Notes {
    texts: Vec<&'static str>,
    vectors: Vec<Vec<f32>>,
}

impl seshat::retrieval::Retriever for Notes {
    fn lexical(&mut self, query: &str, limit: usize) -> seshat::retrieval::Result<Vec<String>> {
        let q = query.to_lowercase();
        Ok((0..self.texts.len())
            .filter(|&i| q.split_whitespace().any(|w| self.texts[i].to_lowercase().contains(w)))
            .map(|i| format!("note-{i}"))
            .take(limit)
            .collect())
    }

    fn nearest(&mut self, vector: &[f32], limit: usize) -> seshat::retrieval::Result<Vec<String>> {
        let dot = |v: &[f32]| v.iter().zip(vector).map(|(a, b)| a * b).sum::<f32>();
        let mut order: Vec<usize> = (0..self.vectors.len()).collect();
        order.sort_by(|&a, &b| dot(&self.vectors[b]).total_cmp(&dot(&self.vectors[a])).then(a.cmp(&b)));
        Ok(order.into_iter().take(limit).map(|i| format!("note-{i}")).collect())
    }
}

on_both_backends! {
fn the_sdk_fuses_an_applications_own_corpus_and_knowledge_works_from_rust(home) {
    let server = echo_server();
    with_test_embedder(&home, &server, "topics");
    let config = seshat::config::Config::load(home.path(), None).unwrap();
    let catalog = seshat::plugins::Catalog::discover(home.path(), None);
    let runtime = seshat::plugins::Runtime::new(None);
    let mut embedder = seshat::retrieval::load_embedder(&config, &catalog, &runtime).unwrap().expect("configured");
    let texts = vec!["my truck", "an apple", "the automobile show", "rain today"];
    let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let vectors =
        embedder.embed(&owned, seshat::plugins::EmbedPurpose::Document, &seshat::providers::Cancel::default()).unwrap();
    let mut corpus = Notes { texts, vectors };
    let w = seshat::retrieval::Weights::default();
    // Words alone find only the note that says "automobile".
    let lexical = seshat::retrieval::hybrid(&mut corpus, None, "automobile", 3, w).unwrap();
    assert_eq!(lexical.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["note-2"]);
    // With the embedder, the truck comes in by meaning, after the note both rankings put first.
    let fused = seshat::retrieval::hybrid(&mut corpus, Some(&mut embedder), "automobile", 3, w).unwrap();
    let ids: Vec<&str> = fused.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(&ids[..2], ["note-2", "note-0"], "{fused:?}");
    assert_eq!(fused[0].score, 1.0 / 61.0 + 1.0 / 62.0, "note-2: lexical 1, vector 2 (ties by index put note-0 first)");

    // The document corpus from Rust: open, add, embed, search — in a SQLite file of its own, or
    // in the test's PostgreSQL database.
    let root = notes(&home);
    let k = if home.is_postgres() {
        seshat::retrieval::Knowledge::new(home.store(), None, w)
    } else {
        seshat::retrieval::Knowledge::open(&home.path().join("sdk.db")).unwrap()
    };
    let mut k = k.with_embedder(embedder);
    let target = seshat::knowledge::Target { scope: seshat::memory::Scope::Project, project: "/sdk".into() };
    let report = k.add(std::slice::from_ref(&root), &target, &mut |_, _, _| {}).unwrap();
    assert_eq!(report.indexed, 4);
    assert_eq!(k.embed_pending(false, &mut |_, _| {}).unwrap().embedded, 4);
    let found = k.search(seshat::store::KnowledgeFilter { project: "/sdk", scope: None }, "automobile", 5).unwrap();
    assert_eq!(found.mode, seshat::retrieval::Mode::Hybrid);
    assert!(found.hits[0].path.ends_with("a.md"), "{found:?}");
    if home.is_postgres() {
        let count = "SELECT COUNT(*) FROM documents WHERE project = '/sdk'";
        assert_eq!(home.sql_value(count, count), 4, "the documents are in PostgreSQL");
    }
}
}

#[test]
fn on_a_terminal_a_new_model_is_asked_about_with_the_count() {
    use crate::chat_signals::Pty;
    use crate::support::wait_for;
    let home = Home::new();
    let server = echo_server();
    with_test_embedder(&home, &server, "topics");
    let root = notes(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);
    switch_model(&home, "topics-long");
    let ask = "The index's 4 vectors were made by `topics (8 dimensions)`; the configured model is `topics-long`. \
               Replace them, embedding all 4 chunks with `topics-long`? [y/N]";
    // No: nothing changes.
    let mut cmd = home.cmd();
    cmd.current_dir(&root).args(["knowledge", "embed"]);
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_for("the question", || pty.text().contains(ask));
    pty.send("n\r");
    assert!(!child.wait().unwrap().success());
    wait_for("the refusal", || pty.text().contains("nothing was re-embedded"));
    assert_eq!(home.store().vector_index().unwrap().unwrap().model, "topics");
    // Yes: replaced.
    let mut cmd = home.cmd();
    cmd.current_dir(&root).args(["knowledge", "embed"]);
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_for("the question", || pty.text().contains(ask));
    pty.send("y\r");
    assert!(child.wait().unwrap().success(), "{}", pty.text());
    wait_for("the report", || {
        pty.text().contains("Embedded 4 chunks (1 requests), replacing 4 vectors of the previous model.")
    });
    let index = home.store().vector_index().unwrap().unwrap();
    assert_eq!((index.model.as_str(), index.vectors), ("topics-long", 4));
}

/// The test embedder on `server`, with memory embedded too (`[knowledge] embed_memory`).
fn with_embedded_memory(home: &Home, server: &Server) {
    with_test_embedder(home, server, "topics");
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("embed_memory = true\n");
    std::fs::write(&config, text).unwrap();
}

on_both_backends! {
/// `seshat mcp` with an embedder configured and memory embedded: the knowledge search (hybrid),
/// a memory write and a memory search (hybrid), then the end of its input — all inside the MCP
/// server's async runtime, where opening a runtime of the library's own used to panic.
fn mcp_with_an_embedder_searches_knowledge_and_memory_and_ends_cleanly(home) {
    let server = echo_server();
    with_embedded_memory(&home, &server);
    let root = notes(&home);
    json(&home, &root, &["knowledge", "add", ".", "--json"]);

    let call = |id: u32, name: &str, arguments: Value| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let mcp = |calls: &[Value]| -> Vec<Value> {
        let mut cmd = home.cmd();
        cmd.current_dir(&root);
        // The input ends after the calls: the server shuts down.
        let (status, stderr, answers) = crate::support::mcp_session(cmd, calls);
        assert!(status.success() && !stderr.contains("panicked"), "{status:?}: {stderr}");
        answers
    };
    let answers = mcp(&[
        call(2, "knowledge_search", serde_json::json!({"query": "automobile"})),
        call(
            3,
            "create_entities",
            serde_json::json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["drives a vintage automobile"]}]}),
        ),
    ]);
    let answer =
        |id: u32| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer {id}: {answers:?}"));
    let found = &answer(2)["result"]["structuredContent"];
    assert_eq!(found["mode"], "hybrid", "{found}");
    let files: Vec<&str> = found["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {found}"))
        .iter()
        .filter_map(|r| r["file"].as_str()?.rsplit('/').next())
        .collect();
    // b.md says "car", not "automobile": only the vectors find it.
    assert!(files[0] == "a.md" && files.contains(&"b.md"), "{found}");
    assert_eq!(answer(3)["result"]["isError"], false, "{}", answer(3));
    // The entity's vector, queued by the write, is made (by the background queue or here).
    json(&home, &root, &["knowledge", "embed", "--json"]);
    let answers = mcp(&[call(4, "search_nodes", serde_json::json!({"query": "car"}))]);
    // "car" is in no word of Ada's entity: only the vectors (the automobile topic) find it.
    let found = answers.iter().find(|a| a["id"] == 4).unwrap_or_else(|| panic!("no answer: {answers:?}"));
    assert_eq!(found["result"]["structuredContent"]["entities"][0]["name"], "Ada", "{found}");
}
}

on_both_backends! {
/// `seshat serve` with memory embedded: what `memory/*` writes is embedded by the connection's
/// background queue, and `memory/search_nodes` then finds it by meaning (hybrid), as `chat` and
/// `mcp` do.
fn serve_embeds_what_its_memory_calls_write_and_searches_memory_by_meaning(home) {
    let server = echo_server();
    with_embedded_memory(&home, &server);
    let mut c = crate::serve::ServeClient::start(&home);
    c.initialize(serde_json::json!({}));
    let created = c.ok(
        "memory/create_entities",
        serde_json::json!({"scope": "user", "entities": [{"name": "Ada", "entityType": "person", "observations": ["drives a vintage automobile"]}]}),
    );
    assert_eq!(created["entities"][0]["name"], "Ada", "{created}");
    // "car" is in no word of Ada's entity: only its vector (made by the background queue, no
    // command asked for it) lets the search find it.
    crate::support::wait_for("Ada found by meaning", || {
        c.ok("memory/search_nodes", serde_json::json!({"query": "car"}))["entities"][0]["name"] == "Ada"
    });
    assert_eq!(home.store().embed_queue_len(seshat::store::Queued::Memory).unwrap(), 0);
}
}

#[test]
fn the_embedder_follows_openai_base_url_as_chat_does() {
    // A user with a local server: OPENAI_BASE_URL set, no base_url under [knowledge]. The
    // embeddings go there, not to api.openai.com.
    let home = Home::new();
    let server = Server::route(|r| match expect_route(r, "POST", "/v1/embeddings") {
        Ok(()) => Reply::json(401, r#"{"error":{"message":"this local server wants a key","type":"auth"}}"#),
        Err(why) => Reply::Unexpected(why),
    });
    std::fs::write(
        home.path().join("config.toml"),
        "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"nomic-embed-text\"\n",
    )
    .unwrap();
    let root = notes(&home);
    let out = home
        .cmd()
        .current_dir(&root)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["knowledge", "add", "."])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("this local server wants a key"), "the request reached the local server: {text}");
    assert_eq!(server.requests().len(), 1, "{text}");
}

/// Embedding is kept one request at a time: a server that fails partway loses none of what it
/// embedded before, the error says so, and embedding again takes up only the rest.
#[test]
fn embedding_that_fails_partway_keeps_what_it_embedded_and_resumes_with_the_rest() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let home = Home::new();
    let requests = Arc::new(AtomicUsize::new(0));
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let server = {
        let (requests, failing) = (requests, failing.clone());
        Server::route(move |r| {
            let n = requests.fetch_add(1, Ordering::SeqCst);
            if n == 1 && failing.load(Ordering::SeqCst) {
                return Reply::json(500, r#"{"error":{"message":"model crashed","type":"server_error"}}"#);
            }
            let inputs = r.json()["input"].as_array().map_or(0, Vec::len);
            let data: Vec<Value> = (0..inputs)
                .map(|i| serde_json::json!({"object": "embedding", "index": i, "embedding": [0.6, 0.8, 0.0]}))
                .collect();
            let answer = serde_json::json!({"object": "list", "data": data, "model": "text-embedding-3-small",
                "usage": {"prompt_tokens": 12, "total_tokens": 12}});
            Reply::json(200, &answer.to_string())
        })
    };
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"text-embedding-3-small\"\ndimensions = 3\n\
             base_url = \"{}/v1\"\nmax_retries = 0\n",
            server.url()
        ),
    )
    .unwrap();
    let docs = home.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for i in 0..150 {
        std::fs::write(
            docs.join(format!("note-{i:03}.md")),
            format!("Note {i}: the release train leaves on Tuesday.\n"),
        )
        .unwrap();
    }
    let run = |args: &[&str]| home.cmd().env("OPENAI_API_KEY", "sk-test").args(args).output().unwrap();
    let out = run(&["knowledge", "add", docs.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("model crashed") && err.contains("`seshat knowledge embed` embeds the rest"), "{err}");
    let kept = home.store().vector_index().unwrap().map_or(0, |i| i.vectors);
    assert_eq!(kept, 64, "the first request's vectors are kept");
    failing.store(false, Ordering::SeqCst);
    let out = run(&["knowledge", "embed", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["embedded"], 86, "only the rest: {report}");
    assert_eq!(home.store().vector_index().unwrap().unwrap().vectors, 150);
}
