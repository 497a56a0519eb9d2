//! The Seshat plugin SDK.
//!
//! A plugin implements one trait — [`trimmer::Trimmer`], [`summariser::Summariser`],
//! [`provider::Provider`] or [`embedder::Embedder`] — and exports it with one macro. Enable the
//! matching cargo feature (`trimmer`, `summariser`, `provider` or `embedder`) and build with
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

/// The plugin contract's version this SDK speaks: 0.2.0, released and frozen (plugins built for
/// it, and for 0.1.0, keep loading).
pub const API_VERSION: &str = "0.2.0";

/// Writes the SDK version custom section into the plugin (used by the export macros).
#[doc(hidden)]
#[macro_export]
macro_rules! __version_section {
    () => {
        #[unsafe(link_section = "seshat-plugin-sdk")]
        #[used]
        static __SESHAT_PLUGIN_SDK_VERSION: [u8; 5] = *b"0.2.0";
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
pub mod trimmer {
    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "trimmer",
            pub_export_macro: true,
            export_macro_name: "__export_trimmer_world",
            default_bindings_module: "::seshat_plugin_sdk::trimmer::__bindings",
            runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
        });
    }
    #[doc(hidden)]
    pub use bindings as __bindings;
    #[doc(hidden)]
    pub use bindings::__export_trimmer_world;

    pub use bindings::exports::seshat::plugin::trim::Guest as __Guest;
    pub use bindings::seshat::plugin::trim_types::{Budget, Edit, HeadTail, History, KeepLines, LineRange, Replace};
    pub use bindings::seshat::plugin::types::{Error, PartKind, Role};

    /// One message, without its content.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct MessageMeta {
        /// The message's seq.
        pub id: u64,
        /// Who wrote it.
        pub role: Role,
        /// Estimated tokens of the whole message.
        pub tokens: u64,
        /// Whether the host forbids trimming it.
        pub protected: bool,
    }

    /// One part of a message, without its content.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct PartMeta {
        /// The seq of its message.
        pub message: u64,
        /// Its index in that message.
        pub index: u32,
        /// What kind of part it is.
        pub kind: PartKind,
        /// Size of its content in bytes (after earlier trims).
        pub bytes: u64,
        /// Estimated tokens.
        pub tokens: u64,
    }

    fn role(code: u8) -> Role {
        match code {
            0 => Role::System,
            1 => Role::User,
            2 => Role::Assistant,
            _ => Role::Tool,
        }
    }

    fn kind(code: u8) -> PartKind {
        match code {
            1 => PartKind::ToolCall,
            2 => PartKind::ToolResult,
            3 => PartKind::Thinking,
            4 => PartKind::RedactedThinking,
            _ => PartKind::Text,
        }
    }

    /// The history's columns as one struct per message and one per part.
    pub fn rows(h: &History) -> (alloc::vec::Vec<MessageMeta>, alloc::vec::Vec<PartMeta>) {
        let messages = (0..h.message_ids.len())
            .map(|i| MessageMeta {
                id: h.message_ids[i],
                role: role(h.message_roles[i]),
                tokens: h.message_tokens[i],
                protected: h.message_protected[i] != 0,
            })
            .collect();
        let parts = (0..h.part_messages.len())
            .map(|j| PartMeta {
                message: h.part_messages[j],
                index: h.part_indexes[j],
                kind: kind(h.part_kinds[j]),
                bytes: h.part_bytes[j],
                tokens: h.part_tokens[j],
            })
            .collect();
        (messages, parts)
    }

    /// An edit keeping `content`'s head, tail and outcome lines ([`crate::outcomes::shorten`])
    /// within about `budget` bytes, or a head-tail edit of the same budget when whole lines cannot
    /// do it (few, long lines). `None` when the content is already within the budget.
    pub fn keep_outcomes(message: u64, part: u32, content: &str, budget: u64) -> Option<Edit> {
        Some(match crate::outcomes::shorten(content, budget)? {
            crate::outcomes::Shorten::Lines(ranges) => Edit::KeepLines(KeepLines {
                message,
                part,
                lines: ranges.into_iter().map(|r| LineRange { start: r.start as u32, end: r.end as u32 }).collect(),
            }),
            crate::outcomes::Shorten::HeadTail { head, tail } => Edit::HeadTail(HeadTail { message, part, head, tail }),
        })
    }

    /// The current content of one part, asked of the host. Ask only for what you need.
    pub fn read_part(message: u64, part: u32) -> Option<alloc::string::String> {
        bindings::seshat::plugin::trim_host::read_part(message, part)
    }

    /// A trimmer policy.
    pub trait Trimmer {
        /// Proposes edits that bring the request toward `budget.target_tokens`. `parts` lists
        /// every part of every message, in history order. Only tool results of unprotected
        /// messages may be edited, and only made shorter; one invalid edit rejects the whole
        /// answer.
        fn trim(
            messages: alloc::vec::Vec<MessageMeta>,
            parts: alloc::vec::Vec<PartMeta>,
            budget: Budget,
        ) -> Result<alloc::vec::Vec<Edit>, Error>;
    }

    kind_helpers!("[plugins.options.trimmer]");

    impl core::fmt::Display for PartKind {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str(match self {
                PartKind::Text => "text",
                PartKind::ToolCall => "tool_call",
                PartKind::ToolResult => "tool_result",
                PartKind::Thinking => "thinking",
                PartKind::RedactedThinking => "redacted_thinking",
            })
        }
    }

    impl<T: Trimmer> __Guest for T {
        fn trim(history: History, budget: Budget) -> Result<alloc::vec::Vec<Edit>, Error> {
            __install_panic_hook();
            let (messages, parts) = rows(&history);
            <T as Trimmer>::trim(messages, parts, budget)
        }
    }

    /// Exports a [`Trimmer`] implementation as the plugin's trimmer.
    #[macro_export]
    macro_rules! export_trimmer {
        ($t:ident) => {
            $crate::trimmer::__export_trimmer_world!($t with_types_in $crate::trimmer::__bindings);
            $crate::__version_section!();
        };
    }
}

