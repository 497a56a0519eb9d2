-- seshat: additive
-- 0022: team memory reviewed. A team scope can require review (teams.review): a member's write
-- to its memory is then kept as a proposal (memory_proposals: the write's tool and arguments,
-- who proposed it) until a reviewer (team_members.reviewer, or an admin) approves it — applied
-- then, as its proposer's — or rejects it. The members who could write before are its reviewers;
-- a team's creator is its first.

ALTER TABLE teams ADD COLUMN review INTEGER NOT NULL DEFAULT 0 CHECK (review IN (0, 1));
ALTER TABLE team_members ADD COLUMN reviewer INTEGER NOT NULL DEFAULT 0 CHECK (reviewer IN (0, 1));
UPDATE team_members SET reviewer = 1 WHERE access = 'write';

CREATE TABLE memory_proposals (
    id         INTEGER PRIMARY KEY,
    team       TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    tool       TEXT NOT NULL,                 -- the write: create_entities, add_observations, …
    params     TEXT NOT NULL,                 -- its arguments (JSON), the team's scope named
    source_id  INTEGER NOT NULL REFERENCES memory_sources (id),
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by TEXT,
    decided_at INTEGER,
    reason     TEXT,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX memory_proposals_team ON memory_proposals (team, status, id);
