//! Stopping a long-running command by signal — SIGTERM (`systemctl stop`, `docker stop`), SIGHUP
//! (the terminal went away) and, where the command does not read Ctrl-C itself, SIGINT — the way
//! the end of its input stops it: what is in flight is interrupted and stored, then the process
//! exits.
//!
//! The signals are blocked before the command starts any thread (every thread inherits the
//! mask, and `std::process::Command` clears it in children) and received by one thread of their
//! own with `sigwait`, so the work done on a signal is ordinary code, not a signal handler.

use std::sync::{Arc, Mutex};

use nix::sys::signal::{SigSet, Signal};

/// The stop signals, blocked in this process; [`Signals::on_stop`] starts their thread.
pub(crate) struct Signals(SigSet);

/// Blocks `signals` in the calling thread and every thread it starts from now on. Call it before
/// any thread exists: a thread started earlier would still die of them.
pub(crate) fn block(signals: &[Signal]) -> anyhow::Result<Signals> {
    let mut set = SigSet::empty();
    for s in signals {
        set.add(*s);
    }
    set.thread_block().map_err(|e| anyhow::anyhow!("cannot block the stop signals: {e}"))?;
    Ok(Signals(set))
}

/// The exit status of a process stopped by `signal`, as a shell reports one (128 + its number).
pub(crate) fn exit_status(signal: Signal) -> u8 {
    128 + signal as u8
}

impl Signals {
    /// Runs `stop` with the first signal that arrives, on a thread of its own; `stop` ends the
    /// process (it never returns, or the process goes on without stop signals).
    pub(crate) fn on_stop(self, stop: impl FnOnce(Signal) + Send + 'static) {
        let mut stop = Some(stop);
        self.on_each(move |signal| {
            if let Some(stop) = stop.take() {
                stop(signal);
            }
        });
    }

    /// Runs `each` with every signal as it arrives, on a thread of its own, for the life of the
    /// process (`each` may end it).
    pub(crate) fn on_each(self, mut each: impl FnMut(Signal) + Send + 'static) {
        std::thread::Builder::new()
            .name("seshat-signals".into())
            .spawn(move || {
                while let Ok(signal) = self.0.wait() {
                    tracing::debug!(?signal, "signal");
                    each(signal);
                }
            })
            .map(drop)
            .unwrap_or_else(|e| tracing::warn!("no thread for the signals: {e}"));
    }
}

/// What an interrupt (Ctrl-C) does, by when it comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// Between units of work: nothing to stop.
    Idle,
    /// The first during a unit of work: stop it, keep what arrived.
    Stop,
    /// Again during the same unit: quit at once.
    Quit,
}

/// Whether the command is between units of work (nothing in flight: a signal may end the process
/// at once) or inside one (a signal interrupts it and asks it to end the process afterwards).
#[derive(Debug, Clone, Default)]
pub(crate) struct Work(Arc<Mutex<WorkState>>);

#[derive(Debug, Default)]
struct WorkState {
    busy: bool,
    stop: Option<Signal>,
    /// Interrupts during the unit of work in progress.
    interrupts: u32,
}

impl Work {
    /// Marks the start of a unit of work. (A stop signal between units ends the process under
    /// the lock this takes, so no work begins after one.)
    pub(crate) fn begin(&self) {
        let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.busy = true;
        state.interrupts = 0;
    }

    /// An interrupt (Ctrl-C) arrived: what it means now. Counted per unit of work, so a second
    /// one quits only when it comes during the same unit as the first.
    pub(crate) fn interrupt(&self) -> Interrupt {
        let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !state.busy {
            return Interrupt::Idle;
        }
        state.interrupts += 1;
        if state.interrupts == 1 { Interrupt::Stop } else { Interrupt::Quit }
    }

    /// Marks the end of a unit of work (its results stored); the stop signal that arrived during
    /// it, if one did — the caller then ends the process.
    pub(crate) fn end(&self) -> Option<Signal> {
        let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.busy = false;
        state.stop
    }

    /// On a stop signal: when idle, or when a stop signal came before (a second one does not
    /// wait), runs `idle` under the lock (which ends the process), so no work can begin
    /// meanwhile; when busy, records the signal and runs `interrupt`.
    pub(crate) fn stop(&self, signal: Signal, idle: impl FnOnce(), interrupt: impl FnOnce()) {
        let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let again = state.stop.replace(signal).is_some();
        if state.busy && !again {
            drop(state);
            interrupt();
        } else {
            idle();
        }
    }
}
