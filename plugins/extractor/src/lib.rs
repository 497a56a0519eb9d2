//! Seshat's default memory extractor: reads only the user's messages and proposes what they
//! stated as lasting — preferences, facts about themselves, constraints, decisions, "remember …" —
//! by the rules of `seshat_outcomes::lasting`, never the assistant's words or a tool's output.
//! What memory already holds is left out; a correction names the observation it replaces.

use seshat_plugin_sdk::extractor::{ExtractRequest, Extractor, Known, Proposal, Role, Scope, text_of};
use seshat_plugin_sdk::outcomes::lasting::{self, Correction};

/// The rule-based extractor.
struct Rules;

/// Hook context stored as a user message (the host marks it so): not the user's words.
const HOOK_CONTEXT: &str = "[context from hooks]";

impl Extractor for Rules {
    fn extract(request: ExtractRequest) -> Result<Vec<Proposal>, seshat_plugin_sdk::extractor::Error> {
        let mut out: Vec<Proposal> = Vec::new();
        for message in request.messages.iter().filter(|m| m.role == Role::User) {
            if out.len() >= 64 {
                break;
            }
            let text = text_of(message);
            if text.trim_start().starts_with(HOOK_CONTEXT) {
                continue;
            }
            for statement in lasting::statements(&text) {
                let scope = match statement.scope {
                    lasting::Scope::User => Scope::User,
                    lasting::Scope::Project => Scope::Project,
                };
                // What memory holds, newest first: this call's proposals, then memory's, in both
                // scopes (a correction replaces the line wherever it is).
                let mut held: Vec<(Scope, &str, &str)> =
                    out.iter().rev().map(|p| (p.scope, p.entity.as_str(), p.observation.as_str())).collect();
                let mine = held.len();
                held.extend(ours(&request.known, false));
                // A bare correction ("make that 4 spaces") corrects only what this session said.
                let candidates: Vec<(Scope, &str, &str)> = match statement.correction {
                    Correction::Previous => held[..mine].iter().copied().chain(ours(&request.known, true)).collect(),
                    _ => held.clone(),
                };
                let texts: Vec<&str> = candidates.iter().map(|h| h.2).collect();
                let found = lasting::replaced(&statement, &texts).map(|i| candidates[i]);
                // A correction goes where what it replaces is.
                let (scope, entity) = match found {
                    Some((scope, entity, _)) => (scope, entity.to_string()),
                    None => (scope, default_entity(scope).to_string()),
                };
                let observation = match (&statement.correction, found) {
                    (Correction::Previous, None) => continue,
                    (Correction::Previous, Some((_, _, old))) => {
                        format!("{} (correcting: {old})", statement.observation)
                    }
                    _ => statement.observation.clone(),
                };
                if held.iter().any(|h| same(h.2, &observation)) {
                    continue;
                }
                let entity_type = if scope == Scope::User { "person" } else { "project" };
                out.push(Proposal {
                    scope,
                    entity,
                    entity_type: entity_type.into(),
                    observation,
                    replaces: found.map(|(_, _, old)| old.to_string()),
                    source_seq: message.id,
                });
            }
        }
        out.truncate(64);
        Ok(out)
    }
}

/// The entity an extractor writes a scope's statements onto.
fn default_entity(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Project => "project",
    }
}

/// What memory holds on the entities this extractor writes (newest first, as the host sends it);
/// only what this session wrote when `this_session`.
fn ours(known: &[Known], this_session: bool) -> impl Iterator<Item = (Scope, &str, &str)> + '_ {
    known
        .iter()
        .filter(move |k| k.entity.eq_ignore_ascii_case(default_entity(k.scope)) && (!this_session || k.seq.is_some()))
        .map(|k| (k.scope, k.entity.as_str(), k.observation.as_str()))
}

/// The same observation, whatever its case and spacing.
fn same(a: &str, b: &str) -> bool {
    a.split_whitespace().map(str::to_lowercase).eq(b.split_whitespace().map(str::to_lowercase))
}

seshat_plugin_sdk::export_extractor!(Rules);
