//! The `seshat sessions` command line: output snapshots and every error path.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;

use crate::support::{Home, fixture};

const FIXTURE_ID: &str = "01JFXAMP1E0000000000000001";

fn home_with_fixture() -> Home {
    let home = Home::new();
    let out = home.ok(&["sessions", "import", fixture("session-export.jsonl").to_str().unwrap()]);
    assert_eq!(out, format!("Imported session {FIXTURE_ID} (8 messages).\n"));
    home
}

#[test]
fn help_texts() {
    let home = Home::new();
    for args in [
        &["--help"][..],
        &["sessions", "--help"],
        &["sessions", "list", "--help"],
        &["sessions", "show", "--help"],
        &["sessions", "delete", "--help"],
        &["sessions", "export", "--help"],
        &["sessions", "import", "--help"],
        &["sessions", "append", "--help"],
        &["plugins", "--help"],
        &["plugins", "list", "--help"],
        &["plugins", "check", "--help"],
        &["plugins", "new", "--help"],
        &["memory", "--help"],
        &["compact", "--help"],
        &["mcp", "--help"],
        &["chat", "--help"],
        &["db", "copy", "--help"],
    ] {
        let name = args.join(" ").replace("--", "").replace(' ', "_");
        insta::assert_snapshot!(format!("help_{name}"), home.ok(args));
    }
}

#[test]
fn list_show_and_full_output() {
    let home = home_with_fixture();
    insta::assert_snapshot!("list_all", home.ok(&["sessions", "list", "--all"]));
    insta::assert_snapshot!("list_all_json", home.ok(&["sessions", "list", "--all", "--json"]));
    insta::assert_snapshot!("show_live_view", home.ok(&["sessions", "show", "01jfxamp"]));
    insta::assert_snapshot!("show_full", home.ok(&["sessions", "show", "01JFXAMP", "--full"]));
    let json: serde_json::Value = serde_json::from_str(&home.ok(&["sessions", "show", FIXTURE_ID, "--json"])).unwrap();
    let origins: Vec<&str> =
        json["entries"].as_array().unwrap().iter().map(|e| e["origin"].as_str().unwrap()).collect();
    assert_eq!(origins, ["summary", "pinned", "kept", "kept", "kept"]);
    let full: serde_json::Value =
        serde_json::from_str(&home.ok(&["sessions", "show", FIXTURE_ID, "--full", "--json"])).unwrap();
    assert_eq!(full["messages"].as_array().unwrap().len(), 8);
    assert_eq!(full["trims"].as_array().unwrap().len(), 2);
}

#[test]
fn list_is_per_project_unless_all() {
    let home = home_with_fixture();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    let key = seshat::paths::project_key(&project);
    let mine = home.session(&key);

    let out = home.cmd().current_dir(project.join("src")).args(["sessions", "list", "--json"]).output().unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [mine.as_str()], "a subdirectory of the repository lists the repository's sessions only");

    let out = home.ok(&["sessions", "list"]);
    assert!(out.starts_with("No sessions in this project"), "{out}");
    assert_eq!(home.ok(&["sessions", "list", "--all", "--limit", "1", "--json"]).matches("\"short_id\"").count(), 1);
}

#[test]
fn unknown_and_ambiguous_ids_are_clear_errors() {
    let home = home_with_fixture();
    let err = home.fails(&["sessions", "show", "01ZZZZZZ"]);
    assert!(err.contains("no session matches `01ZZZZZZ`") && err.contains("sessions list --all"), "{err}");
    let err = home.fails(&["sessions", "show", "not an id!"]);
    assert!(err.contains("no session matches"), "{err}");

    let copy = home.ok(&["sessions", "import", "--new-id", fixture("session-export.jsonl").to_str().unwrap()]);
    assert!(copy.starts_with("Imported session "));
    let err = home.fails(&["sessions", "show", "01"]);
    assert!(err.contains("`01` matches several sessions") && err.contains("type more of the id"), "{err}");
    for cmd in ["export", "delete"] {
        assert!(home.fails(&["sessions", cmd, "01"]).contains("matches several sessions"));
    }
}

