-- 0009: vectors for hybrid retrieval. Each corpus's vectors are made by one embedder and model,
-- recorded here with their length, so vectors of two models are never mixed: changing the model
-- re-embeds (after asking). `generation` grows with every change to the corpus's chunks or vectors, so a
-- process holding them in memory knows when to reload. A chunk's vector is int8, quantised from
-- the unit-length vector with its scale (the largest magnitude / 127) in the first 4 bytes
-- (little-endian f32); it goes with its chunk.

CREATE TABLE vector_indexes (
    corpus     TEXT PRIMARY KEY CHECK (corpus IN ('knowledge')),
    embedder   TEXT NOT NULL,
    model      TEXT NOT NULL,
    dimensions INTEGER NOT NULL CHECK (dimensions > 0),
    generation INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE chunk_vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    vector   BLOB NOT NULL
) STRICT;
