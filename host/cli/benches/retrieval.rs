//! Retrieval: search latency, indexing throughput and database size at 10k and 100k chunks of
//! 384 dimensions, Seshat's vector scan against sqlite-vec's `vec0` tables, and recall of lexical
//! against hybrid search — each against a baseline measured in the same run.
//!
//! * **search**: `Knowledge::search_by_vector` (the query's embedding left out, as it is the
//!   embedder's time), lexical (bm25 only) and hybrid (bm25 + the int8 scan, fused), warm: the
//!   vectors loaded once, as a running chat or `seshat mcp` holds them. p50 and p95 of 200
//!   queries of two words.
//! * **vectors**: the k = 50 nearest of 384-dimension vectors, Seshat's in-memory int8 scan vs
//!   sqlite-vec's `vec0` (int8 and float32) over the same vectors, in the same database file;
//!   and what loading the vectors into memory costs once.
//! * **indexing**: `knowledge::add` over generated Markdown files (walk, hash, chunk by
//!   structure, FTS5) plus storing each chunk's vector, embedding excluded; baseline: inserting
//!   the same chunk texts into a plain table, one transaction per file.
//! * **size**: the database per 1,000 chunks, lexical and with vectors, against the chunks' text.
//! * **recall**: facts whose questions paraphrase them (other words for the same things); recall@5
//!   and @10 of lexical vs hybrid. By default the vectors come from the deterministic test
//!   embedder, which checks the plumbing only: no quality claim is made from it. Point it at a
//!   real embedding server to measure quality: `SESHAT_BENCH_EMBED_URL=http://localhost:11434/v1
//!   SESHAT_BENCH_EMBED_MODEL=nomic-embed-text` (any `/v1/embeddings` server; `OPENAI_API_KEY` is
//!   sent when set).
//!
//! Run: `cargo bench -p seshat-cli --bench retrieval` (`-- --sizes 10000,100000 --queries 200`).

#![allow(unsafe_code, reason = "registering sqlite-vec's entry point with SQLite, for the comparison only")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::params;
use seshat::knowledge::{Sizing, Target};
use seshat::retrieval::vectors::{VectorSet, encode};
use seshat::retrieval::{Knowledge, Weights};
use seshat::store::{KnowledgeFilter, Store};

const DIMS: usize = 384;

use common::Rng;

/// What the corpus needs of the generator beyond `common::Rng`.
trait Unit {
    /// A number in [-1, 1).
    fn unit(&mut self) -> f32;
    /// A vector of [`DIMS`] of them.
    fn vector(&mut self) -> Vec<f32>;
}

impl Unit for Rng {
    fn unit(&mut self) -> f32 {
        (self.next() >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    }
    fn vector(&mut self) -> Vec<f32> {
        (0..DIMS).map(|_| self.unit()).collect()
    }
}

/// A vocabulary of made-up words; texts draw from it with a skew (some words common, most rare),
/// as natural text does.
fn vocabulary() -> Vec<String> {
    let syllables = ["ka", "lo", "mi", "ter", "zu", "pra", "nel", "vo", "rin", "sha", "qua", "dex", "bo", "fi"];
    let mut out = Vec::new();
    for a in syllables {
        for b in syllables {
            for c in ["", "n", "s", "ta", "rix"] {
                out.push(format!("{a}{b}{c}"));
            }
        }
    }
    out
}

fn word<'a>(rng: &mut Rng, vocab: &'a [String]) -> &'a str {
    // Skewed: the square of a uniform draw favours the start of the list.
    let u = rng.below(10_000) as f64 / 10_000.0;
    &vocab[((u * u) * vocab.len() as f64) as usize]
}

/// Writes `chunks` chunks as Markdown files of 10 sections each (one chunk per section at the
/// benchmark's chunk size); returns the directory and the text bytes written.
fn corpus(dir: &Path, chunks: usize, rng: &mut Rng, vocab: &[String]) -> u64 {
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let mut bytes = 0;
    for f in 0..chunks.div_ceil(10) {
        let mut text = String::new();
        for s in 0..10.min(chunks - f * 10) {
            text.push_str(&format!("## Section {s} of note {f}\n\n"));
            for _ in 0..55 {
                text.push_str(word(rng, vocab));
                text.push(' ');
            }
            text.push_str("\n\n");
        }
        bytes += text.len() as u64;
        let sub = dir.join(format!("d{}", f / 500));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("note{f}.md")), text).unwrap();
    }
    bytes
}

/// Chunking that makes each section one chunk (a section is under 200 tokens, two are more).
const SIZING: Sizing = Sizing { max_tokens: 200, overlap_tokens: 0 };

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

struct Latency {
    p50: Duration,
    p95: Duration,
}

