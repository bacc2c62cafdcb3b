-- The event store: one append-only, hash-chained table of match events.
-- (No percent signs or colon-names in migration files: yoyo hands each
-- statement to psycopg as a parameterised query.)

-- The service logs in as matcha_app. Roles are cluster-wide and test
-- databases are migrated concurrently, so a racing CREATE ROLE is tolerated.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'matcha_app') THEN
        BEGIN
            CREATE ROLE matcha_app LOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    -- A role made elsewhere as NOLOGIN would leave the service locked out.
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'matcha_app' AND NOT rolcanlogin) THEN
        ALTER ROLE matcha_app LOGIN;
    END IF;
END
$$;

CREATE TABLE events (
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    match_id    text        NOT NULL,
    version     integer     NOT NULL CHECK (version >= 1),
    type        text        NOT NULL,
    data        jsonb       NOT NULL,
    actor       text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    prev_hash   bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash        bytea       NOT NULL CHECK (octet_length(hash) = 32),
    -- A racing append turns into a unique violation here: the loser gets
    -- version_conflict. It is also the index every per-match read uses.
    CONSTRAINT events_match_version_key UNIQUE (match_id, version)
);

CREATE INDEX events_type_position_idx ON events (type, position);

-- Immutability: rows are never changed or removed, whoever asks.
CREATE FUNCTION events_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING
        MESSAGE = 'the events table is append-only: ' || TG_OP || ' is not allowed',
        ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER events_no_update_delete
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();

-- Row triggers never fire for TRUNCATE: it needs a statement-level one.
CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();

-- The secret shuffle seed of a match, revealed only in MatchEnded.
CREATE TABLE match_seeds (
    match_id text PRIMARY KEY,
    seed     text NOT NULL
);

-- A command's idempotency key: a retry returns the first result.
CREATE TABLE idempotency_keys (
    actor         text        NOT NULL,
    key           text        NOT NULL,
    match_id      text        NOT NULL,
    request_hash  text,
    first_version integer     NOT NULL,
    last_version  integer     NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (actor, key)
);

-- The app role may read and append, nothing more (REVOKE first: PUBLIC
-- grants must not leak UPDATE or DELETE).
REVOKE ALL ON events, match_seeds, idempotency_keys FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO matcha_app;
GRANT SELECT, INSERT ON events, match_seeds, idempotency_keys TO matcha_app;
GRANT USAGE, SELECT ON SEQUENCE events_position_seq TO matcha_app;
-- So that `apply_migrations` run as the app role can see nothing is pending.
GRANT SELECT ON _yoyo_migration, _yoyo_version, _yoyo_log, yoyo_lock TO matcha_app;
