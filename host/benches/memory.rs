//! Long-term memory benchmarks at 1k, 10k and 100k entities (3 observations each): ranked search,
//! substring search and open, through the library and through `seshat mcp` (a JSON-RPC round
//! trip over stdio included), each beside a plain `LIKE` scan of the same data in the same run;
//! and creating the entities in batches of 100 beside plain inserts of the same rows.
//!
//! Run: `cargo bench -p seshat --bench memory` (`-- --quick` skips 100k; `-- --create-only N`
//! only creates N entities, for profiling).

mod common;
use common::*;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::params;
use serde_json::{Value, json};
use seshat::memory::NewEntity;
use seshat::store::Store;

/// The query mix: (kind, query). `common` matches 12.5% of entities.
const RANKED: &[&str] = &["common", "entity 4242", "tokio", "module 7 service"];
const SUBSTRING: &[&str] = &["ommo", "ntity 12", "oki"];

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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(n) = args.iter().position(|a| a == "--create-only").and_then(|i| args.get(i + 1)) {
        let n: usize = n.parse().expect("--create-only N");
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("memory.db")).unwrap();
        let entities: Vec<NewEntity> = (0..n).map(entity).collect();
        let t = Instant::now();
        for batch in entities.chunks(100) {
            store.memory(None).create_entities(batch, None).unwrap();
        }
        println!("created {n} entities in batches of 100: {}", fmt(t.elapsed()));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    println!("| size | operation | seshat p50 | seshat p95 | baseline p50 (LIKE scan) | ratio p50 | target |");
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
    let mut store = Store::open(&path).unwrap();

    let entities: Vec<NewEntity> = (0..n).map(entity).collect();
    let t = Instant::now();
    for batch in entities.chunks(100) {
        store.memory(None).create_entities(batch, None).unwrap();
    }
    let create = t.elapsed();
    let base_create = plain_inserts(dir.path(), &entities);
    println!(
        "| {n} | create in batches of 100 (total) | {} | - | {} (plain tables, no index) | {:.2}× | 100k < 10 s |",
        fmt(create),
        fmt(base_create),
        create.as_secs_f64() / base_create.as_secs_f64()
    );

    let conn = rusqlite::Connection::open(&path).unwrap();
    let like = |q: &str| {
        let mut stmt = conn
            .prepare_cached(
                "SELECT e.id FROM memory_entities e WHERE e.deleted_by IS NULL AND (e.name LIKE ?1 OR e.entity_type LIKE ?1 \
                 OR EXISTS (SELECT 1 FROM memory_observations o WHERE o.entity_id = e.id AND o.content LIKE ?1))",
            )
            .unwrap();
        let ids: Vec<i64> =
            stmt.query_map(params![format!("%{q}%")], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        std::hint::black_box(ids);
    };
    let names: Vec<String> = (0..3).map(|k| format!("entity {}", (k * 7919) % n)).collect();

    let mut memory = store.memory(None);
    let ranked = sample(RANKED, |q| drop(memory.search(q, None, 20).unwrap()));
    let substring = sample(SUBSTRING, |q| drop(memory.search(q, None, 20).unwrap()));
    per_query.push(format!("{n}, ranked, library: {}", by_query(RANKED, &ranked)));
    let open = sample(&[()], |_| drop(memory.open_nodes(&names, None).unwrap()));
    let base_ranked = sample(RANKED, &like);
    let base_substring = sample(SUBSTRING, &like);
    let base_open = sample(&[()], |_| {
        for name in &names {
            like(name);
        }
    });
    row(n, "ranked search (library)", &ranked, &base_ranked, "-");
    row(n, "substring search (library)", &substring, &base_substring, "-");
    row(n, "open 3 nodes (library)", &open, &base_open, "-");

    let mut mcp = Mcp::start(&path, dir.path());
    let ranked = sample(RANKED, |q| mcp.call("search_nodes", &json!({"query": q})));
    let substring = sample(SUBSTRING, |q| mcp.call("search_nodes", &json!({"query": q})));
    let open = sample(&[()], |_| mcp.call("open_nodes", &json!({"names": names})));
    let target = if n == 100_000 { "p50 < 5 ms" } else { "-" };
    row(n, "ranked search over MCP", &ranked, &base_ranked, target);
    row(n, "substring search over MCP", &substring, &base_substring, target);
    row(n, "open 3 nodes over MCP", &open, &base_open, target);
    per_query.push(format!("{n}, ranked, over MCP: {}", by_query(RANKED, &ranked)));
    per_query.push(format!("{n}, substring, over MCP: {}", by_query(SUBSTRING, &substring)));
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

/// Runs `f` over the query mix repeatedly; returns every timing.
fn sample<Q: Copy>(queries: &[Q], mut f: impl FnMut(Q)) -> Vec<Duration> {
    let rounds = 200 / queries.len().max(1);
    let mut out = Vec::new();
    for _ in 0..rounds {
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

fn row(n: usize, name: &str, ours: &[Duration], base: &[Duration], target: &str) {
    let (p50, p95, b50) = (pct(ours, 0.5), pct(ours, 0.95), pct(base, 0.5));
    println!(
        "| {n} | {name} | {} | {} | {} | {:.3}× | {target} |",
        fmt(p50),
        fmt(p95),
        fmt(b50),
        p50.as_secs_f64() / b50.as_secs_f64()
    );
}

/// The same rows in plain tables (no FTS, no triggers, no case folding), same batches.
fn plain_inserts(dir: &std::path::Path, entities: &[NewEntity]) -> Duration {
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

/// A `seshat mcp` child on the benchmark database.
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Mcp {
    fn start(db: &std::path::Path, cwd: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_seshat"))
            .args(["--db", db.to_str().unwrap(), "mcp"])
            .env("SESHAT_HOME", cwd)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Self { child, stdin, stdout, id: 0 };
        mcp.request("initialize", &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}));
        writeln!(mcp.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        mcp
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        self.id += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}))
            .unwrap();
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == self.id {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: &Value) {
        let v = self.request("tools/call", &json!({"name": tool, "arguments": args}));
        assert!(v["result"]["isError"] != true, "{v}");
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
