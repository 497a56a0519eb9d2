//! Long-term memory benchmarks at 1k, 10k and 100k entities (3 observations each).
//!
//! In-process figures stand beside in-process baselines on the same database in the same run:
//! * search (ranked and substring) beside the reference server's work done in plain SQL — each
//!   query word, case-folded, looked for in names, types and observations, a page of the newest
//!   20 matching entities (as many as Seshat returns) with their observations and the relations
//!   among them;
//! * open beside indexed lookups of the same rows;
//! * creating the entities in batches of 100 beside plain inserts of the same rows.
//!
//! Figures over MCP (a `seshat mcp` child, JSON-RPC over its stdin and stdout) stand beside a
//! minimal JSON-RPC echo child answering the same requests over the same kind of pipe, so the
//! ratio is what the memory work adds to the round trip; creating over MCP also stands beside
//! creating through the library (the target: within 1.5×).
//!
//! Every measured call checks its result: a search that finds nothing fails the run instead of
//! looking fast.
//!
//! Run: `cargo bench -p seshat-cli --bench memory` (`-- --quick` skips 100k; `-- --create-only N`
//! only creates N entities through the library, adding `--mcp` through `seshat mcp`, adding
//! `--to-echo` sends the same requests to the echo; for profiling).

mod common;
use common::*;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::params;
use serde_json::{Value, json};
use seshat::memory::NewEntity;
use seshat::store::Store;

/// Ranked queries. Each finds something at every size; `common` matches 12.5% of entities,
/// `tokio` about 30%, and `entity`, `module` and `service` are in every entity.
const RANKED: &[&str] = &["common", "entity 424", "tokio", "module 7 service"];
/// Substring queries (no whole word matches them).
const SUBSTRING: &[&str] = &["ommo", "ntity 12", "oki"];
/// The most entities a search returns (the tools' default).
const LIMIT: usize = 20;

fn entity(i: usize) -> NewEntity {
    let libs = ["tokio", "serde", "rusqlite", "clap", "wasmtime", "reqwest"];
    let mut observations = vec![
        format!("works with {} and {}", libs[i % 6], libs[(i / 6) % 6]),
        format!("service component in module {}", i % 50),
        format!("owned by team {}", i % 17),
    ];
    if i.is_multiple_of(8) {
        observations[2].push_str(", a common dependency");
    }
    NewEntity { name: format!("Entity {i}"), entity_type: format!("kind{}", i % 10), observations }
}

/// The words of a query, case-folded (the reference server lower-cases query and text).
fn words(query: &str) -> Vec<String> {
    query.split_whitespace().map(str::to_lowercase).collect()
}