/// Summariser plugins: write the summary that replaces dropped messages.
#[cfg(feature = "summariser")]
pub mod summariser {
    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "summariser",
            pub_export_macro: true,
            export_macro_name: "__export_summariser_world",
            default_bindings_module: "::seshat_plugin_sdk::summariser::__bindings",
            runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
        });
    }
    #[doc(hidden)]
    pub use bindings as __bindings;
    #[doc(hidden)]
    pub use bindings::__export_summariser_world;

    pub use bindings::exports::seshat::plugin::summarise::Guest as __Guest;
    pub use bindings::exports::seshat::plugin::summarise::SummaryRequest;
    pub use bindings::seshat::plugin::model::{Completion, CompletionRequest};
    pub use bindings::seshat::plugin::types::{Error, Message, Part, Role, StopReason, ToolCall, ToolResult, Usage};

    /// Calls the configured summary model through the host. Bounded per compaction.
    pub fn complete(request: &CompletionRequest) -> Result<Completion, Error> {
        bindings::seshat::plugin::model::complete(request)
    }

    /// What a summary must preserve: Seshat's standard instructions to the summary model.
    pub const DEFAULT_INSTRUCTIONS: &str = "You are compacting a conversation between a user and an AI agent so \
the agent can continue without the older messages. Write a concise summary in sections, each given its share of the \
space: the constraints and preferences the user stated (never, always, must, don't), verbatim; the user's active \
requests (verbatim where short); the decisions made and why (a decision replaced later only as the newer one, naming \
on the same line what it replaced, marked replaced); the tool outcomes that still matter, from the lines that carry \
them (errors, failures, warnings, test summaries, path:line locations, key: value results), quoted exactly; and the \
unresolved work and next steps, even if mentioned only in passing. Keep names, paths, numbers and identifiers \
exactly. State each thing once. Do not invent anything. If a previous summary is given, fold it in: the result \
replaces both.";

    /// Bytes of one tool result a transcript keeps whole; a longer one is cut to its outcome.
    pub const RESULT_BYTES: u64 = 2_000;

    /// The dropped messages as a plain transcript, after the previous summary, for a model to read.
    /// A tool result longer than [`RESULT_BYTES`] keeps its head, its tail and the lines that
    /// carry its outcome (errors, failures, test summaries, `path:line`, …) by
    /// [`crate::outcomes::shorten`], with a note where lines were left out — so the summary
    /// model sees what each tool call came to, not a wall of log.
    pub fn render_transcript(request: &SummaryRequest) -> alloc::string::String {
        use core::fmt::Write as _;
        let mut out = alloc::string::String::new();
        if let Some(previous) = &request.previous_summary {
            let _ = write!(out, "Previous summary:\n{previous}\n\nConversation since:\n");
        }
        for m in &request.messages {
            for p in &m.parts {
                let _ = match p {
                    Part::Text(t) => writeln!(out, "[{}] {t}", m.role),
                    Part::ToolCall(c) => writeln!(out, "[{} calls {}] {}", m.role, c.name, c.arguments),
                    Part::ToolResult(r) => {
                        let kind = if r.is_error { "error" } else { "result" };
                        writeln!(out, "[{kind} of {}] {}", r.call_id, tool_outcome(&r.content, RESULT_BYTES).trim_end())
                    }
                    Part::Thinking(_) | Part::RedactedThinking(_) => Ok(()),
                };
            }
        }
        out
    }

    /// `content` cut to about `budget` bytes keeping its outcome lines (see
    /// [`render_transcript`]); as it is when it fits.
    pub fn tool_outcome(content: &str, budget: u64) -> alloc::borrow::Cow<'_, str> {
        match crate::outcomes::shorten(content, budget) {
            None => alloc::borrow::Cow::Borrowed(content),
            Some(crate::outcomes::Shorten::Lines(ranges)) => {
                alloc::borrow::Cow::Owned(crate::outcomes::stitch(content, &ranges, |n| {
                    Some(alloc::format!("[… {n} lines left out …]"))
                }))
            }
            Some(crate::outcomes::Shorten::HeadTail { head, tail }) => {
                let (h, t) = crate::outcomes::head_tail_cut(content, head, tail);
                alloc::borrow::Cow::Owned(alloc::format!(
                    "{}[… {} bytes left out …]{}",
                    &content[..h],
                    t - h,
                    &content[t..]
                ))
            }
        }
    }

    /// The system prompt for a summary: the user's prompt (`[compaction] prompt_file`) when the
    /// request carries one, else `own`; then the user's instructions for this compaction, if any.
    pub fn system_prompt(request: &SummaryRequest, own: alloc::string::String) -> alloc::string::String {
        let mut prompt = request.prompt.clone().unwrap_or(own);
        if let Some(instructions) = request.instructions.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            prompt.push_str("\n\nThe user's instructions for this summary (follow them): ");
            prompt.push_str(instructions);
        }
        prompt
    }

    /// The words of the user's instructions that say what to keep, lower-cased: those of three
    /// letters or more but the common words of such a sentence (`keep`, `the`, `about`, …), and
    /// every word with a digit (`3`, `TF123`). Words are split as [`words_of`] splits text.
    pub fn instruction_words(request: &SummaryRequest) -> alloc::vec::Vec<alloc::string::String> {
        const COMMON: &[&str] = &[
            "about", "all", "and", "any", "are", "but", "details", "don", "every", "for", "from", "have", "into",
            "keep", "make", "mention", "not", "only", "preserve", "please", "remember", "sure", "that", "the", "their",
            "them", "then", "this", "those", "what", "when", "with", "you", "your",
        ];
        let Some(text) = &request.instructions else { return alloc::vec::Vec::new() };
        let mut words: alloc::vec::Vec<alloc::string::String> = words_of(text)
            .filter(|w| {
                w.chars().any(|c| c.is_ascii_digit()) || (w.chars().count() >= 3 && !COMMON.contains(&w.as_str()))
            })
            .collect();
        words.sort();
        words.dedup();
        words
    }

    /// The words of a text, lower-cased: runs of letters, digits, `_` and `-`.
    pub fn words_of(text: &str) -> impl Iterator<Item = alloc::string::String> + '_ {
        text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
    }

    /// A summariser policy. Both methods have defaults: override `instructions` to change what the
    /// summary model is told, or `summarise` to write the summary some other way (even without a
    /// model).
    pub trait Summariser {
        /// The instructions given to the summary model.
        fn instructions() -> alloc::string::String {
            DEFAULT_INSTRUCTIONS.into()
        }

        /// Writes the summary that replaces `request.messages`. The default sends the transcript
        /// to the summary model with [`system_prompt`]: the user's prompt or
        /// [`Summariser::instructions`], and what the user asked this compaction to keep.
        fn summarise(request: SummaryRequest) -> Result<alloc::string::String, Error> {
            let transcript = render_transcript(&request);
            let ask = Message { id: 0, role: Role::User, parts: alloc::vec![Part::Text(transcript)] };
            let answer = complete(&CompletionRequest {
                system: Some(system_prompt(&request, Self::instructions())),
                messages: alloc::vec![ask],
                max_tokens: request.max_tokens,
                extra: "{}".into(),
            })?;
            Ok(answer.text)
        }
    }

    kind_helpers!("[plugins.options.summariser]");
    stop_reason_display!();

    impl<T: Summariser> __Guest for T {
        fn summarise(request: SummaryRequest) -> Result<alloc::string::String, Error> {
            __install_panic_hook();
            <T as Summariser>::summarise(request)
        }
    }

    /// Exports a [`Summariser`] implementation as the plugin's summariser.
    #[macro_export]
    macro_rules! export_summariser {
        ($t:ident) => {
            $crate::summariser::__export_summariser_world!($t with_types_in $crate::summariser::__bindings);
            $crate::__version_section!();
        };
    }
}

