//! The Seshat plugin SDK.
//!
//! A plugin implements one trait — [`trimmer::Trimmer`], [`summariser::Summariser`],
//! [`provider::Provider`], [`embedder::Embedder`], [`hook::Hook`] or [`extractor::Extractor`] —
//! and exports it with one macro. Enable the matching cargo feature (`trimmer`, `summariser`,
//! `provider`, `embedder`, `hook` or `extractor`) and build with
//! `cargo build --release --target wasm32-wasip2`.
//!
//! ```ignore
//! use seshat_plugin_sdk::trimmer::{Budget, Edit, Error, MessageMeta, PartMeta, Trimmer};
//!
//! struct Nothing;
//! impl Trimmer for Nothing {
//!     fn trim(_messages: Vec<MessageMeta>, _parts: Vec<PartMeta>, _budget: Budget) -> Result<Vec<Edit>, Error> {
//!         Ok(Vec::new())
//!     }
//! }
//! seshat_plugin_sdk::export_trimmer!(Nothing);
//! ```
//!
//! Plugins run sandboxed: no files, environment, sockets or stdio. What they need comes through
//! the trait's arguments and the host functions re-exported here.

extern crate alloc;
extern crate self as seshat_plugin_sdk;

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

/// `serde` and `serde_json`, as `options::<T>()` uses them (feature `options`): derive
/// `Deserialize` for your options type with your own `serde` dependency, or read them loosely as
/// a `serde_json::Value`.
#[cfg(feature = "options")]
pub use {serde, serde_json};

/// The SDK's version, also written into every plugin as the `seshat-plugin-sdk` custom section.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The plugin contract's version this SDK speaks: 0.4.0, unstable until this round's last addition
/// freezes it (plugins built for the frozen 0.3.0, 0.2.0 and 0.1.0 keep loading).
pub const API_VERSION: &str = "0.4.0";

/// Writes the SDK version custom section into the plugin (used by the export macros).
#[doc(hidden)]
#[macro_export]
macro_rules! __version_section {
    () => {
        #[unsafe(link_section = "seshat-plugin-sdk")]
        #[used]
        static __SESHAT_PLUGIN_SDK_VERSION: [u8; 5] = *b"0.4.0";
    };
}

/// The lines of a tool's output that carry its outcome (the `seshat-outcomes` crate, which the host
/// compiles too).
pub use seshat_outcomes as outcomes;

/// The stable code and a general hint for an HTTP error status, for plugins mapping an API's
/// errors (providers, embedders): `auth_failed` (401), `permission_denied` (403), `not_found`
/// (404), `request_too_large` (413), `rate_limited` (429), `invalid_request` (400, 422),
/// `server_error` (5xx), else `http_error`. Match the statuses you can say more about first.
pub fn http_status(status: u16) -> (&'static str, &'static str) {
    match status {
        401 => ("auth_failed", "check the API key"),
        403 => ("permission_denied", "the key may not use this model"),
        404 => ("not_found", "check the model id and the base URL"),
        413 => ("request_too_large", "the request is larger than the server accepts"),
        429 => ("rate_limited", "wait and retry, or lower the request rate"),
        400 | 422 => ("invalid_request", "the request was rejected as invalid"),
        500..=599 => ("server_error", "a server error; retry later"),
        _ => ("http_error", "unexpected answer"),
    }
}

/// `Display` for `StopReason` (`end_turn`, `tool_use`, …, or the provider's own name).
#[allow(unused_macros)]
macro_rules! stop_reason_display {
    () => {
        impl core::fmt::Display for StopReason {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(match self {
                    StopReason::EndTurn => "end_turn",
                    StopReason::ToolUse => "tool_use",
                    StopReason::MaxTokens => "max_tokens",
                    StopReason::StopSequence => "stop_sequence",
                    StopReason::Refusal => "refusal",
                    StopReason::Other(name) => name,
                })
            }
        }
    };
}

