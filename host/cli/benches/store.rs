//! Session-store benchmarks, each beside a raw-rusqlite baseline measured in the same run.
//!
//! Run: `cargo bench -p seshat-cli --bench store` (add `-- --quick` for a smaller, faster pass,
//! `-- --history-only` for the history index's rows alone).
//! Both sides use the same schema (created by `Store::open`), the same PRAGMAs (WAL,
//! `synchronous=NORMAL`, foreign keys on, 10 s busy timeout), the same transaction shape and the
//! same rows; the ratio is Seshat's time over the baseline's.

mod common;
use common::chat::message;
use common::*;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior, params};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use seshat::store::{ListFilter, NewSession, Store};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    if std::env::args().any(|a| a == "--indexed-append-only") {
        indexed_append(2_000 / scale);
        return;
    }
    if std::env::args().any(|a| a == "--branches-only") {
        fork_view(100_000 / scale);
        return;
    }
    if std::env::args().any(|a| a == "--history-only") {
        indexed_append(2_000 / scale);
        history_search(10_000 / scale);
        session_search(10_000 / scale);
        return;
    }
    append(100_000 / scale);
    live_view(10_000 / scale);
    list(10_000 / scale);
    list_process(10_000 / scale);
    indexed_append(2_000 / scale);
    history_search(10_000 / scale);
    session_search(10_000 / scale);
    fork_view(100_000 / scale);
}

/// A connection with exactly the PRAGMAs the store uses.
fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn
}

fn new_store(dir: &Path, name: &str) -> (Store, String) {
    let mut store = Store::open(&dir.join(name)).unwrap();
    let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
    (store, id)
}

