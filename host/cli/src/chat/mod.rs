//! `seshat chat`: talk to a model. One prompt (`-p`, or piped stdin) runs the agent loop to its
//! final answer and exits; on a terminal without one, an interactive REPL ([`repl`]).

mod held;
mod idle;
mod remote;
mod repl;

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use seshat::client::{Agent, Observer, SessionChoice, TurnOutcome};
use seshat::compaction::{Report, Starting, Summarising};
use seshat::plugins::StreamEvent;
use seshat::providers::Cancel;

use super::{Context, compact, format};

/// Exit code of a turn cut short by Ctrl-C (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;
/// Exit code when nothing is configured to talk to.
const EXIT_NOT_CONFIGURED: u8 = 2;

/// Talk to a model: every turn is saved, compacted when the window fills, and resumable.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run this prompt to the final answer (tool calls included) and exit. Piped stdin follows
    /// it (or is the prompt without it); on a terminal without it, an interactive session starts.
    #[arg(short, long, value_name = "TEXT")]
    prompt: Option<String>,
    /// Print one JSON object with the answer, usage and session (with a prompt).
    #[arg(long)]
    json: bool,
    /// Resume this project's most recent session.
    #[arg(short, long, conflicts_with_all = ["resume", "fork"])]
    r#continue: bool,
    /// Resume the session with this id (or unique prefix).
    #[arg(short, long, value_name = "ID", conflicts_with = "fork")]
    resume: Option<String>,
    /// Continue in a new branch of the session with this id (or unique prefix): a fork of it as
    /// it is now, the original left as it was.
    #[arg(long, value_name = "ID")]
    fork: Option<String>,
    /// The provider to use, as named in config.toml (`anthropic`, `openai`, `ollama`, …).
    #[arg(long)]
    provider: Option<String>,
    /// The model.
    #[arg(short, long)]
    model: Option<String>,
    /// The model's context window in tokens (at least 4096), overriding what the provider, the
    /// config and the session know.
    #[arg(long, value_name = "TOKENS")]
    window: Option<u64>,
    /// The answer's room in tokens (refused, naming the largest that fits, if the window cannot
    /// hold it).
    #[arg(long, value_name = "TOKENS")]
    max_output: Option<u64>,
    /// Do not compact automatically in this run.
    #[arg(long)]
    no_auto_compact: bool,
    /// The model that writes summaries.
    #[arg(long, value_name = "MODEL")]
    summary_model: Option<String>,
    /// Most model calls in one turn.
    #[arg(long, value_name = "N")]
    max_iterations: Option<u32>,
    /// Wait for whole answers instead of streaming them.
    #[arg(long)]
    no_stream: bool,
}

/// Prints a turn's progress: streamed text to stdout, everything else to stderr.
pub(crate) struct Printer {
    /// Stream text to stdout (off for `--json`).
    text: bool,
    /// Whether the current line has text on it.
    mid_line: bool,
    /// Whether thinking is being shown.
    thinking: bool,
    /// The session, for compaction notices.
    session: String,
}

impl Printer {
    pub(crate) fn new(text: bool, session: &str) -> Self {
        Printer { text, mid_line: false, thinking: false, session: session.to_string() }
    }

    pub(crate) fn end_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }
}

impl Observer for Printer {
    fn event(&mut self, event: &StreamEvent) {
        if !self.text {
            return;
        }
        let mut out = format::Visible::new(std::io::stdout().lock());
        match event {
            StreamEvent::TextDelta { text } => {
                if self.thinking {
                    eprintln!();
                    self.thinking = false;
                }
                let _ = out.write_all(text.as_bytes());
                self.mid_line = !text.ends_with('\n');
            }
            StreamEvent::ThinkingDelta { text } => {
                if !self.thinking {
                    eprint!("[thinking] ");
                    self.thinking = true;
                }
                eprint!("{}", format::visible(text));
            }
            _ => {}
        }
        let _ = out.flush();
    }

