//! A test hook plugin: a guard that blocks a tool call whose arguments hold `rm -rf`, context at a
//! session's start naming its project, instructions for every compaction's summary, and a note
//! after every tool naming it. A user prompt of `loop`, `membomb` or `panic` makes it misbehave
//! (the sandbox holds), `error` makes it answer an error, and `block me` blocks the prompt.

use seshat_plugin_sdk::hook::{Decision, Error, Event, Hook, Payload, block, context, error, instructions, proceed};
use seshat_plugin_sdk::serde_json::{self, Value};

struct Plugin;

impl Hook for Plugin {
    fn handle(payload: Payload) -> Result<Decision, Error> {
        let fields: Value = serde_json::from_str(&payload.json)
            .map_err(|e| error("invalid_payload", format!("the payload is not JSON: {e}")))?;
        // The record and the JSON say the same.
        if fields["event"] != payload.event.as_str() || fields["session"] != payload.session.as_str() {
            return Err(error("mismatch", format!("the record and the JSON differ: {}", payload.json)));
        }
        Ok(match payload.event {
            Event::SessionStart => context(format!("plugin context: project {}", payload.project)),
            Event::UserPrompt => {
                let prompt = fields["prompt"].as_str().unwrap_or_default();
                misbehave::on(prompt, "the test hook");
                match prompt {
                    "error" => return Err(error("asked_to_fail", "the prompt asked this hook to fail")),
                    "block me" => block("the plugin blocks this prompt"),
                    _ => proceed(),
                }
            }
            Event::PreTool => {
                if fields["arguments"].to_string().contains("rm -rf") {
                    block(format!("the plugin guard refuses {} with rm -rf", payload.tool.unwrap_or_default()))
                } else {
                    proceed()
                }
            }
            Event::PostTool => {
                context(format!("plugin saw {} at message {}", payload.tool.unwrap_or_default(), payload.seq))
            }
            Event::PreCompact => instructions("keep every line that mentions PLUGIN-MARK"),
            _ => proceed(),
        })
    }
}

seshat_plugin_sdk::export_hook!(Plugin);
