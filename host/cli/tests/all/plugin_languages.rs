//! Plugins in Python and JavaScript, built with those languages' standard toolchains as
//! `.ci/setup` installs them (componentize-py from PyPI; jco and componentize-js from npm, pinned in
//! `tests/toolchains/js`): every template `plugins new --lang` writes builds, passes its own test
//! script (`plugins check`, then `plugins test` on its recorded session), and the trimmer and
//! summariser do real work in `seshat compact`; a crash shows the interpreter's traceback, and a
//! default JavaScript build's `wasi:http` import is refused before anything is compiled.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use seshat::plugins::PluginKind;

use crate::support::Home;
use crate::support::server::{Reply, Server, openai};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The JavaScript toolchain `.ci/setup` installed; a test never installs one itself (no network).
fn js_toolchain() -> PathBuf {
    let modules = repo().join("tests/toolchains/js/node_modules");
    assert!(
        modules.join(".bin/jco").exists(),
        "jco is not installed in {}: run .ci/setup (it runs `npm ci` there)",
        modules.display()
    );
    modules
}

/// componentize-py as `.ci/setup` installed it.
fn python_toolchain() {
    let version = Command::new("componentize-py").arg("--version").output();
    let found = version.as_ref().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert!(
        found.as_deref().is_some_and(|v| v.ends_with("0.25.1")),
        "componentize-py 0.25.1 is not on PATH (found {found:?}): run .ci/setup"
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    Python,
    Js,
}

impl Lang {
    fn flag(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }
}

/// Writes a `lang` plugin of `kind` named `name` under the home with `plugins new`, ready to
/// build (a JavaScript one gets the set-up toolchain as its `node_modules`).
fn new_plugin(home: &Home, lang: Lang, kind: PluginKind, name: &str) -> PathBuf {
    let dir = home.path().join(name);
    let out = home.ok(&["plugins", "new", "--lang", lang.flag(), kind.as_str(), name, "--dir", dir.to_str().unwrap()]);
    assert!(out.starts_with(&format!("Created the {kind} plugin `{name}`")), "{out}");
    if lang == Lang::Js {
        std::os::unix::fs::symlink(js_toolchain(), dir.join("node_modules")).unwrap();
    } else {
        python_toolchain();
    }
    dir
}

/// Runs the template's own script (`sh test.sh`, `npm test`, or the build alone) in `dir` with
/// this home's seshat.
fn script(home: &Home, lang: Lang, dir: &Path, test: bool) -> Output {
    let (program, args): (&str, &[&str]) = match (lang, test) {
        (Lang::Python, true) => ("sh", &["test.sh"]),
        (Lang::Python, false) => ("sh", &["build.sh"]),
        (Lang::Js, true) => ("npm", &["test", "--silent"]),
        (Lang::Js, false) => ("npm", &["run", "build", "--silent"]),
    };
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir);
    // Only what the toolchains need: nothing of the caller's seshat settings, and npm told never to
    // reach its registry (no update check, offline).
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("npm_config_update_notifier", "false")
        .env("npm_config_offline", "true")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false")
        .env("SESHAT", env!("CARGO_BIN_EXE_seshat"))
        .env("SESHAT_HOME", home.path())
        .env("GIT_CEILING_DIRECTORIES", home.path().parent().unwrap())
        .output()
        .expect("run the template's script")
}

