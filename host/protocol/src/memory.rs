//! Long-term memory's words on the wire: scopes, notes and the graph's entities and relations
//! (named as the MCP memory tools name them: `entityType`, `relationType`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a memory lives.
///
/// On the wire and in the store a scope is spelt `user`, `project`, `cross` or `team:NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// About the person: visible in every project.
    User,
    /// About one project: visible in its sessions.
    Project,
    /// General knowledge shared by every session of every project.
    Cross,
    /// A named team's shared memory and knowledge, visible to the users the team grants it to.
    Team(String),
}

/// The longest team name, in bytes.
pub const TEAM_NAME_MAX: usize = 64;

/// Whether `name` can name a team: 1 to [`TEAM_NAME_MAX`] bytes of ASCII letters, digits, `-`,
/// `_` and `.`, starting with a letter or digit.
pub fn valid_team_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= TEAM_NAME_MAX
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Scope {
    /// The stored spelling's kind: `user`, `project`, `cross` or `team` (the store's `scope` column).
    pub fn kind(&self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Cross => "cross",
            Scope::Team(_) => "team",
        }
    }

    /// The team a team scope names.
    pub fn team(&self) -> Option<&str> {
        match self {
            Scope::Team(name) => Some(name),
            _ => None,
        }
    }

    /// The scope a stored (or typed) spelling names, if any: `user`, `project`, `cross`,
    /// `team:NAME`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => Scope::User,
            "project" => Scope::Project,
            "cross" => Scope::Cross,
            _ => match s.strip_prefix("team:") {
                Some(name) if valid_team_name(name) => Scope::Team(name.to_string()),
                _ => return None,
            },
        })
    }

    /// The scope a stored `scope` kind and owner name, if the pair is one.
    pub fn from_parts(kind: &str, owner: &str) -> Option<Self> {
        match kind {
            "team" => Some(Scope::Team(owner.to_string())),
            other => Scope::parse(other).filter(|s| !matches!(s, Scope::Team(_))),
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Team(name) => write!(f, "team:{name}"),
            other => f.write_str(other.kind()),
        }
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Scope::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown scope `{s}`: a scope is user, project, cross or team:NAME (NAME: letters, digits, - _ .)"
            ))
        })
    }
}

impl JsonSchema for Scope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Scope".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Where a memory lives: `user` (about the person), `project` (one project), `cross` \
                (general knowledge), or `team:NAME` (a team's shared memory).",
            "type": "string",
            "pattern": "^(user|project|cross|team:[A-Za-z0-9][A-Za-z0-9._-]{0,63})$"
        })
    }
}

/// A key/value note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// The key, e.g. `style`.
    pub key: String,
    /// The value.
    pub value: String,
    /// Where it lives.
    pub scope: Scope,
    /// Unix milliseconds.
    pub updated_at: i64,
    /// Who set it, when provenance is asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// When it expires (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// The memory context of a session: what it is given at its start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryContext {
    /// The text given to the agent (empty when there is no memory).
    pub text: String,
    /// Its estimated size in tokens.
    pub tokens: usize,
    /// The budget it was built for.
    pub budget: usize,
    /// Per scope, what was included and left out.
    pub sections: Vec<ContextSection>,
}

/// How much of one scope made it into a memory context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextSection {
    /// The scope.
    pub scope: Scope,
    /// Notes included.
    pub notes: usize,
    /// Entities included.
    pub entities: usize,
    /// Notes left out.
    pub omitted_notes: usize,
    /// Entities left out.
    pub omitted_entities: usize,
}

/// A tombstone batch: what one delete call removed (restorable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deletion {
    /// Its id, for a restore.
    pub id: i64,
    /// The tool that deleted.
    pub origin: String,
    /// What it deleted.
    pub summary: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// Who made a memory write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// A person, through `seshat memory` or a program's call to the service.
    User,
    /// The agent of a Seshat session, with a memory tool.
    Agent,
    /// Another agent, through `seshat mcp`.
    Mcp,
    /// A merge or import of another store's memory.
    Import,
    /// An extraction plugin, reading a session's turn.
    Extraction,
}

impl SourceKind {
    /// The stored spelling (`agent`).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::User => "user",
            SourceKind::Agent => "agent",
            SourceKind::Mcp => "mcp",
            SourceKind::Import => "import",
            SourceKind::Extraction => "extraction",
        }
    }

    /// The kind a stored spelling names.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => SourceKind::User,
            "agent" => SourceKind::Agent,
            "mcp" => SourceKind::Mcp,
            "import" => SourceKind::Import,
            "extraction" => SourceKind::Extraction,
            _ => return None,
        })
    }
}

/// Where a memory row came from: who wrote it, when, and — for an agent's or an extraction's
/// write — the session and the message it was written at (`seshat sessions show SESSION --at SEQ`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// Who wrote it.
    pub kind: SourceKind,
    /// The user it was written for.
    pub user: String,
    /// The session whose agent (or extraction) wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The message of that session it was written at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The extraction plugin that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// When, in Unix milliseconds.
    pub at: i64,
}

/// An observation that is no longer current: replaced by another (`supersedes`), kept as history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PastObservation {
    /// What it said.
    pub content: String,
    /// When it stopped being true, in Unix milliseconds.
    #[serde(rename = "validUntil")]
    pub valid_until: i64,
    /// The observation that replaced it.
    #[serde(rename = "replacedBy", default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
    /// Where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
}

