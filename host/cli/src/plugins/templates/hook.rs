//! A hook plugin for Seshat: blocks shell commands that delete recursively, and tells every
//! session so at its start. The events it hears are chosen in config.toml (see README.md).
use seshat_plugin_sdk::hook::{Decision, Error, Event, Hook, Payload, block, context, error, proceed};
use seshat_plugin_sdk::serde_json::{self, Value};

struct Plugin;

impl Hook for Plugin {
    fn handle(payload: Payload) -> Result<Decision, Error> {
        // The payload's own fields, as a command hook reads them on its standard input.
        let fields: Value = serde_json::from_str(&payload.json)
            .map_err(|e| error("invalid_payload", format!("the payload is not JSON: {e}")))?;
        Ok(match payload.event {
            Event::PreTool => {
                let command = fields["arguments"]["command"].as_str().unwrap_or_default();
                let words: Vec<&str> = command.split_whitespace().collect();
                let recursive = |flag: &str| flag.starts_with('-') && (flag.contains('r') || flag.contains('R'));
                if words.windows(2).any(|w| w[0] == "rm" && recursive(w[1])) {
                    block(format!("`{command}` deletes recursively: ask the user first"))
                } else {
                    proceed()
                }
            }
            Event::SessionStart => context("Deleting files recursively needs the user's say-so."),
            _ => proceed(),
        })
    }
}

seshat_plugin_sdk::export_hook!(Plugin);
