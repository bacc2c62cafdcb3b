-- Idempotency keys of creates that are not match events (a ladder, a
-- challenge): a resend with the same key and the same request gets the
-- first answer (kept here as it was sent) and creates nothing; the same key
-- with another request is refused (409 idempotency_key_reused). Written in
-- the same transaction as what it created. A match's creation keeps its key
-- with its events, in idempotency_keys. Owned by the projections part
-- (service/api/creates.py, docs/api.md "Idempotency keys").

CREATE TABLE create_requests (
    actor         text        NOT NULL,
    key           text        NOT NULL,
    kind          text        NOT NULL,
    request_hash  text        NOT NULL,
    resource_id   text        NOT NULL,
    status        integer     NOT NULL,
    response      bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (actor, kind, key)
);

REVOKE ALL ON create_requests FROM PUBLIC;
GRANT SELECT, INSERT ON create_requests TO matcha_app;
