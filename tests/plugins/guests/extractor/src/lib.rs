//! A test extractor steered by its options (`{"mode": …}`): `model` asks the model and proposes
//! its answer for the last user message; `stale` proposes a line replacing one memory does not
//! hold; `bad_seq` names a message it was not given; `too_many` proposes 65 writes.

use seshat_plugin_sdk::extractor::{
    CompletionRequest, Error, ExtractRequest, Extractor, Message, Part, Proposal, Role, Scope, complete, options,
};
use seshat_plugin_sdk::serde_json::Value;

struct Steered;

fn proposal(observation: String, replaces: Option<String>, seq: u64) -> Proposal {
    Proposal {
        scope: Scope::User,
        entity: "user".into(),
        entity_type: "person".into(),
        observation,
        replaces,
        source_seq: seq,
    }
}

impl Extractor for Steered {
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, Error> {
        let opts: Value = options(&request.extra)?;
        let last = request.messages.iter().rev().find(|m| m.role == Role::User).map_or(0, |m| m.id);
        Ok(match opts["mode"].as_str().unwrap_or("") {
            "model" => {
                let answer = complete(&CompletionRequest {
                    system: Some("extract".into()),
                    messages: vec![Message { id: 0, role: Role::User, parts: vec![Part::Text("go".into())] }],
                    max_tokens: 100,
                    extra: "{}".into(),
                })?;
                vec![proposal(answer.text, None, last)]
            }
            "stale" => vec![proposal("the user prefers helix".into(), Some("the user prefers emacs".into()), last)],
            "bad_seq" => vec![proposal("the user prefers vim".into(), None, 999)],
            "too_many" => (0..65).map(|i| proposal(format!("fact {i}"), None, last)).collect(),
            _ => Vec::new(),
        })
    }
}

seshat_plugin_sdk::export_extractor!(Steered);
