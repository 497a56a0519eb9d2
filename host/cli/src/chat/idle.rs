//! The REPL's idle timer: a session left at the prompt past `[compaction] idle_after_secs`, and
//! past the early mark, is compacted in the background while the provider's prompt cache still
//! holds its prefix — the user coming back finds it done, and a turn begun meanwhile does not
//! wait for it (it is swapped in at that turn's next model call).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use seshat::client::{Agent, Observer};
use seshat::compaction::{Report, Summarising};

use crate::{compact, format};

/// What the REPL tells the timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Activity {
    /// The prompt is up: the session is idle from now.
    Prompt,
    /// A line was entered: a turn or a command runs.
    Busy,
}

/// Runs the timer until the REPL ends (`ended`, and its sender dropped): after `after` at the
/// prompt, starts the idle compaction, waits for its summary and swaps it in, saying so above the
/// prompt — then waits for the user before arming again. Leaving the REPL does not wait for the
/// summary (it is not recorded).
pub(super) fn run(agent: &Mutex<&mut Agent>, activity: &Receiver<Activity>, after: Duration, ended: &AtomicBool) {
    let mut notices = Notices { session: String::new() };
    loop {
        // Armed only at the prompt.
        match activity.recv() {
            Ok(Activity::Prompt) => {}
            Ok(Activity::Busy) => continue,
            Err(_) => return,
        }
        match activity.recv_timeout(after) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(_) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let waiter = {
            let mut agent = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            notices.session = agent.session().to_string();
            match agent.start_idle_compaction(&mut notices) {
                Ok(true) => agent.background_waiter(),
                Ok(false) => None,
                Err(e) => {
                    notices.warning(&format!("the idle compaction could not start: {e}"));
                    None
                }
            }
        };
        if let Some(waiter) = waiter {
            // Written without the agent held: a line entered meanwhile runs its turn at once.
            if !waiter.wait_unless(&|| ended.load(Ordering::SeqCst)) {
                return;
            }
            let mut agent = agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(e) = agent.swap_background(false, &mut notices) {
                notices.warning(&format!("the idle compaction could not be recorded: {e}"));
            }
        }
    }
}

/// Prints `text` on its own line where the prompt is (the user is idle: the line is empty), and
/// the prompt again after it. (The line editor's own printer would take the terminal from it.)
fn say(text: &str) {
    eprint!("\r\x1b[2K{text}\n› ");
}

/// The idle compaction's notices, as the REPL words them.
struct Notices {
    session: String,
}

impl Observer for Notices {
    fn compaction_summarising(&mut self, summarising: &Summarising) {
        say(&format!("[{}]", compact::describe_summarising(summarising)));
    }

    fn compaction(&mut self, report: &Report) {
        say(&format!("[{}]", compact::describe(&self.session, report)));
        for line in compact::describe_left(report) {
            say(&format!("  {line}"));
        }
    }

    fn warning(&mut self, message: &str) {
        say(&format!("warning: {}", format::visible(message)));
    }
}
