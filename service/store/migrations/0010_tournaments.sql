-- Tournaments: their own append-only, hash-chained stream, the projections
-- the API reads (rebuilt from the stream: service/tournaments/projection.py),
-- and the results runner's position in the match log.
-- Owned by the tournaments part. (No percent signs or colon-names: see 0001.)

CREATE TABLE tournament_events (
    position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tournament_id  text        NOT NULL,
    version        integer     NOT NULL CHECK (version >= 1),
    type           text        NOT NULL,
    data           jsonb       NOT NULL,
    actor          text        NOT NULL,
    recorded_at    timestamptz NOT NULL,
    prev_hash      bytea       NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash           bytea       NOT NULL CHECK (octet_length(hash) = 32),
    -- Two racing appends at one version: one insert fails (a conflict).
    CONSTRAINT tournament_events_version_key UNIQUE (tournament_id, version)
);

-- Immutability, as for match events (0001): the function raises for any change.
CREATE TRIGGER tournament_events_no_update_delete
    BEFORE UPDATE OR DELETE ON tournament_events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();

CREATE TRIGGER tournament_events_no_truncate
    BEFORE TRUNCATE ON tournament_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();

-- One row per tournament: what the lobby lists. Every append of the
-- tournament locks this row first (FOR UPDATE), so one tournament's commands
-- are decided one at a time, on the state the previous one left; `version`
-- and `head` (the hash of that version) tell a process whether its cached
-- fold is still the truth.
CREATE TABLE tournaments (
    id           text PRIMARY KEY,
    name         text        NOT NULL,
    organiser    text        NOT NULL,
    ladder_id    text        NOT NULL,
    format       text        NOT NULL,
    settings     jsonb       NOT NULL,
    phase        text        NOT NULL CHECK (phase IN ('registering', 'running', 'finished')),
    round        integer     NOT NULL,
    rounds       integer,
    round_open   boolean     NOT NULL,
    players      integer     NOT NULL,
    starts_at    timestamptz,
    started_at   timestamptz,
    ends_at      timestamptz,
    ended_at     timestamptz,
    created_at   timestamptz NOT NULL,
    version      integer     NOT NULL,
    head         bytea       NOT NULL CHECK (octet_length(head) = 32),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tournaments_phase ON tournaments (phase, created_at DESC);

-- Each participant's standing and crosstable line. `place` orders the table
-- (1, 2, 3 ...); `rank` is shared by players tied on every tie-break.
CREATE TABLE tournament_standings (
    tournament_id  text             NOT NULL,
    player_id      text             NOT NULL,
    place          integer          NOT NULL,
    rank           integer          NOT NULL,
    points         double precision NOT NULL,
    played         integer          NOT NULL,
    wins           integer          NOT NULL,
    draws          integer          NOT NULL,
    losses         integer          NOT NULL,
    tiebreaks      double precision[] NOT NULL,
    rating         double precision NOT NULL,
    withdrawn      boolean          NOT NULL,
    on_streak      boolean          NOT NULL,
    cells          jsonb            NOT NULL,
    PRIMARY KEY (tournament_id, player_id)
);

-- Every pairing. match_id is unique: the results runner finds a match's game by it.
CREATE TABLE tournament_games (
    tournament_id  text    NOT NULL,
    game           integer NOT NULL,
    round          integer NOT NULL,
    board          integer NOT NULL,
    player0        text    NOT NULL,
    player1        text    NOT NULL,
    match_id       text UNIQUE,
    result         text,
    reason         text,
    counted        boolean NOT NULL,
    annulled       boolean NOT NULL,
    PRIMARY KEY (tournament_id, game)
);
-- The runner starts the matches of games not yet started: the open ones.
CREATE INDEX tournament_games_open ON tournament_games (tournament_id)
    WHERE result IS NULL AND NOT annulled AND match_id IS NOT NULL;

CREATE TABLE tournament_byes (
    tournament_id  text             NOT NULL,
    round          integer          NOT NULL,
    player_id      text             NOT NULL,
    points         double precision NOT NULL,
    kind           text             NOT NULL,
    PRIMARY KEY (tournament_id, round, player_id)
);

-- The results runner's last applied position in the match log (events),
-- written in the same transaction as the tournament events it appends.
CREATE TABLE tournament_runner (
    name      text PRIMARY KEY,
    position  bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tournament_runner (name, position) VALUES ('results', 0);

REVOKE ALL ON tournament_events, tournaments, tournament_standings, tournament_games,
    tournament_byes, tournament_runner FROM PUBLIC;
GRANT SELECT, INSERT ON tournament_events TO matcha_app;
GRANT USAGE, SELECT ON SEQUENCE tournament_events_position_seq TO matcha_app;
GRANT SELECT, INSERT, UPDATE, DELETE
   ON tournaments, tournament_standings, tournament_games, tournament_byes, tournament_runner
   TO matcha_app;
