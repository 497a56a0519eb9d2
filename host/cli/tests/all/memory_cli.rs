//! `seshat memory` and `seshat mcp` as processes: the seed's commands, a JSON-RPC client over real
//! stdio, and eight processes writing one graph at once.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::Home;

/// A `seshat mcp` child driven over its stdin/stdout.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl McpClient {
    pub fn start(home: &Home, cwd: &std::path::Path) -> Self {
        let mut child = home
            .cmd()
            .arg("mcp")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn seshat mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Self { child, stdin, stdout, next_id: 0 };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "seshat-tests", "version": "0"}}),
        );
        assert_eq!(init["serverInfo"]["name"], "seshat-memory", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        client.notify("notifications/initialized");
        client
    }

    fn notify(&mut self, method: &str) {
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
    }

    /// Sends a request and returns its `result` (panicking on a JSON-RPC error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed stdout");
            let msg: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
            if msg["id"] == id {
                assert!(msg.get("error").is_none(), "{method} failed: {msg}");
                return msg["result"].clone();
            }
        }
    }

    /// Calls a tool; returns (structuredContent, isError).
    pub fn call(&mut self, name: &str, arguments: Value) -> (Value, bool) {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, result["structuredContent"], "text and structured content agree");
        (result["structuredContent"].clone(), result["isError"] == true)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the server to exit with its input still open (stopped by a signal).
    pub fn wait_exit(mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }

    /// Sends a request without waiting for its answer.
    pub fn send(&mut self, method: &str, params: Value) {
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// [`McpClient::wait_exit`], at most `deadline`: `None` (the server SIGKILLed) when it did not exit.
    pub fn wait_exit_within(mut self, deadline: std::time::Duration) -> Option<std::process::ExitStatus> {
        crate::support::wait_with_deadline(&mut self.child, deadline)
    }

    /// SIGKILLs the server and reaps it.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL seshat mcp");
        self.child.wait().unwrap();
    }

    pub fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "seshat mcp exited with {status}");
    }
}

fn repo(home: &Home, name: &str) -> std::path::PathBuf {
    let dir = home.path().join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    dir
}

