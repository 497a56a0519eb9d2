//! Seshat's default summariser: the SDK's model summary with the instructions in `prompt.md`.

use seshat_plugin_sdk::summariser::Summariser;

struct ModelSummary;

impl Summariser for ModelSummary {
    fn instructions() -> String {
        include_str!("../prompt.md").to_string()
    }
}

seshat_plugin_sdk::export_summariser!(ModelSummary);
