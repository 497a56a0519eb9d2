//! The memory tools: their published schemas and a dispatcher from JSON arguments.
//!
//! Inputs match the reference MCP memory server's schemas, with an optional `scope` everywhere and
//! `limit` on the reads; the chat loop offers them to the model as `memory_<name>` and `seshat mcp`
//! serves them under the plain names.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

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

use seshat_protocol::memory_tools::input_schema;
pub use seshat_protocol::memory_tools::{
    AddObservationsParams, AddObservationsResult, CreateEntitiesParams, CreateEntitiesResult, CreateRelationsResult,
    DEFAULT_GRAPH_LIMIT, DEFAULT_SEARCH_LIMIT, DeleteEntitiesParams, DeleteObservationsParams, Deleted, GraphPage,
    MAX_LIMIT, OpenNodesParams, ReadGraphParams, RelationsParams, SearchNodesParams,
};

pub use crate::tool::{ToolDef, ToolOutput};

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
            input_schema: input_schema::<CreateEntitiesParams>(),
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
            input_schema: input_schema::<RelationsParams>(),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "add_observations".into(),
            title: "Add Observations".into(),
            description: "Add facts to entities that already exist (find them with memory_search_nodes first). An \
                unknown entity is an error: create it with memory_create_entities. Facts already stored are not \
                duplicated. When a fact changed, name the observation it replaces in `replaces` (kept as history)."
                .into(),
            input_schema: input_schema::<AddObservationsParams>(),
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
            input_schema: input_schema::<DeleteEntitiesParams>(),
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
            input_schema: input_schema::<DeleteObservationsParams>(),
            read_only: false,
            destructive: true,
            idempotent: true,
        },
        ToolDef {
            name: "delete_relations".into(),
            title: "Delete Relations".into(),
            description: "Remove relations that are no longer true. Missing ones are ignored."
                .into(),
            input_schema: input_schema::<RelationsParams>(),
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
            input_schema: input_schema::<ReadGraphParams>(),
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
            input_schema: input_schema::<SearchNodesParams>(),
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
            input_schema: input_schema::<OpenNodesParams>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
    ]
}

/// A tool's JSON arguments read as its params `T` (absent arguments read as `{}`); what does not fit
/// is named by its path (`entities[0].name`).
pub fn parse<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, Error> {
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

/// Calls a memory tool by name (plain or with [`AGENT_PREFIX`]) with JSON arguments. Errors —
/// bad arguments, unknown entities — come back as a readable tool error, never a panic.
pub fn call(memory: &mut Memory<'_>, name: &str, args: &Value) -> ToolOutput {
    call_with(memory, name, args, None)
}

/// A search standing in for the graph search of `search_nodes` (hybrid retrieval plugs in here):
/// given the memory, the query, the scope and the limit, the entities and whether more matched.
pub type Searcher<'s> =
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
    fn value<T: serde::Serialize>(out: T) -> Value {
        serde_json::to_value(out).unwrap_or_default()
    }
    Ok(match tool {
        "create_entities" => value(create_entities(m, &parse(tool, args)?)?),
        "create_relations" => value(create_relations(m, &parse(tool, args)?)?),
        "add_observations" => value(add_observations(m, &parse(tool, args)?)?),
        "delete_entities" => value(delete_entities(m, &parse(tool, args)?)?),
        "delete_observations" => value(delete_observations(m, &parse(tool, args)?)?),
        "delete_relations" => value(delete_relations(m, &parse(tool, args)?)?),
        "read_graph" => value(read_graph(m, &parse(tool, args)?)?),
        "search_nodes" => value(search_nodes(m, &parse(tool, args)?, searcher)?),
        "open_nodes" => value(open_nodes(m, &parse(tool, args)?)?),
        other => return Err(Error::UnknownTool(other.to_string())),
    })
}

/// `create_entities`.
pub fn create_entities(m: &mut Memory<'_>, p: &CreateEntitiesParams) -> Result<CreateEntitiesResult, Error> {
    let ttl = p
        .ttl
        .as_deref()
        .map(|t| {
            crate::config::parse_age(t)
                .map_err(|e| Error::InvalidArguments { tool: "create_entities".into(), message: format!("`ttl`: {e}") })
        })
        .transpose()?;
    match m.create_entities_for(&p.entities, p.scope.as_ref(), ttl) {
        Err(Error::ReviewRequired { team }) => {
            Ok(CreateEntitiesResult { proposal: Some(propose(m, &team, "create_entities", p)?), ..Default::default() })
        }
        done => Ok(CreateEntitiesResult { entities: done?, proposal: None }),
    }
}

/// Keeps a write to a team that requires review as a proposal; its id.
fn propose<P: serde::Serialize>(m: &mut Memory<'_>, team: &str, tool: &str, params: &P) -> Result<i64, Error> {
    m.propose(team, tool, serde_json::to_value(params).unwrap_or_default())
}

