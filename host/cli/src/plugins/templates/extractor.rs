//! A memory extractor for Seshat: remembers what the user asks to be remembered ("remember that
//! …"), from the user's own messages only. Seshat writes each proposal as its memory tools would
//! (with where it came from), and skips what memory already holds.
use seshat_plugin_sdk::extractor::{Error, ExtractRequest, Extractor, Proposal, Role, Scope, text_of};

struct Plugin;

impl Extractor for Plugin {
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, Error> {
        let mut out = Vec::new();
        for message in request.messages.iter().filter(|m| m.role == Role::User) {
            for line in text_of(message).lines() {
                let lower = line.trim().to_lowercase();
                let Some(rest) = lower.strip_prefix("remember that ") else { continue };
                let observation = line.trim()[line.trim().len() - rest.len()..].trim().to_string();
                // Already known: nothing to write.
                if request.known.iter().any(|k| k.observation.eq_ignore_ascii_case(&observation)) {
                    continue;
                }
                out.push(Proposal {
                    scope: Scope::User,
                    entity: "user".into(),
                    entity_type: "person".into(),
                    observation,
                    replaces: None,
                    source_seq: message.id,
                });
            }
        }
        Ok(out)
    }
}

seshat_plugin_sdk::export_extractor!(Plugin);
