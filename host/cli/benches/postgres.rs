//! The store on PostgreSQL, each operation beside raw SQL doing the same work on the same server
//! in the same run (the blocking `postgres` client with prepared statements, the same rows, the
//! same transaction shape). The server is a throwaway cluster on a Unix socket started by the
//! tests' support (`fsync` off on both sides alike).
//!
//! Run: `cargo bench -p seshat-cli --bench postgres` (`-- --quick` for a 10× smaller pass,
//! `-- --search-only` for the two search rows).

mod common;
use common::chat::message;
use common::*;

#[allow(dead_code)]
#[path = "../tests/all/support/postgres.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "../tests/all/support/tls.rs"]
mod tls;

use std::path::Path;
use std::time::{Duration, Instant};

use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::store::{HistoryScope, Location, NewSession, Store};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    if std::env::args().any(|a| a == "--search-only") {
        history_search(100_000 / scale);
        memory_search(100_000 / scale);
        return;
    }
    append(10_000 / scale);
    live_view(10_000 / scale);
    history_search(100_000 / scale);
    memory_search(100_000 / scale);
    concurrent_appends(10, 500 / scale);
}

/// A new database on the cluster: the store's location and a raw client.
fn database() -> (Location, postgres::Client) {
    let (name, url) = cluster::database();
    let location = Location::parse(&url, Path::new("/")).unwrap();
    let c = cluster::cluster();
    let raw = postgres::Config::new()
        .host_path(c.socket_dir())
        .port(c.port)
        .user(cluster::SUPERUSER)
        .dbname(&name)
        .connect(postgres::NoTls)
        .unwrap();
    (location, raw)
}

/// The baseline's statements, prepared once per connection (as the store's are).
struct Prepared {
    session: postgres::Statement,
    calls: postgres::Statement,
    insert: postgres::Statement,
    words: postgres::Statement,
    update: postgres::Statement,
}

impl Prepared {
    fn new(raw: &mut postgres::Client) -> Self {
        Prepared {
            session: raw.prepare("SELECT message_count, title IS NOT NULL FROM sessions WHERE id = $1 FOR UPDATE").unwrap(),
            calls: raw
                .prepare(
                    "SELECT parts FROM messages WHERE session_id = $1 AND seq <= $2 AND role = 'assistant' ORDER BY seq DESC",
                )
                .unwrap(),
            insert: raw
                .prepare(
                    "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                )
                .unwrap(),
            words: raw.prepare("INSERT INTO message_search (message_id, words) VALUES ($1, to_tsvector('seshat', $2))").unwrap(),
            update: raw
                .prepare(
                    "UPDATE sessions SET message_count = $2, updated_at = $3, input_tokens = input_tokens + $4, \
                     output_tokens = output_tokens + $5, context_tokens = coalesce($6, context_tokens) WHERE id = $1",
                )
                .unwrap(),
        }
    }
}

/// What an append writes by hand, in one transaction: the session's row read under a lock, the
/// structure check (a result's call looked for among the earlier assistant messages), the message
/// and its words, the session's counters.
fn raw_append(tx: &mut postgres::Transaction<'_>, p: &Prepared, session: &str, m: &NewMessage) {
    let row = tx.query_one(&p.session, &[&session]).unwrap();
    let count: i64 = row.get(0);
    for part in &m.parts {
        if let Part::ToolResult { call_id, .. } = part {
            let needle = serde_json::to_string(call_id).unwrap();
            let rows = tx.query(&p.calls, &[&session, &count]).unwrap();
            let found = rows.iter().any(|r| {
                let parts: String = r.get(0);
                parts.contains(&needle)
                    && serde_json::from_str::<Vec<Part>>(&parts)
                        .unwrap()
                        .iter()
                        .any(|p| p.tool_call_id() == Some(call_id))
            });
            assert!(found);
        }
    }
    let parts = serde_json::to_string(&m.parts).unwrap();
    let usage = m.usage.map(|u| serde_json::to_string(&u).unwrap());
    let now = seshat::store::now_ms();
    let id: i64 = tx
        .query_one(&p.insert, &[&session, &(count + 1), &m.role.as_str(), &parts, &usage, &m.status.as_str(), &now])
        .unwrap()
        .get(0);
    tx.execute(&p.words, &[&id, &seshat::store::index_text(&m.parts)]).unwrap();
    let u = m.usage.unwrap_or_default();
    let totals = (u.input_tokens as i64, u.output_tokens as i64, u.context_tokens.map(|c| c as i64));
    tx.execute(&p.update, &[&session, &(count + 1), &now, &totals.0, &totals.1, &totals.2]).unwrap();
}

fn new_session(location: &Location) -> (Store, String) {
    let mut store = Store::connect(location).unwrap();
    let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
    (store, id)
}

fn append(n: usize) {
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    let (mut ours, mut base) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let (location, mut raw) = database();
        let (mut store, id) = new_session(&location);
        ours = ours.min(time(|| {
            for m in &msgs {
                store.append(&id, std::slice::from_ref(m)).unwrap();
            }
        }));
        let (_, other) = new_session(&location);
        let prepared = Prepared::new(&mut raw);
        base = base.min(time(|| {
            for m in &msgs {
                let mut tx = raw.transaction().unwrap();
                raw_append(&mut tx, &prepared, &other, m);
                tx.commit().unwrap();
            }
        }));
        assert_eq!(store.session(&other).unwrap().message_count, n as u64);
    }
    report(&format!("append, {n} messages one by one (best of 3)"), ours, base, "≤ 1.5×");
}

