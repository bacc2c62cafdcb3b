-- Clocks (docs/clocks.md). A ladder's time control, copied into each of its
-- matches' terms at creation (NULL: untimed).
ALTER TABLE ladders ADD COLUMN clock jsonb;

-- When each timed match's next clock runs out: a projection of the log kept
-- in the same transaction as every append (service/matches/deadlines.py), so
-- it is never behind the events. The sweepers of the workers (workers/clocks.py)
-- claim the rows that are due with FOR UPDATE SKIP LOCKED and a short lease,
-- and time the seat out through the match core at the row's version: the
-- append at that version is what makes a time-out happen exactly once. A
-- worker killed mid-sweep leaves its lease to expire; another worker takes
-- the row then. A match with no clock running has no row.
CREATE TABLE match_deadlines (
    match_id     text        PRIMARY KEY,
    seat         smallint    NOT NULL CHECK (seat IN (0, 1)),
    due_at       timestamptz NOT NULL,
    version      integer     NOT NULL CHECK (version > 0),
    lease_until  timestamptz NOT NULL DEFAULT '-infinity'
);

CREATE INDEX match_deadlines_due ON match_deadlines (due_at);

REVOKE ALL ON match_deadlines FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON match_deadlines TO matcha_app;
