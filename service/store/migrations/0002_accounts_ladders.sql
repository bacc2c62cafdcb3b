-- Accounts, ladders, pairing (challenges, matchmaking queue) and the
-- match_summaries projection the match lists read.
-- Owned by the API part (service/api, service/matches.py).

-- A player. The bearer token is never stored: only its SHA-256, so a leaked
-- table does not let anyone act as a player.
CREATE TABLE players (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64),
    roles       text[] NOT NULL DEFAULT ARRAY['player'],
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ladders (
    id                    text PRIMARY KEY,
    name                  text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    ruleset               text NOT NULL CHECK (ruleset IN ('standard', 'duel')),
    rating                jsonb NOT NULL,
    spectator_delay_s     integer NOT NULL DEFAULT 0 CHECK (spectator_delay_s >= 0),
    hide_hands_in_replay  boolean NOT NULL DEFAULT false,
    dispute_window_s      integer NOT NULL DEFAULT 86400 CHECK (dispute_window_s >= 0),
    created_by            text NOT NULL REFERENCES players (id),
    created_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ladder_members (
    ladder_id  text NOT NULL REFERENCES ladders (id),
    player_id  text NOT NULL REFERENCES players (id),
    joined_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ladder_id, player_id)
);
CREATE INDEX ladder_members_player ON ladder_members (player_id);

-- A challenge: open until the opponent accepts (a match starts) or declines.
CREATE TABLE challenges (
    id          text PRIMARY KEY,
    ladder_id   text NOT NULL REFERENCES ladders (id),
    challenger  text NOT NULL REFERENCES players (id),
    opponent    text NOT NULL REFERENCES players (id),
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'accepted', 'declined')),
    match_id    text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    decided_at  timestamptz,
    CHECK (challenger <> opponent)
);
CREATE INDEX challenges_opponent ON challenges (opponent, status);
CREATE INDEX challenges_challenger ON challenges (challenger, status);

-- Players waiting for an opponent on a ladder. `rating` is copied in at join
-- time so that pairing is one indexed query.
CREATE TABLE match_queue (
    ladder_id  text NOT NULL REFERENCES ladders (id),
    player_id  text NOT NULL REFERENCES players (id),
    rating     double precision NOT NULL,
    joined_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ladder_id, player_id)
);

-- A projection of the events table, for match lists only: it can be deleted and
-- rebuilt from the events (service.matches.rebuild_match_summaries). It holds
-- public facts only (players, tokens, result), never a card in anyone's hand.
CREATE TABLE match_summaries (
    match_id      text PRIMARY KEY,
    ladder_id     text,
    ruleset       text NOT NULL,
    player0       text NOT NULL,
    player1       text NOT NULL,
    status        text NOT NULL CHECK (status IN ('live', 'finished', 'annulled')),
    hand          integer NOT NULL DEFAULT 0,
    tokens        jsonb NOT NULL,
    winner        smallint,
    end_reason    text,
    last_version  integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX match_summaries_ladder ON match_summaries (ladder_id, status);
CREATE INDEX match_summaries_player0 ON match_summaries (player0, status);
CREATE INDEX match_summaries_player1 ON match_summaries (player1, status);
CREATE INDEX match_summaries_status ON match_summaries (status, updated_at DESC);

-- The app role (see 0001) reads and writes these tables; none is append-only.
GRANT SELECT, INSERT, UPDATE, DELETE
   ON players, ladders, ladder_members, challenges, match_queue, match_summaries
   TO matcha_app;
