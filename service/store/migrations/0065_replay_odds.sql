-- The replay's odds (issue 27, docs/replays.md "The odds bar"): each seat's chance
-- to win after every version of every finished match, as a spectator could have
-- judged it at that version. A projection of the log (workers/projections/odds.py),
-- rebuilt per match whole. (No percent signs or colon-names: see 0001.)
CREATE TABLE replay_odds (
    match_id  text             NOT NULL,
    version   integer          NOT NULL CHECK (version >= 1),
    p0        double precision NOT NULL,
    p1        double precision NOT NULL,
    playouts  integer          NOT NULL CHECK (playouts >= 0),
    computed_at timestamptz    NOT NULL DEFAULT now(),
    PRIMARY KEY (match_id, version)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON replay_odds TO matcha_app;

-- The runner's row from the start, so the lag metric names it before its first
-- pass; at 0, its first passes estimate the matches that ended before it existed.
INSERT INTO projection_positions (name, position) VALUES ('odds', 0)
ON CONFLICT DO NOTHING;
