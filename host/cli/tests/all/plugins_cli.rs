//! `seshat plugins …` as a process: listing, the warm cache, hostile plugins behind `check`,
//! and a plugin crate made by `plugins new`.

use std::path::Path;
use std::process::Command;

use crate::support::Home;

/// Installs a test plugin under `$SESHAT_HOME/plugins/<id>/` and returns the wasm's path.
fn install(home: &Home, id: &str, wasm: &str) -> std::path::PathBuf {
    let dir = home.path().join("plugins").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(wasm, dir.join("plugin.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), format!("id = \"{id}\"\nkind = \"trimmer\"\napi = \"0.1.0\"\n")).unwrap();
    dir.join("plugin.wasm")
}

fn config(home: &Home, text: &str) {
    std::fs::write(home.path().join("config.toml"), text).unwrap();
}

fn listing(home: &Home) -> serde_json::Value {
    serde_json::from_str(&home.ok(&["plugins", "list", "--json"])).unwrap()
}

#[test]
fn list_shows_the_builtin_trimmer_selected() {
    let home = Home::new();
    insta::assert_snapshot!("plugins_list", home.ok(&["plugins", "list"]));
}

#[test]
fn a_warm_start_compiles_nothing_and_a_bad_cache_entry_is_recompiled() {
    let home = Home::new();
    install(&home, "hostile", seshat_test_plugins::HOSTILE);
    let first = listing(&home);
    let plugins = first["plugins"].as_array().unwrap().len();
    assert!(plugins >= 2);
    assert_eq!(first["compiled"], plugins, "a cold start compiles the builtins and the user plugin: {first}");
    let second = listing(&home);
    assert_eq!(second["compiled"], 0, "a warm start compiles nothing");
    assert_eq!(second["plugins"].as_array().unwrap().len(), plugins);
    assert!(second["plugins"].as_array().unwrap().iter().all(|p| p["error"].is_null()), "{second}");

    // Corrupt one entry, and replace the other with a foreign file whose digest does not match.
    let cache = home.path().join("cache/plugins");
    let mut entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    entries.sort();
    assert_eq!(entries.len(), plugins);
    let len = std::fs::metadata(&entries[0]).unwrap().len() as usize;
    std::fs::write(&entries[0], vec![0xAB; len]).unwrap();
    std::fs::write(&entries[1], b"\0asm not really a compiled component").unwrap();
    let third = listing(&home);
    assert_eq!(third["compiled"], 2, "the two bad entries are recompiled, never loaded: {third}");
    assert_eq!(third["plugins"].as_array().unwrap().len(), plugins);
    assert!(third["plugins"].as_array().unwrap().iter().all(|p| p["error"].is_null()), "{third}");
    assert_eq!(listing(&home)["compiled"], 0, "and the rewritten entries are good");
}