fn latency(queries: usize, mut f: impl FnMut(usize)) -> Latency {
    f(0); // warm
    let mut times: Vec<Duration> = (0..queries)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    times.sort();
    Latency { p50: percentile(&times, 50), p95: percentile(&times, 95) }
}

fn register_sqlite_vec() {
    // SAFETY: `sqlite3_vec_init` is the extension's entry point with the signature SQLite's
    // auto-extension mechanism calls (the crate's own documented use); it is registered once,
    // before any connection of this process opens.
    unsafe {
        rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute::<
            *const (),
            unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int,
        >(sqlite_vec::sqlite3_vec_init as *const ())));
    }
}

fn quantised(v: &[f32]) -> Vec<u8> {
    encode(v)[4..].to_vec()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().flat_map(|x| (x / n).to_le_bytes()).collect()
}

fn one_size(size: usize, queries: usize, root: &Path) {
    let mut rng = Rng(0x5e5a7 + size as u64);
    let vocab = vocabulary();
    let dir = root.join(format!("corpus-{size}"));
    let text_bytes = corpus(&dir, size, &mut rng, &vocab);
    let db = root.join(format!("k{size}.db"));
    let target = Target { scope: seshat::memory::Scope::Project, project: "/bench".into() };

    // Indexing (embedding excluded) vs the baseline of plain inserts of the same texts.
    let mut store = Store::open(&db).unwrap();
    let t = Instant::now();
    let report =
        seshat::knowledge::add(&mut store, std::slice::from_ref(&dir), &target, SIZING, &mut |_, _, _| {}).unwrap();
    let index_time = t.elapsed();
    let chunks = report.chunks;
    drop(store);
    let lexical_size = checkpointed_size(&db);
    let mut store = Store::open(&db).unwrap();
    store.vector_index_set("bench", "random-384", DIMS as u32).unwrap();
    let pending = store.chunks_without_vectors(usize::MAX).unwrap();
    let vectors: Vec<(i64, Vec<f32>)> = pending.iter().map(|(id, _, _)| (*id, rng.vector())).collect();
    let t = Instant::now();
    for batch in vectors.chunks(256) {
        let rows: Vec<(i64, Vec<u8>)> = batch.iter().map(|(id, v)| (*id, encode(v))).collect();
        store.chunk_vectors_put(&rows).unwrap();
    }
    let vector_time = t.elapsed();
    drop(store);
    let vector_size = checkpointed_size(&db);

    let baseline_db = root.join(format!("raw{size}.db"));
    let raw = rusqlite::Connection::open(&baseline_db).unwrap();
    raw.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE raw (id INTEGER PRIMARY KEY, text TEXT NOT NULL);").unwrap();
    let texts: Vec<(String, String)> = pending.into_iter().map(|(_, h, t)| (h, t)).collect();
    let t = Instant::now();
    for file in texts.chunks(10) {
        let tx = raw.unchecked_transaction().unwrap();
        for (h, text) in file {
            tx.execute("INSERT INTO raw (text) VALUES (?1)", params![format!("{h}\n{text}")]).unwrap();
        }
        tx.commit().unwrap();
    }
    let raw_time = t.elapsed();
    drop(raw);

    let per_s = |d: Duration| chunks as f64 / d.as_secs_f64();
    println!(
        "indexing {size}: {chunks} chunks in {} + vectors {} = {:.0} chunks/s; baseline (plain inserts) {} = {:.0} \
         chunks/s; {:.2}x the baseline's time",
        common::fmt(index_time),
        common::fmt(vector_time),
        per_s(index_time + vector_time),
        common::fmt(raw_time),
        per_s(raw_time),
        (index_time + vector_time).as_secs_f64() / raw_time.as_secs_f64()
    );
    let per_k = |b: u64| b as f64 / (chunks as f64 / 1000.0) / (1 << 20) as f64;
    println!(
        "size {size}: per 1,000 chunks {:.2} MiB lexical, {:.2} MiB with vectors; their text {:.2} MiB ({:.2}x and \
         {:.2}x the text)",
        per_k(lexical_size),
        per_k(vector_size),
        per_k(text_bytes),
        lexical_size as f64 / text_bytes as f64,
        vector_size as f64 / text_bytes as f64
    );

    // Search, warm.
    let query_words: Vec<String> =
        (0..queries + 1).map(|_| format!("{} {}", word(&mut rng, &vocab), word(&mut rng, &vocab))).collect();
    let query_vectors: Vec<Vec<f32>> = (0..queries + 1).map(|_| rng.vector()).collect();
    let mut k = Knowledge::new(Store::open(&db).unwrap(), None, Weights::default());
    let filter = KnowledgeFilter { project: "/bench", scope: None };
    let lexical = latency(queries, |i| {
        std::hint::black_box(k.search_by_vector(filter, &query_words[i], None, 10).unwrap());
    });
    let t = Instant::now();
    let hybrid_first = k.search_by_vector(filter, &query_words[0], Some(&query_vectors[0]), 10).unwrap();
    let load = t.elapsed();
    assert_eq!(hybrid_first.mode, seshat::retrieval::Mode::Hybrid);
    let hybrid = latency(queries, |i| {
        std::hint::black_box(k.search_by_vector(filter, &query_words[i], Some(&query_vectors[i]), 10).unwrap());
    });
    println!(
        "search {size}: lexical p50 {} p95 {}; hybrid p50 {} p95 {} ({:.2}x lexical's p50); first hybrid search, \
         loading the vectors, {}",
        ms(lexical.p50),
        ms(lexical.p95),
        ms(hybrid.p50),
        ms(hybrid.p95),
        hybrid.p50.as_secs_f64() / lexical.p50.as_secs_f64(),
        ms(load)
    );

    // The vector side alone: Seshat's scan vs sqlite-vec, the same vectors.
    let mut set = VectorSet::new(DIMS);
    for (id, v) in &vectors {
        set.push(*id, 0, &encode(v));
    }
    let scan = latency(queries, |i| {
        std::hint::black_box(set.nearest(&query_vectors[i], 50, &|_| true));
    });
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE vi USING vec0(embedding int8[{DIMS}] distance_metric=cosine); \
         CREATE VIRTUAL TABLE vf USING vec0(embedding float[{DIMS}] distance_metric=cosine);"
    ))
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    for (id, v) in &vectors {
        tx.execute("INSERT INTO vi (rowid, embedding) VALUES (?1, vec_int8(?2))", params![id, quantised(v)]).unwrap();
        tx.execute("INSERT INTO vf (rowid, embedding) VALUES (?1, ?2)", params![id, f32_bytes(v)]).unwrap();
    }
    tx.commit().unwrap();
    let mut int8 =
        conn.prepare("SELECT rowid FROM vi WHERE embedding MATCH vec_int8(?1) AND k = 50 ORDER BY distance").unwrap();
    let vec_int8 = latency(queries, |i| {
        let ids: Vec<i64> =
            int8.query_map([quantised(&query_vectors[i])], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        std::hint::black_box(ids);
    });
    let mut float = conn.prepare("SELECT rowid FROM vf WHERE embedding MATCH ?1 AND k = 50 ORDER BY distance").unwrap();
    let vec_float = latency(queries, |i| {
        let ids: Vec<i64> =
            float.query_map([f32_bytes(&query_vectors[i])], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        std::hint::black_box(ids);
    });
    // The two int8 searches agree on the nearest (the same quantisation, the same order).
    let ours: Vec<i64> = set.nearest(&query_vectors[1], 10, &|_| true).iter().map(|x| x.0).collect();
    let theirs: Vec<i64> =
        int8.query_map([quantised(&query_vectors[1])], |r| r.get(0)).unwrap().map(Result::unwrap).take(10).collect();
    let agree = ours.iter().filter(|id| theirs.contains(id)).count();
    println!(
        "vectors {size}: k=50 of {DIMS} dims: Seshat's int8 scan p50 {} p95 {}; sqlite-vec vec0 int8 p50 {} p95 {} \
         ({:.2}x ours), float32 p50 {} p95 {} ({:.2}x ours); top-10 agreement {agree}/10",
        ms(scan.p50),
        ms(scan.p95),
        ms(vec_int8.p50),
        ms(vec_int8.p95),
        vec_int8.p50.as_secs_f64() / scan.p50.as_secs_f64(),
        ms(vec_float.p50),
        ms(vec_float.p95),
        vec_float.p50.as_secs_f64() / scan.p50.as_secs_f64()
    );
}

/// The file's size after a checkpoint (its WAL folded in).
fn checkpointed_size(db: &Path) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;").unwrap();
    drop(conn);
    std::fs::metadata(db).unwrap().len()
}

