//! What a labelled transcript is: the messages of a session and the facts a memory extractor
//! should take from them. Every generator of the extraction benchmark writes these; `score.rs`
//! reads them.

use seshat::conversation::NewMessage;

/// One generated session and what should be remembered from it.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The messages in order: the first is stored at seq 1, the next at seq 2, and so on. A user
    /// message is text only; an assistant message is text and, optionally, tool calls, each
    /// answered by the next message (role `tool`, one result per call).
    pub messages: Vec<NewMessage>,
    /// What the user stated as lasting, in the order stated.
    pub facts: Vec<Fact>,
}

/// A lasting statement of the user's (a preference, a constraint, a decision, "remember …"),
/// which an extractor should write to memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// The seq of the user message that states it (1-based).
    pub seq: u64,
    /// Words (or short phrases) that an observation written for this fact must all contain,
    /// compared without case: the value that makes it this fact ("spaces", "PostgreSQL 16",
    /// "Friday"), never only words every fact of its kind shares ("prefer").
    pub keys: Vec<String>,
    /// The index in [`Transcript::facts`] of an earlier fact this one corrects: from this
    /// message on, that one is no longer true.
    pub replaces: Option<usize>,
}