#[test]
fn mcp_server_lists_and_calls_the_tools_over_stdio() {
    let home = Home::new();
    let dir = repo(&home, "proj");
    let mut client = McpClient::start(&home, &dir);
    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes",
            "knowledge_search",
            "knowledge_read",
            "history_search",
            "history_read"
        ]
    );
    let (created, err) = client.call(
        "create_entities",
        json!({"entities": [{"name": "Seshat", "entityType": "project", "observations": ["memory runtime"]}]}),
    );
    assert!(!err);
    assert_eq!(created["entities"][0]["scope"], "project");
    let (found, _) = client.call("search_nodes", json!({"query": "runtime"}));
    assert_eq!(found["entities"][0]["name"], "Seshat");
    let (error, err) =
        client.call("add_observations", json!({"observations": [{"entityName": "Nope", "contents": ["x"]}]}));
    assert!(err && error["error"].as_str().unwrap().contains("Entity with name Nope not found"), "{error}");
    let (error, err) = client.call("search_nodes", json!({}));
    assert!(err && error["error"].as_str().unwrap().contains("missing field `query`"), "{error}");
    client.close();

    // The CLI sees what the MCP client wrote.
    let out = home.cmd().current_dir(&dir).args(["memory", "--scope", "project"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Seshat (project) [project]"));
}

on_both_backends! {
fn eight_processes_writing_one_graph_lose_nothing(home) {
    const PROCESSES: usize = 8;
    const CALLS: usize = 200;
    let dir = repo(&home, "shared");
    // Every client is started and initialised first, then all are released at once.
    let release = std::sync::Arc::new(std::sync::Barrier::new(PROCESSES));
    let workers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let mut client = McpClient::start(&home, &dir);
            let release = release.clone();
            std::thread::spawn(move || {
                release.wait();
                let mut first_answer = None;
                for i in 0..CALLS {
                    // Each block of five calls works on one shared entity, created by its first call.
                    let shared = (i / 5) % 10;
                    // The same names in a different case per process: one entity each.
                    let name = if p % 2 == 0 { format!("SHARED-{shared}") } else { format!("shared-{shared}") };
                    let (result, err) = match i % 5 {
                        0 => client.call(
                            "create_entities",
                            json!({"entities": [{"name": name, "entityType": "thing", "observations": [format!("p{p}-created-{i}")]}]}),
                        ),
                        1 => client.call("add_observations", json!({"observations": [{"entityName": name, "contents": [format!("p{p}-added-{i}")]}]})),
                        2 => client.call(
                            "create_relations",
                            json!({"relations": [{"from": name, "to": format!("Shared-{shared}"), "relationType": "self"}]}),
                        ),
                        3 => client.call(
                            "create_entities",
                            json!({"entities": [{"name": format!("Temp-p{p}-{i}"), "entityType": "temp", "observations": ["gone soon"]}]}),
                        ),
                        _ => {
                            // Delete this process's temp entity and the observation it added three calls ago.
                            client.call("delete_entities", json!({"entityNames": [format!("temp-P{p}-{}", i - 1)]}));
                            client.call(
                                "delete_observations",
                                json!({"deletions": [{"entityName": name, "observations": [format!("p{p}-added-{}", i - 3)]}]}),
                            )
                        }
                    };
                    assert!(!err, "process {p} call {i}: {result}");
                    first_answer.get_or_insert_with(std::time::Instant::now);
                }
                client.close();
                (first_answer.expect("calls were made"), std::time::Instant::now())
            })
        })
        .collect();
    let spans: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    // The clients really ran at the same time: every one had an answer before any one finished.
    let latest_start = spans.iter().map(|s| s.0).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1).min().unwrap();
    assert!(latest_start < earliest_end, "the MCP calls did not overlap in time");

    // The expected graph, computed from what each process did.
    let mut expected: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for p in 0..PROCESSES {
        for i in (0..CALLS).filter(|i| i % 5 == 0) {
            expected.entry(format!("shared-{}", (i / 5) % 10)).or_default().push(format!("p{p}-created-{i}"));
        }
    }
    let mut store = home.store();
    let key = seshat::paths::repository_key(&dir);
    let mut memory = store.memory(key.as_deref());
    let (graph, more) = memory.read_graph(None, 0, 500).unwrap();
    assert!(!more);
    let mut actual: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for e in &graph.entities {
        let mut obs = e.observations.clone();
        obs.sort();
        actual.insert(e.name.to_lowercase(), obs);
    }
    for v in expected.values_mut() {
        v.sort();
    }
    assert_eq!(actual, expected, "entities and observations after the run");
    let mut relations: Vec<(String, String)> =
        graph.relations.iter().map(|r| (r.from.to_lowercase(), r.to.to_lowercase())).collect();
    relations.sort();
    relations.dedup();
    assert_eq!(relations.len(), 10, "one `self` relation per shared entity: {relations:?}");
    assert_eq!(graph.relations.len(), 10, "no relation stored twice under another case");
}
}

