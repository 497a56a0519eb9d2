//! The memory tools: their published schemas and a dispatcher from JSON arguments.
//!
//! Inputs match the reference MCP memory server's schemas, with an optional `scope` everywhere and
//! `limit` on the reads; the chat loop offers them to the model as `memory_<name>` and `seshat mcp`
//! serves them under the plain names.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::graph::{NewEntity, RelationSpec};
use super::{Error, Memory, Scope};

/// The prefix the chat loop gives the tools (`memory_create_entities`, …).
pub(crate) const AGENT_PREFIX: &str = "memory_";

/// `text` (a tool's description, an error, a note) for a front end that serves the memory tools
/// under their plain names (`seshat mcp`): each `memory_<name>` of a memory tool becomes `<name>`.
/// The chat loop offers them as `memory_<name>`, the names the texts are written with.
pub fn plain_names(text: &str) -> String {
    let mut out = text.to_string();
    for d in definitions() {
        out = out.replace(&format!("{AGENT_PREFIX}{}", d.name), &d.name);
    }
    out
}

/// Default number of entities `search_nodes` returns.
pub(crate) const DEFAULT_SEARCH_LIMIT: usize = 20;
/// Default number of entities `read_graph` returns.
pub(crate) const DEFAULT_GRAPH_LIMIT: usize = 100;
/// The most any call returns.
pub(crate) const MAX_LIMIT: usize = 500;

pub use crate::tool::{ToolDef, ToolOutput};

fn scope_schema() -> Value {
    json!({
        "type": "string",
        "enum": ["user", "project", "cross"],
        "description": "Where the memory lives: 'user' (about the person, visible in every project), 'project' \
            (this project only), 'cross' (general knowledge for every project). Reads default to all three; \
            writes default to 'project' inside a project, else 'cross'."
    })
}

fn limit_schema(default: usize) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("At most this many entities (default {default}).")})
}

fn entity_item() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name of the entity"},
            "entityType": {"type": "string", "description": "The type of the entity"},
            "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents associated with the entity"}
        },
        "required": ["name", "entityType", "observations"]
    })
}

fn relation_item() -> Value {
    json!({
        "type": "object",
        "properties": {
            "from": {"type": "string", "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "description": "The type of the relation"}
        },
        "required": ["from", "to", "relationType"]
    })
}

fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema =
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": required});
    schema["properties"] = properties;
    schema
}

