//! The knowledge index (migration 0008): documents, their chunks and the FTS5 index over them.
//! A document is replaced whole (its chunks with it) in one transaction, so a search never sees
//! half of a re-indexed file.

use serde::Serialize;

use super::db::{Backend, Row, params};
use super::{Error, Result, Store, now_ms};
use seshat_protocol::memory::Scope;

/// A document to index: where it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDocument {
    /// Whose document it is.
    pub scope: Scope,
    /// The project key for `project`; empty otherwise.
    pub project: String,
    /// The file's absolute path.
    pub path: String,
    /// `markdown`, `code` or `text`.
    pub kind: String,
    /// The SHA-256 of the content indexed.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// One chunk to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChunk {
    /// First line, from 1.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The heading path (empty when none).
    pub heading: String,
    /// The text.
    pub text: String,
    /// Estimated tokens.
    pub tokens: u64,
}

/// An indexed document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentInfo {
    /// Its id.
    pub id: i64,
    /// Whose document it is.
    pub scope: Scope,
    /// Its project key (empty outside `project`).
    pub project: String,
    /// Its path.
    pub path: String,
    /// How it was split.
    pub kind: String,
    /// The SHA-256 of what was indexed.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its chunks.
    pub chunks: u64,
    /// When it was indexed (unix milliseconds).
    pub indexed_at: i64,
}

/// A chunk a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkHit {
    /// The chunk's id (what `knowledge_read` takes).
    pub id: i64,
    /// Its document's path.
    pub path: String,
    /// Its first line.
    pub start_line: u32,
    /// Its last line.
    pub end_line: u32,
    /// Its heading path.
    pub heading: String,
    /// The matching words in context, marked `[` `]`.
    pub snippet: String,
    /// bm25 (lower is better).
    pub score: f64,
}

/// A stored chunk whole, as `knowledge_read` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkText {
    /// The chunk's id.
    pub id: i64,
    /// Its file.
    pub path: String,
    /// Its first line (1-based).
    pub start_line: u32,
    /// Its last line.
    pub end_line: u32,
    /// Its heading path.
    pub heading: String,
    /// Its text.
    pub text: String,
}

/// Which documents a listing or a search covers: the caller's documents of this project and in
/// `user` and `cross`, and those of the teams granted to the caller; or one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnowledgeFilter<'a> {
    /// The current project key.
    pub project: &'a str,
    /// Only this scope, when set.
    pub scope: Option<&'a Scope>,
}

impl KnowledgeFilter<'_> {
    /// The scope kind and the team the filter binds (`None`: not filtered by it).
    fn binds(&self) -> (Option<&'static str>, Option<&str>) {
        (self.scope.map(Scope::kind), self.scope.and_then(Scope::team))
    }
}

/// SQL keeping the documents `d` a [`KnowledgeFilter`] covers for the caller: the project bound
/// at `?p`, the scope kind at `?s`, the caller at `?u`, the team at `?t`. Access is checked here:
/// a team's documents only through a grant to the caller.
fn visible(p: u8, s: u8, u: u8, t: u8) -> String {
    format!(
        "((d.owner = ?{u} AND ((d.scope = 'project' AND d.project = ?{p}) OR d.scope IN ('user', 'cross'))) \
         OR (d.scope = 'team' AND d.owner IN (SELECT team FROM team_members WHERE user_name = ?{u}))) \
         AND (CAST(?{s} AS TEXT) IS NULL OR d.scope = ?{s}) AND (CAST(?{t} AS TEXT) IS NULL OR d.owner = ?{t})"
    )
}

/// The scope stored in columns `i` (its kind) and `i + 1` (the owner): a spelling no version
/// writes is a conversion error naming it.
/// The columns [`document_from_row`] reads, of `documents d`.
const DOCUMENT_COLUMNS: &str = "d.id, d.scope, d.owner, d.project, d.path, d.kind, d.sha256, d.bytes, d.indexed_at, \
     (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)";

/// A document as [`DOCUMENT_COLUMNS`] select it.
fn document_from_row(r: &Row<'_>) -> Result<DocumentInfo> {
    Ok(DocumentInfo {
        id: r.get(0)?,
        scope: scope_at(r, 1)?,
        project: r.get(3)?,
        path: r.get(4)?,
        kind: r.get(5)?,
        sha256: r.get(6)?,
        bytes: r.get(7)?,
        indexed_at: r.get(8)?,
        chunks: r.get(9)?,
    })
}

