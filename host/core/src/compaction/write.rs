//! Writing a summary: the summariser (and the model it calls) over what a pass chose to drop.
//! Everything it needs is owned ([`Write`]), so a summary can be written on another thread while
//! the session goes on ([`super::background`]); it reads and writes no store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::accounting::uncalibrated;
use super::models::{BoundModel, ModelClient};
use super::shared;
use super::summary::{SUMMARY_PROMPT_TOKENS, first_chunk, summary_message};
use super::{Settings, SummaryRequestKind};
use crate::plugins::{PluginMessage, SummariserPlugin, SummaryRequest};
use crate::store::ViewEntry;
use crate::window;

/// What writing a summary needs, owned.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    /// The session (for the log).
    pub session: String,
    /// The messages the summary replaces, as the pass's trims left them.
    pub dropped: Vec<ViewEntry>,
    /// The summary in force, folded into the new one.
    pub previous: Option<String>,
    /// The model asked.
    pub model: String,
    /// The summary's cap.
    pub summary_tokens: u64,
    /// The pass's settings (its calibration, options and cancel).
    pub settings: Settings,
    /// The request sharing the chat's prefix, when the summary is asked that way (or why it is
    /// not, when it might have been).
    pub shared: Option<Result<shared::Plan, shared::Shared>>,
}

/// A summary written, or why not, and what writing it cost.
#[derive(Debug)]
pub(crate) struct Written {
    /// The summary and what writing it taught, or the summariser's failure.
    pub summarised: Result<Summarised, String>,
    /// Model calls made.
    pub calls: u32,
    /// Their usage summed, as the provider reported it.
    pub usage: Option<crate::conversation::Usage>,
    /// How the summary was asked (none when no model was).
    pub request: Option<SummaryRequestKind>,
    /// Time spent, in microseconds.
    pub micros: u64,
}

impl Written {
    /// A summary that could not be written, for `why`.
    pub(crate) fn failed(why: &str) -> Self {
        Written { summarised: Err(why.to_string()), calls: 0, usage: None, request: None, micros: 0 }
    }
}

/// The summary calls' usage summed, as their provider reported it.
type SummaryUsage = Arc<std::sync::Mutex<Option<crate::conversation::Usage>>>;

/// A summary and what writing it taught about the summary model.
#[derive(Debug)]
pub(crate) struct Summarised {
    /// The summary.
    pub text: String,
    /// Real tokens per estimated token, learnt from a refusal.
    pub calibration: Option<f64>,
    /// Refusals for length recovered.
    pub recovered: u32,
}