fn append(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    let mut ours = Duration::MAX;
    let mut base = Duration::MAX;
    for round in 0..3 {
        let (mut store, id) = new_store(dir.path(), &format!("ours{round}.db"));
        let t = Instant::now();
        for m in &msgs {
            store.append(&id, std::slice::from_ref(m)).unwrap();
        }
        ours = ours.min(t.elapsed());

        // Baseline: what an append does, written by hand: BEGIN IMMEDIATE, read the count and
        // whether a title is set, check the structure (a result answers an earlier call), insert
        // the message (JSON parts and usage, status, time), then
        // update the count, `updated_at`, the title (from the first user text), the usage totals
        // and the context size, and COMMIT.
        let (store, id) = new_store(dir.path(), &format!("base{round}.db"));
        let path = store.path().unwrap().to_path_buf();
        drop(store);
        let mut conn = raw(&path);
        let t = Instant::now();
        for m in &msgs {
            let now = seshat::store::now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
            let (count, has_title): (u64, bool) = tx
                .prepare_cached("SELECT message_count, title IS NOT NULL FROM sessions WHERE id = ?1")
                .unwrap()
                .query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            // The structure check an append makes: parts present, and each tool result answers
            // a call of an earlier assistant message, looked for newest first, decoding only a
            // message whose text holds the id.
            assert!(!m.parts.is_empty());
            for part in &m.parts {
                if let Part::ToolResult { call_id, .. } = part {
                    let needle = serde_json::to_string(call_id).unwrap();
                    let mut stmt = tx
                        .prepare_cached(
                            "SELECT parts FROM messages WHERE session_id = ?1 AND seq < ?2 AND role = 'assistant' \
                             ORDER BY seq DESC",
                        )
                        .unwrap();
                    let mut rows = stmt.query(params![id, count + 1]).unwrap();
                    let mut answered = false;
                    while let Some(row) = rows.next().unwrap() {
                        let text: String = row.get(0).unwrap();
                        if text.contains(&needle)
                            && serde_json::from_str::<Vec<Part>>(&text)
                                .unwrap()
                                .iter()
                                .any(|p| p.tool_call_id() == Some(call_id.as_str()))
                        {
                            answered = true;
                            break;
                        }
                    }
                    assert!(answered, "a result without its call");
                }
            }
            let parts = serde_json::to_string(&m.parts).unwrap();
            let usage = m.usage.map(|u| serde_json::to_string(&u).unwrap());
            tx.prepare_cached(
                "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .unwrap()
            .execute(params![id, count + 1, m.role.as_str(), parts, usage, m.status.as_str(), now])
            .unwrap();
            tx.prepare_cached("INSERT INTO message_fts (rowid, text) VALUES (?1, ?2)")
                .unwrap()
                .execute(params![tx.last_insert_rowid(), seshat::store::index_text(&m.parts)])
                .unwrap();
            let title = (!has_title && m.role == Role::User)
                .then(|| {
                    m.parts.iter().find_map(|p| match p {
                        Part::Text { text } => text.lines().map(str::trim).find(|l| !l.is_empty()),
                        _ => None,
                    })
                })
                .flatten()
                .map(|l| l.chars().take(80).collect::<String>());
            let u = m.usage.unwrap_or_default();
            tx.prepare_cached(
                "UPDATE sessions SET message_count = ?2, updated_at = ?3, title = coalesce(title, ?4), \
                 input_tokens = input_tokens + ?5, output_tokens = output_tokens + ?6, \
                 cache_read_tokens = cache_read_tokens + ?7, cache_creation_tokens = cache_creation_tokens + ?8, \
                 context_tokens = coalesce(?9, context_tokens) WHERE id = ?1",
            )
            .unwrap()
            .execute(params![
                id,
                count + 1,
                now,
                title,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_creation_tokens,
                u.context_tokens
            ])
            .unwrap();
            tx.commit().unwrap();
        }
        base = base.min(t.elapsed());
    }
    report(&format!("append {n} messages, one transaction each (best of 3)"), ours, base, "≤ 1.5×");
}

fn live_view(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = new_store(dir.path(), "view.db");
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    store.append(&id, &msgs).unwrap();
    let ours = median_of(21, || assert_eq!(store.live_view(&id).unwrap().entries.len(), n));
    let conn = raw(store.path().unwrap());
    // Baseline: read the same rows and decode them into the same typed messages by hand.
    let base = median_of(21, || {
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, role, parts, usage, status, created_at FROM messages WHERE session_id = ?1 ORDER BY seq",
            )
            .unwrap();
        let rows: Vec<seshat::store::Message> = stmt
            .query_map([&id], |r| {
                let (role, parts, usage, status): (String, String, Option<String>, String) =
                    (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
                Ok(seshat::store::Message {
                    seq: r.get(0)?,
                    role: Role::parse(&role).unwrap(),
                    parts: serde_json::from_str::<Vec<Part>>(&parts).unwrap(),
                    usage: usage.map(|u| serde_json::from_str::<Usage>(&u).unwrap()),
                    status: MessageStatus::parse(&status).unwrap(),
                    created_at: r.get(5)?,
                })
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows.len(), n);
    });
    report(&format!("live view of a {n}-message session (median of 21)"), ours, base, "≤ 2×");
}

/// Forking an `n`-message session (compacted, with trim passes and pins, as a long chat leaves
/// it) at its middle and building the fork's live view, against building the parent's.
fn fork_view(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = new_store(dir.path(), "fork.db");
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    for (i, chunk) in msgs.chunks(n / 10).enumerate() {
        store.append(&id, chunk).unwrap();
        let count = store.session(&id).unwrap().message_count;
        // A trim pass over the chunk's tool results, then a compaction keeping its last quarter.
        let results: Vec<(u64, u32, String)> = (count - chunk.len() as u64 + 1..=count)
            .filter(|s| (s - 1) % 4 == 2)
            .map(|s| (s, 0, "[trimmed]".into()))
            .collect();
        store.record_trims(&id, &results).unwrap();
        store.pin(&id, count - chunk.len() as u64 + 1, |_, _| Ok(())).unwrap();
        let compaction = seshat::store::Compaction {
            trigger: seshat::store::CompactionTrigger::Auto,
            tokens_before: 100_000,
            tokens_after: Some(20_000),
            through_seq: count,
            first_kept_seq: Some(count - (chunk.len() as u64) / 4 + 1),
            pinned_seq: None,
            summary: Some(format!("summary {i}")),
            model: None,
            status: seshat::store::CompactionStatus::Ok,
            error: None,
            created_at: 0,
            instructions: None,
            plugin: None,
        };
        store.record_compaction(&id, &compaction).unwrap();
    }
    let at = (n / 2) as u64 + 1;
    let parent_view = store.live_view(&id).unwrap().entries.len();
    let ours = median_of(21, || {
        let fork = store.fork(&id, Some(at), None).unwrap();
        let view = store.live_view(&fork.session.id).unwrap();
        assert!(view.compaction.is_some() && !view.entries.is_empty());
    });
    let base = median_of(21, || assert_eq!(store.live_view(&id).unwrap().entries.len(), parent_view));
    report(
        &format!(
            "fork a {n}-message session at its middle and build the fork's live view vs build the parent's (median of 21)"
        ),
        ours,
        base,
        "≤ 1.5×",
    );
}

fn sessions_db(dir: &Path, n: usize) -> std::path::PathBuf {
    let mut store = Store::open(&dir.join("list.db")).unwrap();
    for i in 0..n {
        let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
        if i % 10 == 0 {
            store.append(&id, &[message(0), message(3)]).unwrap();
        }
    }
    store.path().unwrap().to_path_buf()
}

fn list(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = sessions_db(dir.path(), n);
    let store = Store::open(&path).unwrap();
    let filter = ListFilter { project: Some("/bench".into()), limit: None };
    let ours = median_of(21, || {
        let sessions = store.list_sessions(&filter).unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(store.short_ids(&ids).unwrap().len(), n);
    });
    let conn = raw(&path);
    // Baseline: the same columns decoded into the same typed rows (metadata JSON parsed), then
    // each id's shortest unique prefix (at least 8) from its neighbours in the sorted ids.
    let base = median_of(21, || {
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, title, project, provider, model, context_window, created_at, updated_at, \
                 message_count, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, \
                 context_tokens, compaction_failures, auto_compact_disabled, metadata FROM sessions \
                 WHERE project = ?1 ORDER BY updated_at DESC, id DESC",
            )
            .unwrap();
        let rows: Vec<seshat::store::SessionInfo> = stmt
            .query_map(["/bench"], |r| {
                let metadata: String = r.get(16)?;
                Ok(seshat::store::SessionInfo {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    project: r.get(2)?,
                    provider: r.get(3)?,
                    model: r.get(4)?,
                    context_window: r.get(5)?,
                    created_at: r.get(6)?,
                    updated_at: r.get(7)?,
                    message_count: r.get(8)?,
                    totals: Usage {
                        input_tokens: r.get(9)?,
                        output_tokens: r.get(10)?,
                        cache_read_tokens: r.get(11)?,
                        cache_creation_tokens: r.get(12)?,
                        context_tokens: None,
                    },
                    context_tokens: r.get(13)?,
                    compaction_failures: r.get(14)?,
                    auto_compact_disabled: r.get(15)?,
                    metadata: serde_json::from_str(&metadata).unwrap(),
                    parent_id: None,
                    fork_seq: None,
                })
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let mut sorted: Vec<&str> = rows.iter().map(|s| s.id.as_str()).collect();
        sorted.sort_unstable();
        let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let shorts: Vec<String> = rows
            .iter()
            .map(|s| {
                let i = sorted.binary_search(&s.id.as_str()).unwrap();
                let before = i.checked_sub(1).map_or(0, |j| common(&s.id, sorted[j]));
                let after = sorted.get(i + 1).map_or(0, |n| common(&s.id, n));
                s.id[..(before.max(after) + 1).max(8).min(s.id.len())].to_string()
            })
            .collect();
        assert_eq!(shorts.len(), n);
    });
    report(&format!("list {n} sessions with short ids (median of 21)"), ours, base, "≤ 2×");
}

fn list_process(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = sessions_db(dir.path(), n);
    let bin = env!("CARGO_BIN_EXE_seshat");
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.len() > n * 20);
    };
    let ours =
        median_of(11, || run(Command::new(bin).args(["--db", path.to_str().unwrap(), "sessions", "list", "--all"])));
    let Ok(_) = Command::new("sqlite3").arg("-version").output() else {
        println!("| `seshat sessions list` process, {n} sessions | {} | sqlite3 not installed | - | - |", fmt(ours));
        return;
    };
    let sql = "SELECT id, updated_at, message_count, context_tokens, context_window, title FROM sessions \
               ORDER BY updated_at DESC, id DESC;";
    let base = median_of(11, || run(Command::new("sqlite3").args([path.to_str().unwrap(), sql])));
    report(
        &format!("`seshat sessions list --all` process vs `sqlite3` shell, {n} sessions (median of 11)"),
        ours,
        base,
        "-",
    );
}

/// The chat mix for the history index: short texts and tool results of 2–50 KB, every tenth
/// message a 50 KB result.
fn mixed(i: usize) -> NewMessage {
    let line = |k: usize| format!("test suite::case_{k} ... ok (finished in 0.{k:03}s)\n");
    let result = |bytes: usize| {
        let mut out = String::new();
        let mut k = 0;
        while out.len() < bytes {
            out.push_str(&line(k));
            k += 1;
        }
        out.truncate(bytes);
        NewMessage {
            role: Role::Tool,
            parts: vec![Part::ToolResult { call_id: format!("call_{i}"), content: out, is_error: false }],
            usage: None,
            status: MessageStatus::Complete,
        }
    };
    match i % 10 {
        9 => result(50_000),
        3 | 6 => result(2_000 + (i * 7_919) % 48_000),
        // Each result answers the call just before it.
        2 | 5 | 8 => NewMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall { id: format!("call_{}", i + 1), name: "run".into(), arguments: "{}".into() }],
            usage: None,
            status: MessageStatus::Complete,
        },
        k if k % 2 == 0 => NewMessage::text(Role::User, format!("request {i}: why does the upload test fail?")),
        _ => NewMessage::text(Role::Assistant, format!("answer {i}: the retry loop never backs off")),
    }
}

