//! Merging one store into another as one of its users: a person's own store brought into a
//! team's, so that what they did alone — sessions with their forks, memory, documents — becomes
//! theirs on the service. Nothing of the target is changed or removed; running the merge again
//! adds only what is new:
//!
//! * a session the target lacks is copied whole (its export imported: messages, compactions,
//!   trims, pins, rewinds, lineage); one it holds with fewer messages, the same up to there, gets
//!   the messages since; one that differs (continued on both sides) is left as the target has it
//!   and named; one whose id another user holds there is named too;
//! * memory is merged by place (user, cross, each project): entities by name (the observations
//!   they lack added), relations the target lacks, notes whose key it lacks (a key it holds with
//!   another value is kept and named);
//! * a document the target lacks at its path is copied with its chunks (to be embedded again
//!   there); one at the same path with other content is kept and named.

use crate::conversation::NewMessage;
use crate::memory::{NewEntity, RelationSpec};
use crate::store::{ImportOptions, ListFilter, NewDocument, Store};

/// What went wrong in a merge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A store failed (the source's or the target's: the message names it).
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// A memory call failed.
    #[error(transparent)]
    Memory(#[from] crate::memory::Error),
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Store(e) => e.code(),
            Error::Memory(e) => e.code(),
        }
    }
}

/// What a merge brought over, and what it left.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Merged {
    /// Sessions copied whole.
    pub sessions_added: usize,
    /// Sessions that got the messages added since the last merge.
    pub sessions_grown: usize,
    /// Messages added to those.
    pub messages_added: usize,
    /// Sessions already there as they are.
    pub sessions_unchanged: usize,
    /// Sessions continued on both sides: left as the target has them.
    pub sessions_diverged: Vec<String>,
    /// Sessions whose id another user of the target holds: not copied.
    pub sessions_taken: Vec<String>,
    /// Entities the target lacked.
    pub entities_added: usize,
    /// Observations added (to new entities and to those the target had).
    pub observations_added: usize,
    /// Relations the target lacked.
    pub relations_added: usize,
    /// Notes whose key the target lacked.
    pub notes_added: usize,
    /// Notes whose key the target holds with another value (`scope/key`): kept as they are.
    pub notes_kept: Vec<String>,
    /// Documents the target lacked.
    pub documents_added: usize,
    /// Documents already there with the same content.
    pub documents_unchanged: usize,
    /// Documents at a path the target holds with other content: kept as they are.
    pub documents_kept: Vec<String>,
}