    fn compaction_started(&mut self, starting: &Starting) {
        self.end_line();
        if !self.text {
            return notice_line("compaction_started", &self.session, starting);
        }
        eprintln!(
            "[compacting: ~{} of {} tokens in use…]",
            format::exact(starting.tokens),
            format::exact(starting.window)
        );
    }

    fn compaction_summarising(&mut self, summarising: &Summarising) {
        self.end_line();
        if !self.text {
            return notice_line("compaction_summarising", &self.session, summarising);
        }
        eprintln!("[{}]", compact::describe_summarising(summarising));
    }

    fn compaction(&mut self, report: &Report) {
        self.end_line();
        if !self.text {
            return notice_line("compaction", &self.session, report);
        }
        eprintln!("[{}]", compact::describe(&self.session, report));
        for line in compact::describe_left(report) {
            eprintln!("  {line}");
        }
    }

    fn tool_call(&mut self, _call_id: &str, name: &str, arguments: &str) {
        self.end_line();
        let args: String = arguments.chars().take(120).collect();
        eprintln!("[tool] {} {}", format::plain(name), format::plain(&args));
    }

    fn tool_result(&mut self, _call_id: &str, name: &str, content: &str, is_error: bool) {
        let lines = content.lines().count();
        let status = if is_error { "failed" } else { "ok" };
        eprintln!("[tool] {} {status} ({lines} lines)", format::plain(name));
    }

    fn warning(&mut self, message: &str) {
        self.end_line();
        eprintln!("warning: {}", format::visible(message));
    }
}

/// A compaction's notice under `--json`: one line of JSON on stderr (`{"notice": KIND,
/// "session": ID, …}` with the figures), so a script reading stdout's one answer can follow the
/// compaction while it runs.
pub(crate) fn notice_line(kind: &str, session: &str, figures: &impl serde::Serialize) {
    let mut line = serde_json::json!({"notice": kind, "session": session});
    if let (Some(line), Ok(serde_json::Value::Object(figures))) = (line.as_object_mut(), serde_json::to_value(figures))
    {
        line.extend(figures);
    }
    eprintln!("{line}");
}

/// What `chat` and `compact` both choose from their flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentFlags {
    pub(crate) session: SessionChoice,
    pub(crate) provider: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) window: Option<u64>,
    pub(crate) max_output: Option<u64>,
    pub(crate) no_auto_compact: bool,
    pub(crate) summary_model: Option<String>,
    pub(crate) max_iterations: Option<u32>,
    pub(crate) no_stream: bool,
}

impl AgentFlags {
    /// The library's overrides these flags make.
    fn overrides(&self) -> seshat::client::Overrides {
        let AgentFlags {
            session: _,
            provider,
            model,
            window,
            max_output,
            no_auto_compact,
            summary_model,
            max_iterations,
            no_stream,
        } = self;
        seshat::client::Overrides {
            provider: provider.clone(),
            model: model.clone(),
            summary_model: summary_model.clone(),
            window: *window,
            max_output: *max_output,
            auto_compact: no_auto_compact.then_some(false),
            max_iterations: *max_iterations,
            stream: no_stream.then_some(false),
            ..seshat::client::Overrides::default()
        }
    }
}

impl Args {
    fn flags(&self) -> AgentFlags {
        AgentFlags {
            session: match (self.resume.as_ref().or(self.fork.as_ref()), self.r#continue) {
                (Some(id), _) => SessionChoice::Resume(id.clone()),
                (None, true) => SessionChoice::Continue,
                (None, false) => SessionChoice::New,
            },
            provider: self.provider.clone(),
            model: self.model.clone(),
            window: self.window,
            max_output: self.max_output,
            no_auto_compact: self.no_auto_compact,
            summary_model: self.summary_model.clone(),
            max_iterations: self.max_iterations,
            no_stream: self.no_stream,
        }
    }
}