/// Provider plugins: translate between Seshat's messages and one LLM HTTP API.
#[cfg(feature = "provider")]
pub mod provider {
    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "provider",
            pub_export_macro: true,
            export_macro_name: "__export_provider_world",
            default_bindings_module: "::seshat_plugin_sdk::provider::__bindings",
            runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
        });
    }
    #[doc(hidden)]
    pub use bindings as __bindings;
    #[doc(hidden)]
    pub use bindings::__export_provider_world;

    pub use bindings::exports::seshat::plugin::translate::{
        Auth, ChatRequest, Discovery, EncodeOptions, Guest as __Guest, GuestDecoder, HttpRequest, InputAndOutput,
        Limit, Probe, ProviderInfo, Response, Splice, StreamEvent, TooLong, ToolCallDelta, ToolCallStart, ToolSpec,
    };
    pub use bindings::seshat::plugin::types::{
        Error, Message, ModelInfo, Part, Role, StopReason, Thinking, ToolCall, ToolResult, Usage,
    };

    /// A provider adapter. `Decoder` is the per-answer stream decoder.
    pub trait Provider {
        /// The stream decoder type.
        type Decoder: GuestDecoder + 'static;
        /// What the provider serves.
        fn info() -> ProviderInfo;
        /// Encodes one message as a fragment of the wire format (empty to send nothing of it).
        fn encode_message(message: Message, options: EncodeOptions) -> Result<alloc::string::String, Error>;
        /// Turns a chat request into an HTTP request (never with credentials), with a
        /// [`Splice`] saying where the encoded messages go.
        fn build_request(request: ChatRequest) -> Result<HttpRequest, Error>;
        /// Decodes a whole answer or an error body.
        fn parse_response(status: u16, body: alloc::vec::Vec<u8>) -> Result<Response, Error>;

        /// Requests asking the server for `model`'s window (or, with `None`, its list of models),
        /// in the order to try them (0.2.0). The default asks nothing: right for an API whose
        /// models are all in [`Provider::info`].
        fn probes(_model: Option<alloc::string::String>, _base_url: alloc::string::String) -> alloc::vec::Vec<Probe> {
            alloc::vec::Vec::new()
        }

        /// Reads the answer to the probe `name` (0.2.0). Say nothing (the default) for an answer
        /// that does not tell: the host tries the next probe.
        fn parse_probe(
            _name: alloc::string::String,
            _model: Option<alloc::string::String>,
            _status: u16,
            _body: alloc::vec::Vec<u8>,
        ) -> Discovery {
            Discovery { context_window: None, max_output_tokens: None, models: alloc::vec::Vec::new() }
        }

        /// Whether an error answer refuses the request for its length or its `max_tokens`, and
        /// what it says of the limits (0.2.0). The default recognises none.
        fn refusal_limit(_status: u16, _body: alloc::vec::Vec<u8>) -> Option<Limit> {
            None
        }
    }

    kind_helpers!("[providers.<name>] options");
    stop_reason_display!();

    impl<T: Provider> __Guest for T {
        type Decoder = <T as Provider>::Decoder;
        fn info() -> ProviderInfo {
            __install_panic_hook();
            <T as Provider>::info()
        }
        fn encode_message(message: Message, options: EncodeOptions) -> Result<alloc::string::String, Error> {
            __install_panic_hook();
            <T as Provider>::encode_message(message, options)
        }
        fn build_request(request: ChatRequest) -> Result<HttpRequest, Error> {
            __install_panic_hook();
            <T as Provider>::build_request(request)
        }
        fn parse_response(status: u16, body: alloc::vec::Vec<u8>) -> Result<Response, Error> {
            __install_panic_hook();
            <T as Provider>::parse_response(status, body)
        }
        fn probes(model: Option<alloc::string::String>, base_url: alloc::string::String) -> alloc::vec::Vec<Probe> {
            __install_panic_hook();
            <T as Provider>::probes(model, base_url)
        }
        fn parse_probe(
            name: alloc::string::String,
            model: Option<alloc::string::String>,
            status: u16,
            body: alloc::vec::Vec<u8>,
        ) -> Discovery {
            __install_panic_hook();
            <T as Provider>::parse_probe(name, model, status, body)
        }
        fn refusal_limit(status: u16, body: alloc::vec::Vec<u8>) -> Option<Limit> {
            __install_panic_hook();
            <T as Provider>::refusal_limit(status, body)
        }
    }

    /// A `GET` probe of `url` asking for JSON.
    pub fn get_probe(name: &str, url: alloc::string::String) -> Probe {
        Probe {
            name: name.into(),
            request: HttpRequest {
                method: "GET".into(),
                url,
                headers: alloc::vec![("accept".into(), "application/json".into())],
                body: alloc::vec::Vec::new(),
                splice: None,
            },
        }
    }

    /// The first number after `marker` in `text` (digits, with `,` or `_` between them allowed).
    pub fn number_after(text: &str, marker: &str) -> Option<u64> {
        let at = text.find(marker)? + marker.len();
        let digits: alloc::string::String = text[at..]
            .trim_start_matches([' ', ':', '=', '"'])
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    /// An error with a stable `code` and a message for people.
    pub fn error(code: &str, message: impl Into<alloc::string::String>) -> Error {
        Error { code: code.into(), message: message.into() }
    }

    /// A model entry for [`ProviderInfo::models`].
    pub fn model(id: &str, context_window: u64, max_output_tokens: u64) -> ModelInfo {
        ModelInfo { id: id.into(), context_window, max_output_tokens, extra: "{}".into() }
    }

    /// Helpers for providers whose API takes a JSON body with a `messages` array (feature `json`).
    #[cfg(feature = "json")]
    pub mod json {
        use alloc::string::{String, ToString};
        use alloc::vec::Vec;

        pub use serde_json::{self, Map, Value, json};

        use super::{Error, HttpRequest, Splice, ToolSpec, error};

        /// The user's provider options (`ChatRequest::extra`), which must be a JSON object.
        pub fn options(extra: &str) -> Result<Map<String, Value>, Error> {
            match serde_json::from_str(extra) {
                Ok(Value::Object(m)) => Ok(m),
                _ => Err(error(
                    "invalid_request",
                    alloc::format!("provider options must be a JSON object, not `{extra}`"),
                )),
            }
        }

        /// A tool's JSON Schema, parsed.
        pub fn schema(tool: &ToolSpec) -> Result<Value, Error> {
            serde_json::from_str(&tool.parameters).map_err(|e| {
                error("invalid_request", alloc::format!("tool `{}` has an invalid schema: {e}", tool.name))
            })
        }

        /// A string field, or empty.
        pub fn str_of(v: &Value) -> String {
            v.as_str().unwrap_or_default().to_string()
        }

        /// A `POST` of a JSON body to `url`, with `content-type` and the `accept` a streamed or
        /// whole answer needs, then `headers`.
        pub fn post(url: String, stream: bool, headers: &[(&str, &str)], body: Vec<u8>, splice: Splice) -> HttpRequest {
            let accept = if stream { "text/event-stream" } else { "application/json" };
            let mut all =
                alloc::vec![("content-type".into(), "application/json".into()), ("accept".into(), accept.into())];
            all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            HttpRequest { method: "POST".into(), url, headers: all, body, splice: Some(splice) }
        }

        /// A whole answer's body, parsed.
        #[derive(Debug)]
        pub enum Body {
            /// A success status with a JSON body.
            Success(Value),
            /// An error status; its JSON body, or `Null` when it is not JSON.
            Failure(Value),
        }

        /// Parses a whole answer's body; a success whose body is not JSON is an `invalid_response`
        /// error naming `who` (e.g. "Anthropic's answer").
        pub fn parse_body(status: u16, body: &[u8], who: &str) -> Result<Body, Error> {
            let ok = (200..300).contains(&status);
            match serde_json::from_slice(body) {
                Ok(v) if ok => Ok(Body::Success(v)),
                Ok(v) => Ok(Body::Failure(v)),
                Err(_) if !ok => Ok(Body::Failure(Value::Null)),
                Err(e) => Err(error("invalid_response", alloc::format!("{who} is not JSON: {e}"))),
            }
        }

        /// A JSON object body ending in the array `key` where the host splices the encoded
        /// messages: `fields` in the order given, then the user's `extra` options (which may not
        /// override them or `key`), then `key` with `lead` items already in it. The bytes before
        /// the messages are the same from turn to turn, as prompt caching needs.
        pub fn body(
            fields: &[(&str, Value)],
            extra: &Map<String, Value>,
            key: &str,
            lead: &[Value],
        ) -> Result<(Vec<u8>, Splice), Error> {
            let mut head = String::from("{");
            for (k, v) in fields {
                head.push_str(&alloc::format!("{}:{v},", Value::from(*k)));
            }
            for (k, v) in extra {
                if k == key || fields.iter().any(|(f, _)| f == k) {
                    return Err(error(
                        "invalid_request",
                        alloc::format!("provider option `{k}` is set by Seshat and cannot be overridden"),
                    ));
                }
                head.push_str(&alloc::format!("{}:{v},", Value::from(k.as_str())));
            }
            head.push_str(&alloc::format!("{}:[", Value::from(key)));
            let items: Vec<String> = lead.iter().map(Value::to_string).collect();
            head.push_str(&items.join(","));
            let splice = Splice { offset: head.len() as u64, separator: ",".into(), lead: !lead.is_empty() };
            head.push_str("]}");
            Ok((head.into_bytes(), splice))
        }
    }

    /// Exports a [`Provider`] implementation as the plugin's provider.
    #[macro_export]
    macro_rules! export_provider {
        ($t:ident) => {
            $crate::provider::__export_provider_world!($t with_types_in $crate::provider::__bindings);
            $crate::__version_section!();
        };
    }
}

