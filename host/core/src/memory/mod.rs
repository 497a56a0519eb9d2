//! Long-term memory: a small knowledge graph of named entities with observations and relations,
//! plus key/value notes, kept in the session database.
//!
//! Everything lives in a scope: `user` (about the person, visible in every project), `project`
//! (one project, keyed by the project key), `cross` (general knowledge, visible everywhere) —
//! each the caller's own — or `team:NAME` (a team's, shared with the users it grants it to).
//! Reads cover user + this project + cross + the caller's teams unless a scope is named. Graph
//! writes default to `project` inside a project, else `cross`; notes default to `user`.
//!
//! Every tool call is one `BEGIN IMMEDIATE` transaction, so concurrent agents never lose each
//! other's writes. Names are unique per scope under Unicode case folding and NFC. Deletions made
//! through the tools are tombstones that [`Memory::restore`] brings back.

/// Runs a memory method's body, naming the database and `op` in any database failure.
macro_rules! on_memory_db {
    ($self:ident, $op:literal, $body:block) => {{
        #[allow(clippy::redundant_closure_call)]
        let result = (|| -> $crate::memory::Result<_> { $body })();
        result.map_err(|e| e.at($self.location(), $op))
    }};
}

mod context;
mod expiry;
mod graph;
mod notes;
mod provenance;
mod redact;
mod review;
mod search;
pub mod tools;
mod validity;
mod versions;

pub use context::{ContextSection, DEFAULT_CONTEXT_TOKENS, MemoryContext};
pub use expiry::Ttls;
pub use graph::{
    Conflict, Deletion, Entity, Graph, NewEntity, ObservationAdds, ObservationsToAdd, PastObservation, Relation,
    RelationSpec,
};
pub use notes::Note;
pub use provenance::{Source, SourceKind, Writer};
pub use review::Proposal;
pub use versions::{EntityVersion, Undone};

use crate::store::db::{Db, params};
use crate::store::{Location, Store};
pub use seshat_protocol::memory::Scope;

/// Refuses a name, type or key holding a C0 control character other than tab and newline (NUL,
/// escape, carriage return…): such text could rewrite a terminal or the context it is shown in.
/// `field` names what was checked (`entity name`), `tool` the call.
pub(crate) fn check_label(tool: &str, field: &str, text: &str) -> Result<()> {
    match text.chars().position(|c| c.is_ascii_control() && c != '\t' && c != '\n' && c != '\x7f') {
        None => Ok(()),
        Some(at) => {
            let c = text.chars().nth(at).unwrap_or_default();
            Err(Error::InvalidArguments {
                tool: tool.into(),
                message: format!(
                    "the {field} `{}` holds the control character U+{:04X} at character {}: names and keys cannot \
                     hold control characters (tab and newline aside); remove it",
                    text.chars().map(|c| if c.is_ascii_control() { '?' } else { c }).collect::<String>(),
                    c as u32,
                    at + 1
                ),
            })
        }
    }
}

/// Errors from memory operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool argument is missing or malformed.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// An entity that must exist does not.
    #[error("Entity with name {0} not found: create it with memory_create_entities first")]
    EntityNotFound(String),
    /// Relations name entities that do not exist (in the scope the relations go to).
    #[error(
        "no entity named {} in the {scope} graph: create {} with memory_create_entities first (no relation was written)",
        .names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
        if .names.len() == 1 { "it" } else { "them" }
    )]
    RelationEndsMissing {
        /// The missing names, as given, in order.
        names: Vec<String>,
        /// The scope looked in.
        scope: String,
    },
    /// The project scope was named outside a project.
    #[error("the project scope needs a project: run inside a git repository or name another scope (user, cross)")]
    NoProject,
    /// No such tool.
    #[error("unknown memory tool `{0}`")]
    UnknownTool(String),
    /// No such deletion to restore.
    #[error("no deletion {0} to restore: the list of deletions names the ones there are")]
    NoSuchDeletion(i64),
    /// The team scope written requires review and the caller does not review it: the write is to
    /// be proposed (the memory tools do), not made.
    #[error("team:{team} requires review: a member's write to its memory is a proposal a reviewer approves")]
    ReviewRequired {
        /// The team.
        team: String,
    },
    /// No such proposal (or not one the caller may decide).
    #[error("no proposal {0} waiting for you: the list of proposals names the ones there are")]
    NoSuchProposal(i64),
    /// No such version of an entity.
    #[error("{name} has no version {version}: {}", if *.latest == 0 {
        "no change to it has been recorded (it was written before versions were kept)".to_string()
    } else {
        format!("its versions are 1 to {}; its history lists them", .latest)
    })]
    NoSuchVersion {
        /// The entity.
        name: String,
        /// The version asked for.
        version: u32,
        /// Its latest version (0: none).
        latest: u32,
    },
    /// The database failed: which one, the operation, the message, what to do.
    #[error(transparent)]
    Database(crate::store::Error),
    /// A file could not be written (a backup).
    #[error("cannot write {}: {cause}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
}