/// Every memory tool.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "create_entities".into(),
            title: "Create Entities".into(),
            description: "Remember things across sessions: create entities (a person, project, tool, decision, …) with \
                facts about them as observations. Use when the user tells you something worth keeping beyond this \
                conversation or you learn a durable fact. An entity whose name (any case) already exists in that scope \
                gets the new observations added. Scope 'project' (default inside a project) for facts about this \
                codebase, 'user' for the user's preferences and personal details, 'cross' for general knowledge."
                .into(),
            input_schema: object(
                json!({"entities": {"type": "array", "items": entity_item()}, "scope": scope_schema()}),
                &["entities"],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "create_relations".into(),
            title: "Create Relations".into(),
            description: "Link entities with directed relations in active voice (e.g. 'Alice' works_on 'Seshat'). Use \
                after creating the entities. A relation that already exists is not stored twice."
                .into(),
            input_schema: object(
                json!({"relations": {"type": "array", "items": relation_item()}, "scope": scope_schema()}),
                &["relations"],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "add_observations".into(),
            title: "Add Observations".into(),
            description: "Add facts to entities that already exist (find them with memory_search_nodes first). An \
                unknown entity is an error: create it with memory_create_entities. Facts already stored are not \
                duplicated."
                .into(),
            input_schema: object(
                json!({
                    "observations": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
                            "contents": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents to add"}
                        },
                        "required": ["entityName", "contents"]
                    }},
                    "scope": scope_schema()
                }),
                &["observations"],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "delete_entities".into(),
            title: "Delete Entities".into(),
            description: "Forget entities and every relation that touches them, when the user asks you to forget \
                something or an entity is wrong or obsolete. Names that do not exist are ignored. The user can undo \
                this: deletions are kept and can be restored."
                .into(),
            input_schema: object(
                json!({"entityNames": {"type": "array", "items": {"type": "string"}, "description": "An array of entity names to delete"}, "scope": scope_schema()}),
                &["entityNames"],
            ),
            read_only: false,
            destructive: true,
            idempotent: true,
        },
        ToolDef {
            name: "delete_observations".into(),
            title: "Delete Observations".into(),
            description: "Remove specific facts from entities, e.g. when they stopped being true. Missing entities or \
                facts are ignored."
                .into(),
            input_schema: object(
                json!({
                    "deletions": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {"type": "string", "description": "The name of the entity containing the observations"},
                            "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observations to delete"}
                        },
                        "required": ["entityName", "observations"]
                    }},
                    "scope": scope_schema()
                }),
                &["deletions"],
            ),
            read_only: false,
            destructive: true,
            idempotent: true,
        },
        ToolDef {
            name: "delete_relations".into(),
            title: "Delete Relations".into(),
            description: "Remove relations that are no longer true. Missing ones are ignored."
                .into(),
            input_schema: object(
                json!({"relations": {"type": "array", "items": relation_item(), "description": "An array of relations to delete"}, "scope": scope_schema()}),
                &["relations"],
            ),
            read_only: false,
            destructive: true,
            idempotent: true,
        },
        ToolDef {
            name: "read_graph".into(),
            title: "Read Graph".into(),
            description: "Read the whole memory graph, most recently updated entities first (at most `limit`, after \
                skipping `offset`; a cut answer's note gives the next offset). Prefer memory_search_nodes; use this for \
                an overview of what is remembered."
                .into(),
            input_schema: object(
                json!({
                    "scope": scope_schema(),
                    "limit": limit_schema(DEFAULT_GRAPH_LIMIT),
                    "offset": {"type": "integer", "minimum": 0, "description": "Skip this many entities first (default 0): page with the offset the previous answer's note gives."}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "search_nodes".into(),
            title: "Search Nodes".into(),
            description: "Search long-term memory before answering anything that may depend on what you were told in \
                earlier sessions (preferences, decisions, facts about people and projects). Matches the words of the \
                query in names, types and observations (case and accents ignored, best first), then any substring. \
                Returns at most `limit` entities with the relations among them, and says when more matched."
                .into(),
            input_schema: object(
                json!({
                    "query": {"type": "string", "description": "The search query to match against entity names, types, and observation content"},
                    "scope": scope_schema(),
                    "limit": limit_schema(DEFAULT_SEARCH_LIMIT)
                }),
                &["query"],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "open_nodes".into(),
            title: "Open Nodes".into(),
            description: "Read specific entities by name (any case) with all their observations and the relations \
                among them. Use when you know the names, e.g. from a search result or the memory context."
                .into(),
            input_schema: object(
                json!({"names": {"type": "array", "items": {"type": "string"}, "description": "An array of entity names to retrieve"}, "scope": scope_schema()}),
                &["names"],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
    ]
}

#[derive(Deserialize)]
struct Scoped<T> {
    #[serde(flatten)]
    args: T,
    scope: Option<Scope>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct Entities {
    entities: Vec<NewEntity>,
}
#[derive(Deserialize)]
struct Relations {
    relations: Vec<RelationSpec>,
}
#[derive(Deserialize)]
struct ObservationItem {
    #[serde(rename = "entityName")]
    entity_name: String,
    contents: Vec<String>,
}
#[derive(Deserialize)]
struct Observations {
    observations: Vec<ObservationItem>,
}
#[derive(Deserialize)]
struct EntityNames {
    #[serde(rename = "entityNames")]
    entity_names: Vec<String>,
}
#[derive(Deserialize)]
struct DeletionItem {
    #[serde(rename = "entityName")]
    entity_name: String,
    observations: Vec<String>,
}
#[derive(Deserialize)]
struct Deletions {
    deletions: Vec<DeletionItem>,
}
#[derive(Deserialize)]
struct Page {
    offset: Option<usize>,
}
#[derive(Deserialize)]
struct Query {
    query: String,
}
#[derive(Deserialize)]
struct Names {
    names: Vec<String>,
}

fn parse<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<Scoped<T>, Error> {
    let args = if args.is_null() { json!({}) } else { args.clone() };
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        Error::InvalidArguments {
            tool: tool.to_string(),
            message: if path == "." { inner } else { format!("`{path}`: {inner}") },
        }
    })
}

fn limit(requested: Option<usize>, default: usize) -> usize {
    requested.unwrap_or(default).clamp(1, MAX_LIMIT)
}

fn cut_note(more: bool, shown: usize, limit: usize) -> Option<String> {
    let raise = if limit < MAX_LIMIT { " or raise `limit`" } else { "" };
    more.then(|| format!("Showing the first {shown} matches; more matched. Narrow the query{raise}."))
}

/// Says which entities a cut `read_graph` answer holds and how to read the next page.
fn page_note(more: bool, offset: usize, shown: usize) -> Option<String> {
    more.then(|| {
        let next = offset + shown;
        format!(
            "Showing entities {}–{next}, most recently updated first; more follow: call read_graph again with \
             `\"offset\": {next}` for the next page.",
            offset + 1
        )
    })
}

fn graph_value(graph: super::Graph, note: Option<String>) -> Value {
    let mut v = serde_json::to_value(graph).unwrap_or_default();
    if let Some(note) = note {
        v["note"] = note.into();
    }
    v
}

/// Calls a memory tool by name (plain or with [`AGENT_PREFIX`]) with JSON arguments. Errors —
/// bad arguments, unknown entities — come back as a readable tool error, never a panic.
pub fn call(memory: &mut Memory<'_>, name: &str, args: &Value) -> ToolOutput {
    call_with(memory, name, args, None)
}

/// A search standing in for the graph search of `search_nodes` (hybrid retrieval plugs in here):
/// given the memory, the query, the scope and the limit, the entities and whether more matched.
pub(crate) type Searcher<'s> =
    &'s mut dyn FnMut(&mut Memory<'_>, &str, Option<&Scope>, usize) -> Result<(super::Graph, bool), Error>;

/// [`call`] with `search_nodes` answered by `searcher` when given.
pub fn call_with(memory: &mut Memory<'_>, name: &str, args: &Value, searcher: Option<Searcher<'_>>) -> ToolOutput {
    match run(memory, name, args, searcher) {
        Ok(structured) => ToolOutput::ok(structured),
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// Runs a memory tool by name, its failure as the memory error it is (a front end that speaks
/// its own protocol tells bad arguments from other failures by it).
pub fn run(memory: &mut Memory<'_>, name: &str, args: &Value, searcher: Option<Searcher<'_>>) -> Result<Value, Error> {
    dispatch(memory, name.strip_prefix(AGENT_PREFIX).unwrap_or(name), args, searcher)
}

fn dispatch(m: &mut Memory<'_>, tool: &str, args: &Value, searcher: Option<Searcher<'_>>) -> Result<Value, Error> {
    Ok(match tool {
        "create_entities" => {
            let a: Scoped<Entities> = parse(tool, args)?;
            json!({"entities": m.create_entities(&a.args.entities, a.scope.as_ref())?})
        }
        "create_relations" => {
            let a: Scoped<Relations> = parse(tool, args)?;
            json!({"relations": m.create_relations(&a.args.relations, a.scope.as_ref())?})
        }
        "add_observations" => {
            let a: Scoped<Observations> = parse(tool, args)?;
            let adds: Vec<(String, Vec<String>)> =
                a.args.observations.into_iter().map(|o| (o.entity_name, o.contents)).collect();
            json!({"results": m.add_observations(&adds, a.scope.as_ref())?})
        }
        "delete_entities" => {
            let a: Scoped<EntityNames> = parse(tool, args)?;
            let (deletion, n) = m.delete_entities(&a.args.entity_names, a.scope.as_ref())?;
            json!({"success": true, "message": format!("Deleted {n} entities and their relations (restorable: deletion {deletion})"), "deletion": deletion})
        }
        "delete_observations" => {
            let a: Scoped<Deletions> = parse(tool, args)?;
            let dels: Vec<(String, Vec<String>)> =
                a.args.deletions.into_iter().map(|d| (d.entity_name, d.observations)).collect();
            let (deletion, n) = m.delete_observations(&dels, a.scope.as_ref())?;
            json!({"success": true, "message": format!("Deleted {n} observations (restorable: deletion {deletion})"), "deletion": deletion})
        }
        "delete_relations" => {
            let a: Scoped<Relations> = parse(tool, args)?;
            let (deletion, n) = m.delete_relations(&a.args.relations, a.scope.as_ref())?;
            json!({"success": true, "message": format!("Deleted {n} relations (restorable: deletion {deletion})"), "deletion": deletion})
        }
        "read_graph" => {
            let a: Scoped<Page> = parse(tool, args)?;
            let n = limit(a.limit, DEFAULT_GRAPH_LIMIT);
            let offset = a.args.offset.unwrap_or(0);
            let (graph, more) = m.read_graph(a.scope.as_ref(), offset, n)?;
            let shown = graph.entities.len();
            graph_value(graph, page_note(more, offset, shown))
        }
        "search_nodes" => {
            let a: Scoped<Query> = parse(tool, args)?;
            let n = limit(a.limit, DEFAULT_SEARCH_LIMIT);
            let (graph, more) = match searcher {
                Some(search) => search(m, &a.args.query, a.scope.as_ref(), n)?,
                None => m.search(&a.args.query, a.scope.as_ref(), n)?,
            };
            let shown = graph.entities.len();
            graph_value(graph, cut_note(more, shown, n))
        }
        "open_nodes" => {
            let a: Scoped<Names> = parse(tool, args)?;
            graph_value(m.open_nodes(&a.args.names, a.scope.as_ref())?, None)
        }
        other => return Err(Error::UnknownTool(other.to_string())),
    })
}
