//! Memory extraction (`[memory] extract`): the extractor plugin reads what a session said since
//! it was last read — after each turn, or when the session's agent closes — and what it proposes
//! is written through the memory tools' own path: recorded as the extractor's at the proposal's
//! message (`Writer::extraction`), a replaced observation kept as history, an attribute given a
//! new value without saying so flagged as a conflict, credentials redacted, the scope's time to
//! live applied. What memory already holds is not written again. How far a session was read is
//! kept in its metadata (`extracted_through`), so no message is read twice and a fact a later
//! correction replaced is never brought back by reading its message again.

use std::sync::Arc;

use crate::compaction::ModelClient;
use crate::conversation::{Part, Role};
use crate::memory::{self, Scope, Writer};
use crate::plugins::{
    Completion, CompletionRequest, ExtractMoment, ExtractProposal, ExtractRequest, ExtractScope, ExtractorPlugin,
    KnownFact, ModelCall, ModelError, PluginMessage,
};
use crate::store::Store;

/// The session metadata key holding how far an extractor read (`{"session": id, "seq": n}`).
pub const EXTRACTED_THROUGH: &str = "extracted_through";
/// The most current observations an extractor is told of.
const MAX_KNOWN: usize = 400;
/// The most messages one call of the extractor reads (a longer stretch is read in batches).
const MAX_MESSAGES: u64 = 200;
/// The most bytes of messages one call reads.
const MAX_REQUEST_BYTES: usize = 512 * 1024;
/// A tool result's text is cut to this many bytes in what an extractor reads.
const MAX_TOOL_TEXT: usize = 2_048;
/// Any other part's text is cut to this many bytes.
const MAX_PART_TEXT: usize = 8 * 1024;
/// The most current observations of one entity an extractor is told of.
const MAX_KNOWN_PER_ENTITY: usize = 200;

/// An extractor and how it is run.
pub struct Extraction {
    plugin: ExtractorPlugin,
    at: crate::config::ExtractAt,
    extra: String,
    ttls: memory::Ttls,
}

impl std::fmt::Debug for Extraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extraction").field("plugin", &self.plugin.id()).field("at", &self.at).finish_non_exhaustive()
    }
}

/// What one extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Extracted {
    /// The seqs read (`from..=to`), when there was anything to read.
    pub read: Option<(u64, u64)>,
    /// What the extractor proposed.
    pub proposed: usize,
    /// What was written.
    pub written: Vec<Remembered>,
    /// Proposals memory already held, not written again.
    pub known: usize,
    /// Proposals kept for a reviewer (a team scope that requires review).
    pub for_review: usize,
    /// Proposals that could not be written, each with why.
    pub refused: Vec<String>,
    /// Batches of messages the extractor failed on (passed over), each with why.
    pub failed: Vec<String>,
}

/// One observation an extraction wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Remembered {
    /// Whose memory.
    pub scope: Scope,
    /// The entity.
    pub entity: String,
    /// The observation.
    pub observation: String,
    /// The observations it replaced (now history).
    pub replaced: Vec<String>,
    /// The message it came from.
    pub seq: u64,
}

impl Extraction {
    /// `plugin`, run as `[memory]` says (`at`), given `extra` (its options, a JSON object), what
    /// it writes kept as `ttls` say.
    pub fn new(plugin: ExtractorPlugin, at: crate::config::ExtractAt, extra: String, ttls: memory::Ttls) -> Self {
        Extraction { plugin, at, extra, ttls }
    }

    /// The extractor's id.
    pub fn plugin_id(&self) -> &str {
        self.plugin.id()
    }

    /// What the extractor's calls have used so far.
    pub fn usage(&self) -> crate::plugins::Usage {
        self.plugin.usage()
    }

    /// The end of what the extractor wrote to stderr (empty when nothing).
    pub fn stderr(&self) -> &str {
        self.plugin.stderr()
    }

    /// When it reads.
    pub fn at(&self) -> crate::config::ExtractAt {
        self.at
    }

