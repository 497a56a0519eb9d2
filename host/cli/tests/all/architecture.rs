//! ARCHITECTURE.md's allow-list of who may depend on whom, read from ARCHITECTURE.md itself and
//! checked over the source: a module without a row, a row for a module that does not exist, and
//! a module naming (`crate::…`) one its row does not list each fail here, with the file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The table under "**Who may depend on whom**": module → the modules it may use.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md")).unwrap();
    let start = text.find("**Who may depend on whom**").expect("ARCHITECTURE.md has the dependency table");
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',').map(|n| n.trim().trim_matches('`').to_string()).filter(|n| !n.is_empty() && n != "—").collect()
    };
    let mut rows = BTreeMap::new();
    for line in text[start..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [module, uses] = cells[..] else { panic!("a row of two cells: {line}") };
        if module == "module" || module.starts_with("---") {
            continue;
        }
        rows.insert(module.trim_matches('`').to_string(), names(uses));
    }
    assert!(rows.len() >= 10, "the table was not found whole: {rows:?}");
    rows
}

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

/// The crate modules a line of code names: `crate::x…` and each name of `crate::{x, y…}`.
fn named(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Up to the matching brace; the top-level items only.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(item);
        } else {
            out.push(rest.to_string());
        }
    }
    out.into_iter()
        .map(|s| s.trim().chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>())
        .filter(|s| !s.is_empty() && s != "self")
        .collect()
}