/// Builds the agent from the configuration and flags, exactly as `chat` runs it; `Err` with the
/// message (exit code 2) when nothing is configured.
/// What it waits for (a server asked for its models) is said on stderr as it happens.
pub(crate) fn open_agent(ctx: &Context, args: &AgentFlags) -> anyhow::Result<Result<Agent, String>> {
    let mut env = ctx.environment(args.overrides())?;
    env.on_progress(std::sync::Arc::new(|what: &str| eprintln!("[{}]", format::visible(what))));
    agent_in(&env, args, Vec::new())
}

fn agent_in(
    env: &seshat::client::Environment,
    args: &AgentFlags,
    extra_tools: Vec<Box<dyn seshat::client::Tool>>,
) -> anyhow::Result<Result<Agent, String>> {
    match env.agent(args.session.clone(), extra_tools) {
        Ok(agent) => Ok(Ok(agent)),
        Err(seshat::client::Error::Provider(e @ seshat::providers::Error::NotConfigured(_))) => Ok(Err(e.to_string())),
        Err(seshat::client::Error::Plugin(e @ seshat::plugins::Error::NotFound { kind: "provider", .. })) => {
            Ok(Err(e.to_string()))
        }
        Err(e) => Err(e.into()),
    }
}

pub fn run(ctx: &Context, args: &Args, signals: crate::stop::Signals) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    // Piped stdin is the prompt, or follows the `-p` text (`git diff | seshat chat -p "review"`).
    let piped = if stdin.is_terminal() {
        None
    } else {
        let mut text = String::new();
        stdin.lock().read_to_string(&mut text).context("cannot read the prompt from stdin")?;
        Some(text).filter(|t| !t.trim().is_empty())
    };
    let prompt = match (&args.prompt, piped) {
        (Some(p), Some(more)) => Some(format!("{p}\n\n{more}")),
        (Some(p), None) => Some(p.clone()),
        (None, more) if !stdin.is_terminal() => Some(more.unwrap_or_default()),
        (None, _) => None,
    };
    if prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        anyhow::bail!("the prompt is empty: pass -p \"…\" or pipe text to stdin");
    }
    if ctx.remote.is_some() {
        return remote::run(ctx, args, prompt.as_deref(), signals);
    }
    let mut agent = match open_agent(ctx, &args.flags())? {
        Ok(a) => a,
        Err(message) => {
            eprintln!("seshat chat: {}", format::visible(&message));
            return Ok(ExitCode::from(EXIT_NOT_CONFIGURED));
        }
    };
    for note in agent.client().notes() {
        eprintln!("[{}]", format::visible(&note.to_string()));
    }
    if args.fork.is_some() {
        let parent = agent.session().to_string();
        let forked = agent.fork(None)?;
        eprintln!("[{}]", crate::sessions::describe_fork(&parent, &forked));
    }
    // History and memory, when the user opted in to embedding them, are embedded by a thread of
    // their own: no model call waits for it, and a one-shot chat exits without it (what is left
    // stays queued for the next run).
    let background = ctx.environment(Default::default())?.background();
    let poke = || {
        if let Some(b) = &background {
            b.poke();
        }
    };
    let cancel = Cancel::default();
    let work = crate::stop::Work::default();
    on_signals(signals, &work, &cancel, prompt.is_none());
    match prompt {
        Some(p) => one_shot(&mut agent, &p, args.json, &cancel, &work),
        None => repl::run(ctx, &mut agent, &cancel, &poke, &work),
    }
}