impl Error {
    /// A stable code: the store's for a database failure (`scope_denied` for a team scope the
    /// caller may not write), `memory_failed` for the rest.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Database(e) => e.code(),
            Error::ReviewRequired { .. } => "review_required",
            Error::NoSuchProposal(_) => "proposal_not_found",
            _ => "memory_failed",
        }
    }
}

/// Result alias for memory operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The memory as seen by one user from one project (or from none).
pub struct Memory<'s> {
    db: &'s mut Db,
    location: &'s Location,
    redacting: crate::store::Redacting<'s>,
    project: Option<String>,
    user: String,
    /// Who its writes are recorded as made by.
    writer: Writer,
    /// What its reads return beyond current observations.
    detail: graph::Detail,
    /// How long what it writes is kept, by scope.
    ttls: Ttls,
}

/// Where memory rows live: a scope with the project and owner columns it is stored under (the
/// caller for their own scopes, the team for a team scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// The scope.
    pub scope: Scope,
    /// The `project` column: the project key for `project`, empty otherwise.
    pub project: String,
    /// The `owner` column.
    pub owner: String,
}

impl Place {
    /// A team's place: its scope, stored under the team's name.
    fn team(team: String) -> Place {
        Place { scope: Scope::Team(team.clone()), project: String::new(), owner: team }
    }

    /// The `scope` column.
    pub fn kind(&self) -> &'static str {
        self.scope.kind()
    }
}

impl From<crate::store::Error> for Error {
    fn from(e: crate::store::Error) -> Self {
        Error::Database(e)
    }
}

impl Error {
    /// Names the database and the operation in a database failure.
    pub(crate) fn at(self, location: &Location, op: &'static str) -> Error {
        match self {
            Error::Database(e) => Error::Database(e.at(location, op)),
            other => other,
        }
    }
}

impl std::fmt::Debug for Memory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory").field("project", &self.project).finish_non_exhaustive()
    }
}

impl Store {
    /// The long-term memory, seen from `project` (a project key; `None` outside any project).
    pub fn memory(&mut self, project: Option<&str>) -> Memory<'_> {
        let (db, location, user, redacting) = self.parts_mut();
        let user = user.to_string();
        Memory {
            db,
            location,
            redacting,
            project: project.map(str::to_string),
            user,
            writer: Writer::user(),
            detail: graph::Detail::default(),
            ttls: Ttls::default(),
        }
    }
}