/// Embedder plugins (0.2.0): turn texts into vectors through one embeddings HTTP API. The host
/// batches the texts (at most [`EmbedderInfo::max_batch`], each within the model's input),
/// sends the request you build and checks the vectors you decode.
#[cfg(feature = "embedder")]
pub mod embedder {
    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "embedder",
            pub_export_macro: true,
            export_macro_name: "__export_embedder_world",
            default_bindings_module: "::seshat_plugin_sdk::embedder::__bindings",
            runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
        });
    }
    #[doc(hidden)]
    pub use bindings as __bindings;
    #[doc(hidden)]
    pub use bindings::__export_embedder_world;

    pub use bindings::exports::seshat::plugin::embed::{
        Auth, EmbedHttp, EmbedRequest, EmbedderInfo, EmbeddingModel, Guest as __Guest, Purpose,
    };
    pub use bindings::seshat::plugin::types::{Error, Role};

    /// An embedder.
    pub trait Embedder {
        /// What the embedder serves.
        fn info() -> EmbedderInfo;
        /// Turns a batch of texts into an HTTP request (never with credentials).
        fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error>;
        /// Decodes an answer (or an error body, for any status): one vector per text, in order.
        fn parse_response(
            status: u16,
            body: alloc::vec::Vec<u8>,
        ) -> Result<alloc::vec::Vec<alloc::vec::Vec<f32>>, Error>;
    }

    kind_helpers!("[knowledge] options");

    impl<T: Embedder> __Guest for T {
        fn info() -> EmbedderInfo {
            __install_panic_hook();
            <T as Embedder>::info()
        }
        fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error> {
            __install_panic_hook();
            <T as Embedder>::build_request(request)
        }
        fn parse_response(
            status: u16,
            body: alloc::vec::Vec<u8>,
        ) -> Result<alloc::vec::Vec<alloc::vec::Vec<f32>>, Error> {
            __install_panic_hook();
            <T as Embedder>::parse_response(status, body)
        }
    }

    /// An error with a stable `code` and a message for people.
    pub fn error(code: &str, message: impl Into<alloc::string::String>) -> Error {
        Error { code: code.into(), message: message.into() }
    }

    /// A model entry for [`EmbedderInfo::models`].
    pub fn model(id: &str, dimensions: u32, max_input_tokens: u32) -> EmbeddingModel {
        EmbeddingModel { id: id.into(), dimensions, max_input_tokens }
    }

    /// Exports an [`Embedder`] implementation as the plugin's embedder.
    #[macro_export]
    macro_rules! export_embedder {
        ($t:ident) => {
            $crate::embedder::__export_embedder_world!($t with_types_in $crate::embedder::__bindings);
            $crate::__version_section!();
        };
    }
}