/// What a write that became a proposal says in place of what it did.
fn proposed(proposal: i64, team: &str) -> Deleted {
    Deleted {
        success: true,
        message: format!(
            "Proposed for review (proposal {proposal}): team:{team} requires review, so nothing was changed until a \
             reviewer approves it"
        ),
        deletion: 0,
        proposal: Some(proposal),
    }
}

/// `create_relations`.
pub fn create_relations(m: &mut Memory<'_>, p: &RelationsParams) -> Result<CreateRelationsResult, Error> {
    match m.create_relations(&p.relations, p.scope.as_ref()) {
        Err(Error::ReviewRequired { team }) => Ok(CreateRelationsResult {
            relations: Vec::new(),
            proposal: Some(propose(m, &team, "create_relations", p)?),
        }),
        done => Ok(CreateRelationsResult { relations: done?, proposal: None }),
    }
}

/// `add_observations`.
pub fn add_observations(m: &mut Memory<'_>, p: &AddObservationsParams) -> Result<AddObservationsResult, Error> {
    match m.add_observations_replacing(&p.observations, p.scope.as_ref()) {
        Err(Error::ReviewRequired { team }) => {
            Ok(AddObservationsResult { results: Vec::new(), proposal: Some(propose(m, &team, "add_observations", p)?) })
        }
        done => Ok(AddObservationsResult { results: done?, proposal: None }),
    }
}

fn deleted(deletion: i64, message: &str) -> Deleted {
    Deleted { success: true, message: format!("{message} (restorable: deletion {deletion})"), deletion, proposal: None }
}

/// `delete_entities`.
pub fn delete_entities(m: &mut Memory<'_>, p: &DeleteEntitiesParams) -> Result<Deleted, Error> {
    match m.delete_entities(&p.entity_names, p.scope.as_ref()) {
        Err(Error::ReviewRequired { team }) => Ok(proposed(propose(m, &team, "delete_entities", p)?, &team)),
        done => {
            let (deletion, n) = done?;
            Ok(deleted(deletion, &format!("Deleted {n} entities and their relations")))
        }
    }
}

/// `delete_observations`.
pub fn delete_observations(m: &mut Memory<'_>, p: &DeleteObservationsParams) -> Result<Deleted, Error> {
    let dels: Vec<(String, Vec<String>)> =
        p.deletions.iter().map(|d| (d.entity_name.clone(), d.observations.clone())).collect();
    match m.delete_observations(&dels, p.scope.as_ref()) {
        Err(Error::ReviewRequired { team }) => Ok(proposed(propose(m, &team, "delete_observations", p)?, &team)),
        done => {
            let (deletion, n) = done?;
            Ok(deleted(deletion, &format!("Deleted {n} observations")))
        }
    }
}

/// `delete_relations`.
pub fn delete_relations(m: &mut Memory<'_>, p: &RelationsParams) -> Result<Deleted, Error> {
    match m.delete_relations(&p.relations, p.scope.as_ref()) {
        Err(Error::ReviewRequired { team }) => Ok(proposed(propose(m, &team, "delete_relations", p)?, &team)),
        done => {
            let (deletion, n) = done?;
            Ok(deleted(deletion, &format!("Deleted {n} relations")))
        }
    }
}

/// `read_graph`.
pub fn read_graph(m: &mut Memory<'_>, p: &ReadGraphParams) -> Result<GraphPage, Error> {
    let n = limit(p.limit, DEFAULT_GRAPH_LIMIT);
    let offset = p.offset.unwrap_or(0);
    let (graph, more) = m.read_graph(p.scope.as_ref(), offset, n)?;
    let shown = graph.entities.len();
    Ok(GraphPage::new(graph, page_note(more, offset, shown)))
}

/// `search_nodes`, answered by `searcher` (hybrid retrieval) when given, else by the graph's own
/// search.
pub fn search_nodes(
    m: &mut Memory<'_>,
    p: &SearchNodesParams,
    searcher: Option<Searcher<'_>>,
) -> Result<GraphPage, Error> {
    let n = limit(p.limit, DEFAULT_SEARCH_LIMIT);
    let (graph, more) = match searcher {
        Some(search) => search(m, &p.query, p.scope.as_ref(), n)?,
        None => m.search(&p.query, p.scope.as_ref(), n)?,
    };
    let shown = graph.entities.len();
    Ok(GraphPage::new(graph, cut_note(more, shown, n)))
}

/// `open_nodes`.
pub fn open_nodes(m: &mut Memory<'_>, p: &OpenNodesParams) -> Result<GraphPage, Error> {
    Ok(GraphPage::new(m.open_nodes_with(&p.names, p.scope.as_ref(), p.history)?, None))
}
