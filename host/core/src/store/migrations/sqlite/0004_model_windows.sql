-- 0004: what Seshat learnt about a model from the server that runs it, keyed by the base URL
-- requests go to and the model id. 'discovered': asked of the server (re-asked after 24 hours);
-- 'learnt': revealed by a refusal or a silent truncation (kept until something replaces it; a
-- later discovery never does).

CREATE TABLE model_windows (
    base_url          TEXT NOT NULL,
    model             TEXT NOT NULL,
    context_window    INTEGER CHECK (context_window IS NULL OR context_window > 0),
    max_output_tokens INTEGER CHECK (max_output_tokens IS NULL OR max_output_tokens > 0),
    source            TEXT NOT NULL CHECK (source IN ('discovered', 'learnt')),
    learnt_at         INTEGER NOT NULL,
    PRIMARY KEY (base_url, model)
) STRICT;
