//! The interactive session: line editing and history (rustyline), answers streamed as they
//! arrive, a status line after each turn, and slash commands.

use std::process::ExitCode;

use seshat::client::{Agent, Observer};
use seshat::providers::Cancel;
use seshat::store::ListFilter;

use super::{Printer, report};
use crate::{Context, compact, format};

const HELP: &str = "\
/compact [text]  compact now (summarise older turns), told what to keep
/compact --until seq [text]  summarise everything before message seq, keep the rest verbatim
/uncompact undo the latest compaction or trim pass (the originals were kept)
/pin [seq] keep a message (default: the last) verbatim in every view
/rewind [n]  take back your n-th-last request (default: the last) and what followed, to edit it
/rewind --undo  bring the rewound messages back (until you send something)
/fork [seq]  continue in a new branch from message seq (default: now); this one stays as it is
/retry     ask again for an answer to your last message (after an empty or interrupted one)
/context   what fills the context window, by part
/sessions  this project's recent sessions
/memory    the memory this session started with
/help      this list
/exit      leave (Ctrl-D too); Ctrl-C stops an answer";

pub fn run(
    ctx: &Context,
    agent: &mut Agent,
    cancel: &Cancel,
    poke: &dyn Fn(),
    work: &crate::stop::Work,
) -> anyhow::Result<ExitCode> {
    let session = agent.session().to_string();
    let started_empty = agent.client().store().session(&session)?.message_count == 0;
    // The session lives past its turns: summaries are written in the background, and an idle
    // session is compacted while the provider's cache holds it.
    let background = agent.enable_background();
    let idle_after = agent.client().config().compaction.idle_after();
    let keys = std::sync::Arc::new(super::idle::Keys::default());
    let mut editor = rustyline::Editor::<super::idle::Watch, rustyline::history::DefaultHistory>::new()?;
    editor.set_helper(Some(super::idle::Watch(keys.clone())));
    let history = ctx.dirs.data.join("chat-history.txt");
    let _ = editor.load_history(&history);
    eprintln!("seshat · session {} · {} · /help for commands", agent.session(), agent.model());
    if let Ok(Some(c)) = agent.context_use() {
        eprintln!("[{}]", format::context_line(&c));
    }
    let shared = std::sync::Mutex::new(agent);
    let ended = Cancel::default();
    let code = std::thread::scope(|scope| {
        let (activity, heard) = std::sync::mpsc::channel();
        if background {
            let (shared, ended, keys) = (&shared, &ended, &*keys);
            scope.spawn(move || super::idle::run(shared, &heard, idle_after, keys, ended));
        }
        let code = turns(&shared, &mut editor, (&activity, &keys), cancel, poke, work);
        // The timer ends with its sender, and stops waiting for a summary or filling the cache.
        ended.cancel();
        drop(activity);
        code
    })?;
    let agent = shared.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    // A session started here and left without a word is not kept: `--continue` would pick it
    // next time instead of the conversation the user means.
    if started_empty && agent.client().store().session(&session)?.message_count == 0 {
        agent.client().store().delete_session(&session)?;
    }
    if let Some(dir) = history.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = editor.save_history(&history);
    Ok(code)
}

