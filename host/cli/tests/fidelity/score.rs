//! The harness: import a transcript, force one compaction at a window, and score what survived.
//!
//! * Retention: the share of live facts (every fact but the replaced decisions) whose code is in
//!   the live view (summary, pins and kept messages, trims applied), by category.
//! * Superseded as current: a replaced decision whose last mention in the live view, read in
//!   order, is a line that does not mark it replaced (a summary holding a decision whose
//!   replacement came after the cut is right: the kept messages that follow it replace it).
//! * Recall: the share of all planted facts whose message `history_search` ranks in its top 5 for
//!   the fact's content words.
//!
//! The model summariser runs against a scripted model that answers with its request's text up to
//! the cap; for it, retention counts a fact as kept when its code reached the model (in any
//! request it was sent) or stayed in the live view — what a model could keep at best.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use seshat::compaction::{Compactor, Frame, ModelClient, Settings};
use seshat::conversation::Part;
use seshat::plugins::{
    Catalog, Completion, CompletionRequest, LimitRequest, ModelError, PluginKind, Runtime, StopReason,
    SummariserPlugin, TrimmerPlugin,
};
use seshat::store::{HistoryScope, NewSession, Store};

use super::generate::{Category, Transcript};

/// A summariser under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summariser {
    /// `summariser-extractive`: no model.
    Extractive,
    /// `summariser` (the default) with the scripted echo model.
    ModelEcho,
    /// `summariser` with the real model given to [`Plugins::with_model`].
    Model,
}

impl Summariser {
    /// The built-in plugin's id.
    pub fn plugin(self) -> &'static str {
        match self {
            Summariser::Extractive => "summariser-extractive",
            Summariser::ModelEcho | Summariser::Model => "summariser",
        }
    }
}

/// Live facts kept, by category: (kept, live).
pub type Tally = BTreeMap<Category, (usize, usize)>;

/// One scored compaction.
#[derive(Debug, Clone)]
pub struct Score {
    /// The transcript's seed.
    pub seed: u64,
    /// The window compaction was forced at.
    pub window: u64,
    /// The transcript's estimated tokens.
    pub tokens: u64,
    /// Whether compaction dropped anything (a transcript under the target keeps everything).
    pub compacted: bool,
    /// Retention by category.
    pub retained: Tally,
    /// Replaced decisions the live view leaves looking current: their codes with the line.
    pub superseded_as_current: Vec<String>,
    /// Facts found in the top 5, of all planted.
    pub recall: (usize, usize),
    /// Live facts lost, with their category (for diagnosis).
    pub lost: Vec<(Category, String)>,
}

/// The scripted model: remembers every request and answers with its text up to the cap.
#[derive(Default)]
struct Echo {
    seen: Mutex<String>,
}

impl ModelClient for Echo {
    fn complete(&self, _model: &str, request: CompletionRequest) -> Result<Completion, ModelError> {
        let mut text = String::new();
        for m in &request.messages {
            for p in &m.parts {
                if let Part::Text { text: t } = p {
                    text.push_str(t);
                    text.push('\n');
                }
            }
        }
        self.seen.lock().expect("echo lock").push_str(&text);
        let cap = request.max_tokens as usize * 4;
        let answer: String = text.chars().take(cap).collect();
        Ok(Completion { text: answer, usage: None, stop_reason: StopReason::EndTurn })
    }

    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// The built-in default trimmer and one summariser, compiled through `cache`.
pub struct Plugins {
    trimmer: TrimmerPlugin,
    extractive: SummariserPlugin,
    model: SummariserPlugin,
    real: Option<(Arc<dyn ModelClient>, String)>,
}

impl Plugins {
    /// Loads the plugins, caching compiled components in `cache`.
    pub fn load(cache: &Path) -> Self {
        let catalog = Catalog::builtin();
        let runtime = Runtime::new(Some(cache.to_path_buf()));
        let load = |kind, id| runtime.load(catalog.find(kind, id).expect("built-in plugin"), LimitRequest::default());
        Self {
            trimmer: TrimmerPlugin::new(&load(PluginKind::Trimmer, "trimmer").expect("trimmer")).expect("trimmer"),
            extractive: SummariserPlugin::new(&load(PluginKind::Summariser, "summariser-extractive").expect("load"))
                .expect("summariser"),
            model: SummariserPlugin::new(&load(PluginKind::Summariser, "summariser").expect("load"))
                .expect("summariser"),
            real: None,
        }
    }

