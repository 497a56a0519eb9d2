//! The knowledge tools, for the chat loop and `seshat mcp`: `knowledge_search` (hybrid when an
//! embedder is configured) and `knowledge_read`, which returns a stored chunk by the id a search
//! gave — never a file by a path the model supplies — capped, reading on with `offset`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Found, Knowledge};
use crate::store::KnowledgeFilter;
use crate::tool::{ToolDef, ToolOutput};

/// `knowledge_search`'s name.
pub const SEARCH: &str = "knowledge_search";
/// `knowledge_read`'s name.
pub const READ: &str = "knowledge_read";
/// Results `knowledge_search` returns unless asked for fewer or more.
pub(crate) const SEARCH_DEFAULT_LIMIT: usize = 8;
/// The most results one search returns.
pub(crate) const SEARCH_MAX_LIMIT: usize = 30;
/// The most text one `knowledge_read` returns, in bytes.
pub const READ_MAX_BYTES: usize = 16_000;

/// The tools' definitions.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            SEARCH,
            "Search the documents indexed for this project (and the user's): guides, notes, source \
                files the user added to the knowledge index. Matches words (bm25) and, when an embedder is configured, \
                meaning too. Returns each match's file, line range, heading and a snippet, with a chunk id to read \
                it whole with knowledge_read.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT,
                        "description": format!("At most this many results (default {SEARCH_DEFAULT_LIMIT})")}
                },
                "required": ["query"]
            }),
        )
        .titled("Search documents")
        .read_only(),
        ToolDef::new(
            READ,
            "Read one indexed chunk whole by the id knowledge_search gave (its file, lines and \
                text). Text past 16,000 bytes is cut; `offset` reads on.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "minimum": 1, "description": "The chunk id from knowledge_search"},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read on from"}
                },
                "required": ["id"]
            }),
        )
        .titled("Read a document chunk")
        .read_only(),
    ]
}

/// Whether `name` is a knowledge tool.
pub fn is_knowledge_tool(name: &str) -> bool {
    name == SEARCH || name == READ
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    id: i64,
    offset: Option<usize>,
}

/// What `knowledge_search` answers for `found`: each hit's id, file, lines, heading and snippet,
/// the mode, and a note when there is one (or nothing matched).
pub fn search_output(found: &Found) -> Value {
    let hits: Vec<Value> = found
        .hits
        .iter()
        .map(|h| {
            json!({"id": h.id, "file": h.path, "lines": format!("{}-{}", h.start_line, h.end_line),
                "heading": h.heading, "snippet": h.snippet})
        })
        .collect();
    let mut out = json!({"mode": found.mode, "results": hits});
    if let Some(note) = &found.note {
        out["note"] = note.clone().into();
    }
    if found.hits.is_empty() {
        out["note"] = "nothing matched: try other words, or fewer".into();
    }
    out
}

/// Runs a knowledge tool for `project` (its key): the structured result, or the error the model
/// reads.
pub fn call(knowledge: &mut Knowledge, project: &str, name: &str, args: &Value) -> ToolOutput {
    run(knowledge, project, name, args).map_or_else(ToolOutput::error, ToolOutput::ok)
}

fn run(knowledge: &mut Knowledge, project: &str, name: &str, args: &Value) -> Result<Value, String> {
    let parse_error = |e: serde_json::Error| format!("invalid arguments for {name}: {e}");
    let filter = KnowledgeFilter { project, scope: None };
    match name {
        SEARCH => {
            let a: SearchArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            if a.query.trim().is_empty() {
                return Err(
                    "invalid arguments for knowledge_search: `query` is empty; give the words to look for".into()
                );
            }
            let limit = a.limit.unwrap_or(SEARCH_DEFAULT_LIMIT);
            if limit == 0 || limit > SEARCH_MAX_LIMIT {
                return Err(format!(
                    "invalid arguments for knowledge_search: `limit` is {limit}; give 1 to {SEARCH_MAX_LIMIT}"
                ));
            }
            let found = knowledge.search(filter, &a.query, limit).map_err(|e| e.to_string())?;
            Ok(search_output(&found))
        }
        READ => {
            let a: ReadArgs = serde_json::from_value(args.clone()).map_err(parse_error)?;
            let Some(chunk) = knowledge.chunk(filter, a.id).map_err(|e| e.to_string())? else {
                return Err(format!(
                    "there is no chunk {} among this project's documents: use an id knowledge_search returned",
                    a.id
                ));
            };
            let offset = a.offset.unwrap_or(0);
            if offset > chunk.text.len() {
                return Err(format!("`offset` {offset} is past the chunk's end ({} bytes)", chunk.text.len()));
            }
            let start = chunk.text.floor_char_boundary(offset);
            let end = chunk.text.floor_char_boundary((start + READ_MAX_BYTES).min(chunk.text.len()));
            let mut out = json!({"id": chunk.id, "file": chunk.path,
                "lines": format!("{}-{}", chunk.start_line, chunk.end_line), "heading": chunk.heading,
                "text": &chunk.text[start..end]});
            if end < chunk.text.len() {
                out["note"] = format!(
                    "cut at byte {end} of {}: call knowledge_read again with \"offset\": {end}",
                    chunk.text.len()
                )
                .into();
            }
            Ok(out)
        }
        other => Err(format!("there is no knowledge tool named `{other}`")),
    }
}
