#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "extractor",
        pub_export_macro: true,
        export_macro_name: "__export_extractor_world",
        default_bindings_module: "::seshat_plugin_sdk::extractor::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_extractor_world;

pub use bindings::exports::seshat::plugin::extract::{
    ExtractRequest, Guest as __Guest, Known, Moment, Proposal, Scope,
};
pub use bindings::seshat::plugin::model::{Completion, CompletionRequest};
pub use bindings::seshat::plugin::types::{Error, Message, Part, Role, StopReason, ToolCall, ToolResult, Usage};

/// An extractor: reads a session's new messages and proposes what long-term memory should keep.
pub trait Extractor {
    /// Proposes memory writes for `request.messages` (each with its seq in `id`). `request.known`
    /// is what memory holds now: leave out what it already says, and name in `replaces` the
    /// observation a correction replaces (its exact text). An error is reported and the messages
    /// are read again next time.
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, Error>;
}

kind_helpers!("[plugins.options.extractor]");

impl<T: Extractor> __Guest for T {
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, Error> {
        __install_panic_hook();
        <T as Extractor>::extract(request)
    }
}

/// Calls the session's model through the host (bounded per extraction by the plugin's limits).
pub fn complete(request: &CompletionRequest) -> Result<Completion, Error> {
    bindings::seshat::plugin::model::complete(request)
}

/// The text of a message's text parts, joined by blank lines (tool calls and results left out).
pub fn text_of(message: &Message) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

/// An error with a stable `code` and a message for people.
pub fn error(code: &str, message: impl Into<String>) -> Error {
    Error { code: code.into(), message: message.into() }
}

/// Exports an [`Extractor`] implementation as the plugin's extractor.
#[macro_export]
macro_rules! export_extractor {
    ($t:ident) => {
        $crate::extractor::__export_extractor_world!($t with_types_in $crate::extractor::__bindings);
        $crate::__version_section!();
    };
}
