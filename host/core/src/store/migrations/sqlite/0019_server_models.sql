-- 19: the model last used with each server (by the base URL requests go to), for a chat that
-- names none when the server does not say which models it serves.
CREATE TABLE server_models (
    base_url TEXT PRIMARY KEY,
    model    TEXT NOT NULL,
    used_at  INTEGER NOT NULL
) STRICT;
