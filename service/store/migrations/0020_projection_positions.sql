-- Where each projection runner of the workers stands in the global log
-- (workers/projections/, docs/replays.md "How archives keep up"): the last
-- event position it applied, written in the same transaction as what it
-- applied. A runner takes its row FOR UPDATE SKIP LOCKED for one pass, so of
-- several workers exactly one applies a stretch of the log at a time, and a
-- worker that dies mid-pass frees the row with its connection (no lock
-- outlives its owner). Owned by the projections part.
--
-- A deployment that already has a log starts each runner at its end: what
-- happened before is checked once by the runners' start-up sweep (finished
-- matches with no archive, ladders behind their results, summaries behind
-- their events) instead of being applied again event by event.

CREATE TABLE projection_positions (
    name        text        PRIMARY KEY,
    position    bigint      NOT NULL CHECK (position >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO projection_positions (name, position)
SELECT name, (SELECT coalesce(max(position), 0) FROM events)
FROM (VALUES ('archives'), ('ratings'), ('summaries')) AS p(name);

REVOKE ALL ON projection_positions FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON projection_positions TO matcha_app;
