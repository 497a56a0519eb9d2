-- Several workers (processes, machines) drain the embedding queue at once: a worker claims the
-- rows it embeds until `claimed_until` (unix milliseconds); an unclaimed row, or one whose claim
-- has lapsed (its worker died), is free for the next.
ALTER TABLE embed_queue ADD COLUMN claimed_until INTEGER;
