//! Extractor plugins (0.4.0): read what a session said since they were last asked and propose
//! what long-term memory should keep — an entity, an observation, what it replaces, the message it
//! comes from. The host validates every proposal here and writes it as the memory tools would
//! (`client::extraction`). An extractor may call the session's model through `model`, bounded
//! like a summariser's calls.

use super::bindings::{Versioned, v0_4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::sandbox::State;
use super::summariser::{ModelHost, model_host};
use super::{ModelCall, PluginKind, PluginMessage, Result};

use v0_4::extractor::exports::seshat::plugin::extract as wit;

mod host_v0_4 {
    use super::super::bindings::v0_1::wit;
    use super::super::summariser::CompletionRequest;
    use super::*;
    use v0_4::extractor::seshat::plugin::model::{Completion as Completion0, CompletionRequest as CompletionRequest0};
    model_host!(v0_4::extractor::seshat::plugin::model::Host);
}

versioned_kind! {
    /// Extractors (from 0.4.0): messages in, memory writes proposed. Earlier versions have no
    /// extractor world, so a component claiming one is linked against 0.4.0's and fails there.
    Extractor: PluginKind::Extractor, host ModelHost,
    v0_1 (v0_4::extractor::Extractor, v0_4::extractor::ExtractorPre<State<ModelHost>>),
    v0_2 (v0_4::extractor::Extractor, v0_4::extractor::ExtractorPre<State<ModelHost>>),
    v0_3 (v0_4::extractor::Extractor, v0_4::extractor::ExtractorPre<State<ModelHost>>),
    v0_4 (v0_4::extractor::Extractor, v0_4::extractor::ExtractorPre<State<ModelHost>>)
}

/// When an extractor is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractMoment {
    /// After a turn's answer was stored: the turn's messages.
    Turn,
    /// The session's agent is closing: every message not read yet.
    SessionEnd,
}

/// Whose memory a proposal is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtractScope {
    /// The user's own, in every project.
    User,
    /// The session's project.
    Project,
}

/// An observation memory holds now, as the extractor is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownFact {
    /// Whose memory holds it.
    pub scope: ExtractScope,
    /// Its entity's name.
    pub entity: String,
    /// Its text.
    pub observation: String,
    /// When it was written from this session: the message it came from.
    pub seq: Option<u64>,
}

/// What an extractor proposed, checked: the proposals the host can write, and each one it
/// refused with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Proposed {
    /// The proposals that passed the checks, in the order proposed.
    pub proposals: Vec<ExtractProposal>,
    /// Why each other proposal was refused.
    pub refused: Vec<String>,
}

/// What an extractor reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractRequest {
    /// Why it is asked now.
    pub moment: ExtractMoment,
    /// The session's id.
    pub session: String,
    /// The session's project key.
    pub project: String,
    /// The messages to read, oldest first, each with its seq.
    pub messages: Vec<PluginMessage>,
    /// What memory holds now, newest first.
    pub known: Vec<KnownFact>,
    /// The user's options for the extractor, a JSON object.
    pub extra: String,
}

/// One memory write an extractor proposes, checked by the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractProposal {
    /// Whose memory.
    pub scope: ExtractScope,
    /// The entity it is about.
    pub entity: String,
    /// The entity's type when it is created.
    pub entity_type: String,
    /// The observation.
    pub observation: String,
    /// A current observation of the same entity this one replaces.
    pub replaces: Option<String>,
    /// The seq of the request's message it comes from.
    pub source_seq: u64,
}

/// The most proposals one call may return.
pub const MAX_PROPOSALS: usize = 64;
/// The longest entity name or type a proposal may carry, in bytes.
const MAX_NAME: usize = 256;
/// The longest observation (or replaced text) a proposal may carry, in bytes.
const MAX_OBSERVATION: usize = 4_096;

/// A loaded extractor, ready to call.
pub struct ExtractorPlugin {
    handle: Handle<Extractor>,
}

shared_accessors!(ExtractorPlugin);

