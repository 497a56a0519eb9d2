-- The oldest schema version whose builds can still use the database: a migration that only adds
-- (tables, columns with defaults, indexes) and says so leaves it where it was, so instances of the
-- older build keep serving while a newer one is rolled out; one that changes what exists raises it
-- to its own version. This one is not marked additive: the builds before it do not read the
-- column, and refuse any newer schema.
ALTER TABLE seshat_schema ADD COLUMN compatible_from bigint;
UPDATE seshat_schema SET compatible_from = version;
