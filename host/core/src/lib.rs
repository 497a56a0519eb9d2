//! Seshat: an AI agent runtime whose job is the agent's memory.
//!
//! This crate is the Rust SDK and the engine behind the `seshat` CLI:
//!
//! * [`store`] keeps every conversation in a local SQLite file, append-only, resumable;
//! * [`paths`] decides where files live and which project a directory belongs to;
//! * [`plugins`] loads the policies as sandboxed WebAssembly components;
//! * [`memory`] keeps long-term notes as a knowledge graph;
//! * [`window`] does the context-window arithmetic and [`compaction`] keeps requests inside it;
//! * [`config`] reads the user's and the project's `config.toml`.
//!
//! See `ARCHITECTURE.md` at the repository root for the map of the whole system.

mod cancel;
pub mod client;
pub mod compaction;
pub mod config;
pub mod conversation;
mod crash_point;
pub mod foreign;
pub mod hooks;
pub mod input;
mod io;
pub mod knowledge;
pub mod memory;
pub mod merge;
/// The lines of a tool's output that carry its outcome: the rules the plugin SDK uses too (the
/// `seshat-outcomes` crate), kept by the history index and summary requests.
pub use seshat_outcomes as outcomes;
pub mod paths;
pub mod plugins;
pub mod providers;
pub mod redaction;
pub mod retrieval;
pub mod store;
pub mod tool;
pub mod window;

pub use client::{Client, ClientOptions};
pub use store::Store;

/// The README's Rust examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