#[test]
fn delete_needs_confirmation_when_not_interactive() {
    let home = home_with_fixture();
    let err = home.fails(&["sessions", "delete", "01JFXAMP"]);
    assert!(err.contains("pass --yes"), "{err}");
    assert!(home.ok(&["sessions", "list", "--all"]).contains("01JFXAMP"), "deleted without confirmation");
    let out = home.ok(&["sessions", "delete", "01JFXAMP", "--yes"]);
    assert_eq!(out, format!("Deleted session {FIXTURE_ID} (8 messages).\n"));
    assert_eq!(home.ok(&["sessions", "list", "--all"]), "No sessions yet.\n");
}

#[test]
fn export_import_export_through_the_cli_is_byte_identical() {
    let home = home_with_fixture();
    let exported = home.ok(&["sessions", "export", "01JFXAMP"]);
    let file = home.path().join("export.jsonl");
    std::fs::write(&file, &exported).unwrap();

    let fresh = Home::new();
    fresh.ok(&["sessions", "import", file.to_str().unwrap()]);
    assert_eq!(fresh.ok(&["sessions", "export", FIXTURE_ID]), exported);

    let err = fresh.fails(&["sessions", "import", file.to_str().unwrap()]);
    // The library says what happened; the command line adds its flag.
    assert!(err.contains("already exists: import it under a new id"), "{err}");
    assert!(err.contains("\nhint: pass --new-id to import it as a new session"), "{err}");

    // From stdin, too.
    let third = Home::new();
    let mut child =
        third.cmd().args(["sessions", "import", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(exported.as_bytes()).unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(third.ok(&["sessions", "export", FIXTURE_ID]), exported);
}

#[test]
fn malformed_import_file_names_line_and_field_and_imports_nothing() {
    let home = Home::new();
    let good = std::fs::read_to_string(fixture("session-export.jsonl")).unwrap();
    let bad = good.replacen("\"call_id\":\"c1\",", "", 1);
    let file = home.path().join("bad.jsonl");
    std::fs::write(&file, bad).unwrap();
    let err = home.fails(&["sessions", "import", file.to_str().unwrap()]);
    assert!(err.contains("line 4: field `parts[0]`: missing field `call_id`; nothing was imported"), "{err}");
    assert_eq!(home.ok(&["sessions", "list", "--all"]), "No sessions yet.\n");

    let err = home.fails(&["sessions", "import", "/no/such/file.jsonl"]);
    assert!(err.contains("cannot open /no/such/file.jsonl"), "{err}");
}

#[test]
fn append_acknowledges_each_message_and_stops_at_a_bad_line() {
    let home = home_with_fixture();
    let other = home.session("/other");
    let input = format!(
        "{}\n{}\n{{\"role\":\"user\"}}\n{}\n",
        r#"{"role":"user","parts":[{"type":"text","text":"one"}]}"#,
        crate::support::append_line(Some(&other), "two"),
        r#"{"role":"user","parts":[{"type":"text","text":"never"}]}"#,
    );
    let mut child = home
        .cmd()
        .args(["sessions", "append", "01JFXAMP"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{FIXTURE_ID} 9\n{other} 1\n"));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("line 3: missing field `parts`"), "{err}");
    let store = home.store();
    assert_eq!(
        store.session(FIXTURE_ID).unwrap().message_count,
        9,
        "the bad line and the ones after it were not appended"
    );
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let home = Home::new();
    let mut store = home.store();
    let id = home.session("/big");
    let big = "x".repeat(64 * 1024);
    let msgs: Vec<_> = (0..20)
        .map(|_| seshat::conversation::NewMessage::text(seshat::conversation::Role::User, big.clone()))
        .collect();
    store.append(&id, &msgs).unwrap();
    let mut child =
        home.cmd().args(["sessions", "export", &id]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is now closed: the export hits a broken pipe.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.is_empty(), "{err}");
    assert!(out.status.success());
}

#[test]
fn usage_errors_go_to_stderr_with_a_non_zero_exit() {
    let home = Home::new();
    let out = home.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: seshat"));
    let err = home.fails(&["sessions", "list", "--limit", "many"]);
    assert!(err.contains("invalid value 'many' for '--limit <N>'"), "{err}");
    let err = home.fails(&["sessions", "frobnicate"]);
    assert!(err.contains("unrecognized subcommand 'frobnicate'"), "{err}");
}

#[test]
fn what_sits_above_the_home_changes_nothing() {
    // A git work tree with a broken `.seshat/config.toml` above the test's directory: neither is
    // the test's project (the search for a repository stops below GIT_CEILING_DIRECTORIES).
    let outer = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outer.path().join(".git")).unwrap();
    std::fs::create_dir_all(outer.path().join(".seshat")).unwrap();
    std::fs::write(outer.path().join(".seshat/config.toml"), "this is not toml").unwrap();
    let home = Home::inside(outer.path());
    let err = home.fails(&["memory", "--scope", "project", "--json"]);
    assert!(err.contains("the project scope needs a project"), "{err}");
    assert!(home.ok(&["plugins", "list"]).contains("trimmer"));
    // Without the ceiling the outer repository is the project, and its config is read.
    let out = home.cmd().env_remove("GIT_CEILING_DIRECTORIES").args(["plugins", "list"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(".seshat/config.toml"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_worktrees_of_one_repository_list_the_same_sessions() {
    let home = Home::new();
    // A repository, and two linked worktrees: one whose `.git` file names its gitdir by an
    // absolute path, one by a relative path (as `git worktree add --relative-paths` writes).
    let main = home.path().join("repo");
    std::fs::create_dir_all(main.join(".git/worktrees/abs")).unwrap();
    std::fs::create_dir_all(main.join(".git/worktrees/rel")).unwrap();
    for wt in ["abs", "rel"] {
        std::fs::write(main.join(format!(".git/worktrees/{wt}/commondir")), "../..\n").unwrap();
        std::fs::create_dir_all(home.path().join(wt)).unwrap();
    }
    let abs_gitdir = main.join(".git/worktrees/abs");
    std::fs::write(home.path().join("abs/.git"), format!("gitdir: {}\n", abs_gitdir.display())).unwrap();
    std::fs::write(home.path().join("rel/.git"), "gitdir: ../repo/.git/worktrees/rel\n").unwrap();
    std::fs::create_dir_all(main.join("src")).unwrap();
    // A session made from the repository's subdirectory, through the CLI's own project key.
    let key = seshat::paths::project_key(&main);
    let id = home.session(&key);
    let listed = |dir: &Path| -> Vec<String> {
        let out = home.cmd().current_dir(dir).args(["sessions", "list", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        rows.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
    };
    for dir in [main.join("src"), home.path().join("abs"), home.path().join("rel")] {
        assert_eq!(listed(&dir), std::slice::from_ref(&id), "{}", dir.display());
    }
    assert!(listed(home.path()).is_empty(), "outside the repository, another project");
}

/// Runs `seshat args…` with `input` on stdin; returns the output.
fn with_stdin(home: &Home, args: &[&str], input: &str) -> std::process::Output {
    crate::support::output_with_stdin(home.cmd().args(args), input)
}

#[test]
fn append_refuses_a_result_without_its_call_and_a_message_without_parts() {
    let home = home_with_fixture();
    let orphan = r#"{"role":"tool","parts":[{"type":"tool_result","call_id":"never-made","content":"ok"}]}"#;
    let call = r#"{"role":"assistant","parts":[{"type":"tool_call","id":"k1","name":"ls","arguments":"{}"}]}"#;
    let answer = r#"{"role":"tool","parts":[{"type":"tool_result","call_id":"k1","content":"a b"}]}"#;
    // Earlier calls of the session count: the fixture's c1 can be answered again.
    let late = r#"{"role":"tool","parts":[{"type":"tool_result","call_id":"c1","content":"again"}]}"#;
    let out = with_stdin(
        &home,
        &["sessions", "append", FIXTURE_ID],
        &format!("{call}\n{answer}\n{late}\n{orphan}\n{call}\n"),
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{FIXTURE_ID} 9\n{FIXTURE_ID} 10\n{FIXTURE_ID} 11\n"));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("line 4: field `parts[0].call_id`: `never-made` answers no earlier tool_call in session")
            && err.contains("nothing was written"),
        "{err}"
    );
    let empty = with_stdin(&home, &["sessions", "append", FIXTURE_ID], "{\"role\":\"user\",\"parts\":[]}\n");
    let err = String::from_utf8(empty.stderr).unwrap();
    assert!(
        !empty.status.success() && err.contains("line 1: field `parts`: a message needs at least one part"),
        "{err}"
    );
    assert_eq!(home.store().session(FIXTURE_ID).unwrap().message_count, 11, "nothing of the bad lines was written");
}

#[test]
fn import_refuses_orphans_by_default_and_repair_keeps_them_out_of_the_live_view() {
    let good = std::fs::read_to_string(fixture("session-export.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    // Message 8 becomes a result of a call nobody made, and a call at the end is never answered
    // (message_count grows by one for it).
    lines[8] = r#"{"record":"message","seq":8,"role":"tool","parts":[{"type":"tool_result","call_id":"ghost","content":"from nowhere","is_error":false}],"status":"complete","created_at":1764000008000}"#.into();
    let last = r#"{"record":"message","seq":9,"role":"assistant","parts":[{"type":"tool_call","id":"c9","name":"deploy","arguments":"{}"}],"status":"complete","created_at":1764000008500}"#;
    lines.insert(9, last.into());
    lines[0] = lines[0].replace("\"message_count\":8", "\"message_count\":9");
    let home = Home::new();
    let file = home.path().join("broken.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();

    let err = home.fails(&["sessions", "import", file.to_str().unwrap()]);
    assert!(
        err.contains("line 9: field `parts[0].call_id`: `ghost` answers no earlier tool_call")
            && err.contains("--repair")
            && err.contains("nothing was imported"),
        "{err}"
    );
    assert!(home.store().list_sessions(&Default::default()).unwrap().is_empty());

    let out = home.ok(&["sessions", "import", "--repair", file.to_str().unwrap()]);
    assert_eq!(
        out,
        format!(
            "Imported session {FIXTURE_ID} (10 messages). Repaired: 1 tool result that answer no call, kept in the full \
             history but out of the live view; 1 call never answered, given a synthetic error result.\n"
        )
    );
    let store = home.store();
    let full = store.full_history(FIXTURE_ID).unwrap();
    assert_eq!(full.len(), 10);
    assert!(matches!(&full[7].parts[0], seshat::conversation::Part::ToolResult { call_id, .. } if call_id == "ghost"));
    assert_eq!(full[9].status, seshat::conversation::MessageStatus::Synthetic);
    assert!(matches!(
        &full[9].parts[0],
        seshat::conversation::Part::ToolResult { call_id, is_error: true, content } if call_id == "c9" && content.contains("`deploy`")
    ));
    let view = store.live_view(FIXTURE_ID).unwrap();
    let seqs: Vec<Option<u64>> = view.entries.iter().map(|e| e.seq).collect();
    assert!(!seqs.contains(&Some(8)) && seqs.contains(&Some(9)) && seqs.contains(&Some(10)), "{seqs:?}");
    drop(store);
    let shown = home.ok(&["sessions", "show", FIXTURE_ID]);
    assert!(!shown.contains("from nowhere"), "{shown}");
    assert!(home.ok(&["sessions", "show", FIXTURE_ID, "--full"]).contains("from nowhere"));

    // The repaired session exports; the export is refused without --repair and imports with it.
    let export = home.ok(&["sessions", "export", FIXTURE_ID]);
    let again = Home::new();
    let path = again.path().join("export.jsonl");
    std::fs::write(&path, &export).unwrap();
    assert!(again.fails(&["sessions", "import", path.to_str().unwrap()]).contains("`ghost`"));
    let report = again.ok(&["sessions", "import", "--repair", "--json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(v, serde_json::json!({"id": FIXTURE_ID, "messages": 10, "orphans": 1, "empty": 0, "synthetic": 0}));
    assert_eq!(again.ok(&["sessions", "export", FIXTURE_ID]), export, "nothing more to repair: the same session");
}

#[test]
fn sessions_new_makes_an_empty_session_to_append_to() {
    let home = Home::new();
    let id = home.ok(&["sessions", "new", "--title", "Plugin test bed"]).trim().to_string();
    assert_eq!(id.len(), 26, "a ULID: {id}");
    let out = with_stdin(&home, &["sessions", "append", &id], &(crate::support::append_line(None, "hello") + "\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = home.store().session(&id).unwrap();
    assert_eq!((info.title.as_deref(), info.message_count), (Some("Plugin test bed"), 1), "the given title stays");
    let json: serde_json::Value =
        serde_json::from_str(&home.ok(&["sessions", "new", "--model", "qwen", "--window", "8192", "--json"])).unwrap();
    assert_eq!((json["model"].as_str(), json["context_window"].as_u64()), (Some("qwen"), Some(8192)), "{json}");
    assert!(json["title"].is_null() && json["message_count"] == 0, "{json}");
    let err = home.fails(&["sessions", "new", "--window", "100"]);
    assert!(err.contains("is 100 tokens") && err.contains("at least 4096"), "{err}");
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 2);
}

#[test]
fn the_readmes_minimal_export_imports() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme.find("<!-- minimal export -->").expect("the README's minimal export");
    let block = &readme[start..];
    let body = &block[block.find("```jsonl\n").unwrap() + 9..];
    let example = &body[..body.find("```").unwrap()];
    let home = Home::new();
    let file = home.path().join("minimal.jsonl");
    std::fs::write(&file, example).unwrap();
    let out = home.ok(&["sessions", "import", file.to_str().unwrap()]);
    assert!(out.starts_with("Imported session 01K0000000000000000000TEST (3 messages)."), "{out}");
    let shown = home.ok(&["sessions", "show", "01K0000000000000000000TEST"]);
    assert!(shown.contains("What is in src/?") && shown.contains("main.rs lib.rs"), "{shown}");
}

#[test]
fn an_import_with_a_time_before_1970_is_refused_naming_its_line() {
    let home = Home::new();
    let export = std::fs::read_to_string(fixture("session-export.jsonl")).unwrap();
    let mut lines: Vec<String> = export.lines().map(str::to_string).collect();
    let mut third: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    third["created_at"] = (-5).into();
    lines[2] = third.to_string();
    let file = home.path().join("old.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let err = home.fails(&["sessions", "import", file.to_str().unwrap()]);
    assert!(err.contains("line 3: field `created_at`: -5 is before 1970"), "{err}");
    assert_eq!(home.ok(&["sessions", "list", "--all"]), "No sessions yet.\n");
}

#[test]
fn a_base_url_that_is_not_an_http_url_is_a_config_error_naming_the_key() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[plugins]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"localhost:11434/v1\"\n",
    )
    .unwrap();
    let out = home.cmd().env("OPENAI_API_KEY", "sk-test").args(["chat", "-p", "hi"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("[providers.openai] base_url is `localhost:11434/v1`, which is not an http or https URL"),
        "{err}"
    );
    assert!(!err.contains("plugin"), "a config error, not a plugin failure: {err}");
}

/// A project's key travels with its git remote: sessions, memory and documents written from one
/// checkout are found from a checkout of the same repository elsewhere, and rows written under
/// the directory's path before the remote was known move to the remote's key.
#[test]
fn a_project_follows_its_remote_to_another_checkout() {
    let home = Home::new();
    let checkout = |name: &str| {
        let dir = home.path().join(name);
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        dir
    };
    let here = checkout("laptop/widget");
    let run = |dir: &Path, args: &[&str]| {
        let out = home.cmd().current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // Before the repository has a remote: keyed by its path.
    let id = run(&here, &["sessions", "new", "--title", "widget work"]).trim().to_string();
    run(&here.join("src"), &["memory", "--action", "set", "--scope", "project", "--key", "build", "--value", "make"]);
    let old = seshat::paths::path_key(&here);
    assert_eq!(home.store().session(&id).unwrap().project, old);

    // The remote appears: the next command moves the path-keyed rows to the remote's key.
    let config = "[remote \"origin\"]\n\turl = git@github.com:acme/widget.git\n";
    std::fs::write(here.join(".git/config"), config).unwrap();
    let listed: Vec<serde_json::Value> = serde_json::from_str(&run(&here, &["sessions", "list", "--json"])).unwrap();
    assert_eq!(listed.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), [id.as_str()]);
    assert_eq!(home.store().session(&id).unwrap().project, "github.com/acme/widget");

    // Another checkout of the same repository, at another path, with the remote spelt another way.
    let there = checkout("desktop/code/widget");
    std::fs::write(there.join(".git/config"), "[remote \"origin\"]\n\turl = https://github.com/acme/widget\n").unwrap();
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&run(&there.join("src"), &["sessions", "list", "--json"])).unwrap();
    assert_eq!(listed.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), [id.as_str()]);
    let shown = run(&there, &["memory", "--scope", "project", "--json"]);
    let notes: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(notes["notes"][0]["value"], "make", "{shown}");
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 1, "nothing was copied");
}

/// Every setting a message or hint tells the user to change (`KEY under [SECTION]`) is one the
/// configuration takes: written into a config.toml, it is never refused as unknown.
#[test]
fn every_setting_a_message_names_is_one_the_configuration_takes() {
    let mut named: Vec<(String, String, String)> = Vec::new();
    for (path, text) in sources() {
        for (at, _) in text.match_indices(" under [") {
            let key: String = text[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '`')
                .collect::<String>()
                .chars()
                .rev()
                .filter(|c| *c != '`')
                .collect();
            let section: String = text[at + " under [".len()..].chars().take_while(|c| *c != ']').collect();
            if key.is_empty()
                || !key.chars().next().unwrap().is_ascii_lowercase()
                || !key.contains('_') && key.len() < 4
            {
                continue;
            }
            named.push((path.clone(), key, section));
        }
    }
    assert!(named.len() >= 8, "the messages that name a setting were found: {named:?}");
    unknown_settings(&named);
}

/// Every setting a message names without its section (`raise first_byte_timeout_secs in
/// config.toml`, `set the model's context_window in config.toml`) is one some section takes.
#[test]
fn every_setting_a_message_names_without_its_section_is_one_some_section_takes() {
    let mut named: Vec<(String, String)> = Vec::new();
    for (path, text) in sources() {
        for (at, _) in text.match_indices(" in config.toml") {
            // The clause before it: back to an opening parenthesis, a semicolon or a colon.
            let before = &text[..at];
            let from = before.rfind(['(', ';', ':', '"']).map_or(0, |i| i + 1);
            for word in before[from..].split(|c: char| !(c.is_ascii_alphanumeric() || "_{}".contains(c))) {
                if word.contains('_') && word.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '{') {
                    named.push((path.clone(), word.to_string()));
                }
            }
        }
    }
    assert!(named.len() >= 5, "the messages that name a setting without its section were found: {named:?}");
    let sections = [
        "chat",
        "compaction",
        "knowledge",
        "memory",
        "plugins",
        "store",
        "serve",
        "providers.openai",
        "providers.openai.models.\"m\"",
    ];
    let mut unknown = Vec::new();
    for (file, key) in &named {
        // A provider's timeouts are named by phase.
        let keys: Vec<String> = if key.contains("{phase}") {
            ["connect", "first_byte", "idle"].iter().map(|p| key.replace("{phase}", p)).collect()
        } else {
            vec![key.clone()]
        };
        for key in keys {
            let taken = sections.iter().any(|section| {
                let home = Home::new();
                std::fs::write(home.path().join("config.toml"), format!("[{section}]\n{key} = 1\n")).unwrap();
                seshat::config::Config::load(home.path(), None)
                    .map_or_else(|e| !e.to_string().contains("unknown field"), |_| true)
            });
            if !taken {
                unknown.push(format!("{file}: `{key}` in no section"));
            }
        }
    }
    assert_eq!(unknown, Vec::<String>::new());
}

/// The CLI's and the library's sources, each with its lines continued by `\` joined.
fn sources() -> Vec<(String, String)> {
    let roots =
        [Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src")];
    let mut out = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let raw = std::fs::read_to_string(&path).unwrap();
            let mut text = String::new();
            let mut rest = raw.as_str();
            while let Some(at) = rest.find("\\\n") {
                text.push_str(&rest[..at]);
                rest = rest[at + 2..].trim_start();
            }
            text.push_str(rest);
            out.push((path.display().to_string(), text));
        }
    }
    out
}

/// Asserts each `(file, key, section)` is a setting the configuration takes.
fn unknown_settings(named: &[(String, String, String)]) {
    let mut unknown = Vec::new();
    for (file, key, section) in named {
        // Placeholders (`[providers.<name>]`, `[providers.{provider}.models."{model}"]`) stand for a
        // provider's and a model's names.
        let mut section = section.clone();
        for (from, to) in
            [("{provider_name}", "openai"), ("{provider}", "openai"), ("<name>", "openai"), ("{model}", "m")]
        {
            section = section.replace(from, to);
        }
        let home = Home::new();
        std::fs::write(home.path().join("config.toml"), format!("[{section}]\n{key} = 1\n")).unwrap();
        if let Err(e) = seshat::config::Config::load(home.path(), None) {
            let e = e.to_string();
            if e.contains("unknown field") || e.contains("unknown variant") {
                unknown.push(format!("{file}: `{key}` under [{section}]: {e}"));
            }
        }
    }
    assert_eq!(unknown, Vec::<String>::new());
}
