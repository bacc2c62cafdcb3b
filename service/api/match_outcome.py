"""``GET /api/matches/{match_id}/outcome``: how a finished match was decided, in
the game's words, with each player's rating change (the end screen's story).

The match is folded from its log and shown through the engine's public view
(``view(state, "spectator")``), so only public facts are read: final tokens,
result, hands dealt. ``service.engine.outcome`` names the winning sets and the
comparison; the ratings come from the workers' projection once applied.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import get
from psycopg_pool import AsyncConnectionPool

from schemas.cards import TOKEN_KINDS, Seat
from schemas.events import MatchAnnulled, MatchCreated, MatchEnded
from schemas.outcome import MatchOutcome, SeatOutcome
from schemas.views import MatchView
from service.api.auth import Player
from service.engine import fold, view
from service.engine.outcome import decision, explained_comparison, winning_sets
from service.errors import Conflict, NotFound
from service.store import EventStore
from workers.replays import RATINGS_OF_MATCH


def outcome_of(
    match_id: str,
    created: MatchCreated,
    seen: MatchView,
    names: dict[str, str],
    ratings: dict[str, tuple[float, float]],
) -> MatchOutcome:
    """The outcome of a finished match from its public view (pure)."""
    result = seen.result
    assert result is not None
    tokens = (seen.seats[0].tokens, seen.seats[1].tokens)
    decided_by = decision(result.reason, result.winner, result.annulled)
    rated = created.ladder_id is not None and decided_by not in ("annulled", "aborted")

    def seat(s: Seat) -> SeatOutcome:
        player = seen.seats[s].player
        before_after = ratings.get(player) if rated else None
        return SeatOutcome(
            seat=s,
            player=player,
            name=names.get(player),
            tokens={k: tokens[s][k] for k in TOKEN_KINDS},
            winning_sets=winning_sets(tokens[s], seen.ruleset),
            rating_before=before_after[0] if before_after else None,
            rating_after=before_after[1] if before_after else None,
        )

    seats = (seat(0), seat(1))
    return MatchOutcome(
        match_id=match_id,
        ladder_id=created.ladder_id,
        ruleset=seen.ruleset.name,
        max_hands=seen.ruleset.max_hands,
        hands=seen.hand,
        winner=result.winner,
        reason="annulled" if result.annulled else result.reason,
        decided_by=decided_by,
        comparison=explained_comparison(decided_by, tokens, result.winner),
        seats=seats,
        rated=rated,
        ratings_applied=rated and all(s.rating_after is not None for s in seats),
    )


@get(
    "/api/matches/{match_id:str}/outcome",
    operation_id="getMatchOutcome",
    tags=["matches"],
    security=[],
)
async def match_outcome(
    match_id: str, store: EventStore, pool: AsyncConnectionPool, viewer: Player | None
) -> MatchOutcome:
    """How the finished match was decided: each seat's winning sets, the token
    comparison where it decided, and each player's rating before and after.

    On a ladder with a spectator delay, spectators learn it once the delay has
    passed (as they see the end itself); the two players at once."""
    stored = await store.load(match_id)
    if not stored:
        raise NotFound("No match has this id.", code="match_not_found")
    created = stored[0].event
    assert isinstance(created, MatchCreated)
    state = fold(e.event for e in stored)
    seen = view(state, "spectator")
    if seen.result is None:
        raise Conflict(
            "The match is still being played: its outcome is told once it ends.",
            code="match_not_finished",
        )
    async with pool.connection() as conn:
        if created.ladder_id is not None and (viewer is None or viewer.id not in created.players):
            ended_at = next(
                e.recorded_at for e in stored if isinstance(e.event, MatchEnded | MatchAnnulled)
            )
            cur = await conn.execute(
                "SELECT spectator_delay_s FROM ladders WHERE id = %s", (created.ladder_id,)
            )
            delay = await cur.fetchone()
            if delay and datetime.now(UTC) < ended_at + timedelta(seconds=int(delay[0])):
                raise Conflict(
                    "Spectators see this match with a delay: its outcome is told when they"
                    " see its end.",
                    code="match_not_finished",
                )
        cur = await conn.execute(
            "SELECT id, name FROM players WHERE id = ANY(%s)", (list(created.players),)
        )
        names: dict[str, str] = dict(await cur.fetchall())
        rows: list[Any] = []
        if created.ladder_id is not None:
            cur = await conn.execute(
                RATINGS_OF_MATCH, (created.ladder_id, list(created.players), match_id)
            )
            rows = await cur.fetchall()
    ratings = {r[0]: (float(r[1]), float(r[2])) for r in rows}
    return outcome_of(match_id, created, seen, names, ratings)


ROUTES = [match_outcome]
"""Mounted through ``service.api.app.ROUTES``."""