/// Merges what `source`'s user owns into `target`, as `target`'s user (see the [module](self)
/// documentation). `progress` hears (what, done, in all) as it goes.
pub fn merge(
    source: &mut Store,
    target: &mut Store,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Merged, Error> {
    let mut merged = Merged::default();
    sessions(source, target, &mut merged, progress)?;
    memory(source, target, &mut merged)?;
    documents(source, target, &mut merged, progress)?;
    Ok(merged)
}

fn sessions(
    source: &mut Store,
    target: &mut Store,
    merged: &mut Merged,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<(), Error> {
    let mut all = source.list_sessions(&ListFilter::default())?;
    // Parents before their forks, so each fork's lineage finds its parent.
    all.sort_by(|a, b| (a.parent_id.is_some(), &a.id).cmp(&(b.parent_id.is_some(), &b.id)));
    let total = all.len() as u64;
    for (i, info) in all.iter().enumerate() {
        progress("sessions", i as u64, total);
        // An id another user of the target holds (their import of the same export, say) is not
        // copied again on every run under an id of its own.
        if target.session_holder(&info.id)?.is_some_and(|owner| owner != target.user()) {
            merged.sessions_taken.push(info.id.clone());
            continue;
        }
        match target.session(&info.id) {
            Ok(_) => {
                let theirs = source.full_history(&info.id)?;
                let ours = target.full_history(&info.id)?;
                let same = |a: &crate::store::Message, b: &crate::store::Message| {
                    a.role == b.role && a.parts == b.parts && a.status == b.status
                };
                let shared = ours.len().min(theirs.len());
                if !theirs.iter().zip(&ours).take(shared).all(|(a, b)| same(a, b)) || ours.len() > theirs.len() {
                    merged.sessions_diverged.push(info.id.clone());
                } else if ours.len() == theirs.len() {
                    merged.sessions_unchanged += 1;
                } else {
                    let new: Vec<NewMessage> = theirs[shared..]
                        .iter()
                        .map(|m| NewMessage { role: m.role, parts: m.parts.clone(), usage: m.usage, status: m.status })
                        .collect();
                    target.append(&info.id, &new)?;
                    merged.sessions_grown += 1;
                    merged.messages_added += new.len();
                }
            }
            Err(crate::store::Error::SessionNotFound(_)) => {
                let mut export = Vec::new();
                source.export(&info.id, &mut export)?;
                target.import(&mut export.as_slice(), ImportOptions::default())?;
                merged.sessions_added += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    progress("sessions", total, total);
    Ok(())
}

/// Entities, relations and notes read at once from one place, at most.
const PAGE: usize = 500;

fn memory(source: &mut Store, target: &mut Store, merged: &mut Merged) -> Result<(), Error> {
    let places = source.memory(None).owned_places()?;
    for (scope, project) in places {
        let project = project.as_deref();
        let mut offset = 0;
        loop {
            let (graph, more) = source.memory(project).read_graph(Some(&scope), offset, PAGE)?;
            offset += graph.entities.len();
            let names: Vec<String> = graph.entities.iter().map(|e| e.name.clone()).collect();
            let before = target.memory(project).open_nodes(&names, Some(&scope))?;
            let had: usize = before.entities.iter().map(|e| e.observations.len()).sum();
            let entities: Vec<NewEntity> = graph
                .entities
                .iter()
                .map(|e| NewEntity {
                    name: e.name.clone(),
                    entity_type: e.entity_type.clone(),
                    observations: e.observations.clone(),
                })
                .collect();
            if !entities.is_empty() {
                let now = target
                    .memory(project)
                    .written_by(crate::memory::Writer::import())
                    .create_entities(&entities, Some(&scope))?;
                let has: usize = now.iter().map(|e| e.observations.len()).sum();
                merged.entities_added += now.len().saturating_sub(before.entities.len());
                merged.observations_added += has.saturating_sub(had);
            }
            if !more || graph.entities.is_empty() {
                break;
            }
        }
        // Relations once every entity is there: a page holds only the relations among its own.
        let (whole, _) = source.memory(project).read_graph(Some(&scope), 0, usize::MAX >> 1)?;
        let relations: Vec<RelationSpec> = whole
            .relations
            .iter()
            .map(|r| RelationSpec { from: r.from.clone(), to: r.to.clone(), relation_type: r.relation_type.clone() })
            .collect();
        if !relations.is_empty() {
            merged.relations_added += target
                .memory(project)
                .written_by(crate::memory::Writer::import())
                .create_relations(&relations, Some(&scope))?
                .len();
        }
        let theirs = source.memory(project).notes(&scope)?;
        let ours = target.memory(project).notes(&scope)?;
        for note in theirs {
            match ours.iter().find(|n| n.key == note.key) {
                None => {
                    target.memory(project).written_by(crate::memory::Writer::import()).set_note(
                        scope.clone(),
                        &note.key,
                        &note.value,
                    )?;
                    merged.notes_added += 1;
                }
                Some(kept) if kept.value != note.value => {
                    let at = project.map_or_else(|| scope.kind().to_string(), |p| format!("project {p}"));
                    merged.notes_kept.push(format!("{at}/{}", note.key));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

fn documents(
    source: &mut Store,
    target: &mut Store,
    merged: &mut Merged,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<(), Error> {
    let owned = source.knowledge_owned()?;
    let total = owned.len() as u64;
    for (i, doc) in owned.iter().enumerate() {
        progress("documents", i as u64, total);
        match target.knowledge_document(&doc.scope, &doc.project, &doc.path)? {
            Some((_, sha)) if sha == doc.sha256 => merged.documents_unchanged += 1,
            Some(_) => merged.documents_kept.push(doc.path.clone()),
            None => {
                let chunks = source.knowledge_chunks(doc.id)?;
                let new = NewDocument {
                    scope: doc.scope.clone(),
                    project: doc.project.clone(),
                    path: doc.path.clone(),
                    kind: doc.kind.clone(),
                    sha256: doc.sha256.clone(),
                    bytes: doc.bytes,
                };
                target.knowledge_put(&new, &chunks)?;
                merged.documents_added += 1;
            }
        }
    }
    progress("documents", total, total);
    Ok(())
}