fn scope_at(row: &Row<'_>, i: usize) -> Result<Scope> {
    let (kind, owner): (String, String) = (row.get(i)?, row.get(i + 1)?);
    Scope::from_parts(&kind, &owner).ok_or_else(|| Error::Column {
        index: i,
        message: format!("`{kind}` is not a scope (user, project, cross or team)"),
    })
}

/// The owner of what is written to `scope` by `user`: the team for a team scope, else the user.
pub(super) fn owner_of<'a>(scope: &'a Scope, user: &'a str) -> &'a str {
    scope.team().unwrap_or(user)
}

impl Store {
    /// The id and content hash of an indexed document.
    pub fn knowledge_document(&self, scope: &Scope, project: &str, path: &str) -> Result<Option<(i64, String)>> {
        on_db!(self, "read the knowledge index", {
            self.db.query_opt(
                "SELECT id, sha256 FROM documents WHERE scope = ?1 AND project = ?2 AND path = ?3 AND owner = ?4",
                params![scope.kind(), project, path, owner_of(scope, &self.user)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// Refuses (`scope_denied`) a write to `scope`'s documents the caller may not make: a team
    /// scope without read-write access. (Each write checks it again in its own transaction.)
    pub fn knowledge_check_write(&self, scope: &Scope) -> Result<()> {
        on_db!(self, "check access to the knowledge index", {
            match scope.team() {
                Some(team) => super::owners::check_team_write(&self.db, &self.user, team),
                None => Ok(()),
            }
        })
    }

    /// Indexes a document with its chunks, replacing what was indexed for its path. Returns its id.
    /// A team scope's document needs read-write access to the team.
    pub fn knowledge_put(&mut self, doc: &NewDocument, chunks: &[NewChunk]) -> Result<i64> {
        on_db!(self, "index a document", {
            // A team's documents are read by every member: a credential refuses the document;
            // elsewhere it is stored as its placeholder.
            let team = doc.scope.team().is_some();
            let scrub = self.scrub(if team { "" } else { &doc.project })?;
            let mut cleaned: Vec<std::borrow::Cow<'_, NewChunk>> =
                chunks.iter().map(std::borrow::Cow::Borrowed).collect();
            if let Some(scrub) = scrub {
                for c in cleaned.iter_mut() {
                    let (heading, text) = (scrub.text(&c.heading), scrub.text(&c.text));
                    if matches!((&heading, &text), (std::borrow::Cow::Borrowed(_), std::borrow::Cow::Borrowed(_))) {
                        continue;
                    }
                    if team {
                        let found = scrub.find(&c.heading).into_iter().chain(scrub.find(&c.text)).next();
                        return Err(Error::CredentialRefused {
                            scope: format!("{} (document {})", doc.scope, doc.path),
                            rule: found.map_or_else(|| "unknown".to_string(), |f| f.rule),
                        });
                    }
                    let (heading, text) = (heading.into_owned(), text.into_owned());
                    *c = std::borrow::Cow::Owned(NewChunk { heading, text, ..(**c).clone() });
                }
            }
            let tx = self.db.transaction()?;
            if let Some(team) = doc.scope.team() {
                super::owners::check_team_write(&tx, &self.user, team)?;
            }
            let owner = owner_of(&doc.scope, &self.user);
            tx.execute(
                "DELETE FROM documents WHERE scope = ?1 AND project = ?2 AND path = ?3 AND owner = ?4",
                params![doc.scope.kind(), doc.project, doc.path, owner],
            )?;
            let id: i64 = tx.query_value(
                "INSERT INTO documents (scope, project, path, kind, sha256, bytes, indexed_at, owner) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                params![doc.scope.kind(), doc.project, doc.path, doc.kind, doc.sha256, doc.bytes, now_ms(), owner],
            )?;
            for (i, c) in cleaned.iter().enumerate() {
                tx.execute(
                    "INSERT INTO chunks (document_id, ordinal, start_line, end_line, heading, text, tokens) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![id, i as i64, c.start_line, c.end_line, c.heading, c.text, c.tokens],
                )?;
            }
            super::vectors::bump(&tx)?;
            tx.commit()?;
            Ok(id)
        })
    }

    /// Every document the caller owns (user, project and cross scopes, every project), by path:
    /// what a merge of the store into another brings over.
    pub fn knowledge_owned(&self) -> Result<Vec<DocumentInfo>> {
        on_db!(self, "list the knowledge index", {
            self.db.query_vec(
                &format!(
                    "SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE d.owner = ?1 AND d.scope <> 'team' \
                     ORDER BY d.path, d.scope, d.project"
                ),
                params![self.user],
                document_from_row,
            )
        })
    }

    /// The chunks of a document the caller owns, in order, as they were stored.
    pub fn knowledge_chunks(&self, document: i64) -> Result<Vec<NewChunk>> {
        on_db!(self, "read a document's chunks", {
            self.db.query_vec(
                "SELECT c.start_line, c.end_line, c.heading, c.text, c.tokens FROM chunks c \
                 JOIN documents d ON d.id = c.document_id WHERE c.document_id = ?1 AND d.owner = ?2 \
                 ORDER BY c.ordinal",
                params![document, self.user],
                |r| {
                    Ok(NewChunk {
                        start_line: r.get(0)?,
                        end_line: r.get(1)?,
                        heading: r.get(2)?,
                        text: r.get(3)?,
                        tokens: r.get(4)?,
                    })
                },
            )
        })
    }

    /// The documents `filter` covers, by path.
    pub fn knowledge_documents(&self, filter: KnowledgeFilter<'_>) -> Result<Vec<DocumentInfo>> {
        on_db!(self, "list the knowledge index", {
            self.db.query_vec(
                &format!(
                    "SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE {} ORDER BY d.path, d.scope, d.owner",
                    visible(1, 2, 3, 4)
                ),
                params![filter.project, filter.binds().0, self.user, filter.binds().1],
                document_from_row,
            )
        })
    }

    /// Removes documents from the index (their chunks with them; never a file): by id, those the
    /// caller owns or may write through a team. Returns how many went.
    pub fn knowledge_remove(&mut self, ids: &[i64]) -> Result<usize> {
        on_db!(self, "remove from the knowledge index", {
            let tx = self.db.transaction()?;
            let mut removed = 0;
            for id in ids {
                removed += tx.execute(
                    "DELETE FROM documents WHERE id = ?1 AND ((scope <> 'team' AND owner = ?2) OR (scope = 'team' \
                     AND owner IN (SELECT team FROM team_members WHERE user_name = ?2 AND access = 'write')))",
                    params![id, self.user],
                )?;
            }
            super::vectors::bump(&tx)?;
            tx.commit()?;
            Ok(removed)
        })
    }

    /// The chunks matching `query` among the documents `filter` covers, best first (bm25 over
    /// text and heading; all the query's words when that finds something, else any), at most
    /// `limit`.
    pub fn knowledge_search(&self, filter: KnowledgeFilter<'_>, query: &str, limit: usize) -> Result<Vec<ChunkHit>> {
        self.knowledge_search_ranked(filter, query, limit, &super::ranking::Ranking::default())
    }

    /// [`Store::knowledge_search`] under the rules of `ranking` (its query rules and tiers).
    pub fn knowledge_search_ranked(
        &self,
        filter: KnowledgeFilter<'_>,
        query: &str,
        limit: usize,
        ranking: &super::ranking::Ranking,
    ) -> Result<Vec<ChunkHit>> {
        on_db!(self, "search the knowledge index", {
            let expressions = super::ranking::expressions(query, ranking);
            let any = expressions.any.clone();
            let words = super::ranking::kept_words(query, ranking);
            let backend = self.db.backend();
            let sql = match backend {
                Backend::Sqlite => format!(
                    "SELECT c.id, d.path, c.start_line, c.end_line, c.heading, \
                     snippet(chunk_fts, 0, '[', ']', '…', 16), bm25(chunk_fts, 1.0, 0.5) \
                     FROM chunk_fts JOIN chunks c ON c.id = chunk_fts.rowid JOIN documents d ON d.id = c.document_id \
                     WHERE chunk_fts MATCH ?3 AND {} ORDER BY bm25(chunk_fts, 1.0, 0.5), c.id LIMIT ?4",
                    visible(1, 2, 5, 6)
                ),
                // The same shape: a snippet of about 16 words, and a score where lower is better.
                _ => format!(
                    "SELECT c.id, d.path, c.start_line, c.end_line, c.heading, \
                     ts_headline('seshat', c.text, websearch_to_tsquery('seshat', ?3), \
                     'StartSel=[, StopSel=], MaxWords=16, MinWords=8, FragmentDelimiter=…'), \
                     -ts_rank(c.words, websearch_to_tsquery('seshat', ?3), 1) AS score \
                     FROM chunks c JOIN documents d ON d.id = c.document_id \
                     WHERE c.words @@ websearch_to_tsquery('seshat', ?3) AND {} ORDER BY score, c.id LIMIT ?4",
                    visible(1, 2, 5, 6)
                ),
            };
            let mut hits: Vec<ChunkHit> = Vec::new();
            for expr in expressions.tiers() {
                // Coordination reorders a wider pool of the any-word tier.
                let coordinated = ranking.coordination && Some(&expr) == any.as_ref();
                let pool = if coordinated { super::ranking::POOL } else { limit };
                let (kind, team) = filter.binds();
                let params = params![filter.project, kind, expr.render(backend), pool as i64, self.user, team];
                let mut found: Vec<ChunkHit> = self.db.query_vec(&sql, params, |r| {
                    Ok(ChunkHit {
                        id: r.get(0)?,
                        path: r.get(1)?,
                        start_line: r.get(2)?,
                        end_line: r.get(3)?,
                        heading: r.get(4)?,
                        snippet: r.get(5)?,
                        score: r.get(6)?,
                    })
                })?;
                if coordinated {
                    let index = super::ranking::Index::Knowledge;
                    found = super::ranking::by_coordination(&self.db, index, found, |h| h.id, &words)?;
                }
                for hit in found {
                    if hits.len() < limit && !hits.iter().any(|h| h.id == hit.id) {
                        hits.push(hit);
                    }
                }
                if hits.len() >= limit {
                    break;
                }
            }
            Ok(hits)
        })
    }

    /// The ids of the documents `filter` covers.
    pub(crate) fn knowledge_document_ids(&self, filter: KnowledgeFilter<'_>) -> Result<Vec<i64>> {
        on_db!(self, "list the knowledge index", {
            self.db.query_vec(
                &format!("SELECT d.id FROM documents d WHERE {}", visible(1, 2, 3, 4)),
                params![filter.project, filter.binds().0, self.user, filter.binds().1],
                |r| r.get(0),
            )
        })
    }

    /// Chunks by id as search hits (for those a vector search found), with their opening as the
    /// snippet and no score; in the order given, missing ones left out.
    pub(crate) fn knowledge_chunk_hits(&self, filter: KnowledgeFilter<'_>, ids: &[i64]) -> Result<Vec<ChunkHit>> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(c) = self.knowledge_chunk(filter, id)? {
                out.push(ChunkHit {
                    id: c.id,
                    path: c.path,
                    start_line: c.start_line,
                    end_line: c.end_line,
                    heading: c.heading,
                    snippet: opening(&c.text, 16),
                    score: 0.0,
                });
            }
        }
        Ok(out)
    }

    /// One stored chunk whole, by id, when it is among the documents `filter` covers (another
    /// project's chunk is not found).
    pub(crate) fn knowledge_chunk(&self, filter: KnowledgeFilter<'_>, id: i64) -> Result<Option<ChunkText>> {
        on_db!(self, "read a chunk", {
            self.db.query_opt(
                &format!(
                    "SELECT c.id, d.path, c.start_line, c.end_line, c.heading, c.text FROM chunks c \
                     JOIN documents d ON d.id = c.document_id WHERE c.id = ?3 AND {}",
                    visible(1, 2, 4, 5)
                ),
                params![filter.project, filter.binds().0, id, self.user, filter.binds().1],
                |r| {
                    Ok(ChunkText {
                        id: r.get(0)?,
                        path: r.get(1)?,
                        start_line: r.get(2)?,
                        end_line: r.get(3)?,
                        heading: r.get(4)?,
                        text: r.get(5)?,
                    })
                },
            )
        })
    }
}

/// The first `words` words of `text`, with `…` when there is more (as FTS5's snippets are cut).
fn opening(text: &str, words: usize) -> String {
    let mut out: Vec<&str> = text.split_whitespace().take(words + 1).collect();
    let more = out.len() > words;
    out.truncate(words);
    let mut s = out.join(" ");
    if more {
        s.push('…');
    }
    s
}
