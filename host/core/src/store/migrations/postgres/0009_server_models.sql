-- 9: the model last used with each server (by the base URL requests go to), for a chat that
-- names none when the server does not say which models it serves.
CREATE TABLE server_models (
    base_url text PRIMARY KEY,
    model    text NOT NULL,
    used_at  bigint NOT NULL
);