/// What every kind's module gets: [`log`](trimmer::log) and the panic hook that hands a panic's
/// message to the host before the plugin traps (0.2.0), `options::<T>()` (feature `options`),
/// and `Display` for [`Role`](trimmer::Role) (`user`, `assistant`, … as in exports).
macro_rules! kind_helpers {
    ($options:literal) => {
        /// The user's options for this plugin (`[plugins.options.<kind>]` in config.toml, which
        /// the host passes as the `extra` JSON object) as your type: any
        /// `serde::Deserialize` type, or `serde_json::Value` to look at them loosely. A mismatch
        /// is an `invalid_options` error naming what did not fit, for the host to report.
        #[cfg(feature = "options")]
        pub fn options<T: serde::de::DeserializeOwned>(extra: &str) -> Result<T, Error> {
            let extra = if extra.trim().is_empty() { "{}" } else { extra };
            serde_json::from_str(extra).map_err(|e| Error {
                code: "invalid_options".into(),
                message: alloc::format!(
                    "the options under {} in config.toml do not fit what this plugin reads: {e}",
                    $options
                ),
            })
        }

        impl core::fmt::Display for Role {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(match self {
                    Role::System => "system",
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                })
            }
        }

        pub use bindings::seshat::plugin::log::Level;

        /// Writes one line to the host's log (stderr, shown with `RUST_LOG`, e.g.
        /// `RUST_LOG=seshat::plugin=debug`). The host cuts a line to 4 KiB and a call's lines to
        /// 64 KiB in all, and shows control characters as escapes.
        pub fn log(level: Level, message: &str) {
            bindings::seshat::plugin::log::log(level, message);
        }

        /// Installs (once) the panic hook that hands a panic's message and place to the host, so
        /// the error the host reports says why the plugin stopped. The export macro calls this on
        /// every entry.
        #[doc(hidden)]
        pub fn __install_panic_hook() {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                std::panic::set_hook(alloc::boxed::Box::new(|info| {
                    let payload = info.payload();
                    let text = payload
                        .downcast_ref::<&str>()
                        .copied()
                        .or_else(|| payload.downcast_ref::<alloc::string::String>().map(|s| s.as_str()))
                        .unwrap_or("(a panic without a message)");
                    let message = match info.location() {
                        Some(at) => alloc::format!("{text} (at {}:{})", at.file(), at.line()),
                        None => text.into(),
                    };
                    bindings::seshat::plugin::log::panicked(&message);
                }));
            });
        }
    };
}

/// Trimmer plugins: decide which tool results to shorten; the host applies the edits.
#[cfg(feature = "trimmer")]
pub mod trimmer;

/// Summariser plugins: write the summary that replaces dropped messages.
#[cfg(feature = "summariser")]
pub mod summariser;

/// Decisions and what replaced them, whatever the wording (the `seshat-outcomes` crate's, which
/// the summarisers use).
pub use seshat_outcomes::decisions;

/// Provider plugins: translate between Seshat's messages and one LLM HTTP API.
#[cfg(feature = "provider")]
pub mod provider;

/// Hook plugins (0.4.0): told a moment of a session's life — the payload a command hook reads —
/// they answer go on, block, add context, or give a compaction's summary instructions. Which
/// events they hear is the user's `[[hooks.<event>]] plugin = "<id>"`.
#[cfg(feature = "hook")]
pub mod hook;

/// Extractor plugins (0.4.0): read a session's new messages and propose what long-term memory
/// should keep (an entity, an observation, what it replaces, the message it comes from); the host
/// writes them as the memory tools would. They may call the session's model. Chosen by
/// `[memory] extract = "<id>"`.
#[cfg(feature = "extractor")]
pub mod extractor;

/// Embedder plugins (0.2.0): turn texts into vectors through one embeddings HTTP API. The host
/// batches the texts (at most [`EmbedderInfo::max_batch`], each within the model's input),
/// sends the request you build and checks the vectors you decode.
#[cfg(feature = "embedder")]
pub mod embedder;
