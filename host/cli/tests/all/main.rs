//! Integration tests of the `seshat` crate and binary: one test binary, one module per area.

// Test helpers take JSON by value so call sites can pass `json!(…)` inline.
#![allow(clippy::needless_pass_by_value)]

mod access;
mod access_matrix;
mod architecture;
mod bounds;
mod branches;
mod chat;
mod chat_signals;
mod cli;
mod compaction;
mod concurrency;
mod counters;
mod crash;
mod database;
mod deploy;
mod fencing;
mod fidelity;
mod foreign;
mod foreign_client;
mod history;
mod hostile;
mod idempotency;
mod ids;
mod in_async;
mod kills;
mod knowledge;
mod local;
mod mcp_scale;
mod memory;
mod memory_cli;
mod merge;
mod migrations;
mod model_choice;
mod network;
mod owners;
mod pins;
mod plugins;
mod plugins_cli;
mod plugins_test;
mod postgres;
mod probes;
mod props;
mod provider_faults;
mod recall;
mod redaction;
mod reimport;
mod remote_client;
mod serve;
mod service_config;
mod stop;
mod store;
mod support;
mod terminal;
mod upgrades;