#[test]
fn every_module_names_only_what_architecture_md_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src");
    let rules = allowed();
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || (path.is_file() && path.extension().is_none_or(|e| e != "rs")) {
            continue;
        }
        modules.insert(name);
    }
    let mut broken = Vec::new();
    for m in &modules {
        if !rules.contains_key(m) {
            broken.push(format!("host/core/src/{m}: a module without a row in ARCHITECTURE.md's table"));
        }
    }
    for m in rules.keys() {
        if !modules.contains(m) {
            broken.push(format!("ARCHITECTURE.md: a row for `{m}`, which is no module of host/core/src"));
        }
    }
    let mut read = 0;
    for m in &modules {
        let may: BTreeSet<String> = rules.get(m).cloned().unwrap_or_default();
        let root = if src.join(m).is_dir() { src.join(m) } else { src.join(format!("{m}.rs")) };
        for file in sources(&root) {
            read += 1;
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for other in named(code) {
                    if other != *m && !may.contains(&other) && (modules.contains(&other) || other == "outcomes") {
                        broken.push(format!("{}:{}: {m} names {other}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(read >= 30, "the rules must cover the source ({read} files read)");
    assert!(broken.is_empty(), "dependencies ARCHITECTURE.md does not allow:\n{}", broken.join("\n"));
}

#[test]
fn grouped_and_nested_imports_are_all_seen() {
    assert_eq!(named("use crate::{store::{self, Store}, window, plugins::X};"), ["store", "window", "plugins"]);
    assert_eq!(named("let x = crate::config::Config::load(); // crate::cli"), ["config", "cli"]);
}

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The dependency names of one `[…dependencies]` table of a manifest (`dependencies`,
/// `dev-dependencies`, or a target's), in every table of that name.
fn dependencies(manifest: &str, table: &str) -> BTreeSet<String> {
    let doc: toml::Table = manifest.parse().unwrap();
    let mut out = BTreeSet::new();
    if let Some(t) = doc.get(table).and_then(toml::Value::as_table) {
        out.extend(t.keys().cloned());
    }
    for target in doc.get("target").and_then(toml::Value::as_table).into_iter().flat_map(|t| t.values()) {
        if let Some(t) = target.get(table).and_then(toml::Value::as_table) {
            out.extend(t.keys().cloned());
        }
    }
    out
}

/// The crate table of ARCHITECTURE.md's codemap: crate → (directory, the workspace crates it may use).
fn crates() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let start = text.find("| crate | directory |").expect("ARCHITECTURE.md has the crate table");
    let mut rows = BTreeMap::new();
    for line in text[start..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [name, dir, _, uses] = cells[..] else { panic!("a row of four cells: {line}") };
        let uses = uses
            .split(',')
            .map(|n| n.trim().split(' ').next().unwrap_or_default().trim_matches('`').to_string())
            .filter(|n| !n.is_empty() && n != "—")
            .collect();
        rows.insert(name.trim_matches('`').to_string(), (dir.trim_matches('`').to_string(), uses));
    }
    rows
}

#[test]
fn every_crate_depends_only_on_the_workspace_crates_architecture_md_allows() {
    let table = crates();
    let workspace: toml::Table = std::fs::read_to_string(root().join("Cargo.toml")).unwrap().parse().unwrap();
    let members: BTreeSet<String> =
        workspace["workspace"]["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string()).collect();
    let listed: BTreeSet<String> = table.values().map(|(dir, _)| dir.clone()).collect();
    assert_eq!(members, listed, "the workspace's members and ARCHITECTURE.md's crate table");
    let mut broken = Vec::new();
    for (name, (dir, may)) in &table {
        let manifest = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let doc: toml::Table = manifest.parse().unwrap();
        assert_eq!(doc["package"]["name"].as_str(), Some(name.as_str()), "{dir}/Cargo.toml names its crate");
        for table_name in ["dependencies", "dev-dependencies", "build-dependencies"] {
            for dep in dependencies(&manifest, table_name) {
                if table.contains_key(&dep) && !may.contains(&dep) {
                    broken.push(format!("{dir}/Cargo.toml: {name} depends on {dep} ({table_name})"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "crate dependencies ARCHITECTURE.md does not allow:\n{}", broken.join("\n"));
}

#[test]
fn the_library_depends_on_what_architecture_md_lists_and_on_no_front_end_crate() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let start = text.find("**The library's dependencies**").expect("ARCHITECTURE.md lists the library's dependencies");
    let rest = &text[start..];
    let list = &rest[rest.find("):").expect("the list follows its heading") + 2..rest.find(".\n").unwrap()];
    let documented: BTreeSet<String> =
        list.split(',').map(|n| n.trim().trim_matches('`').to_string()).filter(|n| !n.is_empty()).collect();
    let manifest = std::fs::read_to_string(root().join("host/core/Cargo.toml")).unwrap();
    let actual = dependencies(&manifest, "dependencies");
    assert_eq!(actual, documented, "host/core/Cargo.toml's dependencies and ARCHITECTURE.md's list");
    for front_end in ["clap", "rustyline", "ctrlc", "indicatif", "rmcp", "tracing-subscriber", "anyhow"] {
        assert!(!actual.contains(front_end), "the library depends on {front_end}, a front end's crate");
    }
}

/// The text of a line's string literals (escapes left as written).
fn literals(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (start, c) {
            (None, '/') if line[i..].starts_with("//") => break,
            (None, '"') => start = Some(i + 1),
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(s), '"') if !escaped => {
                out.push(&line[s..i]);
                start = None;
            }
            _ => {}
        }
        escaped = false;
    }
    // A literal that goes on to the next line.
    if let Some(s) = start {
        out.push(&line[s..]);
    }
    out
}

/// Whether a text names a command-line flag (`--model`) or a `seshat` command.
fn names_the_cli(text: &str) -> bool {
    let flag = text.match_indices("--").any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + 2..].chars().next();
        before.is_none_or(|c| c == ' ' || c == '`' || c == '(') && after.is_some_and(|c| c.is_ascii_lowercase())
    });
    // Cargo's flags (how to build a plugin, a test log's last line) are not Seshat's, nor are jco's
    // (how to build a JavaScript plugin the sandbox can link).
    let cargo = text.contains("cargo ") || text.contains("to rerun pass") || text.contains("With jco ");
    (flag && !cargo) || text.contains("`seshat ") || text.contains("run seshat ")
}

#[test]
fn library_messages_name_no_command_line_flag_or_command() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src");
    let mut found = Vec::new();
    for file in sources(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests sit at the end of a file, after `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut in_literal = false;
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if !in_literal && (trimmed.starts_with("//") || trimmed.starts_with("#[")) {
                continue;
            }
            let mut pieces = literals(line);
            if in_literal {
                // The rest of a literal begun on an earlier line, up to its closing quote.
                let end = line.find('"').unwrap_or(line.len());
                pieces.insert(0, &line[..end]);
            }
            // A line with an odd number of unescaped quotes opens or closes a literal spanning lines.
            let quotes = line.match_indices('"').filter(|(i, _)| !line[..*i].ends_with('\\')).count();
            in_literal ^= quotes % 2 == 1;
            for piece in pieces {
                if names_the_cli(piece) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "library messages reach Go and Rust users word for word: say what happened and leave the command \
         line's flags and commands to its hints (host/cli/src/hints.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_flag_or_a_command_in_a_message_is_seen() {
    assert!(names_the_cli("pass --model for another"));
    assert!(names_the_cli("run `seshat sessions list`"));
    assert!(!names_the_cli("a --- b"));
    assert!(!names_the_cli("tokens: 10--20"));
    assert!(!names_the_cli("`cargo build --release --target wasm32-wasip2`"));
    assert_eq!(literals(r#"let x = format!("a {b}", "c\"d"); // "e""#), vec!["a {b}", "c\\\"d"]);
}