/// Appending with the history index (the append writes every message's searchable text into FTS5
/// in its transaction; a 50 KB result by its head, tail and outcome lines) beside the same appends
/// with the index's rows going nowhere: the p95 of the 50 KB results' appends.
fn indexed_append(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let msgs: Vec<NewMessage> = (0..n).map(mixed).collect();
    let run = |name: &str, index: bool| -> Duration {
        let (mut store, id) = new_store(dir.path(), name);
        if !index {
            // The same appends with the index's rows going nowhere.
            store
                .sqlite_connection()
                .unwrap()
                .execute_batch(
                    "DROP TABLE message_fts; CREATE VIEW message_fts (rowid, text) AS SELECT NULL, NULL WHERE 0; \
                     CREATE TRIGGER message_fts_nowhere INSTEAD OF INSERT ON message_fts BEGIN SELECT 1; END;",
                )
                .unwrap();
        }
        let mut big = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            let t = Instant::now();
            store.append(&id, std::slice::from_ref(m)).unwrap();
            if i % 10 == 9 {
                big.push(t.elapsed());
            }
        }
        if index {
            let indexed: i64 = store
                .sqlite_connection()
                .unwrap()
                .query_row("SELECT count(*) FROM message_fts_docsize", [], |r| r.get(0))
                .unwrap();
            assert_eq!(indexed, n as i64, "what the index holds");
        }
        big.sort();
        big[big.len() * 95 / 100]
    };
    let base = run("plain.db", false);
    let ours = run("indexed.db", true);
    report(
        &format!("append a 50 KB tool result, with the history index vs without (p95 of {}, chat mix)", n / 10),
        ours,
        base,
        "≤ 2 ms p95",
    );
}

