//! A summariser plugin for Seshat.
use seshat_plugin_sdk::summariser::{complete, CompletionRequest, Error, Message, Part, Role, SummaryRequest, Summariser};

/// Asks the summary model for a short summary of the dropped messages.
struct Plugin;

impl Summariser for Plugin {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        let mut text = request.previous_summary.unwrap_or_default();
        for m in &request.messages {
            for p in &m.parts {
                if let Part::Text(t) = p {
                    text.push_str(&format!("\n{:?}: {t}", m.role));
                }
            }
        }
        let ask = Message { id: 0, role: Role::User, parts: vec![Part::Text(text)] };
        let answer = complete(&CompletionRequest {
            system: Some("Summarise this conversation: requests, decisions, tool outcomes, open work.".into()),
            messages: vec![ask],
            max_tokens: request.max_tokens,
            extra: "{}".into(),
        })?;
        Ok(answer.text)
    }
}

seshat_plugin_sdk::export_summariser!(Plugin);