/// Whether an entity holds every word of `query` in its name, type or an observation: the
/// reference server's match, applied to each word.
fn holds(name: &str, entity_type: &str, observations: &[String], query: &str) -> bool {
    words(query).iter().all(|w| {
        name.to_lowercase().contains(w)
            || entity_type.to_lowercase().contains(w)
            || observations.iter().any(|o| o.to_lowercase().contains(w))
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--echo") {
        echo();
        return;
    }
    if let Some(n) = args.iter().position(|a| a == "--create-only").and_then(|i| args.get(i + 1)) {
        let n: usize = n.parse().expect("--create-only N");
        let dir = tempfile::tempdir().unwrap();
        let entities: Vec<NewEntity> = (0..n).map(entity).collect();
        let db = dir.path().join("memory.db");
        let (how, took) = if args.iter().any(|a| a == "--mcp") {
            ("over MCP", create_over(&mut Child::mcp(&db, dir.path()), &entities))
        } else if args.iter().any(|a| a == "--to-echo") {
            ("to the JSON-RPC echo", create_over(&mut Child::echo(), &entities))
        } else {
            ("through the library", create_in_library(&db, &entities))
        };
        println!("created {n} entities in batches of 100 {how}: {}", fmt(took));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    println!("| size | operation | seshat p50 | seshat p95 | baseline p50 | ratio p50 | target |");
    println!("|---|---|---|---|---|---|---|");
    let mut per_query = Vec::new();
    for &n in if quick { &[1_000, 10_000][..] } else { &[1_000, 10_000, 100_000][..] } {
        run(n, &mut per_query);
    }
    println!("\nSearch p50 per query:\n");
    for line in per_query {
        println!("* {line}");
    }
}

fn run(n: usize, per_query: &mut Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let entities: Vec<NewEntity> = (0..n).map(entity).collect();
    // What each query must find: the ids (1-based, in creation order) of the entities holding it.
    let expected = |q: &str| -> Vec<i64> {
        let found = entities.iter().enumerate().filter(|(_, e)| holds(&e.name, &e.entity_type, &e.observations, q));
        found.map(|(i, _)| i as i64 + 1).collect()
    };

    let create = create_in_library(&path, &entities);
    let base_create = plain_inserts(dir.path(), &entities);
    ratio_row(
        n,
        "create in batches of 100, library (total)",
        create,
        base_create,
        "plain inserts into unindexed tables",
        "100k < 10 s",
    );
    let mcp_create = create_over(&mut Child::mcp(&dir.path().join("over-mcp.db"), dir.path()), &entities);
    let echo_create = create_over(&mut Child::echo(), &entities);
    ratio_row(
        n,
        "create in batches of 100, over MCP (total)",
        mcp_create,
        create,
        "the same batches through the library",
        "≤ 1.5×",
    );
    ratio_row(
        n,
        "create in batches of 100, over MCP (total)",
        mcp_create,
        echo_create,
        "the same requests to a JSON-RPC echo",
        "-",
    );

    let mut store = Store::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let names: Vec<String> = (0..3).map(|k| format!("entity {}", (k * 7919) % n)).collect();
    let wanted: Vec<(&str, Vec<i64>)> = RANKED.iter().chain(SUBSTRING).map(|q| (*q, expected(q))).collect();
    let expect = |q: &str| -> &[i64] { &wanted.iter().find(|(w, _)| *w == q).unwrap().1 };
    for (q, ids) in &wanted {
        assert!(!ids.is_empty(), "the query `{q}` finds nothing at {n} entities: choose one that does");
    }

    let mut memory = store.memory(None);
    let mut search = |q: &str| {
        let (graph, _) = memory.search(q, None, LIMIT).unwrap();
        check_search(q, &graph.entities, expect(q).len(), n);
    };
    let ranked = sample(RANKED, &mut search);
    let substring = sample(SUBSTRING, &mut search);
    let open = sample(&[()], |_| {
        let graph = memory.open_nodes(&names, None).unwrap();
        assert_eq!(graph.entities.len(), names.len(), "open_nodes found {:?}", graph.entities);
    });
    let reference = |q: &str| {
        let found = reference_search(&conn, q);
        let newest: Vec<i64> = expect(q).iter().rev().take(LIMIT).copied().collect();
        assert_eq!(found, newest, "the baseline's page for `{q}`");
    };
    let base_ranked = sample(RANKED, reference);
    let base_substring = sample(SUBSTRING, reference);
    let base_open = sample(&[()], |_| assert_eq!(indexed_open(&conn, &names), names.len()));
    per_query.push(format!("{n}, ranked, library: {}", by_query(RANKED, &ranked)));
    let like = "the reference's search in SQL, a page of 20";
    row(n, "ranked search (library)", &ranked, &base_ranked, like, "-");
    row(n, "substring search (library)", &substring, &base_substring, like, "-");
    row(n, "open 3 nodes (library)", &open, &base_open, "indexed lookups of the same rows", "-");

    let mut mcp = Child::mcp(&path, dir.path());
    let mut over_mcp = |q: &str| {
        let v = mcp.call("search_nodes", &json!({"query": q}));
        let entities: Vec<seshat::memory::Entity> =
            serde_json::from_value(v["result"]["structuredContent"]["entities"].clone()).unwrap();
        check_search(q, &entities, expect(q).len(), n);
    };
    let ranked = sample(RANKED, &mut over_mcp);
    let substring = sample(SUBSTRING, &mut over_mcp);
    let open = sample(&[()], |_| {
        let v = mcp.call("open_nodes", &json!({"names": names}));
        let found = v["result"]["structuredContent"]["entities"].as_array().map_or(0, Vec::len);
        assert_eq!(found, names.len(), "open_nodes over MCP: {v}");
    });
    let mut echo = Child::echo();
    let base_ranked = sample(RANKED, |q| drop(echo.call("search_nodes", &json!({"query": q}))));
    let base_substring = sample(SUBSTRING, |q| drop(echo.call("search_nodes", &json!({"query": q}))));
    let base_open = sample(&[()], |_| drop(echo.call("open_nodes", &json!({"names": names}))));
    let target = if n == 100_000 { "p50 < 5 ms" } else { "-" };
    let echoed = "a JSON-RPC echo over the same pipe";
    row(n, "ranked search over MCP", &ranked, &base_ranked, echoed, target);
    row(n, "substring search over MCP", &substring, &base_substring, echoed, target);
    row(n, "open 3 nodes over MCP", &open, &base_open, echoed, target);
    per_query.push(format!("{n}, ranked, over MCP: {}", by_query(RANKED, &ranked)));
    per_query.push(format!("{n}, substring, over MCP: {}", by_query(SUBSTRING, &substring)));
}

/// Checks a search's answer: something found (as many as the page holds when a single word is
/// asked), never more than match, and every entity holding every word of the query.
fn check_search(q: &str, found: &[seshat::memory::Entity], matching: usize, n: usize) {
    assert!(!found.is_empty(), "`{q}` found nothing at {n} entities");
    assert!(found.len() <= matching.min(LIMIT), "`{q}` returned {} of {matching} matches", found.len());
    if !q.contains(' ') {
        assert_eq!(found.len(), matching.min(LIMIT), "`{q}` at {n} entities");
    }
    for e in found {
        assert!(holds(&e.name, &e.entity_type, &e.observations, q), "`{q}` returned {e:?}");
    }
}

fn create_in_library(path: &Path, entities: &[NewEntity]) -> Duration {
    let mut store = Store::open(path).unwrap();
    let t = Instant::now();
    for batch in entities.chunks(100) {
        let created = store.memory(None).create_entities(batch, None).unwrap();
        assert_eq!(created.len(), batch.len());
    }
    t.elapsed()
}

/// Sends every batch of 100 as a `create_entities` call and waits for each answer.
fn create_over(child: &mut Child, entities: &[NewEntity]) -> Duration {
    let batches: Vec<Value> = entities
        .chunks(100)
        .map(|batch| {
            let batch: Vec<Value> = batch
                .iter()
                .map(|e| json!({"name": e.name, "entityType": e.entity_type, "observations": e.observations}))
                .collect();
            json!({"entities": batch})
        })
        .collect();
    let t = Instant::now();
    for batch in &batches {
        let v = child.call("create_entities", batch);
        let result = if child.echo { &v["result"]["arguments"] } else { &v["result"]["structuredContent"] };
        assert_eq!(result["entities"].as_array().map_or(0, Vec::len), batch["entities"].as_array().unwrap().len());
    }
    t.elapsed()
}

/// The reference server's search in SQL, returning a page as Seshat does: the newest `LIMIT` live
/// entities holding every word of `query` (case-folded) in name, type or an observation, each
/// read with its observations, and the relations among them. Returns the ids found.
fn reference_search(conn: &rusqlite::Connection, query: &str) -> Vec<i64> {
    let words = words(query);
    let mut sql = String::from("SELECT e.id, e.name, e.entity_type FROM memory_entities e WHERE e.deleted_by IS NULL");
    for i in 1..=words.len() {
        sql.push_str(&format!(
            " AND (instr(lower(e.name), ?{i}) OR instr(lower(e.entity_type), ?{i}) OR EXISTS (SELECT 1 FROM \
             memory_observations o WHERE o.entity_id = e.id AND o.deleted_by IS NULL AND instr(lower(o.content), ?{i})))"
        ));
    }
    // A page, as Seshat returns: the newest LIMIT matches (the scan stops once it has them).
    sql.push_str(&format!(" ORDER BY e.id DESC LIMIT {LIMIT}"));
    let mut stmt = conn.prepare_cached(&sql).unwrap();
    let found: Vec<(i64, String, String)> = stmt
        .query_map(rusqlite::params_from_iter(&words), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ids: Vec<i64> = found.iter().map(|f| f.0).collect();
    let with_observations: Vec<(String, String, Vec<String>)> =
        found.into_iter().map(|(id, name, entity_type)| (name, entity_type, observations(conn, id))).collect();
    let keys: Vec<String> = with_observations.iter().map(|e| e.0.to_lowercase()).collect();
    std::hint::black_box((with_observations, relations_among(conn, &keys)));
    ids
}

fn observations(conn: &rusqlite::Connection, id: i64) -> Vec<String> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT content FROM memory_observations WHERE entity_id = ?1 AND deleted_by IS NULL ORDER BY id",
        )
        .unwrap();
    stmt.query_map([id], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// Live relations whose two ends are among `keys`.
fn relations_among(conn: &rusqlite::Connection, keys: &[String]) -> Vec<(String, String, String)> {
    let set: HashSet<&str> = keys.iter().map(String::as_str).collect();
    let mut stmt = conn
        .prepare_cached(
            "SELECT from_name, to_name, to_key, relation_type FROM memory_relations WHERE from_key = ?1 AND deleted_by IS NULL",
        )
        .unwrap();
    let mut out = Vec::new();
    for key in keys {
        let rows = stmt
            .query_map([key], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get(3)?))
            })
            .unwrap();
        for (from, to, to_key, kind) in rows.map(Result::unwrap) {
            if set.contains(to_key.as_str()) {
                out.push((from, to, kind));
            }
        }
    }
    out
}

