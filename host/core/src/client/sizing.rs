//! Sizing a session's requests to the model it actually talks to: which window (and where it came
//! from), how much room the answer gets, and how the fixed parts of every request (the system
//! prompt, the project's instructions, the memory context, the tool schemas) are cut to fit.
//!
//! The window comes from, in order: `--window`, the configuration, a window a refusal or a
//! truncation revealed (learnt), the provider's model table, the server's own answer (discovered,
//! cached for 24 hours), and otherwise [`window::ASSUMED_WINDOW`], said in a warning. Below
//! [`window::MIN_WINDOW`] nothing works, and the error says how to raise the server's context.

use std::collections::HashSet;

use super::prompt::{self, PromptParts};
use super::{Error, Result};
use crate::compaction::Frame;
use crate::compaction::Prepared;
use crate::compaction::pairing::Msg;
use crate::plugins::ToolSpec;
use crate::providers::Answer;
use crate::providers::Provider;
use crate::store::{ModelWindow, Store, WindowOrigin, now_ms};
use crate::window::{self, Marks, Tally, WindowSource};

/// A server's prompt count below this share (percent) of Seshat's estimate means it cut the
/// prompt.
pub(crate) const TRUNCATED_PERCENT: u64 = 75;
/// Requests smaller than this do not calibrate the estimate (fixed overheads dominate them).
pub(super) const CALIBRATION_MIN_TOKENS: u64 = 500;
/// The most real tokens per estimated token Seshat believes.
pub(crate) use window::MAX_CALIBRATION;

/// The calibration recorded with a session for `model` (`metadata.calibration.<model>`), as the
/// agent uses it: at least 1, at most [`MAX_CALIBRATION`]; 1 when none is recorded.
pub(super) fn stored_calibration(metadata: &serde_json::Value, model: &str) -> f64 {
    metadata["calibration"][model].as_f64().unwrap_or(1.0).clamp(1.0, MAX_CALIBRATION)
}

/// The per-kind calibration recorded with a session for `model`
/// (`metadata.calibration_kinds.<model>`); the prior's factors (1) when none is.
pub(super) fn stored_kinds(metadata: &serde_json::Value, model: &str) -> window::Calibration {
    window::Calibration::from_json(&metadata["calibration_kinds"][model])
}

/// A window and what it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowChoice {
    /// The context window in tokens.
    pub window: u64,
    /// Where it came from.
    pub source: WindowSource,
    /// The model's own output limit, when something knows it.
    pub model_output_limit: Option<u64>,
    /// Whether nothing was known of the model before this choice (no answer of the server's
    /// cached): what was assumed is news, to be said once.
    pub first_seen: bool,
}

/// Finds `model`'s window (see the module docs). Asks the server at most once per (base URL,
/// model) a day: the answer, even "nothing", is cached in the store.
pub(crate) fn choose_window(
    provider: &mut Provider,
    store: &mut Store,
    model: &str,
    flag: Option<u64>,
) -> crate::store::Result<WindowChoice> {
    let base = provider.base_url().to_string();
    let table = provider.table_model(model).cloned();
    let configured = provider.configured_model(model);
    let mut known = store.model_window(&base, model)?;
    let first_seen = known.is_none_or(|k| k.is_stale(now_ms()));
    let table_limit = table.as_ref().map(|m| m.max_output_tokens).filter(|&m| m > 0);
    let output_limit = |known: &Option<ModelWindow>| known.and_then(|k| k.max_output_tokens).or(table_limit);
    let pick = |window, source, known: &Option<ModelWindow>| WindowChoice {
        window,
        source,
        model_output_limit: output_limit(known),
        first_seen,
    };
    if let Some(w) = flag {
        return Ok(pick(w, WindowSource::Flag, &known));
    }
    if let Some(w) = configured.and_then(|c| c.context_window) {
        return Ok(pick(w, WindowSource::Config, &known));
    }
    if let Some(k) = known.filter(|k| k.origin == WindowOrigin::Learnt)
        && let Some(w) = k.context_window
    {
        return Ok(pick(w, WindowSource::Learnt, &known));
    }
    if let Some(w) = table.as_ref().map(|m| m.context_window).filter(|&w| w > 0) {
        return Ok(pick(w, WindowSource::Table, &known));
    }
    let now = now_ms();
    // Ask when nothing is known, when a discovery went stale, or when all that was learnt is an
    // output limit.
    let ask = known.is_none_or(|k| k.is_stale(now) || (k.origin == WindowOrigin::Learnt && k.context_window.is_none()));
    if ask && provider.discovers() {
        match provider.discover(Some(model)) {
            Ok((found, _)) => {
                let entry = ModelWindow {
                    context_window: found.context_window,
                    max_output_tokens: found.max_output_tokens,
                    origin: WindowOrigin::Discovered,
                    learnt_at: now,
                };
                store.record_model_window(&base, model, &entry)?;
                known = store.model_window(&base, model)?;
            }
            Err(e) => tracing::debug!(provider = %provider.name(), error = %e, "discovery failed"),
        }
    }
    match known.and_then(|k| k.context_window) {
        Some(w) => Ok(pick(w, WindowSource::Discovered, &known)),
        None => Ok(pick(window::ASSUMED_WINDOW, WindowSource::Assumed, &known)),
    }
}

