//! The methods' handlers, one file per area: each an `impl` of [`crate::server::Server`] the
//! dispatch's exhaustive `match` calls.

#![allow(
    clippy::needless_pass_by_value,
    reason = "each handler takes its request's params as the dispatch hands them over, whole"
)]

mod connection;
mod history;
mod knowledge;
mod memory;
mod sessions;
mod turns;