/// Two current observations of one entity that look like two values of one attribute (`editor:
/// vim` and `editor: emacs`), the later written without saying it replaces the earlier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Conflict {
    /// The later observation.
    pub observation: String,
    /// The earlier one it contradicts.
    pub contradicts: String,
}

/// An entity with its live observations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Entity {
    /// Its name as first written.
    pub name: String,
    /// Its type, e.g. `person`, `project`, `decision`.
    #[serde(rename = "entityType")]
    pub entity_type: String,
    /// Facts about it, oldest first.
    pub observations: Vec<String>,
    /// Where it lives.
    pub scope: Scope,
    /// Who created it, when provenance is asked for (absent for rows older than provenance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Where each observation came from, in the order of `observations` (when provenance is
    /// asked for; `null` for one older than provenance).
    #[serde(rename = "observationSources", default, skip_serializing_if = "Vec::is_empty")]
    pub observation_sources: Vec<Option<Source>>,
    /// When it expires (Unix milliseconds): it then leaves the context and search.
    #[serde(rename = "expiresAt", default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Observations it no longer holds, replaced by newer ones (when history is asked for).
    #[serde(rename = "pastObservations", default, skip_serializing_if = "Vec::is_empty")]
    pub past_observations: Vec<PastObservation>,
    /// Current observations that seem to contradict each other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

impl Entity {
    /// An entity with these observations and nothing else known about it.
    pub fn new(name: String, entity_type: String, observations: Vec<String>, scope: Scope) -> Self {
        Entity {
            name,
            entity_type,
            observations,
            scope,
            source: None,
            observation_sources: Vec::new(),
            expires_at: None,
            past_observations: Vec::new(),
            conflicts: Vec::new(),
        }
    }
}

/// One version of an entity: the entity as it stood after one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EntityVersion {
    /// Its number: 1 for the entity's creation (or the first change provenance recorded), then
    /// one more for each change.
    pub version: u32,
    /// What changed: `created`, `observed`, `replaced`, `deleted`, `restored`, `reverted`,
    /// `undone`, `expiry`.
    pub change: String,
    /// Who made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// When, in Unix milliseconds.
    pub at: i64,
    /// The name then.
    pub name: String,
    /// The type then.
    pub entity_type: String,
    /// Its current observations then.
    pub observations: Vec<String>,
    /// Whether it was deleted then.
    #[serde(default)]
    pub deleted: bool,
}

/// A directed relation between two entities (by name), in active voice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Relation {
    /// The entity it starts from.
    pub from: String,
    /// The entity it points to.
    pub to: String,
    /// The relation, e.g. `works_on`.
    #[serde(rename = "relationType")]
    pub relation_type: String,
    /// Where it lives.
    pub scope: Scope,
}

/// Entities and the relations among them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Graph {
    /// The entities.
    pub entities: Vec<Entity>,
    /// The relations among them.
    pub relations: Vec<Relation>,
}

/// Observations added to one entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservationAdds {
    /// The entity.
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// What was new (observations already present are not stored twice).
    #[serde(rename = "addedObservations")]
    pub added_observations: Vec<String>,
    /// The observations these replaced (now history, out of search and the memory context).
    #[serde(rename = "replacedObservations", default, skip_serializing_if = "Vec::is_empty")]
    pub replaced_observations: Vec<String>,
    /// New observations that look like another value of an attribute the entity already holds,
    /// written without saying they replace it: both are kept and the user is shown the conflict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// An entity to create (`create_entities`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewEntity {
    /// The name of the entity
    pub name: String,
    /// The type of the entity
    #[serde(rename = "entityType")]
    pub entity_type: String,
    /// An array of observation contents associated with the entity
    pub observations: Vec<String>,
}

/// A relation to create or delete (`create_relations`, `delete_relations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RelationSpec {
    /// The name of the entity where the relation starts
    pub from: String,
    /// The name of the entity where the relation ends
    pub to: String,
    /// The type of the relation
    #[serde(rename = "relationType")]
    pub relation_type: String,
}

/// A write to a team's memory that waits for a reviewer (the team requires review), or was
/// decided: approved (applied, as its proposer's) or rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    /// Its id, to approve or reject it.
    pub id: i64,
    /// The team whose memory it writes.
    pub team: String,
    /// The write: a memory tool's name (`create_entities`, `add_observations`, …).
    pub tool: String,
    /// The write's arguments, as the tool takes them (the team's scope named).
    pub params: serde_json::Value,
    /// `pending`, `approved` or `rejected`.
    pub status: String,
    /// Who proposed it, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// When, in Unix milliseconds.
    pub created_at: i64,
    /// The reviewer who decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When it was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<i64>,
    /// Why it was rejected, when the reviewer said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What taking back one session's memory writes did (`memory undo --session`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Undone {
    /// The session.
    pub session: String,
    /// Observations it added, now deleted (restorable as `deletion`).
    pub observations_removed: u64,
    /// Observations it had replaced, current again.
    pub observations_restored: u64,
    /// Entities it created that held nothing else, now deleted.
    pub entities_removed: u64,
    /// Relations it created, now deleted.
    pub relations_removed: u64,
    /// Its deletions, restored.
    pub deletions_restored: u64,
    /// The entities changed, by name.
    pub entities: Vec<String>,
    /// The deletion that holds what was removed (`memory --action restore --id`), when anything was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<i64>,
}
