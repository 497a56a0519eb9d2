//! Filling a provider's prompt cache with a session's conversation as its next turn will send it.
//!
//! A summary written in the background and swapped in between turns changes the start of the
//! conversation: the server's prompt cache holds none of the compacted request, and the next turn
//! would have it read cold (on a local CPU server, a minute or more for a few thousand tokens). A
//! request for one token with that conversation, sent while the user reads and types, has the
//! server read it then; the next turn finds it cached and reads only its own message.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::compaction::pairing::Msg;
use crate::conversation::Usage;
use crate::plugins::ToolSpec;
use crate::providers::{self, Call, Cancel, SharedProvider};

/// The most prompt-cache fillings sent at once in one process (each may hold a local server for
/// minutes).
pub const MAX_WARMING: usize = 2;

/// Fillings being sent now.
static WARMING: AtomicUsize = AtomicUsize::new(0);

/// A request filling the prompt cache, built from the session as stored (owned: it is sent
/// without holding the agent).
pub struct Warming {
    pub(super) provider: SharedProvider,
    pub(super) model: String,
    pub(super) system: String,
    pub(super) tools: Vec<ToolSpec>,
    pub(super) messages: Vec<Msg>,
    pub(super) extra: String,
    pub(super) same_model_after: u64,
}

impl std::fmt::Debug for Warming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warming").field("model", &self.model).field("messages", &self.messages.len()).finish()
    }
}

impl Warming {
    /// The messages it sends.
    pub fn messages(&self) -> usize {
        self.messages.len()
    }

    /// Sends it, over the background's connection to the provider (not the chat's): the usage the
    /// provider reported. The one token it asks for is not stored. Not sent (`Ok(None)`) while
    /// [`MAX_WARMING`] others are being sent in this process.
    pub fn send(&self, cancel: &Cancel) -> Result<Option<Usage>, providers::Error> {
        let taken = WARMING.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_WARMING).then_some(n + 1));
        if taken.is_err() {
            tracing::debug!("the prompt cache is not filled: {MAX_WARMING} fillings are being sent");
            return Ok(None);
        }
        struct Release;
        impl Drop for Release {
            fn drop(&mut self) {
                WARMING.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _release = Release;
        let call = Call {
            model: &self.model,
            system: Some(&self.system),
            tools: &self.tools,
            messages: &self.messages,
            max_tokens: 1,
            stream: false,
            same_model_after: Some(self.same_model_after),
            extra: &self.extra,
        };
        let answer = self.provider.lock().send(&call, cancel, &mut |_| {})?;
        Ok(answer.usage)
    }

    /// [`Warming::send`], saying in the log what came of it (a filling stopped by `cancel` is no
    /// failure).
    pub fn fill(&self, cancel: &Cancel) {
        match self.send(cancel) {
            Ok(usage) => tracing::debug!(?usage, "the prompt cache holds the compacted conversation"),
            Err(e) if cancel.is_cancelled() => tracing::debug!("the prompt cache's filling stopped: {e}"),
            Err(e) => tracing::warn!("the prompt cache could not be filled: {e}"),
        }
    }
}
