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