#[test]
fn the_seeds_memory_commands_work() {
    let home = Home::new();
    let dir = repo(&home, "proj");
    let run = |args: &[&str]| {
        let out = home.cmd().current_dir(&dir).args(args).output().unwrap();
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), out.status.success())
    };
    let (out, _, ok) = run(&["memory", "--action", "set", "--key", "style", "--value", "short answers, no preamble"]);
    assert!(ok);
    assert_eq!(out, "Set `style` in user memory.\n");
    insta::assert_snapshot!("memory_show_user", run(&["memory"]).0);
    let (out, _, _) = run(&["memory", "--action", "context"]);
    assert_eq!(out, "# Long-term memory\n\n## About the user\n- style: short answers, no preamble\n");
    let (out, _, _) = run(&["memory", "--scope", "project"]);
    assert!(out.contains("(empty)"), "{out}");

    let (_, err, ok) = run(&["memory", "--action", "set", "--key", "style"]);
    assert!(!ok && err.contains("--action set needs --key and --value"), "{err}");
    let (_, err, ok) = run(&["memory", "--scope", "galaxy"]);
    assert!(!ok && err.contains("invalid value 'galaxy' for '--scope <SCOPE>'"), "{err}");
    let (_, err, ok) = run(&["memory", "--action", "dance"]);
    assert!(!ok && err.contains("invalid value 'dance' for '--action <ACTION>'"), "{err}");
    let (_, err, ok) = run(&["memory", "--action", "search"]);
    assert!(!ok && err.contains("--action search needs --query"), "{err}");

    let (_, err, ok) = run(&["memory", "--action", "clear", "--scope", "user"]);
    assert!(!ok && err.contains("pass --yes"), "{err}");
    let (out, _, ok) = run(&["memory", "--action", "clear", "--scope", "user", "--yes"]);
    assert!(ok && out.starts_with("Cleared user memory (1 records). Backup: "), "{out}");
    let backup = out.trim().rsplit("Backup: ").next().unwrap();
    assert!(std::fs::read_to_string(backup).unwrap().contains("short answers, no preamble"));
    assert!(run(&["memory"]).0.contains("(empty)"));
    assert_private_to_its_owner(&home, std::path::Path::new(backup));
}