/// Every kind's template in `lang` builds and passes its own test script.
fn every_template_passes_its_own_test(lang: Lang) {
    let home = Home::new();
    for kind in PluginKind::ALL {
        let name = format!("my-{kind}");
        let dir = new_plugin(&home, lang, kind, &name);
        for file in ["README.md", "plugin.toml", if lang == Lang::Python { "app.py" } else { "app.js" }] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(!text.contains("{{"), "a placeholder left in {file}: {text}");
            assert!(text.contains(&name) || file != "README.md", "the README names the plugin");
        }
        let manifest = std::fs::read_to_string(dir.join("plugin.toml")).unwrap();
        assert!(manifest.contains("[limits]\nmemory_mib = "), "an interpreter asks for room: {manifest}");
        let out = script(&home, lang, &dir, true);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{kind} in {}: {stdout}\n{stderr}", lang.flag());
        assert!(
            stdout.contains(&format!("a {kind} plugin for seshat:plugin@0.4.0"))
                || stdout.contains(&format!("an {kind} plugin")),
            "{stdout}"
        );
        assert!(stdout.contains("ok: seshat would load it"), "`plugins check` passed: {stdout}");
        assert!(
            stdout.contains("compile: compiled with the quick tier"),
            "a file is checked on the quick tier: {stdout}"
        );
        assert!(
            stdout.contains("nothing was changed: each history ran in a scratch copy"),
            "`plugins test` ran: {stdout}"
        );
        assert!(!stdout.contains("failed ["), "{kind} in {}: {stdout}", lang.flag());
    }
}

#[test]
fn every_python_template_builds_and_passes_its_own_test() {
    every_template_passes_its_own_test(Lang::Python);
}

#[test]
fn every_javascript_template_builds_and_passes_its_own_test() {
    every_template_passes_its_own_test(Lang::Js);
    // An id in capitals is a plugin id, not an npm package name: package.json lower-cases it.
    let home = Home::new();
    let dir = new_plugin(&home, Lang::Js, PluginKind::Hook, "My-Hook");
    let package: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    assert_eq!(package["name"], "my-hook");
    let built = script(&home, Lang::Js, &dir, false);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
}

/// The recorded session every template is tested on, and its id.
fn recorded_session(home: &Home, dir: &Path) -> String {
    let file = dir.join("session.jsonl");
    let first: Value = serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    first["id"].as_str().expect("the export's session record names its id").to_string()
}

/// An OpenAI-compatible server answering every chat request with `text`, streamed or not as asked.
fn summary_model(text: &'static str) -> Server {
    Server::route(move |r| {
        if !r.path.ends_with("/chat/completions") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        if r.json()["stream"] == true {
            Reply::Stream { pieces: openai::text_answer(&[text], true) }
        } else {
            Reply::json(
                200,
                &json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": text}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 900, "completion_tokens": 20}})
                .to_string(),
            )
        }
    })
}