/// The warning shown while a window is only assumed.
pub(crate) fn assumed_warning(model: &str, provider: &str) -> String {
    format!(
        "the context window of `{model}` is unknown (not in the model table, the config, or the server's answers): \
         assuming {} tokens; give the window, or set `context_window` under [providers.{provider}.models.\"{model}\"]",
        window::ASSUMED_WINDOW
    )
}

/// What limits the answer's room.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OutputAsk {
    /// The model's own limit.
    pub model_limit: Option<u64>,
    /// A value that must be honoured exactly or refused (`--max-output`, a per-model config
    /// value), with what set it.
    pub exact: Option<(u64, String)>,
    /// A cap that is clamped to what fits (`[chat] max_output_tokens`).
    pub cap: Option<u64>,
}

/// The answer's room on `window`: `min(the model's limit, 16,384, what lies above the
/// threshold)`, or the exact value asked for if it fits (otherwise an error naming both numbers,
/// with the largest that fits), further capped by the global cap (with a notice when clamped).
pub fn max_output(window: u64, ask: &OutputAsk) -> Result<(u64, Option<String>), (String, u64)> {
    let marks = Marks::new(window);
    let fits = marks.max_output(ask.model_limit.unwrap_or(u64::MAX));
    if let Some((value, who)) = &ask.exact {
        if *value > fits || *value == 0 {
            return Err((
                format!(
                    "{who} asks for {value} output tokens, but on a {window}-token window at most {fits} fit above \
                     the compaction threshold ({} tokens): set it to {fits} or less",
                    marks.threshold
                ),
                fits,
            ));
        }
        return Ok((*value, None));
    }
    match ask.cap {
        Some(cap) if cap > fits => Ok((
            fits,
            Some(format!(
                "[chat] max_output_tokens = {cap} is more than fits a {window}-token window: answers get {fits} tokens"
            )),
        )),
        Some(cap) => Ok((cap.max(1), None)),
        None => Ok((fits, None)),
    }
}

/// The fixed parts of a request before fitting.
#[derive(Debug, Clone, Default)]
pub(crate) struct FrameParts {
    /// The base system prompt.
    pub base: String,
    /// The project's instruction files.
    pub instructions: Vec<(String, String)>,
    /// The session's memory context, if it has one.
    pub memory: Option<String>,
    /// The tools, in the order offered.
    pub tools: Vec<ToolSpec>,
    /// Tools the user chose by name: never left out.
    pub required: HashSet<String>,
    /// Whether `base` is Seshat's own prompt, which then names only the tools offered (a
    /// prompt of the user's is sent as written).
    pub default_base: bool,
}

/// A frame that fits, and what was left out to make it fit.
#[derive(Debug, Clone, Default)]
pub(crate) struct FittedFrame {
    /// The system prompt and tool schemas as sent.
    pub frame: Frame,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// What was left out, for `/context` (empty when everything fits).
    pub left_out: Vec<String>,
}