    /// Reads `session`'s messages after the last one read (none read yet: from `first`) in
    /// batches, and writes what the extractor proposes into `project`'s memory (the user's, for
    /// proposals of the user's scope). `models` and `model` answer its model calls. How far it
    /// read is recorded after each batch: a batch the plugin failed on is passed over (reading it
    /// again would fail alike) and said so in [`Extracted::failed`]; a failure of the store ends
    /// the run with the batch left to read again.
    pub fn run(
        &mut self,
        store: &mut Store,
        session: &str,
        project: &str,
        moment: ExtractMoment,
        first: u64,
        (models, model): (Arc<dyn ModelClient>, &str),
    ) -> Result<Extracted, super::Error> {
        let info = store.session(session)?;
        let last = info.message_count;
        let mut from = read_through(&info).map_or(first.max(1), |t| t.saturating_add(1));
        let mut out = Extracted::default();
        let project = (!project.is_empty()).then_some(project);
        // What a rewind took out of the live view is not read.
        let hidden = store.live_rewinds(session)?;
        while from <= last {
            let to = from.saturating_add(MAX_MESSAGES - 1).min(last);
            let mut messages = Vec::new();
            let mut bytes = 0;
            for m in store.history_range(session, from, to)? {
                if hidden.iter().any(|r| (r.from_seq..=r.through_seq).contains(&m.seq)) {
                    continue;
                }
                let message = readable(m.seq, m.role, m.parts);
                let size: usize = message.parts.iter().map(Part::byte_size).sum();
                if !messages.is_empty() && bytes + size > MAX_REQUEST_BYTES {
                    break;
                }
                bytes += size;
                messages.push(message);
            }
            let to = messages.last().map_or(to, |m| m.id);
            if messages.is_empty() {
                out.read = Some((out.read.map_or(from, |r| r.0), to));
                mark(store, session, to)?;
                from = to + 1;
                continue;
            }
            let known = known(store, project, session)?;
            let request = ExtractRequest {
                moment,
                session: session.to_string(),
                project: project.unwrap_or_default().to_string(),
                messages,
                known: known.clone(),
                extra: self.extra.clone(),
            };
            let model = Box::new(SessionModel { client: models.clone(), model: model.to_string() });
            match self.plugin.extract(&request, model) {
                Ok(proposed) => {
                    out.proposed += proposed.proposals.len() + proposed.refused.len();
                    out.refused.extend(proposed.refused);
                    self.write_all(store, session, project, &known, proposed.proposals, &mut out)?;
                }
                Err(e) => out.failed.push(format!("messages {from}–{to} were passed over: {e}")),
            }
            out.read = Some((out.read.map_or(from, |r| r.0), to));
            mark(store, session, to)?;
            from = to + 1;
        }
        Ok(out)
    }