fn live_view(n: usize) {
    let (location, mut raw) = database();
    let (mut store, id) = new_session(&location);
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    for chunk in msgs.chunks(1000) {
        store.append(&id, chunk).unwrap();
    }
    let ours = median_of(21, || assert_eq!(store.live_view(&id).unwrap().entries.len(), n));
    let select = raw
        .prepare("SELECT seq, role, parts, usage, status, created_at FROM messages WHERE session_id = $1 ORDER BY seq")
        .unwrap();
    // The same rows decoded into the same typed messages (role, parts, usage, status, time).
    let base = median_of(21, || {
        let rows = raw.query(&select, &[&id]).unwrap();
        let decoded: Vec<seshat::store::Message> = rows
            .iter()
            .map(|r| {
                let (role, parts, usage, status): (String, String, Option<String>, String) =
                    (r.get(1), r.get(2), r.get(3), r.get(4));
                seshat::store::Message {
                    seq: r.get::<_, i64>(0) as u64,
                    role: Role::parse(&role).unwrap(),
                    parts: serde_json::from_str(&parts).unwrap(),
                    usage: usage.map(|u| serde_json::from_str(&u).unwrap()),
                    status: MessageStatus::parse(&status).unwrap(),
                    created_at: r.get(5),
                }
            })
            .collect();
        assert_eq!(decoded.len(), n);
    });
    report(&format!("live view, {n} messages (median of 21)"), ours, base, "≤ 2×");
}

/// The words the history search is asked for, one query each.
const QUERIES: &[&str] = &["build output request", "cargo build failing", "answer passes", "ok ok ok", "request 4242"];

fn history_search(n: usize) {
    let (location, mut raw) = database();
    let mut store = Store::connect(&location).unwrap();
    let per = 1_000;
    let msgs: Vec<NewMessage> = (0..per).map(message).collect();
    for s in 0..n / per {
        let id = store
            .create_session(NewSession { project: format!("/bench/{}", s % 10), ..Default::default() })
            .unwrap()
            .id;
        store.append(&id, &msgs).unwrap();
    }
    raw.batch_execute("ANALYZE").unwrap();
    let mut ours = Vec::new();
    for _ in 0..5 {
        for q in QUERIES {
            let t = Instant::now();
            let hits = store.search_history(HistoryScope::All, q, 10).unwrap();
            ours.push(t.elapsed());
            assert!(!hits.is_empty(), "{q}");
        }
    }
    let select = raw
        .prepare(
            "SELECT m.id, m.session_id, m.seq FROM message_search s JOIN messages m ON m.id = s.message_id \
             WHERE s.words @@ websearch_to_tsquery('seshat', $1) \
             ORDER BY ts_rank(s.words, websearch_to_tsquery('seshat', $1), 1) DESC, m.id DESC LIMIT 10",
        )
        .unwrap();
    let mut base = Vec::new();
    for _ in 0..5 {
        for q in QUERIES {
            let any = q.split_whitespace().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" or ");
            let t = Instant::now();
            let rows = raw.query(&select, &[&any]).unwrap();
            base.push(t.elapsed());
            assert!(!rows.is_empty(), "{q}");
        }
    }
    report(
        &format!("history search p50, {n} messages ({} queries)", ours.len()),
        median(ours),
        median(base),
        "p50 < 20 ms",
    );
}

