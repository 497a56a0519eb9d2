//! `seshat knowledge …` (lexical so far): files walked as ripgrep walks them, chunked by
//! structure, re-indexed only when changed, searched with bm25 and filtered by scope and project.

use std::path::Path;

use serde_json::Value;

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

#[test]
fn add_walks_as_ripgrep_does_and_search_finds_exact_lines() {
    let home = Home::new();
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

#[test]
fn re_adding_indexes_only_what_changed_and_drops_what_is_gone() {
    let home = Home::new();
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

#[test]
fn scopes_and_projects_filter_and_remove_never_touches_files() {
    let home = Home::new();
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
        scope: "user".into(),
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
