"""One fair-play decision, end to end (an admin's, from the API or the shell):

1. in one transaction: lock the decisions stream, fold it, find the flag,
   ``decide`` (pure, refuses with a reason), append the events; a closure
   also records the closed account (``fairplay_closed``) there;
2. after it commits: each match to void gets its ``match_annulled`` through the
   match core (``disputes.annul``: the engine decides it, as every command),
   so the ratings recompute without it and the flags projection sees it.

A match that is already annulled is left as it is. A decision whose process
died between 1 and 2 leaves matches voided but not annulled: the next decision
annuls them first (``pending_voids``), with the admin and reason that voided them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from psycopg import AsyncConnection

from schemas.fairplay import (
    AccountClosed,
    CloseAccount,
    Decision,
    Dismiss,
    FairPlayEvent,
    Flag,
    FlagDecision,
    MatchesVoided,
    VoidMatches,
)
from service.errors import NotFound, RuleConflict, ValidationFailed
from service.fairplay import decide, ladder
from service.fairplay.decide import Decided, Decisions
from service.fairplay.stream import FAIRPLAY_EVENTS, STREAM_ID
from service.matches import MatchCore, disputes
from service.store import matchlog
from service.store.ops import Op, Query, run_async
from service.store.stream import EMPTY, Head

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('matcha.fairplay', 0))"

VOID_REASON_PREFIX = "fair play: "


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    flag_id: str
    decision: Decision
    to_void: tuple[str, ...]
    """Matches this decision voids (each annulled in the match log after it commits)."""
    closed: str | None = None
    ladders: tuple[str, ...] = ()
    """The ladders of the matches it voided (their ratings are recomputed)."""


class FlagState(msgspec.Struct, frozen=True, kw_only=True):
    """A flag as an admin sees it: the projection's numbers and its decision."""

    flag: Flag
    decided: Decided | None
    audits: tuple[str, ...]
    """``/api/admin/matches/{id}/audit`` of each match behind it."""
    replays: tuple[str, ...]
    names: dict[str, str] = {}
    """The players' names, by id (people, not ids, on the admin page)."""


def state_of(flag: Flag, decisions: Decisions, names: dict[str, str] | None = None) -> FlagState:
    return FlagState(
        flag=flag,
        decided=decisions.flags.get(flag.flag_id),
        names={p: (names or {}).get(p, p) for p in flag.players},
        audits=tuple(f"/api/admin/matches/{m}/audit" for m in flag.matches),
        replays=tuple(f"/api/matches/{m}/replay" for m in flag.matches),
    )


def decisions() -> Op[Decisions]:
    rows = yield from FAIRPLAY_EVENTS.load(STREAM_ID)
    return decide.fold(r.event for r in rows)


