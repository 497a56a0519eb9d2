//! Knowledge: documents the agent can search (issue "Retrieval and knowledge", in progress).
//! `chunk` cuts a document by its structure; `index` walks files as ripgrep does and keeps the
//! index (the store's `knowledge` tables, migration 0008) in step with them. Search is lexical
//! (FTS5 bm25) until embedders land.

pub mod chunk;
pub mod index;

pub use chunk::{Chunk, Kind, Sizing};
pub use index::{AddReport, Added, Error, MAX_FILE_BYTES, Skipped, Target, add, add_text, read_text, refused};