/// How the memory context's closing line begins (see `memory::context`).
const MEMORY_CLOSING: &str = "_Left out";

/// Memory tools in the order they are left out when the window is too small for them all: the
/// repairs and bulk reads first, the searches last.
const TOOLS_LEAST_ESSENTIAL_FIRST: &[&str] = &[
    "memory_delete_relations",
    "memory_delete_observations",
    "memory_delete_entities",
    "memory_read_graph",
    "memory_create_relations",
    "memory_open_nodes",
    "memory_add_observations",
    "memory_create_entities",
    "memory_search_nodes",
];

fn build(parts: &FrameParts, memory: Option<&str>, instructions: usize, tools: &[ToolSpec]) -> Frame {
    let base = if parts.default_base {
        // Every tool the prompt names (a quoted snake_case name) or the agent has.
        let mut known: Vec<&str> = parts.tools.iter().map(|t| t.name.as_str()).collect();
        known.extend(
            parts
                .base
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|w| w.contains('_') && w.chars().all(|c| c.is_ascii_lowercase() || c == '_')),
        );
        let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        prompt::without_absent_tools(&parts.base, &known, &offered)
    } else {
        parts.base.clone()
    };
    let system = prompt::build(&PromptParts {
        base,
        instructions: parts.instructions[..instructions].to_vec(),
        memory: memory.map(str::to_string),
    });
    // Each tool as a request carries it: its name, its description (prose) and its schema
    // (compact JSON), each on a line of its own, so each is estimated as what it is.
    let compact = |schema: &str| {
        serde_json::from_str::<serde_json::Value>(schema).map_or_else(|_| schema.to_string(), |v| v.to_string())
    };
    let text = tools.iter().map(|s| format!("{}\n{}\n{}\n", s.name, s.description, compact(&s.parameters))).collect();
    Frame { system, tools: text, specs: tools.to_vec() }
}

/// Fits the frame to `budget` tokens by value: the base prompt and the tools the user chose
/// always; then, each while it fits, the project's instruction files (in order), the memory
/// context (its best-ranked lines first) and the optional tools (the most essential first, a
/// larger one skipped for a smaller one that fits). What the user wrote comes before tools they
/// did not ask for, and anything that fits after a cut goes back in. The default prompt names
/// only the tools offered. What was left out is said; what cannot fit at all is said too.
pub(crate) fn fit_frame(parts: &FrameParts, budget: u64) -> FittedFrame {
    let mut memory_lines: Vec<&str> = parts.memory.as_deref().map(|m| m.lines().collect()).unwrap_or_default();
    // The memory context's own closing line (what its budget left out) stays last.
    let closing = memory_lines.pop_if(|l| l.starts_with(MEMORY_CLOSING));
    let render_memory = |kept: usize| -> Option<String> {
        parts.memory.as_ref()?;
        let mut text = memory_lines[..kept].join("\n");
        if let Some(c) = closing {
            text.push('\n');
            text.push_str(c);
        }
        let cut = memory_lines.len() - kept;
        if cut > 0 {
            text.push_str(&format!("\n[{cut} more lines of memory left out to fit the window]"));
        }
        Some(text)
    };
    let rank = |name: &str| TOOLS_LEAST_ESSENTIAL_FIRST.iter().position(|t| *t == name).unwrap_or(usize::MAX);
    let mut chosen: HashSet<&str> =
        parts.tools.iter().filter(|t| parts.required.contains(&t.name)).map(|t| t.name.as_str()).collect();
    let offered = |chosen: &HashSet<&str>| -> Vec<ToolSpec> {
        parts.tools.iter().filter(|t| chosen.contains(t.name.as_str())).cloned().collect()
    };
    let frame_of = |instructions: usize, memory: usize, chosen: &HashSet<&str>| {
        build(parts, render_memory(memory).as_deref(), instructions, &offered(chosen))
    };
    let mut left_out = Vec::new();
    let (mut instructions, mut memory) = (0, 0);
    let floor = frame_of(0, 0, &chosen);
    if floor.tokens() > budget {
        left_out.push(format!(
            "nothing more can go: the base prompt and the chosen tools take ~{} tokens, over the {budget}-token \
             budget for fixed parts",
            floor.tokens()
        ));
    } else {
        while instructions < parts.instructions.len() && frame_of(instructions + 1, 0, &chosen).tokens() <= budget {
            instructions += 1;
        }
        while memory < memory_lines.len() && frame_of(instructions, memory + 1, &chosen).tokens() <= budget {
            memory += 1;
        }
        let mut optional: Vec<&ToolSpec> = parts.tools.iter().filter(|t| !chosen.contains(t.name.as_str())).collect();
        optional.sort_by_key(|t| std::cmp::Reverse(rank(&t.name)));
        for t in optional {
            chosen.insert(&t.name);
            if frame_of(instructions, memory, &chosen).tokens() > budget {
                chosen.remove(t.name.as_str());
            }
        }
    }
    for (name, _) in &parts.instructions[instructions..] {
        left_out.push(format!("the project's {name}"));
    }
    if memory < memory_lines.len() {
        left_out.push(format!("{} lines of the memory context", memory_lines.len() - memory));
    }
    for t in parts.tools.iter().filter(|t| !chosen.contains(t.name.as_str())) {
        left_out.push(format!("the tool {}", t.name));
    }
    let frame = frame_of(instructions, memory, &chosen);
    FittedFrame { frame, tools: offered(&chosen), left_out }
}

