//! Knowledge: documents the agent can search (issue "Retrieval and knowledge", in progress).
//! So far the chunker: documents cut by structure into chunks that keep their lines and heading
//! path. Storage, indexing and search build on it.

pub mod chunk;