/// Every signal chat receives, on the signals thread. Ctrl-C (SIGINT): during a turn the first
/// stops it (what arrived is stored as `interrupted`) and a second in the same turn exits at once
/// with 130; between turns the REPL goes on (at its prompt the line editor reads Ctrl-C as a key
/// and clears the line) and a one-shot chat exits. SIGTERM or SIGHUP: a turn in flight stops and
/// stores what arrived, then chat exits; between turns it exits at once. Either way the terminal
/// gets back the mode it had.
fn on_signals(signals: crate::stop::Signals, work: &crate::stop::Work, cancel: &Cancel, repl: bool) {
    use crate::stop::Interrupt;
    use nix::sys::signal::Signal;
    let (work, cancel) = (work.clone(), cancel.clone());
    let terminal = terminal_mode();
    let exit = move |code: u8| -> ! {
        restore_terminal(terminal.as_ref());
        std::process::exit(i32::from(code));
    };
    signals.on_each(move |signal| match signal {
        Signal::SIGINT => match work.interrupt() {
            Interrupt::Idle if repl => eprintln!("\n(Ctrl-D or /exit leaves)"),
            Interrupt::Idle | Interrupt::Quit => exit(EXIT_INTERRUPTED),
            Interrupt::Stop => {
                cancel.cancel();
                eprintln!("\nseshat chat: stopping the turn once the call in flight returns (Ctrl-C again quits now)");
            }
        },
        _ => work.stop(signal, || exit(crate::stop::exit_status(signal)), || cancel.cancel()),
    });
}

/// The terminal's mode before the REPL changes it (None when stdin is not a terminal).
fn terminal_mode() -> Option<rustix::termios::Termios> {
    rustix::termios::tcgetattr(std::io::stdin()).ok()
}

/// Gives the terminal back `mode` (the line editor may have left it raw).
fn restore_terminal(mode: Option<&rustix::termios::Termios>) {
    if let Some(mode) = mode {
        let _ = rustix::termios::tcsetattr(std::io::stdin(), rustix::termios::OptionalActions::Now, mode);
    }
}

fn one_shot(
    agent: &mut Agent,
    prompt: &str,
    json: bool,
    cancel: &Cancel,
    work: &crate::stop::Work,
) -> anyhow::Result<ExitCode> {
    let mut printer = Printer::new(!json, agent.session());
    work.begin();
    let outcome = agent.claimed_turn(prompt, cancel, &mut printer);
    let stopped = work.end();
    printer.end_line();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) if json => {
            // The shape of every answer, so scripts read one: what is unknown is null or empty.
            let failed = TurnOutcome {
                session: agent.session().to_string(),
                error: Some(e.to_string()),
                error_code: Some(e.code().to_string()),
                context: agent.context_use().ok().flatten(),
                ..TurnOutcome::default()
            };
            format::json(&mut format::stdout(), &failed)?;
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => {
            let code = e.code().to_string();
            return Err(
                anyhow::Error::new(e).context(format!("[{code}] the turn failed (session {})", agent.session()))
            );
        }
    };
    finish(&outcome, json, stopped)
}

/// A one-shot turn's end: the outcome as JSON or the status line, and the exit code (the stop
/// signal's when one stopped it).
fn finish(outcome: &TurnOutcome, json: bool, stopped: Option<nix::sys::signal::Signal>) -> anyhow::Result<ExitCode> {
    if json {
        format::json(&mut format::stdout(), outcome)?;
    } else {
        report(outcome);
    }
    if let Some(signal) = stopped {
        return Ok(ExitCode::from(crate::stop::exit_status(signal)));
    }
    Ok(exit_code(outcome))
}

/// The status line and what went wrong, on stderr.
pub(crate) fn report(o: &TurnOutcome) {
    if o.error_code.as_deref() == Some("empty_answer") {
        eprintln!("no answer: {}", format::visible(o.error.as_deref().unwrap_or_default()));
        eprintln!(
            "hint: /retry asks again in the REPL; --no-stream asks for whole answers (some servers drop a streamed \
             answer when tools are offered)"
        );
    } else if let Some(e) = &o.error {
        eprintln!(
            "{} ({}); what arrived is saved in session {}",
            if o.interrupted { "interrupted" } else { "failed" },
            format::visible(e),
            o.session
        );
    }
    if let Some(c) = &o.context {
        eprintln!("[{}]", format::context_line(c));
    }
}

fn exit_code(o: &TurnOutcome) -> ExitCode {
    match o.error_code.as_deref() {
        Some("interrupted") => ExitCode::from(EXIT_INTERRUPTED),
        Some(_) => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    }
}
