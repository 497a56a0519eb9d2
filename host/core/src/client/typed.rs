//! The turn in progress goes to the model as it was typed (and as its tools answered), while the
//! store keeps it redacted: what the turn stored is remembered here, by seq, and put back into
//! the turn's requests; the next turn, and a resumed session, carry the placeholders.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::compaction::pairing::Msg;
use crate::conversation::{NewMessage, Part};

/// The turn's messages the store redacted: (as stored, as written) by seq.
#[derive(Debug, Default)]
pub(super) struct Typed {
    by_seq: HashMap<u64, (Vec<Part>, Vec<Part>)>,
}

impl Typed {
    /// Forgets the last turn's messages.
    pub(super) fn clear(&mut self) {
        self.by_seq.clear();
    }

    /// Remembers what redaction changed of `written` (stored as `stored`, at `seqs`).
    pub(super) fn note(&mut self, written: &[NewMessage], seqs: &[u64], stored: Vec<Option<Vec<Part>>>) {
        for ((message, seq), stored) in written.iter().zip(seqs).zip(stored) {
            if let Some(stored) = stored {
                self.by_seq.insert(*seq, (stored, message.parts.clone()));
            }
        }
    }

    /// `messages` (a request) with the turn's own text put back: each message whose parts are
    /// still as stored (not trimmed since) gets them as written.
    pub(super) fn restore<'m>(&self, messages: &'m [Msg]) -> Cow<'m, [Msg]> {
        if self.by_seq.is_empty() {
            return Cow::Borrowed(messages);
        }
        let mut messages = messages.to_vec();
        for m in messages.iter_mut() {
            if let Some((stored, written)) = m.seq.and_then(|s| self.by_seq.get(&s))
                && &m.parts == stored
            {
                m.parts.clone_from(written);
            }
        }
        Cow::Owned(messages)
    }
}
