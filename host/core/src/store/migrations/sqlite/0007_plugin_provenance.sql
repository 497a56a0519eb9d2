-- 0007: records name the plugin that made them — a trim its trimmer, a compaction its summariser —
-- by id and the SHA-256 of the wasm that ran, so two builds of one plugin can be told apart.
-- Records written before stay NULL (unknown).

ALTER TABLE trims ADD COLUMN plugin TEXT;
ALTER TABLE trims ADD COLUMN plugin_sha256 TEXT;
ALTER TABLE compactions ADD COLUMN plugin TEXT;
ALTER TABLE compactions ADD COLUMN plugin_sha256 TEXT;
