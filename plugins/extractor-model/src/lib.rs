//! A memory extractor that asks the session's model: the user's messages (never the assistant's
//! or a tool's) and what memory holds go in, under the default extractor's rules; the model
//! answers a JSON list of what the user stated as lasting, each with the message it comes from
//! and the observation it replaces. What it names wrongly — a message that is not the user's, a
//! replaced observation memory does not hold — is dropped or corrected here, and what memory
//! already holds is left out.

use seshat_plugin_sdk::extractor::{
    CompletionRequest, Error, ExtractRequest, Extractor, Message, Part, Proposal, Role, Scope, complete, error, text_of,
};

/// The model-based extractor.
struct ModelExtractor;

/// Hook context stored as a user message: not the user's words.
const HOOK_CONTEXT: &str = "[context from hooks]";

/// The rules the model is given (those the default extractor applies).
const RULES: &str = "You maintain an AI coding agent's long-term memory. From the USER's messages below, list only \
what the user stated as LASTING: their preferences (style, tools, how the agent should work: \"I prefer…\", \
\"always…\", \"never…\"), facts about themselves (name, OS, timezone), the project's constraints (\"we must support…\", \
\"the deadline is…\", \"don't touch…\"), decisions (\"we decided…\", \"we're going with…\"), and anything they ask \
to be remembered. Leave out: requests for the task at hand (\"run the tests\", \"for this PR…\", \"for now…\"), \
questions, hypotheticals (\"if we…\"), doubts (\"maybe\", \"I think\"), what other people said that the user did not \
adopt, and anything already in KNOWN. When the user corrects something (\"actually…\", \"not X anymore\", \"make \
that…\"), give the new fact and, in \"replaces\", the exact text of the KNOWN line (or of your own earlier item) it \
replaces. Write each observation as one short sentence in the third person (\"the user prefers tabs\", \"we deploy on \
Fridays only\"), keeping the user's own values verbatim. Answer with JSON only: a list of objects \
{\"scope\": \"user\" or \"project\", \"observation\": string, \"replaces\": string or null, \"seq\": the message's \
number}. Answer [] when there is nothing lasting.";

impl Extractor for ModelExtractor {
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, Error> {
        let users: Vec<&Message> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User && !text_of(m).trim_start().starts_with(HOOK_CONTEXT))
            .collect();
        if users.is_empty() {
            return Ok(Vec::new());
        }
        // Bounded: at most 200 known lines, each user message's first 4 KiB, 64 KiB in all.
        let mut prompt = String::from("KNOWN:\n");
        for k in request.known.iter().take(200) {
            let scope = if k.scope == Scope::User { "user" } else { "project" };
            prompt.push_str(&format!("- [{scope}] {}\n", clip(&k.observation, 512)));
        }
        prompt.push_str("\nUSER MESSAGES:\n");
        for m in &users {
            if prompt.len() > 64 * 1024 {
                break;
            }
            prompt.push_str(&format!("[{}] {}\n", m.id, clip(&text_of(m), 4 * 1024)));
        }
        let answer = complete(&CompletionRequest {
            system: Some(RULES.into()),
            messages: vec![Message { id: 0, role: Role::User, parts: vec![Part::Text(prompt)] }],
            max_tokens: 1_500,
            extra: "{}".into(),
        })?;
        let items = parse(&answer.text)?;
        let user_seqs: Vec<u64> = users.iter().map(|m| m.id).collect();
        let mut out: Vec<Proposal> = Vec::new();
        for item in items {
            let Some(observation) = item.get("observation").and_then(|o| o.as_str()).map(str::trim) else { continue };
            let seq = item.get("seq").and_then(serde_json::Value::as_u64).unwrap_or(0);
            // Only the user's own messages are sources.
            if observation.is_empty() || !user_seqs.contains(&seq) {
                continue;
            }
            let scope = match item.get("scope").and_then(|s| s.as_str()) {
                Some("project") => Scope::Project,
                _ => Scope::User,
            };
            let (entity, entity_type) = match scope {
                Scope::User => ("user", "person"),
                Scope::Project => ("project", "project"),
            };
            let held: Vec<&str> = out
                .iter()
                .filter(|p| p.scope == scope)
                .map(|p| p.observation.as_str())
                .chain(
                    request
                        .known
                        .iter()
                        .filter(|k| k.scope == scope && k.entity == entity)
                        .map(|k| k.observation.as_str()),
                )
                .collect();
            if held.iter().any(|h| same(h, observation)) {
                continue;
            }
            // A replaced line must be one memory (or this answer) holds.
            let replaces = item
                .get("replaces")
                .and_then(|r| r.as_str())
                .and_then(|r| held.iter().find(|h| same(h, r)).map(|h| h.to_string()));
            out.push(Proposal {
                scope,
                entity: entity.into(),
                entity_type: entity_type.into(),
                observation: observation.into(),
                replaces,
                source_seq: seq,
            });
        }
        out.truncate(64);
        Ok(out)
    }
}

/// The JSON list in the model's answer (fenced or not).
fn parse(text: &str) -> Result<Vec<serde_json::Value>, Error> {
    let (Some(start), Some(end)) = (text.find('['), text.rfind(']')) else {
        return Err(error("invalid_answer", "the model's answer holds no JSON list of memories"));
    };
    if end < start {
        return Err(error("invalid_answer", "the model's answer holds no JSON list of memories"));
    }
    serde_json::from_str::<Vec<serde_json::Value>>(&text[start..=end])
        .map_err(|e| error("invalid_answer", format!("the model's list of memories is not valid JSON: {e}")))
}

/// `text`'s first `max` bytes (at a character's boundary).
fn clip(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The same observation, whatever its case and spacing.
fn same(a: &str, b: &str) -> bool {
    a.split_whitespace().map(str::to_lowercase).eq(b.split_whitespace().map(str::to_lowercase))
}

seshat_plugin_sdk::export_extractor!(ModelExtractor);
