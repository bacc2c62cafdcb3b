-- A ladder's seasons as an event stream of their own (service/seasons/,
-- docs/ratings.md "Seasons"): scheduled, started, ended, standings frozen.
-- Append-only and hash-chained like the match events (service/store/chain.py:
-- the same row hash, the stream id in place of the match id). Owned by the
-- ratings part. (No percent signs or colon-names: see 0001.)

CREATE TABLE ladder_events (
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ladder_id   text        NOT NULL REFERENCES ladders (id),
    version     integer     NOT NULL CHECK (version >= 1),
    type        text        NOT NULL,
    data        jsonb       NOT NULL,
    actor       text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    prev_hash   bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash        bytea       NOT NULL CHECK (octet_length(hash) = 32),
    -- two racing appends to one ladder's stream: the loser gets a conflict
    CONSTRAINT ladder_events_ladder_version_key UNIQUE (ladder_id, version)
);

-- Never changed or removed, whoever asks (the function of 0001).
CREATE TRIGGER ladder_events_no_update_delete
    BEFORE UPDATE OR DELETE ON ladder_events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER ladder_events_no_truncate
    BEFORE TRUNCATE ON ladder_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();

REVOKE ALL ON ladder_events FROM PUBLIC;
GRANT SELECT, INSERT ON ladder_events TO matcha_app;
GRANT USAGE, SELECT ON SEQUENCE ladder_events_position_seq TO matcha_app;

-- The ratings projection records how much of a ladder's season stream it has
-- applied: a season boundary it has not seen, at a position it has passed,
-- makes the next job recompute the ladder (workers/ratings/job.py).
ALTER TABLE ladder_projections ADD COLUMN seasons_version integer NOT NULL DEFAULT 0;