/// A `lang` trimmer and summariser, installed and selected, compact the recorded session: the
/// trimmer's edits are applied and the summariser's model call made, through the compiled code
/// `plugins install` left in the cache (nothing is compiled again).
fn interpreted_policies_compact_a_real_session(lang: Lang) {
    let home = Home::new();
    let server = summary_model("SUMMARY FROM THE MODEL: the failing test is test_parse_dates.");
    let trimmer = new_plugin(&home, lang, PluginKind::Trimmer, "my-trim");
    let summariser = new_plugin(&home, lang, PluginKind::Summariser, "my-summary");
    // The built-in plugins compiled once, so that what follows counts only the new ones.
    home.ok(&["plugins", "list", "--json"]);
    for dir in [&trimmer, &summariser] {
        let built = script(&home, lang, dir, false);
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        let out = home.ok(&["plugins", "install", dir.to_str().unwrap()]);
        assert!(out.starts_with("Installed"), "{out}");
    }
    let listing: Value = serde_json::from_str(&home.ok(&["plugins", "list", "--json"])).unwrap();
    assert_eq!(listing["compiled"], 0, "install compiled them into the cache the sessions load from: {listing}");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\ntrimmer = \"my-trim\"\nsummariser = \"my-summary\"\nprovider = \"openai\"\n\
             [providers.openai]\nbase_url = \"{}/v1\"\nmax_retries = 0\n",
            server.url()
        ),
    )
    .unwrap();
    let id = recorded_session(&home, &trimmer);
    let out = home
        .cmd()
        .env("OPENAI_API_KEY", "sk-test")
        .args(["compact", &id, "--window", "8192", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {}", lang.flag(), String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["trimmed"].as_u64().unwrap_or(0) > 0, "the {} trimmer trimmed: {report}", lang.flag());
    assert_eq!(report["summarised"], true, "{report}");
    assert!(report["model_calls"].as_u64().unwrap_or(0) >= 1, "{report}");
    let asked: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert!(!asked.is_empty(), "the summariser called the model");
    let summary = home.store().live_view(&id).unwrap().compaction.unwrap().summary.unwrap();
    assert!(summary.contains("SUMMARY FROM THE MODEL"), "the model's answer is the summary: {summary}");
}

#[test]
fn a_python_trimmer_and_summariser_compact_a_real_session() {
    interpreted_policies_compact_a_real_session(Lang::Python);
}

#[test]
fn a_javascript_trimmer_and_summariser_compact_a_real_session() {
    interpreted_policies_compact_a_real_session(Lang::Js);
}

/// An uncaught Python exception shows the interpreter's own report (the sandbox keeps the tail
/// of its stderr), in `plugins test` and in the error every other path reports; the JavaScript
/// template turns any exception into the contract's error naming it.
#[test]
fn an_uncaught_exception_shows_the_interpreters_traceback() {
    let home = Home::new();
    let test = |dir: &Path| {
        let built = script(&home, if dir.join("app.py").exists() { Lang::Python } else { Lang::Js }, dir, false);
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        let wasm = dir.join("plugin.wasm");
        let out = home.run(&["plugins", "test", wasm.to_str().unwrap(), dir.join("session.jsonl").to_str().unwrap()]);
        assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dir = new_plugin(&home, Lang::Python, PluginKind::Trimmer, "crash-python");
    let app = std::fs::read_to_string(dir.join("app.py")).unwrap();
    let at = app.find("    def trim(self").expect("the export");
    let body = at + app[at..].find('\n').unwrap() + 1;
    std::fs::write(
        dir.join("app.py"),
        format!("{}        raise KeyError(\"missing key\")\n{}", &app[..body], &app[body..]),
    )
    .unwrap();
    let out = test(&dir);
    assert!(out.contains("crashed") && out.contains("the end of what it wrote to stderr:"), "{out}");
    assert!(out.contains("Traceback (most recent call last):") && out.contains("KeyError: 'missing key'"), "{out}");

    let dir = new_plugin(&home, Lang::Js, PluginKind::Trimmer, "crash-js");
    let app = std::fs::read_to_string(dir.join("app.js")).unwrap();
    let guard = "  return (...args) => {\n    try {\n";
    let at = app.find(guard).expect("the template's guard") + guard.len();
    let thrown = "      if (args.length) { null.missingKey; }\n";
    std::fs::write(dir.join("app.js"), format!("{}{thrown}{}", &app[..at], &app[at..])).unwrap();
    let out = test(&dir);
    assert!(out.contains("reported an error [internal_error]") && out.contains("TypeError"), "{out}");
}

/// A default jco build imports `wasi:http`; it is refused before compiling, naming the import and
/// the flag that leaves it out.
#[test]
fn a_default_javascript_build_is_refused_before_it_is_compiled() {
    let home = Home::new();
    let dir = new_plugin(&home, Lang::Js, PluginKind::Summariser, "with-http");
    let jco = dir.join("node_modules/.bin/jco");
    let out = Command::new(&jco)
        .env("npm_config_update_notifier", "false")
        .env("npm_config_offline", "true")
        .args(["componentize", "app.js", "--wit", "wit/seshat-plugin.wit", "-n", "summariser", "-o", "http.wasm"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = home.fails(&["plugins", "check", dir.join("http.wasm").to_str().unwrap()]);
    assert!(err.contains("`wasi:http/types@") && err.contains("-d http fetch-event"), "{err}");
    assert!(err.contains("checked before compiling it"), "{err}");
    let cache = home.path().join("cache/plugins");
    let compiled = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
    assert_eq!(compiled, 0, "nothing was compiled: {}", cache.display());
}