impl ExtractorPlugin {
    /// Asks the extractor what `request`'s messages give memory. `model` serves its `complete`
    /// calls, at most `limits.complete_calls` of them, each capped at
    /// `limits.complete_max_tokens`. Every proposal is checked alone — names and texts non-empty
    /// and bounded, each from one of the request's messages — and at most [`MAX_PROPOSALS`] are
    /// taken: one that fails is refused, the others kept. A trap or an error of the plugin's is
    /// the error.
    pub fn extract(&mut self, request: &ExtractRequest, model: Box<dyn ModelCall>) -> Result<Proposed> {
        let limits = self.handle.limits();
        let record = wit::ExtractRequest {
            moment: match request.moment {
                ExtractMoment::Turn => wit::Moment::Turn,
                ExtractMoment::SessionEnd => wit::Moment::SessionEnd,
            },
            session: request.session.clone(),
            project: request.project.clone(),
            messages: request.messages.iter().map(Into::into).collect(),
            known: request
                .known
                .iter()
                .map(|k| wit::Known {
                    scope: scope_to_wit(k.scope),
                    entity: k.entity.clone(),
                    observation: k.observation.clone(),
                    seq: k.seq,
                })
                .collect(),
            extra: request.extra.clone(),
        };
        let proposals = self.handle.call(|store, bindings| {
            *store.data_mut().host_mut() = ModelHost::new(model, limits.complete_calls, limits.complete_max_tokens);
            let result = match bindings {
                Versioned::V0_1(b) | Versioned::V0_2(b) | Versioned::V0_3(b) | Versioned::V0_4(b) => {
                    b.seshat_plugin_extract().call_extract(&mut *store, &record)
                }
            };
            store.data_mut().host_mut().clear();
            result
        })?;
        let mut out = Proposed::default();
        let count = proposals.len();
        for p in proposals.into_iter().take(MAX_PROPOSALS) {
            match self.check(request, p) {
                Ok(p) => out.proposals.push(p),
                Err(why) => out.refused.push(why),
            }
        }
        if count > MAX_PROPOSALS {
            out.refused.push(format!(
                "{} of its {count} proposals: an extractor may propose at most {MAX_PROPOSALS} per call",
                count - MAX_PROPOSALS
            ));
        }
        Ok(out)
    }

    /// One proposal checked against the request; why it is refused.
    fn check(&self, request: &ExtractRequest, p: wit::Proposal) -> std::result::Result<ExtractProposal, String> {
        let entity = p.entity.trim().to_string();
        let observation = p.observation.trim().to_string();
        let problem = if entity.is_empty() || entity.len() > MAX_NAME {
            Some(format!("a proposal's entity must be 1 to {MAX_NAME} bytes (got {})", entity.len()))
        } else if p.entity_type.len() > MAX_NAME {
            Some(format!("a proposal's entity type must be at most {MAX_NAME} bytes"))
        } else if observation.is_empty() || observation.len() > MAX_OBSERVATION {
            Some(format!(
                "the observation for `{entity}` must be 1 to {MAX_OBSERVATION} bytes (got {})",
                observation.len()
            ))
        } else if p.replaces.as_ref().is_some_and(|r| r.trim().is_empty() || r.len() > MAX_OBSERVATION) {
            Some(format!("what the observation for `{entity}` replaces must be 1 to {MAX_OBSERVATION} bytes"))
        } else if !request.messages.iter().any(|m| m.id == p.source_seq && m.id != 0) {
            Some(format!(
                "the observation for `{entity}` names message {} as its source, which is not one of the messages it \
                 was given",
                p.source_seq
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(format!("{}: {problem}", self.handle.id()));
        }
        let entity_type = match p.entity_type.trim() {
            "" => "thing".to_string(),
            t => t.to_string(),
        };
        Ok(ExtractProposal {
            scope: match p.scope {
                wit::Scope::User => ExtractScope::User,
                wit::Scope::Project => ExtractScope::Project,
            },
            entity,
            entity_type,
            observation,
            replaces: p.replaces.map(|r| r.trim().to_string()),
            source_seq: p.source_seq,
        })
    }
}

fn scope_to_wit(scope: ExtractScope) -> wit::Scope {
    match scope {
        ExtractScope::User => wit::Scope::User,
        ExtractScope::Project => wit::Scope::Project,
    }
}