    /// Serves [`Summariser::Model`] with `client`, summarising with `model`.
    pub fn with_model(mut self, client: Arc<dyn ModelClient>, model: String) -> Self {
        self.real = Some((client, model));
        self
    }
}

fn settings(window: u64) -> Settings {
    Settings {
        auto_compact: true,
        context_window: Some(window),
        max_output_tokens: 8_000,
        model: "fidelity".into(),
        summary_model: None,
        trimmer_options: "{}".into(),
        summariser_options: "{}".into(),
        calibration: 1.0,
        recall: true,
        instructions: None,
        prompt: None,
        until: None,
        cancel: seshat::providers::Cancel::default(),
        summary_request: seshat::compaction::SummaryRequestKind::SharedPrefix,
        shape: None,
        summary_price: None,
        pre_compact: None,
    }
}

/// A line that says the code on it was replaced.
fn marks_replaced(line: &str, by: &str) -> bool {
    let lower = line.to_lowercase();
    // Said in so many words, or the replacement's own line (it names what it replaced).
    lower.contains("replace")
        || lower.contains("supersede")
        || (line.contains(by)
            && ["instead of", "no longer", "switch from", "drop ", "is out", "forget "]
                .iter()
                .any(|w| lower.contains(w)))
}

/// Imports `t` into `store`, compacts it once at `window` with `summariser`, and scores it.
pub fn run(store: &mut Store, plugins: &mut Plugins, t: &Transcript, window: u64, summariser: Summariser) -> Score {
    let id = store
        .create_session(NewSession { project: "/fidelity".into(), context_window: Some(window), ..Default::default() })
        .expect("session")
        .id;
    for chunk in t.messages.chunks(200) {
        store.append(&id, chunk).expect("append");
    }
    let echo = Arc::new(Echo::default());
    let frame = Frame { system: "You are a coding agent.".into(), tools: String::new(), specs: Vec::new() };
    let report = {
        let mut settings = settings(window);
        let models = match (&plugins.real, summariser) {
            (Some((client, model)), Summariser::Model) => {
                settings.model.clone_from(model);
                client.clone()
            }
            (None, Summariser::Model) => panic!("Summariser::Model needs Plugins::with_model"),
            _ => echo.clone() as Arc<dyn ModelClient>,
        };
        let summariser_plugin = match summariser {
            Summariser::Extractive => &mut plugins.extractive,
            Summariser::ModelEcho | Summariser::Model => &mut plugins.model,
        };
        let mut c = Compactor { trimmer: &mut plugins.trimmer, summariser: summariser_plugin, models };
        c.compact(store, &id, &frame, &settings, false).expect("compaction")
    };
    let view = store.live_view(&id).expect("live view");
    let mut text = String::new();
    for e in &view.entries {
        for p in &e.parts {
            match p {
                Part::Text { text: t } => text.push_str(t),
                Part::ToolCall { arguments, .. } => text.push_str(arguments),
                Part::ToolResult { content, .. } => text.push_str(content),
                _ => {}
            }
            text.push('\n');
        }
    }
    // Read in order, the view must leave no replaced decision looking current: its last mention
    // is a line that marks it replaced (the summary may hold a decision whose replacement came
    // after the cut, in the kept messages — read in order, that is right).
    let superseded_as_current = t
        .facts
        .iter()
        .filter(|f| f.replaced_by.is_some())
        .filter_map(|f| {
            let last = text.lines().rfind(|l| l.contains(&f.code))?;
            let by = f.replaced_by.as_deref().unwrap_or_default();
            (!marks_replaced(last, by)).then(|| format!("{}: {last}", f.code))
        })
        .collect();
    if summariser == Summariser::ModelEcho {
        text.push_str(&echo.seen.lock().expect("echo lock"));
    }

    let mut retained = Tally::new();
    let mut lost = Vec::new();
    for f in t.facts.iter().filter(|f| f.replaced_by.is_none()) {
        let entry = retained.entry(f.category).or_insert((0, 0));
        entry.1 += 1;
        if text.contains(&f.code) {
            entry.0 += 1;
        } else {
            lost.push((f.category, f.code.clone()));
        }
    }
    let mut found = 0;
    for f in &t.facts {
        let hits = store.search_history(HistoryScope::Session(&id), &f.query, 5).expect("history search");
        if hits.iter().any(|h| h.seq == f.message as u64 + 1) {
            found += 1;
        }
    }
    Score {
        seed: t.seed,
        window,
        tokens: t.tokens,
        compacted: report.dropped > 0 || report.trimmed > 0,
        retained,
        superseded_as_current,
        recall: (found, t.facts.len()),
        lost,
    }
}

/// Retention by category summed over `scores`.
pub fn total(scores: &[Score]) -> Tally {
    let mut sum = Tally::new();
    for s in scores {
        for (c, (k, n)) in &s.retained {
            let e = sum.entry(*c).or_insert((0, 0));
            e.0 += k;
            e.1 += n;
        }
    }
    sum
}

/// A share in percent.
pub fn percent((kept, of): (usize, usize)) -> f64 {
    if of == 0 { 100.0 } else { 100.0 * kept as f64 / of as f64 }
}
