//! Integration tests of the `seshat` crate and binary: one test binary, one module per area.

mod cli;
mod concurrency;
mod crash;
mod ids;
mod migrations;
mod plugins;
mod plugins_cli;
mod store;
mod support;
mod trimmer_policy;
