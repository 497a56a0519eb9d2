//! Draining the embedding queue: the history messages and memory entities written while
//! embedding them is on wait in the database (migration 0009's `embed_queue`, filled in the same
//! transaction as the row), and are embedded here, a batch at a time, each batch's vectors stored
//! and its rows taken off the queue in one transaction. A process killed mid-way loses nothing:
//! the next drain picks up what is still queued. `seshat chat` drains in a background thread of
//! its own (its own database connection and embedder), so a model call never waits for it.

use serde::Serialize;

use super::vectors::encode;
use super::{Error, Result, knowledge::embed_documents};
use crate::config::Config;
use crate::providers::Embedder;
use crate::store::{Queued, Store};

/// Rows embedded per batch (and per transaction).
pub(crate) const BATCH: usize = 64;

/// What a drain did, per corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drained {
    /// Rows given a vector.
    pub embedded: u64,
    /// Rows taken off the queue without one (gone, or no text).
    pub skipped: u64,
    /// Rows still queued.
    pub left: u64,
    /// Rows queued now because embedding was just turned on (the backfill).
    pub backfilled: u64,
}

/// Which queued corpora `config` opts in to.
pub(crate) fn opted_in(config: &Config) -> Vec<Queued> {
    let k = &config.knowledge;
    let mut out = Vec::new();
    if k.embed_history == Some(true) {
        out.push(Queued::History);
    }
    if k.embed_memory == Some(true) {
        out.push(Queued::Memory);
    }
    out
}

/// Brings the database in line with `config`: corpora opted in are turned on (queueing every
/// row without a vector the first time), corpora opted out are turned off. Refuses a corpus whose
/// vectors another model made (the user re-embeds with consent: `seshat knowledge embed
/// --re-embed`). Returns what each turned-on corpus queued.
pub fn sync(store: &mut Store, config: &Config, embedder: &Embedder) -> Result<Vec<(Queued, u64)>> {
    let on = opted_in(config);
    let mut out = Vec::new();
    for corpus in [Queued::History, Queued::Memory] {
        if !on.contains(&corpus) {
            store.embedding_disable(corpus)?;
            continue;
        }
        if let Some((index, _)) = store.queued_index(corpus)?
            && index.model != embedder.model()
            && index.vectors > 0
        {
            return Err(Error::ModelChanged {
                from: format!("{} ({} dimensions)", index.model, index.dimensions),
                to: embedder.model().to_string(),
                vectors: index.vectors,
                chunks: index.vectors + store.embed_queue_len(corpus)?,
            });
        }
        out.push((corpus, store.embedding_enable(corpus, embedder.plugin_id(), embedder.model())?));
    }
    Ok(out)
}

/// Replaces `corpus`'s vectors of another model (the user agreed): all deleted, every row
/// queued again for `embedder`'s model. Returns how many vectors went.
pub fn replace(store: &mut Store, corpus: Queued, embedder: &Embedder) -> Result<u64> {
    Ok(store.embedding_replace(corpus, embedder.plugin_id(), embedder.model())?)
}

/// Embeds what `corpus` has queued until the queue is empty (or `stop` says so between batches).
/// A failure leaves the batch queued (its attempts counted) and is returned.
pub fn drain(store: &mut Store, embedder: &mut Embedder, corpus: Queued, stop: &dyn Fn() -> bool) -> Result<Drained> {
    let mut report = Drained::default();
    while !stop() {
        let batch = store.embed_queue_claim(corpus, BATCH, CLAIM)?;
        if batch.is_empty() {
            break;
        }
        let (with_text, without): (Vec<_>, Vec<_>) = batch.into_iter().partition(|(_, t)| t.is_some());
        let texts: Vec<String> = with_text.iter().map(|(_, t)| t.clone().unwrap_or_default()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            match embed_documents(embedder, &texts) {
                Ok((v, _)) => v,
                Err(e) => {
                    let ids: Vec<i64> = with_text.iter().map(|(id, _)| *id).collect();
                    store.embed_queue_failed(corpus, &ids)?;
                    return Err(e);
                }
            }
        };
        let dims = vectors.first().map_or(0, |v| v.len() as u32);
        let rows: Vec<(i64, Vec<u8>)> = with_text.iter().zip(&vectors).map(|((id, _), v)| (*id, encode(v))).collect();
        let done: Vec<i64> = with_text.iter().chain(&without).map(|(id, _)| *id).collect();
        report.embedded += store.embed_queue_done(corpus, &rows, &done, dims)? as u64;
        report.skipped += without.len() as u64;
    }
    report.left = store.embed_queue_len(corpus)?;
    Ok(report)
}

/// How long a worker holds the rows it claimed: past it (its process died, say) another takes them.
const CLAIM: std::time::Duration = std::time::Duration::from_secs(120);

/// A drain running in a thread of its own, with its own database connection and embedder, so the
/// caller (a chat turn, a tool call) never waits for it. It drains what is queued when started
/// and again each time it is [`poke`](Background::poke)d; it ends with the process (what is
/// still queued then waits for the next run) or when the handle is dropped.
#[derive(Debug)]
pub struct Background {
    poke: std::sync::mpsc::Sender<()>,
}

impl Background {
    /// Starts draining the corpora `config` opts in to; `None` when it opts in to none or has
    /// no embedder. Failures are logged (`RUST_LOG=seshat=warn`), never fatal: the rows stay
    /// queued.
    pub fn start(
        config: &Config,
        catalog: &crate::plugins::Catalog,
        runtime: &crate::plugins::Runtime,
        db: &crate::store::Location,
    ) -> Option<Self> {
        let corpora = opted_in(config);
        let mut store = Store::connect(db).ok()?;
        if corpora.is_empty() && !has_queues(&store) {
            return None;
        }
        let mut embedder = match super::load_embedder(config, catalog, runtime) {
            Ok(Some(e)) => e,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!("embedding history and memory is off for now: {e}");
                return None;
            }
        };
        let config = config.clone();
        let (poke, pokes) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("seshat-embed".into())
            .spawn(move || {
                if let Err(e) = sync(&mut store, &config, &embedder) {
                    tracing::warn!("not embedding history and memory: {e}");
                    return;
                }
                loop {
                    for &corpus in &corpora {
                        if let Err(e) = drain(&mut store, &mut embedder, corpus, &|| false) {
                            tracing::warn!("embedding {} stopped, the rest stays queued: {e}", corpus.as_str());
                        }
                    }
                    if pokes.recv().is_err() {
                        break;
                    }
                    while pokes.try_recv().is_ok() {}
                }
            })
            .ok()?;
        Some(Background { poke })
    }

    /// Asks for another drain (new rows were written).
    pub fn poke(&self) {
        let _ = self.poke.send(());
    }
}

/// Whether the database has a queued corpus turned on (so that opting out is recorded).
fn has_queues(store: &Store) -> bool {
    [Queued::History, Queued::Memory]
        .into_iter()
        .any(|corpus| store.queued_index(corpus).ok().flatten().is_some_and(|(_, on)| on))
}
