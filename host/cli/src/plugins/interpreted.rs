//! `seshat plugins new --lang python|js`: a plugin in an interpreted language, built into a
//! component with that language's standard toolchain (componentize-py, jco), from the WIT the
//! binary carries, with a recorded session to test it on and the limits an interpreter needs.

use std::path::{Path, PathBuf};

use seshat::plugins::{API_VERSION_CURRENT, PluginKind};

use super::new::Lang;

/// The componentize-py version the Python templates are built and tested with.
pub const COMPONENTIZE_PY: &str = "0.25.1";
/// The jco version the JavaScript templates are built and tested with (1.35.0 cannot read any
/// WIT: an upstream regression).
pub const JCO: &str = "1.34.0";
/// The componentize-js version jco runs for them.
pub const COMPONENTIZE_JS: &str = "0.23.0";

/// A template's file: its path in the plugin's directory, its text, whether it is run.
type File = (PathBuf, String, bool);

/// The template for `kind` in `lang`, its placeholders filled.
fn app(lang: Lang, kind: PluginKind) -> &'static str {
    match (lang, kind) {
        (Lang::Python, PluginKind::Trimmer) => include_str!("templates/python/trimmer.py"),
        (Lang::Python, PluginKind::Summariser) => include_str!("templates/python/summariser.py"),
        (Lang::Python, PluginKind::Provider) => include_str!("templates/python/provider.py"),
        (Lang::Python, PluginKind::Embedder) => include_str!("templates/python/embedder.py"),
        (Lang::Python, PluginKind::Hook) => include_str!("templates/python/hook.py"),
        (Lang::Python, PluginKind::Extractor) => include_str!("templates/python/extractor.py"),
        (_, PluginKind::Trimmer) => include_str!("templates/js/trimmer.js"),
        (_, PluginKind::Summariser) => include_str!("templates/js/summariser.js"),
        (_, PluginKind::Provider) => include_str!("templates/js/provider.js"),
        (_, PluginKind::Embedder) => include_str!("templates/js/embedder.js"),
        (_, PluginKind::Hook) => include_str!("templates/js/hook.js"),
        (_, PluginKind::Extractor) => include_str!("templates/js/extractor.js"),
    }
}

/// The limits an interpreted plugin of `kind` asks for in its manifest: an interpreter starts
/// with tens of megabytes and runs a loop over a multi-megabyte tool output far slower than
/// compiled code (measured: BENCHMARKS.md, "Plugins in Python and JavaScript").
fn limits(lang: Lang, kind: PluginKind) -> (u64, u64) {
    // (memory MiB, guest ms): each template's peak on an 8 MB tool result (a trimmer, a hook's
    // post-tool payload, a provider encoding it) or a full batch (an embedder), with a margin; an
    // idle instance takes about 12 MiB in Python, 9 MiB in JavaScript.
    match (lang, kind) {
        (Lang::Python, PluginKind::Trimmer) => (128, 10_000),
        (Lang::Python, PluginKind::Summariser | PluginKind::Extractor) => (128, 10_000),
        (Lang::Python, PluginKind::Provider) => (256, 5_000),
        (Lang::Python, PluginKind::Embedder | PluginKind::Hook) => (128, 5_000),
        (_, PluginKind::Trimmer) => (128, 5_000),
        (_, PluginKind::Summariser | PluginKind::Extractor) => (128, 10_000),
        (_, PluginKind::Provider) => (192, 5_000),
        (_, PluginKind::Embedder | PluginKind::Hook) => (128, 5_000),
    }
}

/// Every file of a new `lang` plugin `name` of `kind`; `select` is the configuration that selects
/// it.
pub fn files(lang: Lang, name: &str, kind: PluginKind, config_dir: &Path, select: &str) -> Vec<File> {
    let fill = |text: &str| {
        // npm takes lower-case package names only.
        text.replace("{{npm_name}}", &name.to_lowercase())
            .replace("{{name}}", name)
            .replace("{{kind}}", kind.as_str())
            .replace("{{world}}", kind.as_str())
            .replace("{{select}}", select)
            .replace("{{plugins_dir}}", &config_dir.join("plugins").display().to_string())
    };
    let (memory_mib, time_ms) = limits(lang, kind);
    let hosts = if matches!(kind, PluginKind::Provider | PluginKind::Embedder) {
        "allowed_hosts = [\"{base_url}\"]\n"
    } else {
        ""
    };
    let manifest = format!(
        "id = \"{name}\"\nkind = \"{kind}\"\napi = \"{API_VERSION_CURRENT}\"\ndescription = \"A {kind} plugin in {}.\"\n\
         {hosts}\n# An interpreter needs more room than compiled code: what this template was measured to need\n\
         # with a margin (the host caps them at 1024 MiB and 60 s; [plugins.limits.{kind}] in your config wins).\n\
         [limits]\nmemory_mib = {memory_mib}\ntime_ms = {time_ms}\n",
        label(lang)
    );
    let mut files: Vec<File> = vec![
        ("plugin.toml".into(), manifest, false),
        ("wit/seshat-plugin.wit".into(), super::new::wit().to_string(), false),
        ("session.jsonl".into(), super::new::SESSION.to_string(), false),
    ];
    match lang {
        Lang::Python => files.extend([
            ("app.py".into(), fill(app(lang, kind)), false),
            ("build.sh".into(), fill(include_str!("templates/python/build.sh")), true),
            ("test.sh".into(), fill(include_str!("templates/python/test.sh")), true),
            ("README.md".into(), readme(fill(include_str!("templates/python/README.md"))), false),
            (".gitignore".into(), "plugin.wasm\n__pycache__/\nbindings/\n".into(), false),
        ]),
        _ => files.extend([
            ("app.js".into(), fill(app(lang, kind)), false),
            ("package.json".into(), fill(include_str!("templates/js/package.json")), false),
            ("README.md".into(), readme(fill(include_str!("templates/js/README.md"))), false),
            (".gitignore".into(), "plugin.wasm\nnode_modules/\n".into(), false),
        ]),
    }
    files
}

/// The README with the contract's stability said after its title.
fn readme(text: String) -> String {
    match text.split_once("\n\n") {
        Some((title, rest)) => format!("{title}\n\n{}\n\n{rest}", super::new::stability()),
        None => text,
    }
}

/// The language as a person names it.
pub fn label(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
    }
}

/// What to run next, one line each.
pub fn steps(lang: Lang, dir: &Path) -> Vec<String> {
    let dir = dir.display();
    match lang {
        Lang::Python => vec![
            format!("Toolchain:  pip install componentize-py=={COMPONENTIZE_PY}"),
            format!("Build it:   cd {dir} && ./build.sh"),
            "Test it:    ./test.sh   (builds, checks, and runs it on the recorded session.jsonl)".into(),
            format!("Then follow {dir}/README.md to install and select it."),
        ],
        _ => vec![
            format!("Toolchain:  cd {dir} && npm install   (jco {JCO}, componentize-js {COMPONENTIZE_JS}, pinned)"),
            "Build it:   npm run build".into(),
            "Test it:    npm test   (builds, checks, and runs it on the recorded session.jsonl)".into(),
            format!("Then follow {dir}/README.md to install and select it."),
        ],
    }
}
