-- The search bot's accounts, one per level (service/botplay/accounts.py,
-- docs/bots.md). A bot is a player like any other in the log (its id is in
-- MatchCreated.players and is the actor of its commands) whose token nobody
-- holds: only the service acts for it, through the match core. Owned by the
-- bots part.

CREATE TABLE bot_players (
    level       text        PRIMARY KEY CHECK (length(level) BETWEEN 1 AND 32),
    player_id   text        NOT NULL UNIQUE REFERENCES players (id),
    created_at  timestamptz NOT NULL DEFAULT now()
);

REVOKE ALL ON bot_players FROM PUBLIC;
GRANT SELECT, INSERT ON bot_players TO matcha_app;
