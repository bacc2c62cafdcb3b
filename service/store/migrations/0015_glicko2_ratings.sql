-- Glicko-2 beside Elo, and losses on time (workers/ratings/, docs/ratings.md).
-- Everything here is still a projection of the events table: a recompute
-- rebuilds it. Owned by the ratings part. (No percent signs or colon-names: see 0001.)

-- A player's standing gains the Glicko-2 state (NULL on an Elo ladder) and the
-- count of matches they lost on time (both systems).
ALTER TABLE ratings
    ADD COLUMN timeouts        integer NOT NULL DEFAULT 0 CHECK (timeouts >= 0),
    ADD COLUMN rd              double precision,
    ADD COLUMN volatility      double precision,
    -- the last rating period the player played in, and whether its games are
    -- still rated together (a later game of that period joins them)
    ADD COLUMN period          bigint,
    ADD COLUMN period_open     boolean,
    -- the rating, RD and volatility they entered that period with, and the
    -- period of those (NULL: a new player), before the RD growth of idle periods
    ADD COLUMN base_rating     double precision,
    ADD COLUMN base_rd         double precision,
    ADD COLUMN base_volatility double precision,
    ADD COLUMN base_period     bigint,
    -- the period's two sums so far, sum g^2 E (1 - E) and sum g (s - E), kept
    -- exactly so that the next result of the period adds to the same bits a
    -- recompute adds to
    ADD COLUMN v_sum           double precision,
    ADD COLUMN d_sum           double precision,
    ADD COLUMN period_games    integer;

-- Per match, on a Glicko-2 ladder: the RD before and after, and the rating
-- period (every match of a period shares its before and after).
ALTER TABLE rating_histories
    ADD COLUMN rd_before double precision[],
    ADD COLUMN rd_after  double precision[],
    ADD COLUMN periods   bigint[],
    ADD CONSTRAINT rating_histories_glicko2_arrays CHECK (
        (rd_before IS NULL AND rd_after IS NULL AND periods IS NULL)
        OR (cardinality(rd_before) = cardinality(positions)
            AND cardinality(rd_after) = cardinality(positions)
            AND cardinality(periods) = cardinality(positions)));
ALTER TABLE rating_histories
    ALTER COLUMN rd_before SET STORAGE EXTERNAL,
    ALTER COLUMN rd_after SET STORAGE EXTERNAL,
    ALTER COLUMN periods SET STORAGE EXTERNAL;

-- The ladder's current rating period (Glicko-2): a result is never rated in an
-- earlier period than the one before it in the log.
ALTER TABLE ladder_projections ADD COLUMN period bigint;

-- The per-match view gains the Glicko-2 columns (appended: a view keeps its
-- columns' order) and each match's end reason.
CREATE OR REPLACE VIEW rating_history AS
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
       u.after - u.before AS change,
       u.rd_before,
       u.rd_after,
       u.period,
       e.data ->> 'reason' AS reason
FROM rating_histories h
CROSS JOIN LATERAL unnest(h.positions, h.before, h.after, h.scores, h.rd_before, h.rd_after,
                          h.periods)
    WITH ORDINALITY AS u(position, before, after, score, rd_before, rd_after, period, game)
JOIN events e ON e.position = u.position
JOIN events c ON c.match_id = e.match_id AND c.version = 1;