#[test]
fn selecting_another_trimmer_is_one_config_line() {
    let home = Home::new();
    install(&home, "hostile", seshat_test_plugins::HOSTILE);
    let selected = |v: &serde_json::Value| -> Vec<String> {
        v["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["selected"] == true && p["kind"] == "trimmer")
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(selected(&listing(&home)), ["trimmer"]);
    config(&home, "[plugins]\ntrimmer = \"hostile\"\n");
    assert_eq!(selected(&listing(&home)), ["hostile"]);
    config(&home, "[plugins]\ntrimmer = \"nope\"\n");
    assert!(home.ok(&["plugins", "list"]).contains("warning: the configured trimmer `nope` is not installed"));
    config(&home, "[plugins]\ntrimer = \"typo\"\n");
    let err = home.fails(&["plugins", "list"]);
    assert!(err.contains("invalid configuration") && err.contains("trimer"), "{err}");
}

/// Runs `plugins check` on the hostile plugin with `probe` configured; returns (stdout, stderr, ok).
fn probe(home: &Home, wasm: &Path, probe: &str, env: &[(&str, &str)]) -> (String, String, bool) {
    config(
        home,
        &format!(
            "[plugins.options.trimmer]\nprobe = \"{probe}\"\n[plugins.limits.trimmer]\ntime_ms = 300\nmemory_mib = 16\n"
        ),
    );
    let out = home.cmd().envs(env.iter().copied()).args(["plugins", "check", wasm.to_str().unwrap()]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(!stderr.contains("thread '"), "the host panicked: {stderr}");
    (stdout, stderr, out.status.success())
}

#[test]
fn a_plugins_log_lines_reach_stderr_visibly_bounded_and_only_when_asked() {
    let home = Home::new();
    let wasm = install(&home, "hostile", seshat_test_plugins::HOSTILE);
    let (out, err, ok) = probe(&home, &wasm, "log:note \\u001b[31mred", &[("RUST_LOG", "seshat::plugin=info")]);
    assert!(ok, "{err}");
    assert!(!out.contains("note"), "never on stdout: {out}");
    for level in ["Info", "Warn", "Error"] {
        let line =
            err.lines().find(|l| l.contains(&format!("{level}: note"))).unwrap_or_else(|| panic!("{level}: {err}"));
        assert!(line.contains("seshat::plugin") && line.contains("plugin=\"hostile\""), "{line}");
        assert!(line.contains("note \\u{1b}[31mred") && !line.contains('\x1b'), "shown visibly: {line:?}");
    }
    assert!(!err.contains("Debug: note") && !err.contains("Trace: note"), "RUST_LOG chose info: {err}");
    // Without RUST_LOG nothing is shown.
    let (_, err, ok) = probe(&home, &wasm, "log:quiet", &[]);
    assert!(ok && !err.contains("quiet"), "{err}");
    // A flood is cut per line and per call, and the drop is said.
    let (_, err, ok) = probe(&home, &wasm, "log-flood", &[("RUST_LOG", "seshat::plugin=warn")]);
    assert!(ok, "{err}");
    let shown: Vec<&str> = err.lines().filter(|l| l.contains("yyyy")).collect();
    assert!(!shown.is_empty() && shown.len() < 17, "{} lines shown", shown.len());
    assert!(shown.iter().all(|l| l.contains("… [904 bytes cut]") && l.len() < 4300), "{:?}", shown[0]);
    let dropped = format!("{} more log lines dropped: a call may log at most 65536 bytes", 100 - shown.len());
    assert!(err.contains(&dropped), "{dropped}: {err}");
}

#[test]
fn hostile_plugins_get_nothing_and_change_nothing() {
    let home = Home::new();
    let wasm = install(&home, "hostile", seshat_test_plugins::HOSTILE);
    let session = home.session("/hostile");
    home.store()
        .append(&session, &[seshat::conversation::NewMessage::text(seshat::conversation::Role::User, "keep me")])
        .unwrap();
    let db = home.db();
    let before = std::fs::read(&db).unwrap();
    let canary = format!("canary-{}-{}", std::process::id(), session);
    let canary_file = home.path().join("canary.txt");
    std::fs::write(&canary_file, &canary).unwrap();
    let env = [("SESHAT_CANARY", canary.as_str())];

    let (out, err, ok) = probe(&home, &wasm, &format!("read-file:{}", canary_file.display()), &env);
    assert!(!ok && err.contains("[observed]: file error:"), "{err}");
    assert!(!out.contains(&canary) && !err.contains(&canary));

    let (out, err, ok) = probe(&home, &wasm, "read-env:SESHAT_CANARY", &env);
    assert!(!ok && err.contains("[observed]: env error: environment variable not found; 0 variables visible"), "{err}");
    assert!(!out.contains(&canary) && !err.contains(&canary));

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let (_, err, ok) = probe(&home, &wasm, &format!("socket:{}", listener.local_addr().unwrap()), &env);
    assert!(!ok && err.contains("[observed]: socket error:"), "{err}");
    assert_eq!(listener.accept().unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "the plugin connected");

    let marker = format!("MARKER-{canary}");
    let (out, err, ok) = probe(&home, &wasm, &format!("stdout:{marker}"), &env);
    assert!(ok, "{err}");
    assert!(!out.contains(&marker) && !err.contains(&marker), "the plugin's output reached the terminal: {out}{err}");

    let (_, err, ok) = probe(&home, &wasm, "loop", &env);
    assert!(!ok && err.contains("ran past its time budget of 300 ms of guest time and was stopped"), "{err}");
    let (_, err, ok) = probe(&home, &wasm, "membomb", &env);
    assert!(!ok && err.contains("tried to grow its memory past the 16 MiB limit"), "{err}");
    let (_, err, ok) = probe(&home, &wasm, "panic", &env);
    assert!(!ok && err.contains("crashed: it panicked: hostile plugin panicked on purpose (at "), "{err}");

    // The host still works and the database is byte-for-byte what it was.
    assert!(home.ok(&["sessions", "list", "--all"]).contains("keep me"));
    assert_eq!(std::fs::read(&db).unwrap(), before, "a hostile plugin changed the database");

    // Now the hostile plugin is the session's trimmer and compaction runs it over the database
    // itself: whatever it does, the originals stay as they were and no trim of its is recorded.
    let log = "build step ok\n".repeat(3_000);
    let exchange = [
        seshat::conversation::NewMessage {
            role: seshat::conversation::Role::Assistant,
            parts: vec![seshat::conversation::Part::ToolCall {
                id: "c1".into(),
                name: "make".into(),
                arguments: "{}".into(),
            }],
            usage: None,
            status: seshat::conversation::MessageStatus::Complete,
        },
        seshat::conversation::NewMessage {
            role: seshat::conversation::Role::Tool,
            parts: vec![seshat::conversation::Part::ToolResult { call_id: "c1".into(), content: log, is_error: false }],
            usage: None,
            status: seshat::conversation::MessageStatus::Complete,
        },
    ];
    home.store().append(&session, &exchange).unwrap();
    let originals = home.store().full_history(&session).unwrap();
    for mode in ["panic", "membomb", "loop", "read-file:/etc/passwd"] {
        config(
            &home,
            &format!(
                "[plugins]\ntrimmer = \"hostile\"\n[plugins.options.trimmer]\nprobe = \"{mode}\"\n\
                 [plugins.limits.trimmer]\ntime_ms = 300\nmemory_mib = 16\n"
            ),
        );
        let out = home.cmd().args(["compact", &session, "--window", "4096", "--json"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("thread '"), "{mode}: the host panicked: {err}");
        assert!(!out.status.success() && err.contains("plugin `hostile`"), "{mode}: it ran, and failed by name: {err}");
        let store = home.store();
        assert_eq!(store.full_history(&session).unwrap(), originals, "{mode}: the originals changed");
        assert!(store.trims(&session).unwrap().is_empty(), "{mode}: a trim was recorded for the hostile plugin");
        let check: String =
            store.sqlite_connection().unwrap().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok", "{mode}");
    }
}

#[test]
fn a_file_that_is_no_component_gets_one_sentence() {
    let home = Home::new();
    let text = home.path().join("notes.wasm");
    std::fs::write(&text, "hello, not wasm").unwrap();
    let err = home.fails(&["plugins", "check", text.to_str().unwrap()]);
    assert!(err.contains("the file is not WebAssembly") && err.contains("wasm32-wasip2"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line, no dump of the expected bytes: {err}");
    let module = home.path().join("core.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let err = home.fails(&["plugins", "check", module.to_str().unwrap()]);
    assert!(err.contains("a core WebAssembly module, not a component"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn check_refuses_other_worlds_and_versions_with_the_reason() {
    let home = Home::new();
    let err = home.fails(&["plugins", "check", seshat_test_plugins::VERSION_0_5_0]);
    assert!(
        err.contains("was built for seshat:plugin@0.5.0; this seshat speaks 0.1.x, 0.2.x, 0.3.x or 0.4.x"),
        "{err}"
    );
    let out = home.ok(&["plugins", "check", seshat_test_plugins::SEMVER_0_1_1]);
    assert!(
        out.contains("a trimmer plugin for seshat:plugin@0.1.1") && out.ends_with("ok: seshat would load it\n"),
        "{out}"
    );
    let not_wasm = home.path().join("x.wasm");
    std::fs::write(&not_wasm, "hello").unwrap();
    let err = home.fails(&["plugins", "check", not_wasm.to_str().unwrap()]);
    assert!(err.contains("cannot be loaded: the file is not WebAssembly"), "{err}");
    let err = home.fails(&["plugins", "check", "/no/such.wasm"]);
    assert!(err.contains("cannot read /no/such.wasm"), "{err}");
}

/// Builds a plugin crate for wasm32-wasip2 into `target`, as its README says.
fn build_plugin(dir: &Path, target: &Path, what: &str) {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--target", "wasm32-wasip2"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .status()
        .unwrap();
    assert!(status.success(), "{what}");
}

#[test]
fn plugins_new_makes_a_crate_that_builds_and_loads() {
    let home = Home::new();
    let dir = home.path().join("my-trimmer");
    let out = home.ok(&["plugins", "new", "trimmer", "my-trimmer", "--dir", dir.to_str().unwrap()]);
    assert!(out.starts_with("Created the trimmer plugin `my-trimmer`"), "{out}");
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    assert!(lib.lines().count() <= 22, "a complete custom trimmer is about 20 lines");
    let open = "seshat:plugin@0.4.0 is unstable: it may still change before it is frozen. Plugins built for the \
                frozen 0.1.0, 0.2.0 and 0.3.0 keep loading.";
    assert!(out.contains(open), "what the contract promises is said: {out}");
    assert!(std::fs::read_to_string(dir.join("README.md")).unwrap().contains(open));
    assert!(std::fs::read_to_string(dir.join("plugin.toml")).unwrap().contains("api = \"0.4.0\""));
    // The repository's lock file pins the dependencies, so the build is the one CI ran.
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock"), dir.join("Cargo.lock"))
        .unwrap();

    // Built the way the README says, in its own directory (its own workspace), sharing only the
    // compiled dependencies with the repository's plugins.
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/wasm-plugins");
    build_plugin(&dir, &target, "the new plugin does not build");
    let wasm = target.join("wasm32-wasip2/release/my_trimmer.wasm");
    std::fs::copy(&wasm, dir.join("plugin.wasm")).unwrap();
    let out = home.ok(&["plugins", "check", dir.join("plugin.wasm").to_str().unwrap()]);
    assert!(out.contains("manifest: id `my-trimmer`") && out.ends_with("ok: seshat would load it\n"), "{out}");

    // The repository README's plugin example is this same kind of crate: it builds and loads too.
    let ours = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = ours.find("```rs\n").expect("the README's plugin example") + "```rs\n".len();
    let example = &ours[start..start + ours[start..].find("```").unwrap()];
    assert!(example.contains("seshat_plugin_sdk::export_trimmer!"), "{example}");
    std::fs::write(dir.join("src/lib.rs"), example).unwrap();
    build_plugin(&dir, &target, "the README's plugin example does not build");
    std::fs::copy(&wasm, dir.join("plugin.wasm")).unwrap();
    let out = home.ok(&["plugins", "check", dir.join("plugin.wasm").to_str().unwrap()]);
    assert!(out.ends_with("ok: seshat would load it\n"), "the README's example: {out}");

    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("export CARGO_TARGET_DIR=") && readme.contains("each new plugin's first build takes"));
    assert!(readme.contains("seshat plugins test plugin.wasm <session id | export.jsonl | dir of exports>"));

    // The SDK's helpers: options as a type, log lines, Display for the enums.
    std::fs::write(
        dir.join("Cargo.toml"),
        std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .replace("features = [\"trimmer\"]", "features = [\"trimmer\", \"options\"]"),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"use seshat_plugin_sdk::serde_json::Value;
use seshat_plugin_sdk::trimmer::{log, options, Budget, Edit, Error, Level, MessageMeta, PartMeta, Trimmer};
struct Plugin;
impl Trimmer for Plugin {
    fn trim(messages: Vec<MessageMeta>, parts: Vec<PartMeta>, budget: Budget) -> Result<Vec<Edit>, Error> {
        let opts: Value = options(&budget.extra)?;
        let first = (messages[0].role, parts[0].kind);
        log(Level::Info, &format!("mark={} first={} {}", opts["mark"], first.0, first.1));
        let _strict: std::collections::BTreeMap<String, String> = options(&budget.extra)?;
        Ok(Vec::new())
    }
}
seshat_plugin_sdk::export_trimmer!(Plugin);
"#,
    )
    .unwrap();
    build_plugin(&dir, &target, "the plugin using the SDK's helpers does not build");
    std::fs::copy(&wasm, dir.join("plugin.wasm")).unwrap();
    config(&home, "[plugins.options.trimmer]\nmark = \"m1\"\n");
    let out = home
        .cmd()
        .env("RUST_LOG", "seshat::plugin=info")
        .args(["plugins", "check", dir.join("plugin.wasm").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("mark=\"m1\" first=user text"), "options read, roles and kinds shown by Display: {err}");
    config(&home, "[plugins.options.trimmer]\nmark = 3\n");
    let out = home.cmd().args(["plugins", "check", dir.join("plugin.wasm").to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("[invalid_options]: the options under [plugins.options.trimmer] in config.toml do not fit what this plugin reads: invalid type: integer `3`, expected a string"),
        "{err}"
    );
    std::fs::remove_file(home.path().join("config.toml")).unwrap();

    // The summariser's template builds too (sharing the target directory: seconds).
    let sdir = home.path().join("my-summariser");
    home.ok(&["plugins", "new", "summariser", "my-summariser", "--dir", sdir.to_str().unwrap()]);
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock"), sdir.join("Cargo.lock"))
        .unwrap();
    build_plugin(&sdir, &target, "the summariser template does not build");
    let out = home.ok(&["plugins", "check", target.join("wasm32-wasip2/release/my_summariser.wasm").to_str().unwrap()]);
    assert!(out.contains("gave a summary of ") && out.contains(" model calls, answered by the echo stub)"), "{out}");

    // And the embedder's: `check` shows the request it builds for the fixture's texts, sent nowhere.
    let edir = home.path().join("my-embedder");
    home.ok(&["plugins", "new", "embedder", "my-embedder", "--dir", edir.to_str().unwrap()]);
    let manifest = std::fs::read_to_string(edir.join("plugin.toml")).unwrap();
    assert!(
        manifest.contains("kind = \"embedder\"") && manifest.contains("allowed_hosts = [\"{base_url}\"]"),
        "{manifest}"
    );
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock"), edir.join("Cargo.lock"))
        .unwrap();
    build_plugin(&edir, &target, "the embedder template does not build");
    let out = home.ok(&["plugins", "check", target.join("wasm32-wasip2/release/my_embedder.wasm").to_str().unwrap()]);
    assert!(out.contains("an embedder plugin for seshat:plugin@0.4.0"), "{out}");
    assert!(
        out.contains("gave a POST request to https://api.example.com/v1/embed?model=example-embed&kind=document of ")
            && out.contains("embedding 15 texts, sent nowhere"),
        "{out}"
    );

    // And the hook's: its README says how hooks are chosen (per event, not under [plugins]), and
    // `check` tells it every event of the fixture, nothing blocked.
    let hdir = home.path().join("my-hook");
    home.ok(&["plugins", "new", "hook", "my-hook", "--dir", hdir.to_str().unwrap()]);
    let readme = std::fs::read_to_string(hdir.join("README.md")).unwrap();
    assert!(readme.contains("[[hooks.pre_tool]]\nplugin = \"my-hook\"\nmatcher = \"bash|shell*\""), "{readme}");
    assert!(!readme.contains("[plugins]\nhook ="), "{readme}");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock"), hdir.join("Cargo.lock"))
        .unwrap();
    build_plugin(&hdir, &target, "the hook template does not build");
    let out = home.ok(&["plugins", "check", target.join("wasm32-wasip2/release/my_hook.wasm").to_str().unwrap()]);
    assert!(out.contains("a hook plugin for seshat:plugin@0.4.0"), "{out}");
    assert!(out.contains(" decisions: 0 blocks, 1 with context, 0 with summary instructions;"), "{out}");

    // And the extractor's: chosen by [memory] extract, it reads the fixture's user messages (none
    // asks to be remembered) and its proposals would go to a scratch store only.
    let xdir = home.path().join("my-extractor");
    home.ok(&["plugins", "new", "extractor", "my-extractor", "--dir", xdir.to_str().unwrap()]);
    let readme = std::fs::read_to_string(xdir.join("README.md")).unwrap();
    assert!(readme.contains("[memory]\nextract = \"my-extractor\""), "{readme}");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock"), xdir.join("Cargo.lock"))
        .unwrap();
    build_plugin(&xdir, &target, "the extractor template does not build");
    let out = home.ok(&["plugins", "check", target.join("wasm32-wasip2/release/my_extractor.wasm").to_str().unwrap()]);
    assert!(out.contains("an extractor plugin for seshat:plugin@0.4.0"), "{out}");
    assert!(out.contains("0 observations it would remember"), "{out}");

    let err = home.fails(&["plugins", "new", "trimmer", "my-trimmer", "--dir", dir.to_str().unwrap()]);
    assert!(err.contains("already exists"), "{err}");
    let err = home.fails(&["plugins", "new", "widget", "x"]);
    assert!(err.contains("unknown plugin kind `widget`"), "{err}");
}

#[test]
fn the_new_crate_pins_the_wit_bindgen_the_repository_uses() {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/Cargo.lock")).unwrap();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"wit-bindgen\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"'))
        .unwrap();
    let home = Home::new();
    let dir = home.path().join("p");
    home.ok(&["plugins", "new", "provider", "p", "--dir", dir.to_str().unwrap()]);
    let sdk = std::fs::read_to_string(dir.join("seshat-plugin-sdk/Cargo.toml")).unwrap();
    assert!(sdk.contains(&format!("version = \"={version}\"")), "{sdk}");
    // The SDK's outcome rules come along as the crate the repository's plugins use, whole.
    for file in ["Cargo.toml", "src/lib.rs", "src/trim.rs", "src/decisions.rs"] {
        let written = std::fs::read_to_string(dir.join("seshat-outcomes").join(file)).unwrap();
        let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("../outcomes").join(file);
        assert_eq!(written, std::fs::read_to_string(ours).unwrap(), "seshat-outcomes/{file} comes along");
    }
    assert!(sdk.contains("seshat-outcomes = { path = \"../seshat-outcomes\" }"), "{sdk}");
    let wit = std::fs::read_to_string(dir.join("seshat-plugin-sdk/wit/seshat-plugin.wit")).unwrap();
    assert_eq!(
        wit,
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/seshat-plugin.wit")).unwrap()
    );
}

#[test]
fn a_project_plugin_overrides_a_user_plugin_of_the_same_id() {
    let home = Home::new();
    install(&home, "mine", seshat_test_plugins::HOSTILE);
    let project = home.path().join("proj");
    let dir = project.join(".seshat/plugins/mine");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::SEMVER_0_1_1, dir.join("plugin.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), "id = \"mine\"\nkind = \"trimmer\"\napi = \"0.1.1\"\n").unwrap();
    std::fs::write(project.join(".seshat/config.toml"), "[plugins]\ntrimmer = \"mine\"\n").unwrap();
    let out = home.cmd().current_dir(&project).args(["plugins", "list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine: Vec<&serde_json::Value> = v["plugins"].as_array().unwrap().iter().filter(|p| p["id"] == "mine").collect();
    assert_eq!(mine.len(), 2);
    assert_eq!((mine[0]["source"].as_str(), mine[0]["overridden"].as_bool()), (Some("user"), Some(true)));
    assert_eq!((mine[1]["source"].as_str(), mine[1]["selected"].as_bool()), (Some("project"), Some(true)));
    assert_eq!(mine[1]["api_version"], "0.1.1");
    // A broken plugin directory is reported, not fatal.
    std::fs::create_dir_all(project.join(".seshat/plugins/broken")).unwrap();
    let out = home.cmd().current_dir(&project).args(["plugins", "list"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success() && text.contains("warning: cannot read") && text.contains("broken/plugin.toml"),
        "{text}"
    );
}

#[test]
fn a_user_plugin_overrides_the_builtin_and_a_changed_wasm_is_recompiled_and_used() {
    let home = Home::new();
    // A session whose old tool results are large enough for any trimmer.
    let id = home.session("/p");
    {
        let mut store = home.store();
        for k in 0..10 {
            let call = seshat::conversation::Part::ToolCall {
                id: format!("c{k}"),
                name: "run".into(),
                arguments: "{}".into(),
            };
            let result = seshat::conversation::Part::ToolResult {
                call_id: format!("c{k}"),
                content: format!("output line {k}\n").repeat(2_000),
                is_error: false,
            };
            let msg = |role, part| seshat::conversation::NewMessage {
                role,
                parts: vec![part],
                usage: None,
                status: Default::default(),
            };
            store
                .append(
                    &id,
                    &[
                        seshat::conversation::NewMessage::text(seshat::conversation::Role::User, format!("step {k}")),
                        msg(seshat::conversation::Role::Assistant, call),
                        msg(seshat::conversation::Role::Tool, result),
                    ],
                )
                .unwrap();
        }
    }
    config(&home, "[plugins]\nsummariser = \"summariser-extractive\"\n");
    // A user plugin with the built-in's id: the frozen-contract test trimmer (keeps 100 + 100 bytes).
    let wasm = install(&home, "trimmer", seshat_test_plugins::TRIMMER_0_1_0);
    let v = listing(&home);
    let trimmers: Vec<&serde_json::Value> =
        v["plugins"].as_array().unwrap().iter().filter(|p| p["kind"] == "trimmer" && p["id"] == "trimmer").collect();
    assert_eq!(trimmers.len(), 2, "{v}");
    let user = trimmers.iter().find(|p| p["source"] == "user").expect("the user's trimmer is listed");
    assert_eq!((user["selected"].as_bool(), user["api_version"].as_str()), (Some(true), Some("0.1.0")), "{v}");
    assert!(trimmers.iter().any(|p| p["source"] == "builtin" && p["overridden"] == true), "{v}");
    home.ok(&["compact", &id, "--window", "60000"]);
    let trims = home.store().trims(&id).unwrap();
    assert!(!trims.is_empty());
    assert!(trims.iter().all(|t| t.new_size < 300), "the user's plugin trimmed (100 + 100 bytes kept): {trims:?}");

    // The same id, another wasm: compiled once more, and its behaviour is what runs.
    std::fs::copy(seshat_test_plugins::HOSTILE, &wasm).unwrap();
    config(&home, "[plugins]\nsummariser = \"summariser-extractive\"\n[plugins.options.trimmer]\nprobe = \"panic\"\n");
    let v = listing(&home);
    assert_eq!(v["compiled"], 1, "only the changed plugin is compiled: {v}");
    let err = home.fails(&["compact", &id, "--window", "60000"]);
    assert!(err.contains("plugin `trimmer` (trimmer) crashed"), "the new wasm ran: {err}");
}

#[test]
fn a_limit_above_the_cap_is_a_warning_naming_both_numbers() {
    let home = Home::new();
    let wasm = install(&home, "hostile", seshat_test_plugins::HOSTILE);
    config(&home, "[plugins.limits.trimmer]\nmemory_mib = 4096\ntime_ms = 100\n");
    let out = home.ok(&["plugins", "check", wasm.to_str().unwrap()]);
    assert!(out.contains("limits: 1024 MiB of memory, 100 ms"), "{out}");
    assert!(
        out.contains("warning: the configuration asks for memory_mib = 4096, above the cap of 1024: 1024 is used"),
        "{out}"
    );
    assert!(!out.contains("time_ms ="), "only what was over the cap: {out}");
    let listed = listing(&home);
    let row = listed["plugins"].as_array().unwrap().iter().find(|p| p["id"] == "hostile").unwrap();
    assert_eq!(row["warnings"][0], "the configuration asks for memory_mib = 4096, above the cap of 1024: 1024 is used");
    assert!(home.ok(&["plugins", "list"]).contains("  warning: the configuration asks for memory_mib = 4096"));
}

#[test]
fn install_checks_copies_and_refuses_to_replace_another_plugin_of_the_same_id() {
    let home = Home::new();
    // A .wasm alone: the manifest is made from the component.
    let out = home.ok(&["plugins", "install", seshat_test_plugins::HOSTILE]);
    let dir = home.path().join("plugins").join("hostile");
    assert!(out.starts_with("Installed trimmer `hostile` (seshat:plugin@0.4.0,"), "{out}");
    assert!(
        out.contains(&format!("in {}", dir.display())) && out.contains("select it with `trimmer = \"hostile\"`"),
        "{out}"
    );
    assert_eq!(std::fs::read(dir.join("plugin.wasm")).unwrap(), std::fs::read(seshat_test_plugins::HOSTILE).unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("plugin.toml")).unwrap(),
        "id = \"hostile\"\nkind = \"trimmer\"\napi = \"0.4.0\"\n"
    );
    assert!(home.ok(&["plugins", "install", seshat_test_plugins::HOSTILE]).starts_with("Already installed:"));
    let listed = listing(&home);
    let row = listed["plugins"].as_array().unwrap().iter().find(|p| p["id"] == "hostile").unwrap();
    assert_eq!(row["wasm"]["size"], std::fs::metadata(seshat_test_plugins::HOSTILE).unwrap().len());
    assert_eq!(row["wasm"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(row["sdk_version"], "0.4.0", "the SDK's custom section: {row}");
    assert!(home.ok(&["plugins", "list"]).contains(", sdk 0.4.0, installed "), "a detail line for installed plugins");

    // Another plugin under the same id is refused, naming both digests; --replace replaces it.
    let other = home.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(seshat_test_plugins::TRIMMER_0_1_0, other.join("plugin.wasm")).unwrap();
    std::fs::write(other.join("plugin.toml"), "id = \"hostile\"\nkind = \"trimmer\"\napi = \"0.1.0\"\n").unwrap();
    let err = home.fails(&["plugins", "install", other.to_str().unwrap()]);
    assert!(err.contains("a different plugin `hostile` is installed") && err.contains("--replace"), "{err}");
    assert_eq!(std::fs::read(dir.join("plugin.wasm")).unwrap(), std::fs::read(seshat_test_plugins::HOSTILE).unwrap());
    let json: serde_json::Value =
        serde_json::from_str(&home.ok(&["plugins", "install", other.to_str().unwrap(), "--replace", "--json"]))
            .unwrap();
    assert_eq!((json["outcome"].as_str(), json["api_version"].as_str()), (Some("replaced"), Some("0.1.0")), "{json}");
    assert_eq!(
        std::fs::read(dir.join("plugin.wasm")).unwrap(),
        std::fs::read(seshat_test_plugins::TRIMMER_0_1_0).unwrap()
    );
    let listed = listing(&home);
    let row = listed["plugins"].as_array().unwrap().iter().find(|p| p["id"] == "hostile").unwrap();
    assert!(row["sdk_version"].is_null(), "built with wit-bindgen alone, no SDK section: {row}");

    // For a project: under its .seshat/plugins; a broken file is refused, nothing copied.
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let out = home
        .cmd()
        .current_dir(&project)
        .args(["plugins", "install", "--project", seshat_test_plugins::HOSTILE])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(project.join(".seshat/plugins/hostile/plugin.wasm").is_file());
    let junk = home.path().join("junk.wasm");
    std::fs::write(&junk, "not wasm").unwrap();
    let err = home.fails(&["plugins", "install", junk.to_str().unwrap()]);
    assert!(err.contains("the file is not WebAssembly"), "{err}");
    assert!(!home.path().join("plugins/junk").exists());
}

#[test]
fn the_new_crates_readme_names_the_real_plugin_directory() {
    let home = Home::new();
    home.ok(&["plugins", "new", "trimmer", "my-trim", "--dir", home.path().join("my-trim").to_str().unwrap()]);
    let readme = std::fs::read_to_string(home.path().join("my-trim/README.md")).unwrap();
    let plugins = home.path().join("plugins");
    assert!(
        readme.contains(&format!("{}/my-trim/", plugins.display())) && readme.contains("seshat plugins install ."),
        "{readme}"
    );
    assert!(!readme.contains("~/.config"), "{readme}");
}

/// A plugin named like a built-in would replace it everywhere: refused without --replace, a
/// warning with it; uninstalling brings the built-in back and removes the compiled code.
#[test]
fn installing_over_a_builtin_needs_replace_and_uninstall_brings_it_back() {
    let home = Home::new();
    let dir = home.path().join("drop");
    std::fs::create_dir_all(&dir).unwrap();
    // A file named like the built-in trimmer, without a manifest: its id is the file's name.
    let wasm = dir.join("trimmer.wasm");
    std::fs::copy(seshat_test_plugins::TRIMMER_0_1_0, &wasm).unwrap();
    let err = home.fails(&["plugins", "install", wasm.to_str().unwrap()]);
    assert!(err.contains("`trimmer` is the id of a built-in trimmer") && err.contains("--replace"), "{err}");
    let installed = home.path().join("plugins/trimmer");
    assert!(!installed.exists(), "nothing was installed");
    let out = home.ok(&["plugins", "install", wasm.to_str().unwrap(), "--replace"]);
    assert!(out.contains("warning: it replaces the built-in trimmer `trimmer`"), "{out}");
    let listed: serde_json::Value = serde_json::from_str(&home.ok(&["plugins", "list", "--json"])).unwrap();
    let rows: Vec<&serde_json::Value> =
        listed["plugins"].as_array().unwrap().iter().filter(|p| p["id"] == "trimmer").collect();
    assert_eq!(rows.len(), 2, "{listed}");
    assert!(rows.iter().any(|r| r["source"] == "builtin" && r["overridden"] == true), "{listed}");
    let cache = home.path().join("cache/plugins");
    let sha = seshat::plugins::cache::sha256_hex(&std::fs::read(&wasm).unwrap());
    let ours = |sha: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(sha))
            .count()
    };
    assert!(ours(&sha) > 0, "install compiled it into the cache");

    let removed: serde_json::Value =
        serde_json::from_str(&home.ok(&["plugins", "uninstall", "trimmer", "--json"])).unwrap();
    assert_eq!(removed["now"], "builtin", "{removed}");
    assert!(removed["freed_cache_bytes"].as_u64().unwrap() > 0, "{removed}");
    assert!(!installed.exists());
    assert_eq!(ours(&sha), 0, "its compiled code went with it");
    let err = home.fails(&["plugins", "uninstall", "trimmer"]);
    assert!(err.contains("`trimmer` is a built-in plugin, which cannot be uninstalled"), "{err}");
    let err = home.fails(&["plugins", "uninstall", "nothing-here"]);
    assert!(err.contains("no plugin `nothing-here` is installed") && err.contains("plugins list"), "{err}");

    // A selected plugin that nothing would stand in for is removed only with --force.
    let other = home.path().join("mine.wasm");
    std::fs::copy(seshat_test_plugins::TRIMMER_0_1_0, &other).unwrap();
    home.ok(&["plugins", "install", other.to_str().unwrap()]);
    std::fs::write(home.path().join("config.toml"), "[plugins]\ntrimmer = \"mine\"\n").unwrap();
    let err = home.fails(&["plugins", "uninstall", "mine"]);
    assert!(err.contains("`mine` is the selected trimmer") && err.contains("--force"), "{err}");
    let out = home.ok(&["plugins", "uninstall", "mine", "--force"]);
    assert!(out.contains("warning: the configuration still selects it"), "{out}");

    // So is a hook plugin an event's hooks name.
    let hook = home.path().join("guard.wasm");
    std::fs::copy(seshat_test_plugins::HOOK, &hook).unwrap();
    home.ok(&["plugins", "install", hook.to_str().unwrap()]);
    std::fs::write(home.path().join("config.toml"), "[[hooks.pre_tool]]\nplugin = \"guard\"\n").unwrap();
    let err = home.fails(&["plugins", "uninstall", "guard"]);
    assert!(err.contains("`guard` is a hook your configuration runs"), "{err}");
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    home.ok(&["plugins", "uninstall", "guard"]);
}

/// The contract comes with the binary: every version it speaks, the current one by default.
#[test]
fn plugins_wit_prints_the_contract_from_the_binary() {
    let home = Home::new();
    let current = home.ok(&["plugins", "wit"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert_eq!(current, std::fs::read_to_string(repo.join("wit/seshat-plugin.wit")).unwrap());
    assert!(current.contains("a final `\\n` ends the last line"), "the line rule is written down");
    let old = home.ok(&["plugins", "wit", "--version", "0.2"]);
    assert_eq!(old, std::fs::read_to_string(repo.join("wit/v0.2.0/seshat-plugin.wit")).unwrap());
    let err = home.fails(&["plugins", "wit", "--version", "9.9.9"]);
    assert!(err.contains("no plugin contract `9.9.9`") && err.contains("0.1.0, 0.2.0, 0.3.0, 0.4.0"), "{err}");
}
