-- seshat: additive
-- The oldest schema version whose builds can still use the database: a migration that only adds
-- (tables, columns with defaults, indexes) leaves it where it was, so instances of the older build
-- keep serving while a newer one is rolled out; one that changes what exists raises it to its own
-- version. NULL (a database migrated before this column) means the recorded version.
ALTER TABLE seshat_schema ADD COLUMN compatible_from bigint;
UPDATE seshat_schema SET compatible_from = version;
