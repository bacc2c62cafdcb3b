-- Elo ratings per ladder: a projection of the match_ended and match_annulled
-- events (workers/ratings.py). Everything here can be deleted and rebuilt
-- from the events table (POST /api/admin/ladders/{id}/recompute).
-- Owned by the workers part. (No percent signs or colon-names: see 0001.)
--
-- UNLOGGED, all three tables: a full recompute of a big ladder rewrites
-- its whole history (64 MB for a million matches), and skipping the WAL makes that several times
-- faster. The price: after a PostgreSQL crash they come back empty (all three
-- together, so the recorded position is empty too) and the workers' catch-up
-- rebuilds them from the log, which is the truth; they are not streamed to
-- replicas. Ids use the "C" collation: byte order, the cheapest to index.

-- A player's current standing on a ladder.
CREATE UNLOGGED TABLE ratings (
    ladder_id       text COLLATE "C" NOT NULL,
    player_id       text COLLATE "C" NOT NULL,
    rating          double precision NOT NULL,
    games           integer          NOT NULL CHECK (games >= 0),
    wins            integer          NOT NULL CHECK (wins >= 0),
    draws           integer          NOT NULL CHECK (draws >= 0),
    losses          integer          NOT NULL CHECK (losses >= 0),
    peak            double precision NOT NULL,
    -- Sticky: once the player reached the ladder's master rating (2400),
    -- their K stays at k_master even if they fall below it again.
    reached_master  boolean          NOT NULL,
    provisional     boolean          NOT NULL,
    PRIMARY KEY (ladder_id, player_id)
);
-- The leaderboard reads a ladder's players best first.
CREATE INDEX ratings_leaderboard ON ratings (ladder_id, rating DESC, player_id);

-- The rating history, stored one row per (ladder, player) with the player's
-- rated matches as parallel arrays in order: the global position of each
-- match's match_ended event, the rating before and after it, the score
-- (1 win, 0.5 draw, 0 loss). A full recompute of a million matches then writes
-- ten thousand rows instead of two million (and keeps no per-match index up
-- to date); a new result appends to two players' arrays.
CREATE UNLOGGED TABLE rating_histories (
    ladder_id  text COLLATE "C" NOT NULL,
    player_id  text COLLATE "C" NOT NULL,
    positions  bigint[]           NOT NULL,
    before     double precision[] NOT NULL,
    after      double precision[] NOT NULL,
    scores     double precision[] NOT NULL,
    PRIMARY KEY (ladder_id, player_id),
    CHECK (cardinality(positions) = cardinality(before)
           AND cardinality(positions) = cardinality(after)
           AND cardinality(positions) = cardinality(scores))
);

-- The arrays are doubles and integers that compress poorly: storing them
-- out of line without trying to compress makes writing a recomputed ladder
-- about four times faster (measured).
ALTER TABLE rating_histories
    ALTER COLUMN positions SET STORAGE EXTERNAL,
    ALTER COLUMN before SET STORAGE EXTERNAL,
    ALTER COLUMN after SET STORAGE EXTERNAL,
    ALTER COLUMN scores SET STORAGE EXTERNAL;

-- The same history one row per player per match, with the match and the
-- opponent read from the events (for people querying with SQL, and the API).
CREATE VIEW rating_history AS
SELECT h.ladder_id,
       h.player_id,
       u.game,
       u.position,
       e.match_id,
       CASE WHEN c.data -> 'players' ->> 0 = h.player_id
            THEN c.data -> 'players' ->> 1
            ELSE c.data -> 'players' ->> 0 END AS opponent_id,
       u.score,
       u.before,
       u.after,
       u.after - u.before AS change
FROM rating_histories h
CROSS JOIN LATERAL unnest(h.positions, h.before, h.after, h.scores)
    WITH ORDINALITY AS u(position, before, after, score, game)
JOIN events e ON e.position = u.position
JOIN events c ON c.match_id = e.match_id AND c.version = 1;

-- The last global event position a ladder's ratings include. Written in the
-- same transaction as the ratings, so a job that runs twice (or is retried
-- after a crash) finds nothing new the second time.
CREATE UNLOGGED TABLE ladder_projections (
    ladder_id      text        PRIMARY KEY,
    position       bigint      NOT NULL,
    matches        integer     NOT NULL,
    recomputed_at  timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- A ladder recompute reads the match_created events of one ladder, in
-- position order and in chunks: index them by ladder, then position, so it
-- never scans other ladders' matches.
CREATE INDEX events_ladder_created_idx ON events ((data ->> 'ladder_id'), position)
    WHERE type = 'match_created';

REVOKE ALL ON ratings, rating_histories, rating_history, ladder_projections FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ratings, rating_histories, ladder_projections TO matcha_app;
GRANT SELECT ON rating_history TO matcha_app;
