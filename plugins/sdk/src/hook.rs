#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "hook",
        pub_export_macro: true,
        export_macro_name: "__export_hook_world",
        default_bindings_module: "::seshat_plugin_sdk::hook::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_hook_world;

pub use bindings::exports::seshat::plugin::on_event::{Decision, Event, Guest as __Guest, Payload, Verdict};
pub use bindings::seshat::plugin::types::{Error, Role};

/// A hook: told a moment of a session's life, answers what to do.
pub trait Hook {
    /// Answers one event. `payload.json` is the whole payload a command hook reads on its standard
    /// input (the event's own fields: a tool's `arguments` and `result`, a compaction's figures…).
    /// An error is reported and passed over, unless the user marked the hook `required`.
    fn handle(payload: Payload) -> Result<Decision, Error>;
}

kind_helpers!("[[hooks.<event>]]");

impl<T: Hook> __Guest for T {
    fn handle(payload: Payload) -> Result<Decision, Error> {
        __install_panic_hook();
        <T as Hook>::handle(payload)
    }
}

/// Go on, adding nothing.
pub fn proceed() -> Decision {
    Decision { verdict: Verdict::Proceed, reason: None, context: None, instructions: None, skip: false }
}

/// Stop, for `reason` (the model reads it for a tool; the user for a prompt).
pub fn block(reason: impl Into<String>) -> Decision {
    Decision { verdict: Verdict::Block, reason: Some(reason.into()), ..proceed() }
}

/// Go on, adding `text` to the request (`session-start`, `user-prompt`, the tool events).
pub fn context(text: impl Into<String>) -> Decision {
    Decision { context: Some(text.into()), ..proceed() }
}

/// `pre-compact`: go on, asking the summary to also keep or stress `text`.
pub fn instructions(text: impl Into<String>) -> Decision {
    Decision { instructions: Some(text.into()), ..proceed() }
}

/// An error with a stable `code` and a message for people.
pub fn error(code: &str, message: impl Into<String>) -> Error {
    Error { code: code.into(), message: message.into() }
}

impl Event {
    /// The event's name, as configured (`[[hooks.pre_tool]]`) and in the payload's JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session_start",
            Event::UserPrompt => "user_prompt",
            Event::PreTool => "pre_tool",
            Event::PostTool => "post_tool",
            Event::PreCompact => "pre_compact",
            Event::PostCompact => "post_compact",
            Event::Fork => "fork",
            Event::Rewind => "rewind",
            Event::SessionEnd => "session_end",
            Event::MemoryWrite => "memory_write",
        }
    }
}

/// Exports a [`Hook`] implementation as the plugin's hook.
#[macro_export]
macro_rules! export_hook {
    ($t:ident) => {
        $crate::hook::__export_hook_world!($t with_types_in $crate::hook::__bindings);
        $crate::__version_section!();
    };
}
