//! What a session is given at its start: the user's memory, then the project's, then cross
//! knowledge, most recently updated first, within a token budget. What was left out is stated in
//! the text itself, never silently dropped.

use crate::store::db::params;

use super::{Memory, Result, Scope};
pub use seshat_protocol::memory::{ContextSection, MemoryContext};

/// The default budget of the memory context, in tokens.
pub const DEFAULT_CONTEXT_TOKENS: usize = 2_000;

/// What makes an entity `e` of a place (?1 scope, ?2 project, ?3 owner) part of the context at
/// ?4: live and not expired.
const LIVE: &str = "e.owner = ?3 AND e.scope = ?1 AND e.project = ?2 AND e.deleted_by IS NULL \
     AND (e.expires_at IS NULL OR e.expires_at > ?4)";

/// Entities read per page of a place.
const PAGE: usize = 200;

/// Entities in a row that do not fit after which the rest of a place is left out untried.
const MISSES: usize = 50;

/// Room kept for the closing line that says what was left out.
const OMISSION_LINE_TOKENS: usize = 60;

/// A rough token estimate of text (about four characters a token).
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A list item's text with its line breaks indented under the item, so stored text can never
/// start a line of its own (a new item, a heading) in the context.
fn indented(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n").trim_end().replace('\n', "\n  "))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

impl Memory<'_> {
    /// Builds the memory context within `budget` tokens.
    pub fn context(&mut self, budget: usize) -> Result<MemoryContext> {
        on_memory_db!(self, "build the memory context", {
            let places: Vec<(super::Place, String)> = self
                .visible(self.db, None)?
                .into_iter()
                .map(|place| {
                    let title = match &place.scope {
                        Scope::User => "About the user".to_string(),
                        Scope::Project => "This project".to_string(),
                        Scope::Cross => "General knowledge".to_string(),
                        Scope::Team(team) => format!("Team {team}"),
                    };
                    (place, title)
                })
                .collect();

            let usable = budget.saturating_sub(OMISSION_LINE_TOKENS);
            let now = crate::store::now_ms();
            let mut text = String::from("# Long-term memory\n");
            let mut used = estimate_tokens(&text);
            let mut sections = Vec::new();
            for (place, title) in places {
                let mut section = ContextSection {
                    scope: place.scope.clone(),
                    notes: 0,
                    entities: 0,
                    omitted_notes: 0,
                    omitted_entities: 0,
                };
                let mut body = String::new();
                let fits = |line: String, used: &mut usize, body: &mut String| {
                    let t = estimate_tokens(&line);
                    if *used + t <= usable {
                        *used += t;
                        body.push_str(&line);
                        true
                    } else {
                        false
                    }
                };
                let header = format!("\n## {title}\n");
                let header_tokens = estimate_tokens(&header);
                used += header_tokens;
                {
                    let notes: Vec<(String, String)> = self.db.query_vec(
                        "SELECT key, value FROM memory_notes WHERE scope = ?1 AND project = ?2 AND owner = ?3 \
                         AND (expires_at IS NULL OR expires_at > ?4) ORDER BY updated_at DESC, key",
                        params![place.kind(), place.project, place.owner, now],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )?;
                    for (key, value) in notes {
                        let line = format!("- {key}: {}\n", indented(&value));
                        if fits(line, &mut used, &mut body) {
                            section.notes += 1;
                        } else {
                            section.omitted_notes += 1;
                        }
                    }
                }
                {
                    // Newest first, a page at a time, each entity's observations read only when it
                    // is tried; after MISSES entities in a row that do not fit, the rest are
                    // counted as left out rather than each read and tried.
                    let total: i64 = self.db.query_value(
                        &format!("SELECT count(*) FROM memory_entities e WHERE {LIVE}"),
                        params![place.kind(), place.project, place.owner, now],
                    )?;
                    let mut after: Option<(i64, i64)> = None;
                    let mut misses = 0;
                    'pages: loop {
                        let (at, id) = after.unwrap_or((i64::MAX, i64::MAX));
                        let page: Vec<(i64, i64, String, String)> = self.db.query_vec(
                            &format!(
                                "SELECT e.id, e.updated_at, e.name, e.entity_type FROM memory_entities e \
                                 WHERE {LIVE} AND (e.updated_at < ?5 OR (e.updated_at = ?5 AND e.id < ?6)) \
                                 ORDER BY e.updated_at DESC, e.id DESC LIMIT {PAGE}"
                            ),
                            params![place.kind(), place.project, place.owner, now, at, id],
                            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                        )?;
                        let last = page.len() < PAGE;
                        for (id, updated_at, name, entity_type) in page {
                            after = Some((updated_at, id));
                            if used >= usable || misses >= MISSES {
                                break 'pages;
                            }
                            let observations: Vec<String> =
                                super::validity::current(self.db, id)?.into_iter().map(|c| c.1).collect();
                            let line = format!(
                                "- {} ({}){}\n",
                                indented(&name),
                                indented(&entity_type),
                                if observations.is_empty() {
                                    String::new()
                                } else {
                                    format!(": {}", indented(&observations.join("; ")))
                                }
                            );
                            if fits(line, &mut used, &mut body) {
                                section.entities += 1;
                                misses = 0;
                            } else {
                                misses += 1;
                            }
                        }
                        if last {
                            break;
                        }
                    }
                    section.omitted_entities = (total as usize).saturating_sub(section.entities);
                }
                if body.is_empty() {
                    used -= header_tokens;
                } else {
                    text.push_str(&header);
                    text.push_str(&body);
                }
                sections.push(section);
            }
            let omitted: Vec<String> = sections
                .iter()
                .filter(|s| s.omitted_notes + s.omitted_entities > 0)
                .map(|s| format!("{}: {} notes and {} entities", s.scope, s.omitted_notes, s.omitted_entities))
                .collect();
            if !omitted.is_empty() {
                text.push_str(&format!(
                "\n_Left out to stay within {budget} tokens: {}. Use memory_search_nodes or memory_open_nodes to read them._\n",
                omitted.join("; ")
            ));
            }
            let nothing = sections.iter().all(|s| s.notes + s.entities + s.omitted_notes + s.omitted_entities == 0);
            if nothing {
                text.clear();
            }
            let tokens = estimate_tokens(&text);
            Ok(MemoryContext { text, tokens, budget, sections })
        })
    }
}

impl crate::store::Store {
    /// Builds the memory context for a session at its start and stores it in the session's
    /// metadata (`memory_context`), so the session keeps the memory it started with even as memory
    /// changes later.
    pub fn snapshot_memory_context(
        &mut self,
        session: &str,
        project: Option<&str>,
        budget: usize,
    ) -> Result<MemoryContext> {
        on_memory_db!(self, "record the memory context", {
            let context = self.memory(project).context(budget)?;
            let value = serde_json::json!({"text": context.text, "tokens": context.tokens, "budget": budget});
            match self.set_metadata(session, "memory_context", value) {
                Err(crate::store::Error::SessionNotFound(_)) => Err(super::Error::InvalidArguments {
                    tool: "snapshot_memory_context".into(),
                    message: format!("no session {session}"),
                }),
                other => Ok(other.map(|()| context)?),
            }
        })
    }
}
