-- A challenge may name its own time control where its ladder allows it
-- (docs/clocks.md "Per challenge"): the ladder says so once, at creation; the
-- challenge keeps the clock it was made with (NULL: the ladder's).
ALTER TABLE ladders ADD COLUMN challenge_clocks boolean NOT NULL DEFAULT false;
ALTER TABLE challenges ADD COLUMN clock jsonb;