/// Facts and questions about them in other words: (fact, question). Each fact names a thing by
/// one word of a group of synonyms and the question by another, so bm25 alone finds the answer
/// only through the words they share (the subject's name).
fn facts() -> Vec<(String, String)> {
    let things: [(&str, &str); 8] = [
        ("car", "automobile"),
        ("database", "storage"),
        ("guitar", "music"),
        ("crash", "failure"),
        ("server", "network"),
        ("storm", "weather"),
        ("apple", "fruit"),
        ("truck", "vehicle"),
    ];
    let names = ["Ada", "Brno", "Cleo", "Dara", "Emil", "Faro", "Gus", "Hana", "Ivo", "Juno"];
    let mut out = Vec::new();
    for (n, name) in names.iter().enumerate() {
        for (i, (a, b)) in things.iter().enumerate() {
            let year = 1990 + n * 3 + i;
            out.push((
                format!("{name}'s {a} dates from {year} and is kept in the north shed."),
                format!("How old is the {b} that belongs to {name}?"),
            ));
        }
    }
    out
}

/// A loopback server echoing bodies back (the test embedder computes its vectors from them).
fn echo_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\n\r\n",
                        body.len()
                    );
                    stream.write_all(head.as_bytes()).unwrap();
                    stream.write_all(&body).unwrap();
                }
            });
        }
    });
    url
}