/// The prompt and the turns, until the user leaves; the idle timer hears when the prompt is up
/// and when a line was entered.
fn turns(
    shared: &std::sync::Mutex<&mut Agent>,
    editor: &mut rustyline::Editor<super::idle::Watch, rustyline::history::DefaultHistory>,
    (activity, keys): (&std::sync::mpsc::Sender<super::idle::Activity>, &super::idle::Keys),
    cancel: &Cancel,
    poke: &dyn Fn(),
    work: &crate::stop::Work,
) -> anyhow::Result<ExitCode> {
    use super::idle::Activity;
    let mut code = ExitCode::SUCCESS;
    // A request given back by /rewind, offered for editing at the next prompt.
    let mut offered: Option<String> = None;
    loop {
        let _ = activity.send(Activity::Prompt);
        let Some(line) = read(editor, offered.take())? else {
            for notice in keys.take_held() {
                eprintln!("{notice}");
            }
            break;
        };
        let _ = activity.send(Activity::Busy);
        let mut guard = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // What the background said while the user was typing (all of it: the timer says nothing
        // while the agent is held).
        for notice in keys.take_held() {
            eprintln!("{notice}");
        }
        let agent: &mut Agent = &mut guard;
        let input = line.as_str();
        let mut retry = false;
        if input.starts_with('/') {
            match command(agent, input, cancel, work) {
                Ok(Next::Prompt(text)) => {
                    offered = text;
                    continue;
                }
                Ok(Next::Exit) => break,
                Ok(Next::Retry) => retry = true,
                Err(e) => {
                    eprintln!("error: {}", format::visible(&format!("{e:#}")));
                    continue;
                }
            }
        }
        cancel.reset();
        let mut printer = Printer::new(true, agent.session());
        work.begin();
        // What is typed or pasted while the answer comes is held, and offered as one message.
        let held = super::held::Held::begin();
        let outcome = match retry {
            true => agent.claimed_run(cancel, &mut printer),
            false => agent.claimed_turn(input, cancel, &mut printer),
        };
        let stopped = work.end();
        let typed = held.end();
        printer.end_line();
        poke();
        match outcome {
            Ok(o) => report(&o),
            Err(e) => {
                eprintln!("error [{}]: {}", e.code(), format::visible(&e.to_string()));
                if let Some(hint) = crate::hints::hint_for(&e) {
                    eprintln!("hint: {hint}");
                }
            }
        }
        if let Some(signal) = stopped {
            code = ExitCode::from(crate::stop::exit_status(signal));
            break;
        }
        if let Some(text) = typed {
            eprintln!(
                "(what you typed while the answer came is at the prompt, as one message: edit it or press Enter)"
            );
            offered = Some(format::visible(&text).into_owned());
        }
    }
    Ok(code)
}

/// The next line the user enters (trimmed, not empty, kept in the editor's history), `text`
/// offered for editing first; `None` at the end of the input (Ctrl-D). Ctrl-C at the prompt is a
/// key: the line is cleared and the prompt comes again.
pub(super) fn read<H: rustyline::Helper>(
    editor: &mut rustyline::Editor<H, rustyline::history::DefaultHistory>,
    mut text: Option<String>,
) -> anyhow::Result<Option<String>> {
    loop {
        let read = match text.take() {
            Some(text) => editor.readline_with_initial("› ", (&text, "")),
            None => editor.readline("› "),
        };
        let line = match read {
            Ok(line) => line,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                eprintln!("(Ctrl-D or /exit leaves)");
                continue;
            }
            Err(rustyline::error::ReadlineError::Eof) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let input = line.trim();
        if !input.is_empty() {
            let _ = editor.add_history_entry(input);
            return Ok(Some(input.to_string()));
        }
    }
}

/// What follows a slash command.
enum Next {
    /// The prompt again, with this text offered for editing.
    Prompt(Option<String>),
    /// The end of the session.
    Exit,
    /// The session's last request asked again, with no new message.
    Retry,
}