/// Writes the summary `w` asks for: with the chat's prefix when it was planned that way (falling
/// back to the separate request when that answer cannot be the summary), else the separate way.
pub(crate) fn write(summariser: &mut SummariserPlugin, models: &Arc<dyn ModelClient>, w: &Write) -> Written {
    let calls = Arc::new(AtomicU32::new(0));
    let usage: SummaryUsage = Arc::new(std::sync::Mutex::new(None));
    let start = std::time::Instant::now();
    let mut request = None;
    let asked = match &w.shared {
        Some(Ok(plan)) => shared::send(&**models, plan, &w.settings),
        Some(Err(not)) => not.clone(),
        None => shared::Shared::Fallback("not asked this way", false, None),
    };
    let summarised = match asked {
        shared::Shared::Written(c) => {
            calls.fetch_add(1, Ordering::Relaxed);
            request = Some(SummaryRequestKind::SharedPrefix);
            *usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = c.usage;
            Ok(Summarised { text: c.text, calibration: None, recovered: 0 })
        }
        shared::Shared::Failed(e) => {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(e)
        }
        shared::Shared::Fallback(why, called, spent) => {
            if w.shared.is_some() {
                tracing::debug!(session = %w.session, why, "the summary is asked the separate way");
            }
            if called {
                calls.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(u) = spent {
                usage
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert_with(Default::default)
                    .add(&u);
            }
            let separate = summarise(
                summariser,
                models,
                &w.dropped,
                w.previous.clone(),
                &w.model,
                w.summary_tokens,
                &w.settings,
                (&calls, &usage),
            );
            if calls.load(Ordering::Relaxed) > u32::from(called) {
                request = Some(SummaryRequestKind::Separate);
            }
            separate
        }
    };
    let usage = *usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    Written {
        summarised,
        calls: calls.load(Ordering::Relaxed),
        usage,
        request,
        micros: start.elapsed().as_micros() as u64,
    }
}

#[allow(clippy::too_many_arguments)]
/// Writes the summary of `dropped` the separate way, in chunks sized so that each request fits the summary
/// model's window in its real tokens (estimates times the session's calibration). A chunk
/// refused for its length is recovered once: the real size the refusal names (or, when it
/// names none, half again the estimate) becomes the calibration, the chunk is cut again to fit,
/// and the request is retried; a second refusal fails the summary. Returns the summary and
/// what it learnt.
fn summarise(
    summariser: &mut SummariserPlugin,
    models: &Arc<dyn ModelClient>,
    dropped: &[ViewEntry],
    previous: Option<String>,
    model: &str,
    summary_tokens: u64,
    settings: &Settings,
    (calls, usage): (&Arc<AtomicU32>, &SummaryUsage),
) -> Result<Summarised, String> {
    // The session's own model runs with the session's window (which may have been discovered
    // or learnt, so its provider may not know it), another model with the window its provider
    // knows; when both are known, the smaller.
    let own = if model == settings.model { settings.context_window } else { None };
    let mut model_window = match (own, models.context_window(model)) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).or(settings.context_window).unwrap_or(0),
    };
    // Real tokens per estimated token: the session's calibration applies to its own model.
    let mut calibration = if model == settings.model { settings.calibration.max(1.0) } else { 1.0 };
    let mut learnt = Summarised { text: String::new(), calibration: None, recovered: 0 };
    let mut running = previous;
    let mut done = 0;
    let mut retried_at = None;
    let refused = Arc::new(std::sync::Mutex::new(None));
    while done < dropped.len() {
        // No message may be larger than a request can hold beside the instructions, a previous
        // summary (at most the cap) and the answer.
        let real_room = |extra: u64| model_window.saturating_sub(extra);
        let largest = uncalibrated(real_room(2 * summary_tokens + SUMMARY_PROMPT_TOKENS + 64), calibration);
        let max_chars = usize::try_from(largest.saturating_mul(4)).unwrap_or(usize::MAX).max(400);
        let messages: Vec<PluginMessage> = dropped[done..].iter().map(|e| summary_message(e, max_chars)).collect();
        // Chunks are sized so each request (instructions, previous summary, messages) and its
        // answer fit the summary model's window; `BoundModel` checks every request against it.
        let room = uncalibrated(real_room(summary_tokens + SUMMARY_PROMPT_TOKENS), calibration)
            .saturating_sub(running.as_deref().map_or(0, window::estimate_text));
        let chunk = first_chunk(&messages, room);
        let request = SummaryRequest {
            messages: chunk.to_vec(),
            previous_summary: running.clone(),
            max_tokens: summary_tokens as u32,
            model_window,
            extra: settings.summariser_options.clone(),
            instructions: settings.instructions.clone(),
            prompt: settings.prompt.clone(),
        };
        let bound = BoundModel {
            client: models.clone(),
            model: model.to_string(),
            calls: calls.clone(),
            window: model_window,
            calibration,
            refused: refused.clone(),
            usage: usage.clone(),
        };
        match summariser.summarise(&request, Box::new(bound)) {
            Ok(text) => {
                running = Some(text);
                done += chunk.len();
            }
            Err(e) => {
                let refusal = refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
                let Some(refusal) = refusal else { return Err(e.to_string()) };
                if retried_at == Some(done) {
                    // Refused again after the second cut: say which messages, how large and
                    // the window, beside the server's words.
                    let seqs: Vec<u64> = dropped[done..done + chunk.len()].iter().filter_map(|e| e.seq).collect();
                    let (first, last) = (seqs.first().copied().unwrap_or(0), seqs.last().copied().unwrap_or(0));
                    let size = refusal.real.map_or_else(
                        || format!("~{} tokens by Seshat's estimate", refusal.estimated),
                        |r| format!("{r} tokens by the model's count"),
                    );
                    let what = if refusal.counted {
                        "does not fit the summary model's window even cut again"
                    } else {
                        "was refused twice for its length by the summary model, even cut again"
                    };
                    return Err(format!(
                        "the summary of messages {first}–{last} {what} ({size}; its window is {} tokens): {e}",
                        refusal.window.unwrap_or(model_window)
                    ));
                }
                // Recover once per chunk: learn how the model counts, cut again, retry. (A
                // request the model's count showed too large was never sent: no refusal.)
                retried_at = Some(done);
                if !refusal.counted {
                    learnt.recovered += 1;
                }
                if let Some(w) = refusal.window.filter(|&w| w > 0 && (model_window == 0 || w < model_window)) {
                    model_window = w;
                }
                let seen = match refusal.real {
                    Some(real) if refusal.estimated > 0 => real as f64 / refusal.estimated as f64,
                    _ => calibration * 1.5,
                };
                // A tenth over what was seen: the next cut holds other messages, whose mix of
                // content may count a little denser.
                calibration = (calibration.max(seen) * 1.1).min(window::MAX_CALIBRATION);
                learnt.calibration = Some(calibration);
            }
        }
    }
    learnt.text = running.ok_or_else(|| "nothing to summarise".to_string())?;
    Ok(learnt)
}
