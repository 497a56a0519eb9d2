-- seshat: additive
-- The key placeholders of redacted credentials are made with (an HMAC of the secret under it):
-- one per store, made on first need, never read out of the store.
CREATE TABLE redaction_key (
    id integer PRIMARY KEY CHECK (id = 1),
    key bytea NOT NULL
);