/// Runs a slash command.
fn command(agent: &mut Agent, input: &str, cancel: &Cancel, work: &crate::stop::Work) -> anyhow::Result<Next> {
    let name = input.split_whitespace().next().unwrap_or_default();
    let arg = input.split_whitespace().nth(1);
    match name {
        "/exit" | "/quit" => return Ok(Next::Exit),
        "/rewind" if arg == Some("--undo") => {
            let undone = agent.undo_rewind()?;
            eprintln!("{}", crate::sessions::describe_rewind_in_repl(&undone, true));
        }
        "/rewind" => {
            let n = match arg {
                Some(n) => n.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    anyhow::anyhow!(
                        "/rewind takes how many of your requests to take back (1, 2, …) or --undo, not `{n}`"
                    )
                })?,
                None => 1,
            };
            let (rewound, request) = agent.rewind(n)?;
            eprintln!("{}", crate::sessions::describe_rewind_in_repl(&rewound, false));
            eprintln!("(your request is back at the prompt: edit it and press Enter, or Ctrl-C to clear it)");
            return Ok(Next::Prompt(Some(format::visible(&request).into_owned())));
        }
        "/fork" => {
            let at = match arg {
                Some(n) => Some(n.parse::<u64>().map_err(|_| anyhow::anyhow!("/fork takes a message seq, not `{n}`"))?),
                None => None,
            };
            let parent = agent.session().to_string();
            let forked = agent.fork(at)?;
            eprintln!("{}", crate::sessions::describe_fork(&parent, &forked));
            eprintln!("(now talking in {}; {parent} stays as it was)", forked.session.id);
        }
        "/help" => eprintln!("{HELP}"),
        "/retry" => return Ok(Next::Retry),
        "/compact" => {
            let mut text = input.strip_prefix("/compact").unwrap_or_default().trim();
            // `/compact --until SEQ [text]`: everything before message SEQ, whatever the target.
            let mut until = None;
            if let Some(rest) = text.strip_prefix("--until") {
                let rest = rest.trim_start();
                let (seq, more) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                until = Some(seq.parse::<u64>().map_err(|_| {
                    anyhow::anyhow!(
                        "/compact --until takes a message seq (as `seshat sessions show` lists them), not `{seq}`"
                    )
                })?);
                text = more.trim();
            }
            // Ctrl-C stops it, its summary call included; the session stays as it was.
            cancel.reset();
            agent.set_cancel(cancel);
            work.begin();
            let mut printer = Printer::new(true, agent.session());
            let report = agent.compact_observed(false, (!text.is_empty()).then_some(text), until, &mut printer);
            let _ = work.end();
            printer.compaction(&report?);
        }
        "/uncompact" => {
            let undone = agent.undo_compaction()?;
            eprintln!("{}", compact::describe_undo(agent.session(), &undone));
        }
        "/pin" => {
            let seq = match input.split_whitespace().nth(1) {
                Some(n) => Some(n.parse::<u64>().map_err(|_| anyhow::anyhow!("/pin takes a message seq, not `{n}`"))?),
                None => None,
            };
            let added = agent.pin(seq)?;
            eprintln!("{}", super::super::sessions::describe_pin(&added));
        }
        "/context" => {
            let rows = agent.context_breakdown()?;
            let total: u64 = rows.iter().map(|(_, t)| t).sum();
            for (label, tokens) in rows.iter().filter(|(_, t)| *t > 0) {
                eprintln!("{:>8}  {label}", format::tokens(*tokens));
            }
            eprintln!("{:>8}  total (estimated)", format::tokens(total));
            let (window, source) = agent.window();
            eprintln!(
                "window: {} tokens ({}); answers get up to {}",
                format::tokens(window),
                window_source(source),
                format::tokens(u64::from(agent.max_output()))
            );
            eprintln!("{}", format::counting(&agent.counting()));
            for left in agent.left_out() {
                eprintln!("left out to fit the window: {}", format::visible(left));
            }
            if let Some(c) = agent.context_use()? {
                eprintln!("[{}]", format::context_line(&c));
            }
        }
        "/sessions" => {
            let session = agent.session().to_string();
            let project = agent.client().store().session(&session)?.project;
            let store = agent.client().store();
            let sessions = store.list_sessions(&ListFilter { project: Some(project), limit: Some(10) })?;
            let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
            let short = store.short_ids(&ids)?;
            for (s, id) in sessions.iter().zip(short) {
                let title = s.title.as_deref().unwrap_or("(untitled)");
                eprintln!(
                    "{id}  {}  {:>4} msgs  {}",
                    format::time(s.updated_at),
                    s.message_count,
                    format::clip(title, 60)
                );
            }
        }
        "/memory" => {
            let session = agent.session().to_string();
            let info = agent.client().store().session(&session)?;
            match info.metadata["memory_context"]["text"].as_str().filter(|t| !t.is_empty()) {
                Some(text) => eprintln!("{}", format::visible(text)),
                None => eprintln!("(no memory was given to this session)"),
            }
            // What the model received: the window may have left some of it out.
            for left in agent.left_out().iter().filter(|l| l.ends_with("lines of the memory context")) {
                eprintln!("(left out of what the model receives, to fit the window: {left})");
            }
        }
        other => eprintln!("unknown command {}; /help lists them", format::plain(other)),
    }
    Ok(Next::Prompt(None))
}

/// Where a window came from, for people.
fn window_source(source: seshat::window::WindowSource) -> &'static str {
    use seshat::window::WindowSource as S;
    match source {
        S::Flag => "from --window",
        S::Config => "from config.toml",
        S::Learnt => "learnt from the server's refusal or truncation",
        S::Table => "from the model table",
        S::Discovered => "discovered from the server",
        S::Assumed => "assumed: nothing said what it is; set it with --window",
    }
}
