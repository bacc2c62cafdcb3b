-- Replay archives: one compressed, portable record of each finished match
-- with the frames a viewer steps through (workers/replays.py, docs/replays.md).
-- A projection of the events table: rebuilding one from the log gives the
-- same bytes (the encoding is deterministic), so `sha256` and `final_hash`
-- let anyone check an archive against the log. Owned by the workers part.

CREATE TABLE replay_archives (
    match_id           text        PRIMARY KEY,
    format             text        NOT NULL,
    -- gzip (mtime 0) of the archive's canonical JSON
    archive            bytea       NOT NULL,
    sha256             bytea       NOT NULL CHECK (octet_length(sha256) = 32),
    raw_size           integer     NOT NULL,
    events             integer     NOT NULL,
    -- the hash of the match's last event the archive includes, and its global
    -- position: an archive older than the log (a dispute filed later, an
    -- annulment) is rebuilt, and a rebuild never replaces a newer archive
    final_hash         bytea       NOT NULL CHECK (octet_length(final_hash) = 32),
    built_at_position  bigint      NOT NULL,
    built_at           timestamptz NOT NULL DEFAULT now()
);

REVOKE ALL ON replay_archives FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON replay_archives TO matcha_app;
