//! Compaction's errors and their stable codes.

use crate::window;

/// Errors of the compaction pipeline. [`Error::code`] gives stable codes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request does not fit the model's window and compaction could not make it fit.
    #[error(
        "compact_full: the request needs ~{needed} tokens but at most {limit} fit ({window}-token window less \
         {max_output} for the answer){hint}"
    )]
    CompactFull {
        /// Estimated request size.
        needed: u64,
        /// The hard limit.
        limit: u64,
        /// The model's window.
        window: u64,
        /// Room kept for the answer.
        max_output: u64,
        /// What the user can do.
        hint: String,
    },
    /// The summary could not be written; the turn ends, the user's message stays saved.
    #[error("compaction failed ({failures} in a row): {message}")]
    SummaryFailed {
        /// Failures in a row, this one included.
        failures: u32,
        /// What went wrong.
        message: String,
    },
    /// The window is below [`window::MIN_WINDOW`](crate::window::MIN_WINDOW): nothing was
    /// compacted or recorded.
    #[error("{0}")]
    WindowTooSmall(String),
    /// The session's window is unknown and none was given: nothing was compacted or recorded
    /// (coded `window_too_small` too, as before it had a variant of its own).
    #[error(
        "the context window of session {0} is unknown: give its window (at least {min} tokens)",
        min = window::MIN_WINDOW
    )]
    WindowUnknown(String),
    /// The store failed (including a conflicting concurrent change).
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// A plugin failed outside the summary (the trimmer).
    #[error(transparent)]
    Plugin(#[from] crate::plugins::Error),
    /// Stopped by the user (the settings' cancel): nothing of it was kept, and it counts as no
    /// failure.
    #[error("interrupted: the compaction was stopped; the session is as it was")]
    Interrupted,
}

impl Error {
    /// A stable code: `compact_full`, `compact_failed`, or the underlying error's.
    pub fn code(&self) -> &'static str {
        match self {
            Error::CompactFull { .. } => "compact_full",
            Error::SummaryFailed { .. } => "compact_failed",
            Error::WindowTooSmall(_) | Error::WindowUnknown(_) => "window_too_small",
            Error::Store(e) => e.code(),
            Error::Plugin(e) => e.code(),
            Error::Interrupted => "interrupted",
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
