"""``GET /api/matches/{match_id}/outcome``: how a finished match was decided, in
the game's words, with each player's rating change (the end screen's story).

The match comes from the match core and is shown as the public sees it (the
policy's ``public_sight``, applied by the engine's ``view``), so only public
facts are read: final tokens,
result, hands dealt. ``service.engine.outcome`` names the winning sets and the
comparison; the ratings come from the workers' projection once applied.
"""

from __future__ import annotations

from typing import Any

from litestar import get
from psycopg_pool import AsyncConnectionPool

from schemas.cards import TOKEN_KINDS, Seat
from schemas.events import MatchCreated
from schemas.outcome import MatchOutcome, SeatOutcome
from schemas.views import MatchView
from service.accounts.players import Player
from service.engine import is_terminal, view
from service.engine.outcome import decision, explained_comparison, winning_sets
from service.errors import Conflict
from service.matches import MatchCore, public_sight
from service.replays import RATINGS_OF_MATCH


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
    match_id: str, matches: MatchCore, pool: AsyncConnectionPool, viewer: Player | None
) -> MatchOutcome:
    """How the finished match was decided: each seat's winning sets, the token
    comparison where it decided, and each player's rating before and after.

    Told once the match is over, to everyone (the viewer policy opens the
    replay then; only public facts are read)."""
    del viewer  # asked for only so that a wrong token is refused, as on every route
    facts, folded = await matches.current_facts(match_id)
    sight = public_sight(facts, over=is_terminal(folded.state))
    shown = view(folded.state, sight.viewer, hide_hands_in_replay=sight.hide)
    if shown.result is None:
        raise Conflict(
            "The match is still being played: its outcome is told once it ends.",
            code="match_not_finished",
        )
    created = facts.created
    async with pool.connection() as conn:
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
    return outcome_of(match_id, created, shown, names, ratings)


ROUTES = [match_outcome]
"""Mounted through ``service.app.ROUTES``."""