/// `open_nodes`' rows read by their keys through the unique index: each entity, its
/// observations, and the relations among them. Returns how many entities were found.
fn indexed_open(conn: &rusqlite::Connection, names: &[String]) -> usize {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, name, entity_type FROM memory_entities WHERE scope = 'cross' AND project = '' \
             AND name_key = ?1 AND deleted_by IS NULL",
        )
        .unwrap();
    let mut found = Vec::new();
    for name in names {
        let key = name.to_lowercase();
        if let Some((id, name, entity_type)) = stmt
            .query_map([&key], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .next()
        {
            found.push((name, entity_type, observations(conn, id)));
        }
    }
    let keys: Vec<String> = found.iter().map(|e| e.0.to_lowercase()).collect();
    let count = found.len();
    std::hint::black_box((found, relations_among(conn, &keys)));
    count
}

/// The p50 of each query of a mix sampled by [`sample`] (which runs them in turn).
fn by_query(queries: &[&str], times: &[Duration]) -> String {
    let each: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mine: Vec<Duration> = times.iter().skip(i).step_by(queries.len()).copied().collect();
            format!("`{q}` {}", fmt(pct(&mine, 0.5)))
        })
        .collect();
    each.join(", ")
}

/// Runs `f` over the query mix repeatedly — 200 calls in all, or fewer rounds (at least 5) when
/// they take more than 10 s (the reference's scans at 100k); returns every timing.
fn sample<Q: Copy>(queries: &[Q], mut f: impl FnMut(Q)) -> Vec<Duration> {
    let rounds = 200 / queries.len().max(1);
    let mut out = Vec::new();
    let started = Instant::now();
    for round in 0..rounds {
        if round >= 5 && started.elapsed() > Duration::from_secs(10) {
            break;
        }
        for q in queries {
            let t = Instant::now();
            f(*q);
            out.push(t.elapsed());
        }
    }
    out
}

