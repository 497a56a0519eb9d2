//! What a user asks of compaction by hand besides a pass: pin a message, undo the latest pass,
//! rewind the session.

use super::accounting::{Frame, entry_tokens, estimate_request};
use super::{Result, Settings};
use crate::store::Store;
use crate::window::Marks;

/// The most of the target the user's pins may take, in percent.
pub const PIN_SHARE_PERCENT: u64 = 25;

/// Pins message `seq` of a session (and the other side of its tool exchanges, so a pair is never
/// split), unless the pinned messages would then take more than [`PIN_SHARE_PERCENT`] of the
/// target of a `window`-token window: that is refused with how much is pinned. Returns the seqs
/// newly pinned.
pub fn pin(store: &mut Store, session: &str, seq: u64, window: u64) -> Result<Vec<u64>> {
    let allowed = Marks::new(window).target * PIN_SHARE_PERCENT / 100;
    let check = |store: &Store, pinned: &[u64]| -> crate::store::Result<()> {
        let mut tokens = 0;
        for &p in pinned {
            tokens += store.message(session, p)?.map_or(0, |m| entry_tokens(&m.parts));
        }
        if tokens > allowed {
            return Err(crate::store::Error::PinBudget(format!(
                "pinning message {seq} would pin {} messages of ~{tokens} tokens, over the {allowed} tokens pins may \
                 take ({PIN_SHARE_PERCENT}% of the {}-token target of a {window}-token window); nothing was pinned. \
                 Unpin something first",
                pinned.len(),
                Marks::new(window).target
            )));
        }
        Ok(())
    };
    Ok(store.pin(session, seq, check)?)
}

/// Undoes the latest compaction or trim pass of a session (a retraction record; nothing is
/// deleted), unless the live view it restores would not fit the window with the answer's room:
/// that is refused and nothing changes.
pub fn undo(store: &mut Store, session: &str, frame: &Frame, settings: &Settings) -> Result<crate::store::Retracted> {
    Ok(store.retract_latest(session, |store| fits(store, session, frame, settings, "undoing", "undone"))?)
}

/// Rewinds a session to before message `to` (a record; nothing is deleted): the later messages
/// leave the live view, and compactions that summarised one of them are retracted, unless the
/// view that restores would not fit the window with the answer's room: that is refused with the
/// figures and nothing changes.
pub fn rewind(
    store: &mut Store,
    session: &str,
    to: u64,
    frame: &Frame,
    settings: &Settings,
) -> Result<crate::store::Rewound> {
    Ok(store.rewind(session, to, |store| fits(store, session, frame, settings, "rewinding", "rewound"))?)
}

/// Whether the session's live view, as a request with `frame`, fits the window with the answer's
/// room; refused naming `doing` and what was not `done` otherwise.
fn fits(
    store: &Store,
    session: &str,
    frame: &Frame,
    settings: &Settings,
    doing: &str,
    done: &str,
) -> crate::store::Result<()> {
    let Some(window) = settings.context_window else { return Ok(()) };
    let view = store.live_view(session)?;
    let needed = settings.real(estimate_request(frame, &view));
    let limit = Marks::new(window).hard_limit(settings.max_output_tokens);
    if needed > limit {
        return Err(crate::store::Error::Refused(format!(
            "{doing} would make the request ~{needed} tokens, over the {limit} that fit ({window}-token window less \
             {} for the answer); nothing was {done}",
            settings.max_output_tokens
        )));
    }
    Ok(())
}