impl Memory<'_> {
    /// Records its writes as made by `writer` (a person's, by default).
    pub fn written_by(mut self, writer: Writer) -> Self {
        self.writer = writer;
        self
    }

    /// Has its reads say where each entity and observation came from.
    pub fn with_sources(mut self, sources: bool) -> Self {
        self.detail.sources = sources;
        self
    }

    /// Has its reads of the graph (`read_graph`, `open_nodes`) show it as it stood at `then` (Unix
    /// milliseconds): the entities written by then and not yet deleted or expired, each with the
    /// observations it held then.
    pub fn as_of(mut self, then: Option<i64>) -> Self {
        self.detail.as_of = then;
        self
    }

    /// Has its reads return the observations entities no longer hold (replaced ones).
    pub fn with_history(mut self, history: bool) -> Self {
        self.detail.history = history;
        self
    }

    /// Keeps what it writes as long as `ttls` say for each scope (when a write names no time).
    pub fn with_ttls(mut self, ttls: Ttls) -> Self {
        self.ttls = ttls;
        self
    }

    /// Where the database is.
    pub(crate) fn location(&self) -> &Location {
        self.location
    }

    /// The project this memory is seen from.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// The caller's own places that hold live memory — user, cross, and each project with some
    /// (never a team's) — as (scope, project key): what a merge of the store brings over.
    pub fn owned_places(&mut self) -> Result<Vec<(Scope, Option<String>)>> {
        on_memory_db!(self, "list the places memory is kept", {
            let rows: Vec<(String, String)> = self.db.query_vec(
                "SELECT scope, project FROM memory_entities WHERE owner = ?1 AND scope <> 'team' AND deleted_by IS NULL \
                 UNION SELECT scope, project FROM memory_notes WHERE owner = ?1 AND scope <> 'team' \
                 ORDER BY 1, 2",
                params![self.user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(rows
                .into_iter()
                .filter_map(|(kind, project)| match kind.as_str() {
                    "user" => Some((Scope::User, None)),
                    "cross" => Some((Scope::Cross, None)),
                    "project" => Some((Scope::Project, Some(project))),
                    _ => None,
                })
                .collect())
        })
    }

    /// Where graph writes go by default: the project inside one, else cross.
    pub(crate) fn default_graph_scope(&self) -> Scope {
        if self.project.is_some() { Scope::Project } else { Scope::Cross }
    }

    /// The places reads cover: `only` if given (a team only through a grant), else the caller's
    /// user, this project (if any) and cross, and every team granted to the caller. The grants
    /// are read from `db`, in the transaction that reads the places.
    fn visible(&self, db: &Db, only: Option<&Scope>) -> Result<Vec<Place>> {
        match only {
            Some(scope) => {
                if let Some(team) = scope.team() {
                    crate::store::owners::check_team_read(db, &self.user, team)?;
                }
                Ok(vec![self.place(scope)?])
            }
            None => {
                let mut v = vec![self.own(Scope::User, "")];
                if let Some(p) = &self.project {
                    v.push(self.own(Scope::Project, p));
                }
                v.push(self.own(Scope::Cross, ""));
                v.extend(
                    crate::store::owners::teams_of(db, &self.user, crate::store::Access::Read)?
                        .into_iter()
                        .map(Place::team),
                );
                Ok(v)
            }
        }
    }

    /// One of the caller's own places.
    fn own(&self, scope: Scope, project: &str) -> Place {
        Place { scope, project: project.to_string(), owner: self.user.clone() }
    }

    /// The place a scope names for the caller (no access check: see [`Memory::check_write`]).
    fn place(&self, scope: &Scope) -> Result<Place> {
        match scope {
            Scope::Project => self.project.clone().map(|p| self.own(Scope::Project, &p)).ok_or(Error::NoProject),
            Scope::Team(team) => Ok(Place::team(team.clone())),
            other => Ok(self.own(other.clone(), "")),
        }
    }

    /// Refuses a write to `place` the caller may not make (a team scope without read-write
    /// access), inside the write's transaction; a write to a team that requires review from a
    /// member who does not review it is [`Error::ReviewRequired`] (the tools propose it instead).
    fn check_write(db: &Db, user: &str, place: &Place) -> Result<()> {
        match place.scope.team() {
            Some(team) => {
                crate::store::owners::check_team_write(db, user, team)?;
                if crate::store::owners::needs_review(db, user, team)? {
                    return Err(Error::ReviewRequired { team: team.to_string() });
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The order in which a name is looked up for a change: the named scope, else this project,
    /// then user, then cross, then the teams the caller may write.
    fn lookup_order(&self, db: &Db, only: Option<&Scope>) -> Result<Vec<Place>> {
        match only {
            Some(scope) => Ok(vec![self.place(scope)?]),
            None => {
                let mut v = Vec::new();
                if let Some(p) = &self.project {
                    v.push(self.own(Scope::Project, p));
                }
                v.push(self.own(Scope::User, ""));
                v.push(self.own(Scope::Cross, ""));
                v.extend(
                    crate::store::owners::teams_of(db, &self.user, crate::store::Access::Write)?
                        .into_iter()
                        .map(Place::team),
                );
                Ok(v)
            }
        }
    }
}

/// The identity of a name: Unicode case folding, then NFC. `Ærø` and `ærø` are one entity.
pub fn name_key(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded = caseless::default_case_fold_str(&name.trim().nfd().collect::<String>());
    folded.nfc().collect()
}

#[cfg(test)]
mod tests {
    use super::name_key;

    #[test]
    fn keys_fold_case_and_normalise() {
        assert_eq!(name_key("Ærø"), name_key("ærø"));
        assert_eq!(name_key("Straße"), name_key("STRASSE"));
        assert_eq!(name_key("e\u{301}"), name_key("\u{e9}"), "decomposed and composed é are one");
        assert_ne!(name_key("cafe"), name_key("café"));
    }
}