fn recall(root: &Path) {
    let home = root.join("recall-home");
    std::fs::create_dir_all(&home).unwrap();
    let (config, what) = match (std::env::var("SESHAT_BENCH_EMBED_URL"), std::env::var("SESHAT_BENCH_EMBED_MODEL")) {
        (Ok(url), Ok(model)) => (
            format!(
                "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"{model}\"\nbase_url = \"{url}\"\n"
            ),
            format!("embedder-openai with {model} at {url}: a real model"),
        ),
        _ => {
            let dir = home.join("plugins/topics");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(seshat_test_plugins::EMBEDDER, dir.join("plugin.wasm")).unwrap();
            std::fs::write(
                dir.join("plugin.toml"),
                "id = \"topics\"\nkind = \"embedder\"\napi = \"0.2.0\"\nallowed_hosts = [\"{base_url}\"]\n",
            )
            .unwrap();
            (
                format!(
                    "[plugins]\nembedder = \"topics\"\n[knowledge]\nmodel = \"topics-long\"\nbase_url = \"{}/v1\"\n",
                    echo_server()
                ),
                "the deterministic test embedder (plumbing only: no quality claim)".to_string(),
            )
        }
    };
    std::fs::write(home.join("config.toml"), &config).unwrap();
    let settings = seshat::config::Config::load(&home, None).unwrap();
    let catalog = seshat::plugins::Catalog::discover(&home, None);
    let runtime = seshat::plugins::Runtime::new(None);
    let embedder = seshat::retrieval::load_embedder(&settings, &catalog, &runtime).unwrap().unwrap();
    let dir = root.join("facts");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let facts = facts();
    for (i, (fact, _)) in facts.iter().enumerate() {
        std::fs::write(dir.join(format!("fact{i:03}.md")), format!("{fact}\n")).unwrap();
    }
    let mut k = Knowledge::new(Store::open(&root.join("recall.db")).unwrap(), Some(embedder), Weights::default());
    let target = Target { scope: seshat::memory::Scope::Project, project: "/bench".into() };
    k.add(std::slice::from_ref(&dir), &target, &mut |_, _, _| {}).unwrap();
    k.embed_pending(false, &mut |_, _| {}).unwrap();
    let filter = KnowledgeFilter { project: "/bench", scope: None };
    let mut lexical_k = Knowledge::new(Store::open(&root.join("recall.db")).unwrap(), None, Weights::default());
    let mut hits = [[0usize; 2]; 2];
    for (i, (_, question)) in facts.iter().enumerate() {
        let answer = format!("fact{i:03}.md");
        for (m, found) in [lexical_k.search(filter, question, 10).unwrap(), k.search(filter, question, 10).unwrap()]
            .into_iter()
            .enumerate()
        {
            let at = found.hits.iter().position(|h| h.path.ends_with(&answer));
            hits[m][0] += usize::from(at.is_some_and(|p| p < 5));
            hits[m][1] += usize::from(at.is_some());
        }
    }
    let n = facts.len() as f64;
    println!(
        "recall ({} facts, questions in other words; {what}): lexical @5 {:.2} @10 {:.2}; hybrid @5 {:.2} @10 {:.2} \
         ({:.2}x lexical's @10)",
        facts.len(),
        hits[0][0] as f64 / n,
        hits[0][1] as f64 / n,
        hits[1][0] as f64 / n,
        hits[1][1] as f64 / n,
        hits[1][1] as f64 / (hits[0][1] as f64).max(1.0)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let sizes: Vec<usize> = arg("--sizes")
        .unwrap_or_else(|| "10000,100000".into())
        .split(',')
        .map(|s| s.parse().expect("--sizes takes numbers"))
        .collect();
    let queries: usize = arg("--queries").map_or(200, |q| q.parse().expect("--queries takes a number"));
    register_sqlite_vec();
    let root: PathBuf = tempfile::tempdir().unwrap().keep();
    recall(&root);
    for size in sizes {
        one_size(size, queries, &root);
    }
    let _ = std::fs::remove_dir_all(&root);
}