/// What an agent learns about its window while it runs: a window a refusal or a silent truncation
/// revealed, and the calibration of the estimate from the real counts the server reports.
impl super::agent::Agent {
    /// Works with a new window from now on (one a refusal or a truncation revealed): records it
    /// for the server and model, and sizes the answer and the frame to it again.
    pub(super) fn learn_window(&mut self, learnt: u64, why: &str) -> Result<()> {
        if let Some(e) = window::too_small(&self.model, learnt, WindowSource::Learnt) {
            return Err(Error::Sizing { code: "window_too_small", message: e });
        }
        let base = self.provider.lock().base_url().to_string();
        let entry = ModelWindow {
            context_window: Some(learnt),
            max_output_tokens: None,
            origin: WindowOrigin::Learnt,
            learnt_at: now_ms(),
        };
        self.client.store().record_model_window(&base, &self.model, &entry)?;
        let session = self.session.clone();
        let provider = self.provider.lock().name().to_string();
        self.client.store().set_session_model(&session, Some(&provider), Some(&self.model), Some(learnt))?;
        self.notices.push(format!("{why}: Seshat now works with a {learnt}-token window for `{}`", self.model));
        self.window = learnt;
        self.window_source = WindowSource::Learnt;
        self.resize();
        Ok(())
    }

    /// Sizes the answer's room and the frame to the current window. A value that fitted the old
    /// window but not this one is clamped, with a notice (the turn is already under way).
    pub(super) fn resize(&mut self) {
        let max_output = match max_output(self.window, &self.output_ask) {
            Ok((n, notice)) => {
                self.notices.extend(notice);
                n
            }
            Err((message, fits)) => {
                self.notices.push(format!("{message}; using {fits} for now"));
                fits
            }
        };
        self.max_output = u32::try_from(max_output).unwrap_or(u32::MAX);
        let fitted = fit_frame(&self.frame_parts, Marks::new(self.window).frame_budget());
        self.frame = fitted.frame;
        self.specs = fitted.tools;
        self.left_out = fitted.left_out;
    }

    /// Learns how the model's real counts compare with Seshat's estimate, per kind of content
    /// (from a server's count, a reported prompt size, or the size a refusal names), for this
    /// session and model: `sent` is the request counted. The scale the next requests are sized
    /// by is at least 1 (an estimate that runs high is safe); the factors per kind may go either
    /// way, so a request of another mix is sized by what its kinds have shown.
    pub(super) fn calibrate(&mut self, real: u64, sent: &[Msg]) -> Result<()> {
        let tally =
            Tally::of_request(&[&self.frame.system, &self.frame.tools], sent.iter().map(|m| m.parts.as_slice()));
        self.learn_calibration(real, &tally)
    }

