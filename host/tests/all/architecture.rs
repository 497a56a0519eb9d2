//! The dependency rules ARCHITECTURE.md states, checked over the source's paths: a module that
//! names another it may not depend on fails here, with the file and line.

use std::path::{Path, PathBuf};

/// (module path under host/src, the crate modules it must not name).
const RULES: &[(&str, &[&str])] = &[
    (
        "conversation.rs",
        &["client", "cli", "compaction", "config", "memory", "paths", "plugins", "providers", "store", "window"],
    ),
    ("window.rs", &["client", "cli", "compaction", "config", "memory", "paths", "plugins", "providers", "store"]),
    ("plugins", &["client", "cli", "compaction", "memory", "providers", "store"]),
    ("providers", &["client", "cli", "memory", "store"]),
    ("store", &["client", "cli", "compaction", "plugins", "providers"]),
    ("memory", &["client", "cli", "compaction", "plugins", "providers"]),
    ("compaction", &["client", "cli", "providers"]),
    ("foreign", &["client", "cli", "compaction", "memory", "plugins", "providers"]),
    ("knowledge", &["client", "cli", "retrieval"]),
    ("retrieval", &["client", "cli"]),
];

fn sources(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

#[test]
fn modules_name_only_what_they_may_depend_on() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    let mut read = 0;
    for (module, forbidden) in RULES {
        for file in sources(&src.join(module)) {
            read += 1;
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for other in *forbidden {
                    if code.contains(&format!("crate::{other}::"))
                        || code.contains(&format!("crate::{other}}}"))
                        || code.contains(&format!("crate::{other};"))
                        || code.contains(&format!("crate::{other},"))
                    {
                        broken.push(format!("{}:{}: {module} names {other}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(read >= 30, "the rules must cover the source ({read} files read)");
    assert!(broken.is_empty(), "dependencies ARCHITECTURE.md forbids:\n{}", broken.join("\n"));
}
