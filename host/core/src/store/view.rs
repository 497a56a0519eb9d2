//! The live view: what the next model request is built from.
//!
//! It is derived, never stored: the latest successful compaction not undone (its summary as one
//! user-role message ending with [`COMPACTION_MARKER`]), then the messages before its cut that stay
//! verbatim — the latest user request it pinned and the user's pins — then every message from the
//! first kept one, with the trims not undone applied (never to a pinned message), leaving out the
//! messages a rewind in force hides. A message made
//! only of tool results whose calls are not before them in the view (orphans a repaired import
//! kept), or of no parts at all, stays in the full history only.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::db::params;
use super::messages::{COMPACTION_COLUMNS, TRIM_COLUMNS, compaction_from_row, trim_from_row};
use super::pins::{LIVE_COMPACTION, LIVE_TRIM};
use super::{Compaction, Message, SessionInfo, Trim};
use super::{Result, Store};
use crate::conversation::{MessageStatus, Part, Role};
pub use seshat_protocol::view::{Origin, ViewEntry};

/// The fixed marker that follows a summary in the live view. Documented in the README; tools and
/// people can search for it.
pub const COMPACTION_MARKER: &str = "[Seshat: the conversation above this point was compacted into the summary \
     above. The original messages are kept in the session history.]";

/// The text of the user-role message that stands for the compacted history.
pub fn summary_text(summary: &str) -> String {
    format!("Summary of the earlier conversation:\n\n{}\n\n{COMPACTION_MARKER}", summary.trim())
}

/// What the next model request is built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveView {
    /// The session.
    pub session: SessionInfo,
    /// The compaction in force, if any.
    pub compaction: Option<Compaction>,
    /// The messages, in order.
    pub entries: Vec<ViewEntry>,
    /// What the view was built from, for [`Store::refresh_live_view`].
    #[serde(skip)]
    stamp: ViewStamp,
    /// The ids of the calls in the view so far (a result must follow its call).
    #[serde(skip)]
    calls: HashSet<String>,
}

/// The records a live view reflects: the messages up to `message_count`, the latest successful
/// compaction and the latest trim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ViewStamp {
    message_count: u64,
    compaction_id: i64,
    trim_id: i64,
    retraction_id: i64,
    pins: (i64, i64),
    /// The latest rewind and how many were undone.
    rewinds: (i64, i64),
}

impl Store {
    /// The live view of a session.
    pub fn live_view(&self, session: &str) -> Result<LiveView> {
        on_db!(self, "read the live view", {
            let stamp = self.view_stamp(session)?;
            let info = self.session(session)?;
            let compaction = self.db.query_opt(
                &format!(
                    "SELECT {COMPACTION_COLUMNS} FROM compactions c WHERE session_id = ?1 AND status = 'ok' \
                     AND {LIVE_COMPACTION} ORDER BY id DESC LIMIT 1"
                ),
                params![session],
                compaction_from_row,
            )?;
            let first_kept = compaction.as_ref().and_then(|c| c.first_kept_seq).unwrap_or(1);
            let pins: HashSet<u64> = self.pinned(session)?.into_iter().collect();
            let rewinds = self.rewinds_in_force(session)?;
            let hidden = |seq: u64| rewinds.iter().any(|r| (r.from_seq..=r.through_seq).contains(&seq));
            let earliest_pin = pins.iter().copied().min().unwrap_or(first_kept);
            let from = first_kept.min(pinned_of(compaction.as_ref(), first_kept)).min(earliest_pin);
            let mut trims = self.trims_from(session, from)?;
            for seq in &pins {
                trims.remove(seq);
            }

            let mut entries = Vec::new();
            let mut calls = HashSet::new();
            if let Some(c) = &compaction {
                entries.push(ViewEntry {
                    origin: Origin::Summary,
                    seq: None,
                    role: Role::User,
                    parts: vec![Part::Text { text: summary_text(c.summary.as_deref().unwrap_or_default()) }],
                    status: MessageStatus::Synthetic,
                    usage: None,
                    trims: Vec::new(),
                    pinned: false,
                });
                // Before the cut, in order: the request the compaction pinned and the user's pins.
                let request = c.pinned_seq.filter(|&p| p < first_kept);
                let mut before: Vec<u64> = pins.iter().copied().filter(|&p| p < first_kept).collect();
                before.extend(request.filter(|r| !pins.contains(r)));
                before.sort_unstable();
                for seq in before.into_iter().filter(|&s| !hidden(s)) {
                    if let Some(msg) = self.messages_between(session, seq, seq)?.pop() {
                        let origin = if pins.contains(&seq) { Origin::UserPin } else { Origin::Pinned };
                        entries.extend(self.admit(session, &mut calls, entry(origin, msg, &mut trims, &pins))?);
                    }
                }
            }
            for msg in self.messages_from(session, first_kept)?.into_iter().filter(|m| !hidden(m.seq)) {
                entries.extend(self.admit(session, &mut calls, entry(Origin::Kept, msg, &mut trims, &pins))?);
            }
            Ok(LiveView { session: info, compaction, entries, stamp, calls })
        })
    }