fn pct(v: &[Duration], p: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * p) as usize]
}

fn row(n: usize, name: &str, ours: &[Duration], base: &[Duration], baseline: &str, target: &str) {
    let (p50, p95, b50) = (pct(ours, 0.5), pct(ours, 0.95), pct(base, 0.5));
    println!(
        "| {n} | {name} | {} | {} | {} ({baseline}, {} calls) | {:.3}× | {target} |",
        fmt(p50),
        fmt(p95),
        fmt(b50),
        base.len(),
        p50.as_secs_f64() / b50.as_secs_f64()
    );
}

fn ratio_row(n: usize, name: &str, ours: Duration, base: Duration, baseline: &str, target: &str) {
    println!(
        "| {n} | {name} | {} | - | {} ({baseline}) | {:.3}× | {target} |",
        fmt(ours),
        fmt(base),
        ours.as_secs_f64() / base.as_secs_f64()
    );
}

/// The same rows in plain tables (no FTS, no triggers, no case folding), same batches.
fn plain_inserts(dir: &Path, entities: &[NewEntity]) -> Duration {
    let mut conn = rusqlite::Connection::open(dir.join("plain.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE e (id INTEGER PRIMARY KEY, name TEXT UNIQUE, entity_type TEXT);
         CREATE TABLE o (id INTEGER PRIMARY KEY, entity_id INTEGER, content TEXT, UNIQUE (entity_id, content));",
    )
    .unwrap();
    let t = Instant::now();
    for batch in entities.chunks(100) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
        for e in batch {
            tx.prepare_cached("INSERT INTO e (name, entity_type) VALUES (?1, ?2)")
                .unwrap()
                .execute(params![e.name, e.entity_type])
                .unwrap();
            let id = tx.last_insert_rowid();
            for o in &e.observations {
                tx.prepare_cached("INSERT INTO o (entity_id, content) VALUES (?1, ?2)")
                    .unwrap()
                    .execute(params![id, o])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    t.elapsed()
}

/// The echo child: answers each JSON-RPC request on stdin with its own params as the result.
fn echo() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let request: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if request.get("id").is_some() {
            let mut answer =
                serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": request["id"], "result": request["params"]}))
                    .unwrap();
            answer.push(b'\n');
            out.write_all(&answer).unwrap();
            out.flush().unwrap();
        }
    }
}

/// A JSON-RPC peer over a child's stdin and stdout: `seshat mcp`, or the echo.
struct Child {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    id: u64,
    echo: bool,
}

impl Child {
    fn mcp(db: &Path, cwd: &Path) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_seshat"));
        command.args(["--db", db.to_str().unwrap(), "mcp"]).env("SESHAT_HOME", cwd).current_dir(cwd);
        let mut child = Self::spawn(command, false);
        child.request(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        child.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        child
    }

    fn echo() -> Self {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.arg("--echo");
        Self::spawn(command, true)
    }

    fn spawn(mut command: Command, echo: bool) -> Self {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout, id: 0, echo }
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        self.id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the child closed its output");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == self.id {
                return v;
            }
        }
    }

    /// Writes one message as one line in one write (a `Value`'s `Display` writes each token
    /// separately, a system call each on an unbuffered pipe).
    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
    }

    /// A `tools/call` of `tool`; fails the run on an error answer.
    fn call(&mut self, tool: &str, args: &Value) -> Value {
        let v = self.request("tools/call", &json!({"name": tool, "arguments": args}));
        assert!(v.get("error").is_none() && v["result"]["isError"] != true, "{tool}: {v}");
        v
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