fn memory_search(n: usize) {
    let (location, mut raw) = database();
    let mut store = Store::connect(&location).unwrap();
    let topics = ["parser", "storage", "network", "release", "billing", "search", "upload", "cache"];
    let mut memory = store.memory(Some("/bench"));
    for start in (0..n).step_by(1000) {
        let batch: Vec<seshat::memory::NewEntity> = (start..(start + 1000).min(n))
            .map(|i| {
                serde_json::from_value(serde_json::json!({
                    "name": format!("Component {i}"),
                    "entityType": "component",
                    "observations": [format!("owns the {} path", topics[i % topics.len()]), format!("ticket T-{i}")],
                }))
                .unwrap()
            })
            .collect();
        memory.create_entities(&batch, None).unwrap();
    }
    raw.batch_execute("ANALYZE").unwrap();
    let queries = ["storage path", "T-4242", "billing", "network release"];
    let mut ours = Vec::new();
    for _ in 0..5 {
        for q in queries {
            let t = Instant::now();
            let (graph, _) = memory.search(q, None, 10).unwrap();
            ours.push(t.elapsed());
            assert!(!graph.entities.is_empty(), "{q}");
        }
    }
    let select = raw
        .prepare(
            "SELECT s.entity_id FROM memory_search s JOIN memory_entities e ON e.id = s.entity_id \
             WHERE s.words @@ websearch_to_tsquery('seshat', $1) AND e.deleted_by IS NULL \
             ORDER BY ts_rank(s.words, websearch_to_tsquery('seshat', $1)) DESC LIMIT 10",
        )
        .unwrap();
    let mut base = Vec::new();
    for _ in 0..5 {
        for q in queries {
            let any = q.split_whitespace().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" or ");
            let t = Instant::now();
            let rows = raw.query(&select, &[&any]).unwrap();
            base.push(t.elapsed());
            assert!(!rows.is_empty(), "{q}");
        }
    }
    report(&format!("memory search p50, {n} entities ({} queries)", ours.len()), median(ours), median(base), "—");
}

/// `writers` threads, each with its own connection and session, append `each` messages one by
/// one at once; the row reports the time until all are done (throughput in the name).
fn concurrent_appends(writers: usize, each: usize) {
    let (location, _) = database();
    let msgs: Vec<NewMessage> = (0..each).map(message).collect();
    let ours = time(|| {
        std::thread::scope(|s| {
            for _ in 0..writers {
                s.spawn(|| {
                    let (mut store, id) = new_session(&location);
                    for m in &msgs {
                        store.append(&id, std::slice::from_ref(m)).unwrap();
                    }
                });
            }
        });
    });
    let base = time(|| {
        std::thread::scope(|s| {
            for _ in 0..writers {
                s.spawn(|| {
                    let (_, id) = new_session(&location);
                    let (_, mut raw) = {
                        let c = cluster::cluster();
                        let Location::Postgres(server) = &location else { unreachable!() };
                        let raw = postgres::Config::new()
                            .host_path(c.socket_dir())
                            .port(c.port)
                            .user(cluster::SUPERUSER)
                            .dbname(server.database())
                            .connect(postgres::NoTls)
                            .unwrap();
                        ((), raw)
                    };
                    let prepared = Prepared::new(&mut raw);
                    for m in &msgs {
                        let mut tx = raw.transaction().unwrap();
                        raw_append(&mut tx, &prepared, &id, m);
                        tx.commit().unwrap();
                    }
                });
            }
        });
    });
    let total = (writers * each) as f64;
    report(
        &format!(
            "{writers} concurrent appenders × {each} ({:.0} vs {:.0} appends/s)",
            total / ours.as_secs_f64(),
            total / base.as_secs_f64()
        ),
        ours,
        base,
        "—",
    );
}
