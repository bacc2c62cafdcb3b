"""The replay's odds: each seat's chance to win after every version of every
finished match, as a spectator could have judged it at that version.

A pass reads the events that end a match or come after its end (as the
archives projection does: ``log.AFTER_PLAY_TYPES``), folds each match's whole
log once (``service.replays.record_of_log``: the archives' own loader and
fold), and for every version builds the *spectator's* view the viewer policy
chooses (``public_sight``: the view ``MatchPort.spectator_view`` builds for
the live odds, never a seat's) and estimates from it alone
(``service.bots.winprob.estimate``, seeded by the view, with a fixed number of
playouts and no CPU ceiling: the same log always gives the same rows). A
match's rows are replaced whole, in the pass's transaction, with the new
position. The sweep estimates finished matches that have no rows yet (a log
the estimate tripped on, or a match that ended before this projection).

The win-probability route answers a finished match's versions from this table
first (``service.botplay.routes``), so a replay's odds bar is filled at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import psycopg

from schemas.events import MatchCreated
from schemas.rules import MatchTerms
from schemas.views import MatchView
from service.bots.search import Budget
from service.bots.winprob import estimate, view_seed
from service.engine import is_terminal, view
from service.matches import MatchFacts, public_sight
from service.replays import LogRow, record_of_log
from workers.projections.finished import FinishedMatches

log = logging.getLogger("matcha.workers.odds")

REPLAY_BUDGET: Final = Budget(playouts=64, max_ms=None)
"""Playouts per version (a standard error of at most 6.3 points on each p: a bar,
not a forecast to bet on), with no CPU ceiling so the rows are a function of the
log alone. docs/replays.md gives the CPU per match."""

MATCHES_PER_PASS = 10
"""Matches estimated in one transaction (about half a second of CPU each, standard)."""

SWEEP_LIMIT = 1_000
"""Matches without odds one sweep estimates at most (newest first); the next goes on."""

_DELETE = "DELETE FROM replay_odds WHERE match_id = ANY(%s)"
_INSERT = (
    "INSERT INTO replay_odds (match_id, version, p0, p1, playouts)"
    " SELECT * FROM unnest(%s::text[], %s::int[], %s::float8[], %s::float8[], %s::int[])"
)


class VersionOdds(NamedTuple):
    """One row of ``replay_odds``."""

    match_id: str
    version: int
    p0: float
    p1: float
    playouts: int


def spectator_views(row: LogRow) -> list[MatchView]:
    """The public's view right after each version of a finished match (empty while
    it is played): what ``MatchPort.spectator_view`` gives for that version."""
    found = record_of_log(row)
    if found is None:
        return []
    record, states = found
    created = record.events[0].event
    assert isinstance(created, MatchCreated)  # record_of_events refuses any other start
    terms = created.terms or MatchTerms(hide_hands_in_replay=record.headers.hide_hands_in_replay)
    facts = MatchFacts(created=created, terms=terms)
    views: list[MatchView] = []
    for version, state in enumerate(states, start=1):
        sight = public_sight(facts, over=is_terminal(state))
        views.append(view(state, sight.viewer, version=version, hide_hands_in_replay=sight.hide))
    return views


def odds_of_log(row: LogRow, budget: Budget = REPLAY_BUDGET) -> list[VersionOdds]:
    """Every version's odds of one finished match, from the spectator's views only."""
    rows: list[VersionOdds] = []
    for seen in spectator_views(row):
        assert seen.viewer == "spectator", "the odds are computed from a spectator's view only"
        result = estimate(seen, budget, view_seed(seen))
        rows.append(VersionOdds(row[0], result.version, *result.p, result.playouts))
    return rows


def estimate_batch(rows: Sequence[LogRow]) -> dict[str, list[VersionOdds]]:
    """The odds of the finished matches among ``rows`` (others are skipped; a log the
    estimate trips on is logged and left to the sweep)."""
    done: dict[str, list[VersionOdds]] = {}
    for row in rows:
        if row[1] is None or not row[2]:
            continue
        try:
            done[row[0]] = odds_of_log(row)
        except Exception:  # one log must not cost the others their odds
            log.exception("could not estimate the replay odds of %s", row[0])
    return done


def store_odds(conn: psycopg.Connection[Any], done: dict[str, list[VersionOdds]]) -> None:
    """Replace each match's rows whole (an annulment after the end changes its last)."""
    if not done:
        return
    rows = [r for odds in done.values() for r in odds]
    conn.execute(_DELETE, (list(done),))
    conn.execute(_INSERT, tuple(list(column) for column in zip(*rows, strict=True)))


class OddsProjection(FinishedMatches):
    name = "odds"
    kept_table = "replay_odds"
    matches_per_pass = MATCHES_PER_PASS
    sweep_limit = SWEEP_LIMIT

    def apply(self, conn: psycopg.Connection[Any], logs: Sequence[LogRow]) -> int:
        done = estimate_batch(logs)
        store_odds(conn, done)
        return len(done)


__all__ = [
    "REPLAY_BUDGET",
    "OddsProjection",
    "VersionOdds",
    "estimate_batch",
    "odds_of_log",
    "spectator_views",
    "store_odds",
]
