-- Event signatures (docs/event-store.md "Signatures", docs/audit.md).
-- The store signs the last row of every append with the service's Ed25519 key,
-- which is held outside the database: a row appended by anyone with only the
-- database role (a leaked DATABASE_URL) cannot carry a valid signature, and the
-- audit names it. Both columns are NULL on the other rows of an append (the
-- hash chain covers them) and on every row written before this migration.
ALTER TABLE events
    ADD COLUMN key_id text,
    ADD COLUMN signature bytea
        CONSTRAINT events_signature_length CHECK (signature IS NULL OR octet_length(signature) = 64);

-- Rows up to this position were written before the service signed anything:
-- the audit reports them as unsigned legacy rows, not as forgeries. The app
-- role may only read it, so a forger cannot move the line. `store_id` names
-- this event store in its signed checkpoints (with the database's name: a
-- database cloned from a template keeps the id, never the name).
CREATE TABLE evidence_epoch (
    unsigned_up_to bigint NOT NULL,
    store_id text NOT NULL DEFAULT gen_random_uuid()::text
);
INSERT INTO evidence_epoch (unsigned_up_to) SELECT coalesce(max(position), 0) FROM events;

REVOKE ALL ON evidence_epoch FROM PUBLIC;
GRANT SELECT ON evidence_epoch TO matcha_app;

-- The audit names a seed used by two matches (a reused seed): found by value.
CREATE INDEX match_seeds_seed_idx ON match_seeds (seed);
CREATE INDEX events_revealed_seed_idx ON events ((data ->> 'seed')) WHERE type = 'match_ended';