/// `file` is 0600 in a 0700 directory, and another user (`nobody`) can read neither — while
/// they can read a world-readable file beside the directory (so `su` works and the way is open).
fn assert_private_to_its_owner(home: &Home, file: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = file.parent().unwrap();
    assert_eq!((mode(dir), mode(file)), (0o700, 0o600), "{}", file.display());
    if !rustix::process::geteuid().is_root() {
        return; // Another user's view needs root to take; the modes above are what decide it.
    }
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let open = home.path().join("open.txt");
    std::fs::write(&open, "anyone may read this").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let read_as_nobody = |p: &std::path::Path| {
        Command::new("su")
            .args(["nobody", "-s", "/bin/sh", "-c", &format!("cat '{}'", p.display())])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(read_as_nobody(&open), "the control: nobody reads a world-readable file");
    assert!(!read_as_nobody(file), "nobody read {}", file.display());
}

#[test]
fn search_deleted_and_restore_from_the_cli() {
    let home = Home::new();
    let dir = repo(&home, "proj");
    let mut client = McpClient::start(&home, &dir);
    client.call(
        "create_entities",
        json!({"entities": [{"name": "Deploy", "entityType": "process", "observations": ["friday freeze"]}]}),
    );
    client.call("delete_entities", json!({"entityNames": ["deploy"]}));
    client.close();
    let run = |args: &[&str]| {
        let out = home.cmd().current_dir(&dir).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run(&["memory", "--action", "search", "--query", "freeze"]), "No memory matches `freeze`.\n");
    let deleted: Value = serde_json::from_str(&run(&["memory", "--action", "deleted", "--json"])).unwrap();
    let id = deleted[0]["id"].as_i64().unwrap();
    assert_eq!(deleted[0]["origin"], "memory_delete_entities");
    let out = run(&["memory", "--action", "restore", "--id", &id.to_string()]);
    assert!(out.starts_with(&format!("Restored deletion {id}")), "{out}");
    assert!(run(&["memory", "--action", "search", "--query", "freeze"]).contains("Deploy (process) [project]"));
    let out =
        home.cmd().current_dir(&dir).args(["memory", "--action", "restore", "--id", &id.to_string()]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no deletion {id} to restore")));
}

#[test]
fn search_finds_notes_in_the_visible_scopes_too() {
    let home = Home::new();
    let here = repo(&home, "here");
    let elsewhere = repo(&home, "elsewhere");
    let run = |dir: &std::path::Path, args: &[&str]| {
        let out = home.cmd().current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    run(&here, &["memory", "--action", "set", "--key", "style", "--value", "Short ANSWERS, no preamble"]);
    run(&elsewhere, &["memory", "--action", "set", "--scope", "project", "--key", "tone", "--value", "long answers"]);
    run(&here, &["memory", "--action", "set", "--scope", "project", "--key", "Ærø", "--value", "ferry times"]);

    let text = run(&here, &["memory", "--action", "search", "--query", "answers"]);
    assert_eq!(text, "  style: Short ANSWERS, no preamble [user]\n", "another project's note stays hidden");
    let found: Value =
        serde_json::from_str(&run(&here, &["memory", "--action", "search", "--query", "ærø", "--json"])).unwrap();
    assert_eq!(found["notes"][0]["key"], "Ærø", "keys match too, ignoring case: {found}");
    assert_eq!(found["notes"][0]["scope"], "project");
    assert_eq!(found["entities"], json!([]));
    let only_user: Value = serde_json::from_str(&run(
        &here,
        &["memory", "--action", "search", "--query", "ferry", "--scope", "user", "--json"],
    ))
    .unwrap();
    assert_eq!(only_user["notes"], json!([]), "--scope narrows the notes searched");
}

/// Feeds `input` (raw bytes, exactly as given) to `seshat mcp` and returns every line it wrote.
fn mcp_transcript(home: &Home, input: &str) -> Vec<Value> {
    let (status, stderr, answers) = crate::support::mcp_input(home.cmd(), input);
    assert!(status.success(), "seshat mcp failed: {stderr}");
    answers
}

fn by_id<'a>(answers: &'a [Value], id: &Value) -> &'a Value {
    let found: Vec<&Value> = answers.iter().filter(|a| &a["id"] == id).collect();
    assert_eq!(found.len(), 1, "one answer for id {id}: {answers:?}");
    found[0]
}

#[test]
fn mcp_answers_every_bad_line_as_json_rpc_prescribes() {
    let home = Home::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let lines = [
        // Before initialize: refused, saying what to do.
        json!({"jsonrpc": "2.0", "id": "early", "method": "tools/list"}).to_string(),
        init.to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "{this is not json".to_string(),
        json!({"jsonrpc": "1.0", "id": 5, "method": "tools/list"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 6}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": 42}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_graph", "arguments": "all"}}).to_string(),
        "[1, 2]".to_string(),
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}).to_string(),
    ];
    // The last request is complete but has no line break before EOF.
    let last =
        json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}});
    let input = format!("{}\n{last}", lines.join("\n"));
    let answers = mcp_transcript(&home, &input);

    let early = by_id(&answers, &json!("early"));
    assert_eq!(early["error"]["code"], -32002, "{early}");
    assert!(early["error"]["message"].as_str().unwrap().contains("Send an `initialize` request first"), "{early}");
    assert_eq!(by_id(&answers, &json!(1))["result"]["serverInfo"]["name"], "seshat-memory");
    let nulls: Vec<&Value> = answers.iter().filter(|a| a["id"].is_null()).collect();
    let codes: Vec<i64> = nulls.iter().map(|a| a["error"]["code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [-32700, -32600], "the unparseable line and the batch, answered with a null id: {nulls:?}");
    for a in &nulls {
        assert_eq!(a["jsonrpc"], "2.0");
    }
    assert_eq!(by_id(&answers, &json!(5))["error"]["code"], -32600);
    assert_eq!(by_id(&answers, &json!(6))["error"]["code"], -32600);
    for id in [7, 8, 9] {
        let a = by_id(&answers, &json!(id));
        assert_eq!(a["error"]["code"], -32602, "{a}");
    }
    assert!(
        by_id(&answers, &json!(9))["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`params.arguments` must be an object")
    );
    assert_eq!(by_id(&answers, &json!(10))["result"]["tools"].as_array().unwrap().len(), 13);
    let tail = by_id(&answers, &json!(11));
    assert!(tail["result"]["structuredContent"]["entities"].is_array(), "the last line without a newline: {tail}");
    assert_eq!(answers.len(), 11, "one answer per request and per unanswerable line");
}

#[test]
fn mcp_answers_every_request_sent_before_the_input_ends() {
    let home = Home::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let mut input = format!("{init}\n{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for i in 1..=200 {
        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "create_entities", "arguments": {"scope": "user", "entities": [{"name": format!("E{i}"), "entityType": "t", "observations": ["o"]}]}}});
        input.push_str(&format!("{call}\n"));
    }
    // The client writes everything and closes its end at once.
    let answers = mcp_transcript(&home, &input);
    for i in 1..=200 {
        assert!(by_id(&answers, &json!(i))["result"]["structuredContent"]["entities"].is_array(), "request {i}");
    }
    let mut store = home.store();
    assert_eq!(store.memory(None).read_graph(None, 0, 500).unwrap().0.entities.len(), 200);
}

