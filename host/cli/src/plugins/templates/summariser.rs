//! A summariser plugin for Seshat.
use seshat_plugin_sdk::summariser::{
    complete, render_transcript, system_prompt, CompletionRequest, Error, Message, Part, Role, SummaryRequest,
    Summariser,
};

/// Asks the summary model for a short summary of the dropped messages.
struct Plugin;

impl Summariser for Plugin {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        // The transcript keeps each tool result's outcome lines (errors, test summaries,
        // path:line, …) rather than the whole log, after the previous summary if there is one.
        let transcript = render_transcript(&request);
        let ask = Message { id: 0, role: Role::User, parts: vec![Part::Text(transcript)] };
        let own = "Summarise this conversation so the agent can go on without it: the user's requests and \
                   constraints verbatim, the decisions made, the tool outcomes that still matter (quote their \
                   error and result lines exactly), and the open work."
            .to_string();
        let answer = complete(&CompletionRequest {
            // The user's own prompt (`[compaction] prompt_file`) replaces ours when set, and what
            // they asked this compaction to keep is added.
            system: Some(system_prompt(&request, own)),
            messages: vec![ask],
            max_tokens: request.max_tokens,
            extra: "{}".into(),
        })?;
        Ok(answer.text)
    }
}

seshat_plugin_sdk::export_summariser!(Plugin);
