//! The REPL's background work between turns. A summary the last turn started in the background
//! (past the early mark) is swapped in at the prompt as soon as it is written, and a local
//! server's prompt cache filled with the compacted conversation, so the next turn neither waits
//! for the summary nor reads the new conversation cold. A session left at the prompt past
//! `[compaction] idle_after_secs` (no key pressed), and past the idle mark, is compacted in the
//! background while the provider's prompt cache still holds its prefix. What it says appears above
//! an empty prompt, or, when the user has begun typing, above the next turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seshat::client::{Agent, Observer};
use seshat::compaction::{Report, Summarising};
use seshat::providers::Cancel;

use crate::{compact, format};

/// What the REPL tells the timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Activity {
    /// The prompt is up: the session is idle from now.
    Prompt,
    /// A line was entered: a turn or a command runs.
    Busy,
}

/// What the user does at the prompt, as the line editor sees it (its hinter is asked at every key),
/// and what the timer held back for them.
#[derive(Debug, Default)]
pub(super) struct Keys {
    /// The prompt's line holds text.
    typed: AtomicBool,
    /// When a key was last pressed (or the prompt came up).
    last: Mutex<Option<Instant>>,
    /// Notices held back while the user was typing, shown before the next turn.
    held: Mutex<Vec<String>>,
}

impl Keys {
    /// The notices held back while the user typed, to print now (a line was entered).
    pub(super) fn take_held(&self) -> Vec<String> {
        std::mem::take(&mut *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// How long since a key was pressed at the prompt (or it came up).
    fn quiet_for(&self) -> Duration {
        self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner).map_or(Duration::MAX, |t| t.elapsed())
    }

    /// Prints `text` on its own line where the prompt is when its line is empty (the prompt again
    /// after it: the line editor's own printer would take the terminal from it); holds it for the
    /// next turn when the user is typing (printing would hide what they typed).
    fn say(&self, text: String) {
        if self.typed.load(Ordering::SeqCst) {
            self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(text);
        } else {
            eprint!("\r\x1b[2K{text}\n› ");
        }
    }
}

/// The line editor's helper: it only watches the keys.
pub(super) struct Watch(pub(super) Arc<Keys>);

impl rustyline::hint::Hinter for Watch {
    type Hint = String;

    fn hint(&self, line: &str, _pos: usize, _ctx: &rustyline::Context<'_>) -> Option<String> {
        self.0.typed.store(!line.is_empty(), Ordering::SeqCst);
        *self.0.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        None
    }
}

impl rustyline::completion::Completer for Watch {
    type Candidate = String;
}
impl rustyline::highlight::Highlighter for Watch {}
impl rustyline::validate::Validator for Watch {}
impl rustyline::Helper for Watch {}

/// Runs the timer until the REPL ends (`ended` cancelled, and its sender dropped). At the prompt:
/// a summary being written in the background is waited for (without the agent) and swapped in,
/// then the prompt cache filled; otherwise, after `after` with no key pressed, the idle compaction
/// is started and treated the same way. Then it waits for the user before arming again. Leaving
/// the REPL stops the waiting and the cache's filling (a summary not swapped in is not recorded).
pub(super) fn run(
    agent: &Mutex<&mut Agent>,
    activity: &Receiver<Activity>,
    after: Option<Duration>,
    keys: &Keys,
    ended: &Cancel,
) {
    let mut notices = Notices { session: String::new(), keys };
    loop {
        // Armed only at the prompt.
        match activity.recv() {
            Ok(Activity::Prompt) => {}
            Ok(Activity::Busy) => continue,
            Err(_) => return,
        }
        let running = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner).background_waiter();
        let waiter = match running {
            Some(waiter) => Some(waiter),
            None => {
                let Some(after) = after else { continue };
                match idle(activity, after, keys) {
                    Waited::Quiet => {}
                    Waited::Busy => continue,
                    Waited::Ended => return,
                }
                let mut agent = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                notices.session = agent.session().to_string();
                agent.idle_compaction(&mut notices)
            }
        };
        let Some(waiter) = waiter else { continue };
        // Written without the agent held: a line entered meanwhile runs its turn at once (and
        // swaps the summary in itself).
        if !waiter.wait_unless(&|| ended.is_cancelled()) {
            return;
        }
        let warming = {
            let mut agent = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            notices.session = agent.session().to_string();
            agent.swap_between_turns(&mut notices)
        };
        // Sent without the agent held, over the background's connection: a turn begun meanwhile
        // goes to the server beside it (or after it, on a server that serves one at a time, and
        // then finds the conversation cached).
        if let Some(warming) = warming {
            warming.fill(ended);
        }
    }
}

/// What became of the wait for the user to be idle.
enum Waited {
    /// No key pressed for the whole time at the prompt.
    Quiet,
    /// A line was entered.
    Busy,
    /// The REPL ended.
    Ended,
}

/// Waits until the prompt has been up `after` with no key pressed (a key restarts the wait).
fn idle(activity: &Receiver<Activity>, after: Duration, keys: &Keys) -> Waited {
    let mut wait = after;
    loop {
        match activity.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(_) => return Waited::Busy,
            Err(RecvTimeoutError::Disconnected) => return Waited::Ended,
        }
        let quiet = keys.quiet_for();
        if quiet >= after {
            return Waited::Quiet;
        }
        wait = after - quiet;
    }
}

/// The background's notices, as the REPL words them.
struct Notices<'k> {
    session: String,
    keys: &'k Keys,
}

impl Observer for Notices<'_> {
    fn compaction_summarising(&mut self, summarising: &Summarising) {
        self.keys.say(format!("[{}]", compact::describe_summarising(summarising)));
    }

    fn compaction(&mut self, report: &Report) {
        self.keys.say(format!("[{}]", compact::describe(&self.session, report)));
        for line in compact::describe_left(report) {
            self.keys.say(format!("  {line}"));
        }
    }

    fn warning(&mut self, message: &str) {
        self.keys.say(format!("warning: {}", format::visible(message)));
    }
}