    /// Brings `view` up to date: when no compaction or trim was recorded since it was built, only
    /// the messages appended since are read (what a long session's every turn needs); otherwise
    /// it is rebuilt. Read in one transaction, so the check and the read agree.
    pub fn refresh_live_view(&self, view: &mut LiveView) -> Result<()> {
        on_db!(self, "refresh the live view", {
            let session = view.session.id.clone();
            let tx = self.db.snapshot()?;
            super::sessions::owned(&self.db, &session, &self.user)?;
            let stamp = self.view_stamp(&session)?;
            let same = stamp.compaction_id == view.stamp.compaction_id
                && stamp.trim_id == view.stamp.trim_id
                && stamp.retraction_id == view.stamp.retraction_id
                && stamp.pins == view.stamp.pins
                && stamp.rewinds == view.stamp.rewinds;
            if !same || stamp.message_count < view.stamp.message_count {
                *view = self.live_view(&session)?;
            } else if stamp.message_count > view.stamp.message_count {
                let (mut none, no_pins) = (HashMap::new(), HashSet::new());
                for msg in self.messages_from(&session, view.stamp.message_count + 1)? {
                    let admitted =
                        self.admit(&session, &mut view.calls, entry(Origin::Kept, msg, &mut none, &no_pins))?;
                    view.entries.extend(admitted);
                }
                view.session = self.session(&session)?;
                view.stamp = stamp;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn view_stamp(&self, session: &str) -> Result<ViewStamp> {
        self.db.query_row(
            "SELECT (SELECT message_count FROM sessions WHERE id = ?1), \
                 (SELECT coalesce(max(id), 0) FROM compactions WHERE session_id = ?1 AND status = 'ok'), \
                 (SELECT coalesce(max(id), 0) FROM trims WHERE session_id = ?1), \
                 (SELECT coalesce(max(id), 0) FROM retractions WHERE session_id = ?1), \
                 (SELECT count(*) FROM pins WHERE session_id = ?1 AND removed_seq IS NULL), \
                 (SELECT coalesce(max(id), 0) FROM pins WHERE session_id = ?1), \
                 (SELECT coalesce(max(id), 0) FROM rewinds WHERE session_id = ?1), \
                 (SELECT count(undone_at) FROM rewinds WHERE session_id = ?1)",
            params![session],
            |r| {
                Ok(ViewStamp {
                    message_count: r.get::<Option<u64>>(0)?.unwrap_or(0),
                    compaction_id: r.get(1)?,
                    trim_id: r.get(2)?,
                    retraction_id: r.get(3)?,
                    pins: (r.get(4)?, r.get(5)?),
                    rewinds: (r.get(6)?, r.get(7)?),
                })
            },
        )
    }

    /// `entry`, unless every part of it is a tool result answering no call before it in the
    /// session (or it has no part); notes its calls in `calls`. A result whose call lies before
    /// the view (compacted into the summary) answers a call all the same. A message mixing such a
    /// result with other parts stays whole (its parts keep their positions, which trims name), and
    /// pairing leaves the orphan out of the request.
    fn admit(&self, session: &str, calls: &mut HashSet<String>, entry: ViewEntry) -> Result<Option<ViewEntry>> {
        let unseen = |p: &Part| matches!(p, Part::ToolResult { call_id, .. } if !calls.contains(call_id));
        if entry.parts.iter().all(unseen) {
            let before = entry.seq.unwrap_or(u64::MAX >> 1);
            let mut answers = false;
            for part in &entry.parts {
                if let Part::ToolResult { call_id, .. } = part
                    && super::messages::has_call(&self.db, session, call_id, before)?
                {
                    answers = true;
                    break;
                }
            }
            if !answers {
                return Ok(None);
            }
        }
        calls.extend(entry.parts.iter().filter_map(Part::tool_call_id).map(str::to_string));
        Ok(Some(entry))
    }

    /// Trims of messages with `seq >= from`, grouped by seq, oldest first.
    fn trims_from(&self, session: &str, from: u64) -> Result<HashMap<u64, Vec<Trim>>> {
        let trims = self.db.query_vec(
            &format!(
                "SELECT {TRIM_COLUMNS} FROM trims t WHERE session_id = ?1 AND seq >= ?2 AND {LIVE_TRIM} ORDER BY id"
            ),
            params![session, from],
            trim_from_row,
        )?;
        let mut by_seq: HashMap<u64, Vec<Trim>> = HashMap::new();
        for trim in trims {
            by_seq.entry(trim.seq).or_default().push(trim);
        }
        Ok(by_seq)
    }
}

fn pinned_of(c: Option<&Compaction>, default: u64) -> u64 {
    c.and_then(|c| c.pinned_seq).unwrap_or(default)
}

/// A view entry for `msg` with its trims applied (the latest trim of a part wins; the caller
/// leaves pinned messages' trims out).
fn entry(origin: Origin, msg: Message, trims: &mut HashMap<u64, Vec<Trim>>, pins: &HashSet<u64>) -> ViewEntry {
    let trims = trims.remove(&msg.seq).unwrap_or_default();
    let mut parts = msg.parts;
    for trim in &trims {
        if let Some(Part::ToolResult { content, .. }) = parts.get_mut(trim.part as usize) {
            content.clone_from(&trim.replacement);
        }
    }
    let pinned = pins.contains(&msg.seq);
    ViewEntry { origin, seq: Some(msg.seq), role: msg.role, parts, status: msg.status, usage: msg.usage, trims, pinned }
}

impl From<&LiveView> for seshat_protocol::view::View {
    fn from(view: &LiveView) -> Self {
        seshat_protocol::view::View {
            session: view.session.clone(),
            compaction: view.compaction.clone(),
            entries: view.entries.clone(),
        }
    }
}
