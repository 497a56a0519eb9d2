//! The harness: store a labelled transcript turn by turn, run an extractor after each turn as
//! `seshat chat` does with `[memory] extract`, and score what memory holds at the end.
//!
//! * **Precision**: of the observations the extractor wrote (current or replaced since), the
//!   share that record a labelled fact — written from that fact's message and holding all its
//!   keys.
//! * **Recall**: of the labelled facts, the share some written observation records.
//! * **Replaced shown as current**: labelled facts a later fact replaced whose observation is
//!   still current at the end (counted only where the replaced fact was written at all).
//! * **Wrongly replaced**: observations of facts nothing replaced that a correction took out of
//!   the current ones.

use std::path::Path;
use std::sync::Arc;

use seshat::client::Extraction;
use seshat::compaction::{ModelClient, NoModels};
use seshat::config::ExtractAt;
use seshat::conversation::Role;
use seshat::memory::Scope;
use seshat::plugins::{Catalog, ExtractMoment, ExtractorPlugin, LimitRequest, PluginKind, Runtime};
use seshat::store::{NewSession, Store};

use super::labels::Transcript;

/// What one transcript scored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Score {
    /// Observations written.
    pub written: usize,
    /// Of those, the ones that record a labelled fact.
    pub correct: usize,
    /// Labelled facts.
    pub facts: usize,
    /// Labelled facts recorded.
    pub found: usize,
    /// Replaced facts (that were written) whose observation is still current.
    pub replaced_current: usize,
    /// Replaced facts that were written, so could be shown as current.
    pub replaced_written: usize,
    /// Observations recording a fact nothing replaced that are no longer current (a correction
    /// replaced the wrong line).
    pub wrongly_replaced: usize,
}

impl Score {
    /// Sums two scores.
    pub fn add(&mut self, o: Score) {
        self.written += o.written;
        self.correct += o.correct;
        self.facts += o.facts;
        self.found += o.found;
        self.replaced_current += o.replaced_current;
        self.replaced_written += o.replaced_written;
        self.wrongly_replaced += o.wrongly_replaced;
    }

    /// Precision in percent.
    pub fn precision(&self) -> f64 {
        100.0 * self.correct as f64 / self.written.max(1) as f64
    }

    /// Recall in percent.
    pub fn recall(&self) -> f64 {
        100.0 * self.found as f64 / self.facts.max(1) as f64
    }
}

/// One observation the extractor wrote: its text, the message it came from, and whether it is
/// current.
#[derive(Debug, Clone)]
pub struct Written {
    /// Its text.
    pub text: String,
    /// The message it came from.
    pub seq: u64,
    /// Whether it is current (not replaced).
    pub current: bool,
}

/// Loads the built-in extractor `id`.
pub fn extractor(id: &str, cache: &Path) -> ExtractorPlugin {
    let catalog = Catalog::builtin();
    let runtime = Runtime::new(Some(cache.to_path_buf()));
    let loaded = runtime.load(catalog.find(PluginKind::Extractor, id).unwrap(), LimitRequest::default()).unwrap();
    ExtractorPlugin::new(&loaded).unwrap()
}

/// Stores `t` in a fresh store under `dir`, turn by turn, running `plugin` after each turn; what
/// it wrote.
pub fn run(t: &Transcript, plugin: ExtractorPlugin, dir: &Path) -> Vec<Written> {
    let mut store = Store::open(&dir.join("extraction.db")).unwrap();
    let session = store
        .create_session(NewSession {
            project: "/work/project".into(),
            title: None,
            provider: None,
            model: Some("none".into()),
            context_window: None,
            metadata: None,
        })
        .unwrap()
        .id;
    let mut extraction = Extraction::new(plugin, ExtractAt::Turn, "{}".into(), Default::default());
    let models: Arc<dyn ModelClient> = Arc::new(NoModels);
    // A turn: a user message and what follows it up to the next one.
    let mut starts: Vec<usize> =
        t.messages.iter().enumerate().filter(|(_, m)| m.role == Role::User).map(|(i, _)| i).collect();
    starts.push(t.messages.len());
    if starts[0] != 0 {
        store.append(&session, &t.messages[..starts[0]]).unwrap();
    }
    for w in starts.windows(2) {
        store.append(&session, &t.messages[w[0]..w[1]]).unwrap();
        extraction
            .run(&mut store, &session, "/work/project", ExtractMoment::Turn, w[0] as u64 + 1, (models.clone(), "none"))
            .unwrap();
    }
    let mut memory = store.memory(Some("/work/project")).with_sources(true).with_history(true);
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project] {
        let (graph, _) = memory.read_graph(Some(&scope), 0, 1_000).unwrap();
        for e in graph.entities {
            for (text, source) in e.observations.iter().zip(&e.observation_sources) {
                let seq = source.as_ref().and_then(|s| s.seq).unwrap_or(0);
                out.push(Written { text: text.clone(), seq, current: true });
            }
            for past in e.past_observations {
                let seq = past.source.as_ref().and_then(|s| s.seq).unwrap_or(0);
                out.push(Written { text: past.content, seq, current: false });
            }
        }
    }
    out
}

/// Scores what was written against `t`'s labels.
pub fn score(t: &Transcript, written: &[Written]) -> Score {
    let records = |w: &Written, i: usize| {
        let f = &t.facts[i];
        let text = w.text.to_lowercase();
        w.seq == f.seq && f.keys.iter().all(|k| text.contains(&k.to_lowercase()))
    };
    let mut s = Score { written: written.len(), facts: t.facts.len(), ..Score::default() };
    s.correct = written.iter().filter(|w| (0..t.facts.len()).any(|i| records(w, i))).count();
    s.found = (0..t.facts.len()).filter(|&i| written.iter().any(|w| records(w, i))).count();
    let replaced: Vec<usize> = t.facts.iter().filter_map(|f| f.replaces).collect();
    s.wrongly_replaced = written
        .iter()
        .filter(|w| !w.current && (0..t.facts.len()).any(|i| records(w, i) && !replaced.contains(&i)))
        .count();
    for f in &t.facts {
        let Some(old) = f.replaces else { continue };
        let of_old: Vec<&Written> = written.iter().filter(|w| records(w, old)).collect();
        if of_old.is_empty() {
            continue;
        }
        s.replaced_written += 1;
        if of_old.iter().any(|w| w.current) {
            s.replaced_current += 1;
        }
    }
    s
}
