-- Several workers (processes, machines) drain the embedding queue at once: a worker claims the
-- rows it embeds until `claimed_until` (unix milliseconds), naming itself in `claimed_by`; an
-- unclaimed row, one whose claim has lapsed, or one whose worker is gone is free for the next.
ALTER TABLE embed_queue ADD COLUMN claimed_until INTEGER;
ALTER TABLE embed_queue ADD COLUMN claimed_by TEXT;