def record_decision(flag_id: str, admin: str, body: FlagDecision) -> Op[Outcome]:
    """Step 1 alone (run it in a transaction): decide and append, annul nothing."""
    yield Query(_LOCK)
    rows = yield from FAIRPLAY_EVENTS.load(STREAM_ID)
    state = decide.fold(r.event for r in rows)
    head = EMPTY if not rows else Head(rows[-1].version, rows[-1].hash)
    flag = yield from ladder.one_flag(flag_id)
    if flag is None:
        raise NotFound("No flag has this id.", code="flag_not_found")
    events: list[FairPlayEvent]
    closed: str | None = None
    match body:
        case Dismiss(reason=reason):
            events = decide.dismiss(state, flag_id, admin, reason, seen=flag)
        case VoidMatches(reason=reason, match_ids=ids):
            chosen = flag.matches if ids is None else ids
            strangers = sorted(set(chosen) - set(flag.matches))
            if strangers:
                raise ValidationFailed(
                    f"Only the flag's own matches can be voided from it; not: {strangers[0]}.",
                    code="not_the_flags_match",
                )
            events = decide.void(state, chosen, admin, reason, flag_id, seen=flag)
        case CloseAccount(reason=reason, player_id=player):
            closed = flag.players[0] if player is None else player
            if closed not in flag.players:
                raise ValidationFailed(
                    "Only a player the flag names can be closed from it.", code="not_flagged"
                )
            at = yield from matchlog.last_position()
            matches = yield from matchlog.finished_ladder_matches_of_player(closed)
            events = decide.close(
                state, closed, admin, reason, flag_id, at_position=at, matches=matches, seen=flag
            )
    yield from FAIRPLAY_EVENTS.append(
        STREAM_ID, head.version, events, actor=admin, prev_hash=head.hash
    )
    to_void: tuple[str, ...] = ()
    for event in events:
        if isinstance(event, MatchesVoided):
            to_void = event.match_ids
        elif isinstance(event, AccountClosed):
            to_void = event.voided
            yield Query(
                "INSERT INTO fairplay_closed (player_id, admin, reason, closed_at)"
                " VALUES (%s, %s, %s, now())",
                (event.player_id, event.admin, event.reason),
            )
    decision: Decision = (
        "dismissed"
        if isinstance(body, Dismiss)
        else "voided"
        if isinstance(body, VoidMatches)
        else "closed"
    )
    return Outcome(flag_id=flag_id, decision=decision, to_void=to_void, closed=closed)


def pending_voids() -> Op[dict[str, Decided]]:
    """Matches a decision voided whose ``match_annulled`` is not in the log (the
    decision's process died before it annulled them all), with that decision."""
    state = yield from decisions()
    if not state.voided:
        return {}
    done = yield from matchlog.annulled_among(list(state.voided))
    return {m: why for m, why in state.voided.items() if m not in done}


async def complete_pending(conn: AsyncConnection, core: MatchCore) -> list[str]:
    """Annul what an interrupted decision left; the ladders it touched."""
    ladders: list[str] = []
    for match_id, why in (await run_async(conn, pending_voids())).items():
        ladders += await void_matches(core, [match_id], why.admin, why.reason)
    return ladders


async def decide_flag(
    conn: AsyncConnection, core: MatchCore, flag_id: str, admin: str, body: FlagDecision
) -> Outcome:
    """Decide a flag (module docstring); ``Outcome.ladders``: the ladders whose
    ratings the caller asks to recompute."""
    ladders = await complete_pending(conn, core)
    async with conn.transaction():
        outcome = await run_async(conn, record_decision(flag_id, admin, body))
    ladders += await void_matches(core, outcome.to_void, admin, body.reason)
    return msgspec.structs.replace(outcome, ladders=tuple(dict.fromkeys(ladders)))


async def void_matches(
    core: MatchCore, match_ids: Sequence[str], admin: str, reason: str
) -> list[str]:
    """Annul each match through the match core; the ladders of those it annulled."""
    ladders: list[str] = []
    for match_id in match_ids:
        try:
            accepted = await disputes.annul(core, match_id, admin, VOID_REASON_PREFIX + reason)
        except RuleConflict:
            continue  # already annulled (a dispute, or this decision retried)
        if accepted.facts.ladder_id is not None:
            ladders.append(accepted.facts.ladder_id)
    return list(dict.fromkeys(ladders))


def names_of(flags: Sequence[Flag]) -> Op[dict[str, str]]:
    """The names of the players these flags name."""
    ids = sorted({p for f in flags for p in f.players})
    rows = yield Query("SELECT id, name FROM players WHERE id = ANY(%s)", (ids,))
    return {str(i): str(n) for i, n in rows}


def closure_of(player_id: str) -> Op[tuple[str, str] | None]:
    """(reason, closed_at ISO) when the account is closed for fair play."""
    rows = yield Query(
        "SELECT reason, closed_at FROM fairplay_closed WHERE player_id = %s", (player_id,)
    )
    return None if not rows else (str(rows[0][0]), rows[0][1].isoformat())
