//! The memory tools' arguments and results: what `seshat serve`'s `memory/<tool>` methods take and
//! answer, what `seshat mcp` publishes as each tool's input schema ([`input_schema`]) and what the
//! chat loop offers the model. They follow the reference MCP memory server's format
//! (`entityType`, `entityNames`), with an optional `scope` everywhere and `limit` on the reads.
//! Unknown fields are ignored, as that server ignores them.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::memory::{Entity, Graph, NewEntity, ObservationAdds, Relation, RelationSpec, Scope};

/// What a memory method's `scope` is (a network client may name a team's).
const SCOPE: &str = "Where the memory lives: 'user', 'project', 'cross' or 'team:NAME' (a team's shared memory). \
    Reads default to the caller's own three and their teams'; writes default to 'project' inside a project, else \
    'cross'.";

/// What the model is told about a memory tool's `scope`, in the tool's input schema: the three
/// scopes of its own (a team's is named by people, through `seshat memory` or the service).
const TOOL_SCOPE: &str = "Where the memory lives: 'user' (about the person, visible in every project), 'project' \
    (this project only), 'cross' (general knowledge for every project). Reads default to all three; writes \
    default to 'project' inside a project, else 'cross'.";

/// The most entities one read returns.
pub const MAX_LIMIT: usize = 500;
/// Entities `search_nodes` returns unless asked for more or fewer.
pub const DEFAULT_SEARCH_LIMIT: usize = 20;
/// Entities `read_graph` returns unless asked for more or fewer.
pub const DEFAULT_GRAPH_LIMIT: usize = 100;

/// `create_entities`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreateEntitiesParams {
    /// The entities to create.
    pub entities: Vec<NewEntity>,
    /// How long to keep them, e.g. `30d` (default: forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    /// Where they are stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// `create_entities`' result: the entities created or added to, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreateEntitiesResult {
    /// Each entity, with its observations.
    pub entities: Vec<Entity>,
    /// When the team scope written requires review: the proposal the write became (nothing
    /// was written yet; a reviewer approves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<i64>,
}

/// `create_relations`' and `delete_relations`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RelationsParams {
    /// The relations.
    pub relations: Vec<RelationSpec>,
    /// Where they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// `create_relations`' result: the relations stored (one already there is not stored twice).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreateRelationsResult {
    /// The relations.
    pub relations: Vec<Relation>,
    /// When the team scope written requires review: the proposal the write became (nothing
    /// was written yet; a reviewer approves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<i64>,
}

/// Observations to add to one entity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservationsToAdd {
    /// The name of the entity to add the observations to
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// An array of observation contents to add
    pub contents: Vec<String>,
    /// Observations of this entity the new ones replace (their text).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

/// `add_observations`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AddObservationsParams {
    /// The observations, by entity.
    pub observations: Vec<ObservationsToAdd>,
    /// Where the entities are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// `add_observations`' result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AddObservationsResult {
    /// What each entity got that it did not hold.
    pub results: Vec<ObservationAdds>,
    /// When the team scope written requires review: the proposal the write became (nothing
    /// was written yet; a reviewer approves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<i64>,
}

/// `delete_entities`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeleteEntitiesParams {
    /// An array of entity names to delete
    #[serde(rename = "entityNames")]
    pub entity_names: Vec<String>,
    /// Where they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// Observations to delete from one entity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservationsToDelete {
    /// The name of the entity containing the observations
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// An array of observations to delete
    pub observations: Vec<String>,
}

/// `delete_observations`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeleteObservationsParams {
    /// The observations, by entity.
    pub deletions: Vec<ObservationsToDelete>,
    /// Where the entities are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// What a delete tool did: kept as a deletion the user can restore.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deleted {
    /// Always true (a failure is an error).
    pub success: bool,
    /// What was deleted, in words.
    pub message: String,
    /// The deletion's id, to restore it (`memory/restore`).
    pub deletion: i64,
    /// When the team scope written requires review: the proposal the write became (nothing
    /// was written yet; a reviewer approves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<i64>,
}

/// `read_graph`'s arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadGraphParams {
    /// Whose memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
    /// At most this many entities (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: Option<usize>,
    #[doc = "Skip this many entities first (default 0): page with the offset the previous answer's note gives."]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
}

/// `search_nodes`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchNodesParams {
    /// The search query to match against entity names, types, and observation content
    pub query: String,
    /// Whose memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
    /// At most this many entities (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: Option<usize>,
}

/// `open_nodes`' arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OpenNodesParams {
    /// An array of entity names to retrieve
    pub names: Vec<String>,
    /// Also return replaced observations.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub history: bool,
    /// Whose memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = SCOPE)]
    pub scope: Option<Scope>,
}

/// What `read_graph`, `search_nodes` and `open_nodes` answer: entities and the relations among
/// them, with a note when the answer was cut.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphPage {
    /// The entities, best or most recent first.
    pub entities: Vec<Entity>,
    /// The relations among them.
    pub relations: Vec<Relation>,
    /// When more matched than were returned: how to read on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl GraphPage {
    /// `graph`, with `note`.
    pub fn new(graph: Graph, note: Option<String>) -> Self {
        GraphPage { entities: graph.entities, relations: graph.relations, note }
    }
}

/// A tool's input schema made from its arguments' type, as MCP publishes it and a model reads
/// it (every byte of it is in each request's frame): JSON Schema draft 7, every subschema inline,
/// an optional property typed as its value (absent rather than `null`), no `format`, and `scope`
/// as the three scopes a model chooses among.
pub fn input_schema<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft07();
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    drop_null(&mut schema);
    if let Some(scope) = schema.pointer_mut("/properties/scope") {
        *scope = serde_json::json!({"type": "string", "enum": ["user", "project", "cross"], "description": TOOL_SCOPE});
    }
    schema
}

/// Removes `null` from the types of the properties `schema` does not require, every `format`,
/// and the description of an array's items, throughout.
fn drop_null(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else { return };
    object.remove("format");
    // An array's items say no more than the array's own description.
    if let Some(Value::Object(items)) = object.get_mut("items") {
        items.remove("description");
    }
    let required: Vec<Value> = object.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if required.iter().any(|r| r == name) {
                continue;
            }
            if let Some(Value::Array(types)) = property.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    property["type"] = types[0].clone();
                }
            }
        }
    }
    for (_, child) in object.iter_mut() {
        match child {
            Value::Object(_) => drop_null(child),
            Value::Array(items) => items.iter_mut().for_each(drop_null),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_schema_is_inline_with_its_limits_and_no_null() {
        let schema = input_schema::<SearchNodesParams>();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(schema["required"], serde_json::json!(["query"]));
        let limit = &schema["properties"]["limit"];
        assert_eq!(
            (limit["type"].as_str(), limit["minimum"].as_u64(), limit["maximum"].as_u64()),
            (Some("integer"), Some(1), Some(500)),
            "{limit}"
        );
        let scope = &schema["properties"]["scope"];
        assert_eq!(scope["enum"], serde_json::json!(["user", "project", "cross"]), "{scope}");
        assert!(scope["description"].as_str().unwrap().contains("'project'"), "{scope}");
        assert!(!schema.to_string().contains("format"), "{schema}");
        let entity = &input_schema::<CreateEntitiesParams>()["properties"]["entities"]["items"];
        assert_eq!(entity["properties"]["entityType"]["type"], "string", "inline, not a reference: {entity}");
        assert!(!input_schema::<CreateEntitiesParams>().to_string().contains("$ref"));
    }
}