    /// [`Self::calibrate`] from a count of a request whose estimate by kind is `tally`.
    pub(super) fn learn_calibration(&mut self, real: u64, tally: &Tally) -> Result<()> {
        let tally = *tally;
        if tally.total() < CALIBRATION_MIN_TOKENS as f64 || real == 0 {
            return Ok(());
        }
        self.kinds.learn(&tally, real);
        let scale = self.kinds.scale(&tally).clamp(0.5, MAX_CALIBRATION);
        let session = self.session.clone();
        let model = self.model.clone();
        self.client.store().set_calibration(&session, &model, scale, Some(&self.kinds.to_json()))?;
        self.calibration = scale.max(1.0);
        Ok(())
    }

    /// Takes up the calibration a compaction learnt from a summary request the model refused
    /// (recorded for the session and the summary model; only the session's model's applies here).
    pub(super) fn reload_calibration(&mut self) -> Result<()> {
        let info = self.client.store().session(&self.session)?;
        self.calibration = self.calibration.max(stored_calibration(&info.metadata, &self.model));
        Ok(())
    }

    /// A server that truncates over-long prompts silently (Ollama) shows it in the prompt tokens it
    /// reports: less than [`TRUNCATED_PERCENT`] of the least any tokenizer counts for what it
    /// sent (`sent_floor`: four characters a token; real tokenizers count prose at 85–105% of it,
    /// code and JSON at 88% and up). The window is then learnt from them and that call's output
    /// (rounded up to a multiple of 1,024, as servers' windows are). Otherwise the count
    /// calibrates the estimate (`sent_estimate`).
    pub(super) fn learn_from_usage(&mut self, answer: &Answer, sent: &Prepared) -> Result<()> {
        let Some(u) = answer.usage else { return Ok(()) };
        let Some(prompt) = u.context_tokens.filter(|&p| p > 0) else { return Ok(()) };
        let (sent_estimate, sent_floor) = (sent.tokens, sent.floor_tokens);
        if prompt.saturating_mul(100) >= sent_floor.saturating_mul(TRUNCATED_PERCENT) {
            return self.calibrate(prompt, &sent.messages);
        }
        // Only a window nobody stated can be wrong this way: a model table's, a flag's, the
        // config's or a refusal's is taken at its word.
        let stated = !matches!(self.window_source, WindowSource::Assumed | WindowSource::Discovered);
        let learnt = (prompt + u.output_tokens).div_ceil(1_024) * 1_024;
        if stated || learnt >= self.window {
            return Ok(());
        }
        if learnt < window::MIN_WINDOW {
            // Too few tokens to be a window anybody serves: a tokenizer far denser than the
            // estimate, or a server counting only the uncached part of the prompt. The request
            // was accepted whole as far as anyone can tell; the window stays as it is.
            self.notices.push(format!(
                "the server counted {prompt} prompt tokens for a request Seshat estimates at ~{sent_estimate}; \
                 the window stays at {} tokens (set `context_window` for `{}` in config.toml if the server cuts \
                 long prompts)",
                self.window, self.model
            ));
            return Ok(());
        }
        self.learn_window(
            learnt,
            &format!(
                "the server counted {prompt} prompt tokens for a request Seshat estimates at ~{sent_estimate}: it cut \
                 the prompt silently (Ollama does when a prompt is longer than its num_ctx)"
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values_that_cannot_fit_are_refused_naming_both_numbers_and_caps_are_clamped() {
        let e = max_output(8_192, &OutputAsk { exact: Some((4_096, "--max-output".into())), ..Default::default() })
            .unwrap_err();
        assert_eq!(e.1, 2_477, "the largest that fits");
        let e = e.0;
        assert!(e.contains("--max-output asks for 4096") && e.contains("at most 2477 fit"), "{e}");
        assert_eq!(
            max_output(8_192, &OutputAsk { exact: Some((2_000, "x".into())), ..Default::default() }).unwrap(),
            (2_000, None)
        );
        let (n, notice) = max_output(8_192, &OutputAsk { cap: Some(16_000), ..Default::default() }).unwrap();
        assert_eq!(n, 2_477);
        assert!(notice.unwrap().contains("max_output_tokens = 16000"));
        assert_eq!(max_output(200_000, &OutputAsk { cap: Some(4_000), ..Default::default() }).unwrap(), (4_000, None));
        assert_eq!(
            max_output(200_000, &OutputAsk { model_limit: Some(8_192), ..Default::default() }).unwrap(),
            (8_192, None)
        );
    }

    fn tool(name: &str, size: usize) -> ToolSpec {
        ToolSpec { name: name.into(), description: "d".repeat(size), parameters: "{}".into() }
    }

    #[test]
    fn the_frame_keeps_what_the_user_wrote_before_optional_tools_and_puts_back_what_fits() {
        let parts = FrameParts {
            base: "base prompt".into(),
            instructions: vec![("AGENTS.md".into(), "a".repeat(400)), ("CLAUDE.md".into(), "c".repeat(400))],
            memory: Some(format!(
                "{}\n_Left out to stay within 2000 tokens: user: 3 notes and 0 entities._",
                (0..20).map(|i| format!("- fact {i} {}", "m".repeat(30))).collect::<Vec<_>>().join("\n")
            )),
            tools: vec![tool("memory_search_nodes", 400), tool("memory_delete_relations", 40), tool("mine", 400)],
            required: ["mine".to_string()].into(),
            default_base: false,
        };
        let all = fit_frame(&parts, 100_000);
        assert!(all.left_out.is_empty());
        assert_eq!(all.tools.len(), 3);

        // Less room: the optional tools go first (the least essential first), the project files
        // and the memory stay; a small tool that fits after a larger one went is put back.
        let names = |f: &FittedFrame| f.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        let without_search = fit_frame(&parts, all.frame.tokens() - 30);
        assert_eq!(without_search.left_out, ["the tool memory_search_nodes"], "{:?}", without_search.left_out);
        assert_eq!(names(&without_search), ["memory_delete_relations", "mine"]);
        assert!(without_search.frame.system.contains("CLAUDE.md") && without_search.frame.system.contains("fact 19"));

        // Less still: the project files in order and the memory's best-ranked lines take what
        // is left once no optional tool fits — never an optional tool before them.
        let small = fit_frame(&parts, 300);
        assert_eq!(
            small.left_out,
            [
                "the project's CLAUDE.md",
                "17 lines of the memory context",
                "the tool memory_search_nodes",
                "the tool memory_delete_relations"
            ],
            "{:?}",
            small.left_out
        );
        assert!(small.frame.system.contains("AGENTS.md") && small.frame.system.contains("fact 2"));
        assert_eq!(names(&small), ["mine"]);
        assert!(small.frame.tokens() <= 300);
        assert!(small.frame.system.contains("more lines of memory left out to fit the window"));
        assert!(small.frame.system.contains("_Left out to stay within 2000 tokens"), "the closing line stays");
        assert!(small.frame.system.contains("fact 0") && !small.frame.system.contains("fact 3 "), "the best-ranked");

        // A chosen tool is never left out, and what cannot fit is said.
        let tiny = fit_frame(&parts, 50);
        assert_eq!(names(&tiny), ["mine"]);
        assert!(tiny.left_out[0].starts_with("nothing more can go"), "{:?}", tiny.left_out);
    }

    #[test]
    fn the_default_prompt_never_names_a_tool_left_out() {
        let parts = FrameParts {
            base: prompt::DEFAULT_SYSTEM_PROMPT.into(),
            tools: vec![tool("memory_search_nodes", 40), tool("history_search", 8_000), tool("history_read", 8_000)],
            default_base: true,
            ..FrameParts::default()
        };
        let fitted = fit_frame(&parts, 1_200);
        assert_eq!(fitted.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["memory_search_nodes"]);
        assert!(fitted.frame.system.contains("`memory_search_nodes`"));
        assert!(!fitted.frame.system.contains("history_search"), "{}", fitted.frame.system);
    }
}