/// The seqs of a session's messages whose text holds the query's words (`joiner`: ` OR ` for
/// any, ` AND ` for all), by a `LIKE` scan of the originals through the `message_text` view.
fn like_scan(conn: &Connection, id: &str, query: &str, joiner: &str) -> Vec<u64> {
    let words: Vec<String> = query.split_whitespace().map(|w| format!("%{w}%")).collect();
    let sql = format!(
        "SELECT seq FROM message_text WHERE session_id = ?1 AND ({})",
        (0..words.len()).map(|i| format!("text LIKE ?{}", i + 2)).collect::<Vec<_>>().join(joiner)
    );
    let mut stmt = conn.prepare_cached(&sql).unwrap();
    let mut args: Vec<&dyn rusqlite::ToSql> = vec![&id];
    args.extend(words.iter().map(|w| w as &dyn rusqlite::ToSql));
    stmt.query_map(args.as_slice(), |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// `history_search` on a 10k-message session beside the same question as a scan of the
/// originals' text (`LIKE` for each word over the `message_text` view), both checked to find
/// the failing run.
fn history_search(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = new_store(dir.path(), "history.db");
    let mut msgs: Vec<NewMessage> = (0..n).map(mixed).collect();
    msgs[n / 2] = NewMessage::text(Role::Tool, "test upload::retries ... FAILED TF123-K45 at src/upload.rs:88");
    store.append(&id, &msgs).unwrap();
    let target = n as u64 / 2 + 1;
    let queries = ["upload retries failed", "TF123-K45", "src/upload.rs:88 backs off"];
    let ours = median_of(51, || {
        for q in queries {
            let hits = store.search_history(seshat::store::HistoryScope::Session(&id), q, 8).unwrap();
            assert!(hits.iter().any(|h| h.seq == target), "`{q}` finds the failing run");
        }
    });
    let conn = raw(store.path().unwrap());
    let base = median_of(5, || {
        for q in queries {
            assert!(like_scan(&conn, &id, q, " OR ").contains(&target), "`{q}`: the scan finds the failing run");
        }
    });
    report(
        &format!("history_search, 3 queries on a {n}-message session vs a LIKE scan of the originals (median)"),
        ours,
        base,
        "p50 < 5 ms a query",
    );
}

#[path = "../tests/fidelity/generate.rs"]
#[allow(dead_code)]
mod generate;

/// `history_search` on a 10k-message session of generated coding-agent transcripts (the fidelity
/// benchmark's, seeds 1001 on, joined), each planted fact asked for by its content words as a
/// user would type them — a sample of them timed beside the same questions as a `LIKE` scan;
/// then every one asked for recall@5, beside plain FTS5's bm25 top 5 over the same index. The other row's corpus is the worst case, where most messages hold the query's words.
/// Questions timed on each side.
const SAMPLE: usize = 50;

fn session_search(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = new_store(dir.path(), "sessions.db");
    let mut queries: Vec<(String, u64)> = Vec::new();
    let mut appended = 0u64;
    let mut seed = 1001;
    while (appended as usize) < n {
        let t = generate::transcript(seed);
        seed += 1;
        let take = t.messages.len().min(n - appended as usize);
        store.append(&id, &t.messages[..take]).unwrap();
        queries.extend(
            t.facts.iter().filter(|f| f.message < take).map(|f| (f.query.clone(), appended + f.message as u64 + 1)),
        );
        appended += take as u64;
    }
    // Time: the same sample of questions on both sides, each checked to find its fact.
    let sample: Vec<&(String, u64)> = queries.iter().step_by((queries.len() / SAMPLE).max(1)).take(SAMPLE).collect();
    let ours = median(
        sample
            .iter()
            .map(|(q, _)| {
                let t = Instant::now();
                let hits = store.search_history(seshat::store::HistoryScope::Session(&id), q, 5).unwrap();
                let took = t.elapsed();
                assert!(!hits.is_empty(), "`{q}`: history_search finds nothing");
                took
            })
            .collect(),
    );
    let conn = raw(store.path().unwrap());
    let base = median(
        sample
            .iter()
            .map(|(q, seq)| {
                let t = Instant::now();
                let seqs = like_scan(&conn, &id, q, " AND ");
                let took = t.elapsed();
                assert!(seqs.contains(seq), "`{q}`: the scan finds the fact");
                took
            })
            .collect(),
    );
    report(
        &format!(
            "history_search on a {n}-message session of generated coding transcripts vs a LIKE scan, the same {} fact questions (median a question)",
            sample.len()
        ),
        ours,
        base,
        "p50 < 5 ms a query",
    );
    // Quality: every planted fact asked for, Seshat's top 5 beside plain FTS5 (bm25 over the same
    // index, any of the question's words, its 5 best).
    let mut fts = conn
        .prepare(
            "SELECT m.seq FROM message_fts JOIN messages m ON m.rowid = message_fts.rowid \
             WHERE message_fts MATCH ?1 AND m.session_id = ?2 ORDER BY rank LIMIT 5",
        )
        .unwrap();
    let (mut ours_found, mut fts_found) = (0, 0);
    for (q, seq) in &queries {
        let hits = store.search_history(seshat::store::HistoryScope::Session(&id), q, 5).unwrap();
        ours_found += usize::from(hits.iter().any(|h| h.seq == *seq));
        let words: Vec<String> = q
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{w}\""))
            .collect();
        let top: Vec<u64> =
            fts.query_map(params![words.join(" OR "), id], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        fts_found += usize::from(top.contains(seq));
    }
    println!(
        "| history_search recall@5 on the same session, all {} fact questions, vs plain FTS5 bm25 (any word, top 5) | {ours_found}/{} ({:.1}%) | {fts_found}/{} ({:.1}%) | {:.3}× | recall@5 ≥ 95% |",
        queries.len(),
        queries.len(),
        100.0 * ours_found as f64 / queries.len() as f64,
        queries.len(),
        100.0 * fts_found as f64 / queries.len() as f64,
        ours_found as f64 / fts_found.max(1) as f64,
    );
}