#[test]
fn every_tool_named_in_an_mcp_description_or_answer_is_one_mcp_serves() {
    // The official MCP Python SDK as the client: what an MCP user's agent reads.
    let home = Home::new();
    let env = serde_json::json!({
        "SESHAT_HOME": home.path(),
        "PATH": std::env::var("PATH").unwrap_or_default(),
        "TZ": "UTC",
    });
    let out = Command::new("python3")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/mcp_texts.py"))
        .arg(env!("CARGO_BIN_EXE_seshat"))
        .arg(env.to_string())
        .arg(home.path())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "the MCP SDK client failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"search_nodes") && names.contains(&"create_entities"), "{names:?}");
    let texts: Vec<String> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap().to_string())
        .chain(seen["answers"].as_array().unwrap().iter().map(|a| a["text"].as_str().unwrap().to_string()))
        .collect();
    assert!(seen["answers"].as_array().unwrap().iter().any(|a| a["is_error"] == true), "errors were read: {seen}");
    // Every snake_case word that names a tool — one MCP serves, or one with a front end's prefix —
    // is a tool MCP serves.
    let mut named = Vec::new();
    for text in &texts {
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let tool_like = ["memory_", "history_", "knowledge_"].iter().any(|p| word.starts_with(p))
                || names.iter().any(|n| word.len() > n.len() && word.ends_with(&format!("_{n}")));
            if tool_like {
                named.push(word.to_string());
            }
        }
    }
    let absent: Vec<&String> = named.iter().filter(|w| !names.contains(&w.as_str())).collect();
    assert!(absent.is_empty(), "named but not served over MCP: {absent:?}");
}

/// An agent outside Seshat searches the conversations Seshat keeps over MCP (the official Python
/// SDK as the client): this project's by default, every project's with `all`, and reads a match
/// back as it was written.
#[test]
fn mcp_searches_and_reads_the_history_seshat_keeps() {
    let home = Home::new();
    let id = home.session("/elsewhere/project");
    let mut store = home.store();
    store
        .append(
            &id,
            &[
                seshat::conversation::NewMessage::text(
                    seshat::conversation::Role::User,
                    "Where does the kestrel cluster deploy from?",
                ),
                seshat::conversation::NewMessage::text(
                    seshat::conversation::Role::Assistant,
                    "From the release branch, on Tuesdays.",
                ),
            ],
        )
        .unwrap();
    let env = json!({
        "SESHAT_HOME": home.path(),
        "PATH": std::env::var("PATH").unwrap_or_default(),
        "TZ": "UTC",
    });
    let out = Command::new("python3")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/mcp_history.py"))
        .arg(env!("CARGO_BIN_EXE_seshat"))
        .arg(env.to_string())
        .arg(home.path())
        .arg("kestrel")
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "the MCP SDK client failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tools.contains(&"history_search") && tools.contains(&"history_read"), "{tools:?}");
    assert!(seen["here"].as_str().unwrap().starts_with("No message of this project"), "{seen}");
    let everywhere = seen["everywhere"].as_str().unwrap();
    assert!(everywhere.contains(&format!("session {id} seq 1 (user)")), "{everywhere}");
    assert_eq!(seen["read"].as_str().unwrap().trim(), "[seq 1 · user]\nWhere does the kestrel cluster deploy from?");
}
