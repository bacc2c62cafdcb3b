-- Fair play (issue 28, docs/fairplay.md): the admins' decisions as a stream of
-- their own, the organisers' thresholds, and the flags projection's tables.
-- Owned by the fair-play part. (No percent signs or colon-names: see 0001.)

-- The decisions: dismissed flags, voided matches, closed accounts. Append-only
-- and hash-chained like the match events (one stream, stream id 'fairplay').
CREATE TABLE fairplay_events (
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id   text        NOT NULL,
    version     integer     NOT NULL CHECK (version >= 1),
    type        text        NOT NULL,
    data        jsonb       NOT NULL,
    actor       text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    prev_hash   bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash        bytea       NOT NULL CHECK (octet_length(hash) = 32),
    CONSTRAINT fairplay_events_stream_version_key UNIQUE (stream_id, version)
);
CREATE TRIGGER fairplay_events_no_update_delete
    BEFORE UPDATE OR DELETE ON fairplay_events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER fairplay_events_no_truncate
    BEFORE TRUNCATE ON fairplay_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
REVOKE ALL ON fairplay_events FROM PUBLIC;
GRANT SELECT, INSERT ON fairplay_events TO matcha_app;
GRANT USAGE, SELECT ON SEQUENCE fairplay_events_position_seq TO matcha_app;

-- A ladder's thresholds (schemas/fairplay.py FairPlaySettings); no row: the defaults.
-- ``dirty``: changed since the flags were last computed (the runner recomputes it).
CREATE TABLE fairplay_settings (
    ladder_id   text        PRIMARY KEY REFERENCES ladders (id),
    settings    jsonb       NOT NULL,
    dirty       boolean     NOT NULL DEFAULT true,
    updated_by  text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE ON fairplay_settings TO matcha_app;

-- The flags projection (workers/projections/flags.py): rebuilt per ladder from
-- the log, so a ladder's rows are replaced whole.
CREATE TABLE fairplay_flags (
    flag_id     text             PRIMARY KEY,
    ladder_id   text             NOT NULL,
    signal      text             NOT NULL,
    players     text[]           NOT NULL,
    numbers     jsonb            NOT NULL,
    matches     text[]           NOT NULL,
    weight      double precision NOT NULL
);
CREATE INDEX fairplay_flags_ladder ON fairplay_flags (ladder_id);
CREATE INDEX fairplay_flags_matches ON fairplay_flags USING gin (matches);
GRANT SELECT, INSERT, UPDATE, DELETE ON fairplay_flags TO matcha_app;

-- Refunds to the opponents of a closed account, per ladder (same projection).
CREATE TABLE fairplay_refunds (
    ladder_id     text             NOT NULL,
    player_id     text             NOT NULL,
    closed_player text             NOT NULL,
    amount        double precision NOT NULL,
    before        double precision NOT NULL,
    after         double precision NOT NULL,
    at_position   bigint           NOT NULL,
    PRIMARY KEY (ladder_id, player_id, closed_player)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON fairplay_refunds TO matcha_app;

-- Closed accounts, written in the transaction that appends their account_closed.
CREATE TABLE fairplay_closed (
    player_id  text        PRIMARY KEY,
    admin      text        NOT NULL,
    reason     text        NOT NULL,
    closed_at  timestamptz NOT NULL
);
GRANT SELECT, INSERT ON fairplay_closed TO matcha_app;

INSERT INTO projection_positions (name, position) VALUES ('flags', 0)
ON CONFLICT DO NOTHING;