    /// Writes checked proposals, in order, skipping what memory holds.
    fn write_all(
        &self,
        store: &mut Store,
        session: &str,
        project: Option<&str>,
        known: &[KnownFact],
        proposals: Vec<ExtractProposal>,
        out: &mut Extracted,
    ) -> Result<(), super::Error> {
        let mut held: Vec<(ExtractScope, String, String)> =
            known.iter().map(|k| (k.scope, fold(&k.entity), fold(&k.observation))).collect();
        for proposal in proposals {
            let scope = match (proposal.scope, project) {
                (ExtractScope::Project, Some(_)) => Scope::Project,
                (ExtractScope::Project, None) => {
                    out.refused.push(format!(
                        "`{}`: a statement about the project, in a session that has none",
                        proposal.observation
                    ));
                    continue;
                }
                (ExtractScope::User, _) => Scope::User,
            };
            let key = (proposal.scope, fold(&proposal.entity), fold(&proposal.observation));
            if held.contains(&key) {
                out.known += 1;
                continue;
            }
            let writer = Writer::extraction(self.plugin.id(), session, proposal.source_seq);
            let mut memory = store.memory(project).written_by(writer).with_ttls(self.ttls.clone());
            match write(&mut memory, &proposal, &scope) {
                Ok(Written::Done(replaced)) => {
                    held.push(key);
                    out.written.push(Remembered {
                        scope,
                        entity: proposal.entity,
                        observation: proposal.observation,
                        replaced,
                        seq: proposal.source_seq,
                    });
                }
                Ok(Written::Known) => out.known += 1,
                Ok(Written::ForReview) => out.for_review += 1,
                Err(e @ (memory::Error::InvalidArguments { .. } | memory::Error::NoProject)) => {
                    out.refused.push(format!("`{}`: {e}", proposal.observation))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// How far a session was read: its own marker, or — in a fork, whose metadata is its parent's —
/// no further than the fork point.
fn read_through(info: &crate::store::SessionInfo) -> Option<u64> {
    let marker = info.metadata.get(EXTRACTED_THROUGH)?;
    let seq = marker.get("seq").and_then(serde_json::Value::as_u64)?;
    match marker.get("session").and_then(serde_json::Value::as_str) {
        Some(s) if s == info.id => Some(seq.min(info.message_count)),
        _ => Some(seq.min(info.fork_seq.unwrap_or(0))),
    }
}

/// Records that `session` was read through `seq`.
fn mark(store: &mut Store, session: &str, seq: u64) -> Result<(), super::Error> {
    store.set_metadata(session, EXTRACTED_THROUGH, serde_json::json!({"session": session, "seq": seq}))?;
    Ok(())
}

/// Marks a session as read through `seq` when nothing was read of it yet (an agent opening a
/// session with extraction on: what it held before is not read at its turns; `memory extract`
/// reads it).
pub(super) fn start_at(store: &mut Store, session: &str, seq: u64) -> Result<(), super::Error> {
    if read_through(&store.session(session)?).is_none() {
        mark(store, session, seq)?;
    }
    Ok(())
}

/// How one proposal went.
enum Written {
    /// Written; the observations it replaced.
    Done(Vec<String>),
    /// The entity already held it.
    Known,
    /// Kept for a reviewer.
    ForReview,
}

/// Writes one proposal as the memory tools do: onto its entity (created when missing), replacing
/// what it names when the entity holds that now (else written beside it, where the conflict
/// check sees it).
fn write(memory: &mut memory::Memory<'_>, p: &ExtractProposal, scope: &Scope) -> Result<Written, memory::Error> {
    use seshat_protocol::memory_tools::{AddObservationsParams, CreateEntitiesParams, ObservationsToAdd};
    if let Some(old) = &p.replaces {
        let params = AddObservationsParams {
            observations: vec![ObservationsToAdd {
                entity_name: p.entity.clone(),
                contents: vec![p.observation.clone()],
                replaces: vec![old.clone()],
            }],
            scope: Some(scope.clone()),
        };
        match memory::tools::add_observations(memory, &params) {
            Ok(done) if done.proposal.is_some() => return Ok(Written::ForReview),
            Ok(done) => {
                let adds = done.results.into_iter().next();
                let replaced = adds.as_ref().map(|a| a.replaced_observations.clone()).unwrap_or_default();
                let added = adds.is_some_and(|a| !a.added_observations.is_empty());
                return Ok(if added { Written::Done(replaced) } else { Written::Known });
            }
            // The entity is gone, or no longer holds what the proposal replaces: written as new.
            Err(memory::Error::EntityNotFound(_) | memory::Error::InvalidArguments { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let params = CreateEntitiesParams {
        entities: vec![memory::NewEntity {
            name: p.entity.clone(),
            entity_type: p.entity_type.clone(),
            observations: vec![p.observation.clone()],
        }],
        ttl: None,
        scope: Some(scope.clone()),
    };
    let done = memory::tools::create_entities(memory, &params)?;
    if done.proposal.is_some() {
        return Ok(Written::ForReview);
    }
    let added = done.entities.iter().any(|e| e.observations.iter().any(|o| fold(o) == fold(&p.observation)));
    Ok(if added { Written::Done(Vec::new()) } else { Written::Known })
}

/// The current observations of the project's and the user's memory: the entities the default
/// extractor writes (`project`, `user`) first, each newest first with the message of this
/// session it came from, then other entities', at most [`MAX_KNOWN`] in all.
fn known(store: &mut Store, project: Option<&str>, session: &str) -> Result<Vec<KnownFact>, super::Error> {
    let mut memory = store.memory(project).with_sources(true);
    let mut out = Vec::new();
    let scopes: &[(Scope, ExtractScope, &str)] = match project {
        Some(_) => &[(Scope::Project, ExtractScope::Project, "project"), (Scope::User, ExtractScope::User, "user")],
        None => &[(Scope::User, ExtractScope::User, "user")],
    };
    let push = |entity: memory::Entity, as_seen: ExtractScope, out: &mut Vec<KnownFact>| {
        let sources = entity.observation_sources;
        let mut facts: Vec<KnownFact> = entity
            .observations
            .into_iter()
            .enumerate()
            .map(|(i, observation)| {
                let from_here =
                    sources.get(i).and_then(Option::as_ref).filter(|s| s.session.as_deref() == Some(session));
                KnownFact {
                    scope: as_seen,
                    entity: entity.name.clone(),
                    observation,
                    seq: from_here.and_then(|s| s.seq),
                }
            })
            .collect();
        facts.reverse();
        facts.truncate(MAX_KNOWN_PER_ENTITY);
        out.extend(facts);
    };
    for (scope, as_seen, name) in scopes {
        for entity in memory.open_nodes(&[name.to_string()], Some(scope))?.entities {
            push(entity, *as_seen, &mut out);
        }
    }
    for (scope, as_seen, name) in scopes {
        let (graph, _) = memory.read_graph(Some(scope), 0, 50)?;
        for entity in graph.entities.into_iter().filter(|e| !e.name.eq_ignore_ascii_case(name)) {
            if out.len() >= MAX_KNOWN {
                break;
            }
            push(entity, *as_seen, &mut out);
        }
    }
    out.truncate(MAX_KNOWN);
    Ok(out)
}

/// A message as an extractor reads it: tool results cut to their head, every other text to
/// [`MAX_PART_TEXT`].
fn readable(seq: u64, role: Role, parts: Vec<Part>) -> PluginMessage {
    fn cut(text: String, max: usize) -> String {
        if text.len() <= max {
            return text;
        }
        let end = text.floor_char_boundary(max);
        format!("{}\n[… {} more bytes]", &text[..end], text.len() - end)
    }
    let parts = parts
        .into_iter()
        .map(|part| match part {
            Part::ToolResult { call_id, content, is_error } => {
                Part::ToolResult { call_id, content: cut(content, MAX_TOOL_TEXT), is_error }
            }
            Part::Text { text } => Part::Text { text: cut(text, MAX_PART_TEXT) },
            Part::Thinking { text, signature } => Part::Thinking { text: cut(text, MAX_PART_TEXT), signature },
            Part::ToolCall { id, name, arguments } => {
                Part::ToolCall { id, name, arguments: cut(arguments, MAX_PART_TEXT) }
            }
            other => other,
        })
        .collect();
    PluginMessage { id: seq, role, parts }
}

/// Text compared without case or spacing.
fn fold(text: &str) -> String {
    text.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

/// The session's model, answering an extractor's `complete`.
struct SessionModel {
    client: Arc<dyn ModelClient>,
    model: String,
}

impl ModelCall for SessionModel {
    fn complete(&mut self, request: CompletionRequest) -> Result<Completion, ModelError> {
        self.client.complete(&self.model, request)
    }
}

impl super::Agent {
    /// Runs the session's extractor (`[memory] extract`) on what the session said since it was
    /// last read; `None` when no extractor is on. What it wrote is logged.
    pub fn extract(&mut self, moment: ExtractMoment) -> Result<Option<Extracted>, super::Error> {
        let Some(extraction) = self.extraction.as_mut() else { return Ok(None) };
        let models = self.client.models.clone();
        let done = extraction.run(
            self.client.store(),
            &self.session,
            &self.project,
            moment,
            self.opened_at + 1,
            (models, &self.model),
        )?;
        for r in &done.written {
            tracing::info!(
                entity = %r.entity,
                seq = r.seq,
                replaced = r.replaced.len(),
                "remembered from the session: {}",
                r.observation
            );
        }
        for why in &done.refused {
            tracing::warn!("the extractor's proposal was not written: {why}");
        }
        for why in &done.failed {
            tracing::warn!("the extractor failed: {why}");
        }
        Ok(Some(done))
    }
}
