"""The fair-play decisions as a Decider: ``decide`` (a command and the state
folded so far to the events it causes, or a refusal that says why), ``evolve``
and ``fold``. Pure.

Rules: a flag is decided once (dismissed, voided or closed); an account is
closed once; a match is voided once; a decision needs a reason.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from schemas.fairplay import (
    AccountClosed,
    Decision,
    FairPlayEvent,
    Flag,
    FlagDismissed,
    MatchesVoided,
)
from service.errors import Conflict, ValidationFailed


class Decided(msgspec.Struct, frozen=True, kw_only=True):
    decision: Decision
    admin: str
    reason: str
    seen: Flag | None = None
    """The flag's numbers and matches as the admin saw them."""


class Decisions(msgspec.Struct, frozen=True, kw_only=True):
    flags: dict[str, Decided] = {}
    closed: frozenset[str] = frozenset()
    voided: dict[str, Decided] = {}
    """Each voided match, with the decision that voided it."""


def evolve(state: Decisions, event: FairPlayEvent) -> Decisions:
    match event:
        case FlagDismissed(flag_id=flag, admin=admin, reason=reason, seen=seen):
            why = Decided(decision="dismissed", admin=admin, reason=reason, seen=seen)
            flags = {**state.flags, flag: why}
            return msgspec.structs.replace(state, flags=flags)
        case MatchesVoided(flag_id=flag, match_ids=ids, admin=admin, reason=reason, seen=seen):
            why = Decided(decision="voided", admin=admin, reason=reason, seen=seen)
            flags = state.flags if flag is None else {**state.flags, flag: why}
            voided = {**state.voided, **dict.fromkeys(ids, why)}
            return msgspec.structs.replace(state, flags=flags, voided=voided)
        case AccountClosed(
            player_id=player, flag_id=flag, voided=ids, admin=admin, reason=reason, seen=seen
        ):
            why = Decided(decision="closed", admin=admin, reason=reason, seen=seen)
            flags = state.flags if flag is None else {**state.flags, flag: why}
            voided = {**state.voided, **dict.fromkeys(ids, why)}
            closed = state.closed | {player}
            return msgspec.structs.replace(state, flags=flags, closed=closed, voided=voided)
    raise AssertionError(event)


def fold(events: Iterable[FairPlayEvent], state: Decisions | None = None) -> Decisions:
    folded = state or Decisions()
    for event in events:
        folded = evolve(folded, event)
    return folded


def _reason(reason: str) -> str:
    if not reason.strip():
        raise ValidationFailed("A fair-play decision needs a written reason.", code="reason")
    return reason.strip()


def _undecided(state: Decisions, flag_id: str | None) -> None:
    if flag_id is not None and flag_id in state.flags:
        was = state.flags[flag_id]
        raise Conflict(
            f"This flag was already decided ({was.decision} by {was.admin}).",
            code="flag_decided",
        )


def dismiss(
    state: Decisions, flag_id: str, admin: str, reason: str, *, seen: Flag | None = None
) -> list[FairPlayEvent]:
    _undecided(state, flag_id)
    return [FlagDismissed(flag_id=flag_id, admin=admin, reason=_reason(reason), seen=seen)]


def void(
    state: Decisions,
    match_ids: Iterable[str],
    admin: str,
    reason: str,
    flag_id: str | None,
    *,
    seen: Flag | None = None,
) -> list[FairPlayEvent]:
    _undecided(state, flag_id)
    ids = tuple(dict.fromkeys(match_ids))
    fresh = tuple(m for m in ids if m not in state.voided)
    if not fresh:
        raise Conflict("Every one of these matches is already voided.", code="already_voided")
    voided = MatchesVoided(
        match_ids=fresh, admin=admin, reason=_reason(reason), flag_id=flag_id, seen=seen
    )
    return [voided]


def close(
    state: Decisions,
    player_id: str,
    admin: str,
    reason: str,
    flag_id: str | None,
    *,
    at_position: int,
    matches: Iterable[str],
    seen: Flag | None = None,
) -> list[FairPlayEvent]:
    """Close ``player_id``; ``matches``: its finished ladder matches, to void."""
    _undecided(state, flag_id)
    if player_id in state.closed:
        raise Conflict("This account is already closed for fair play.", code="account_closed")
    voided = tuple(m for m in dict.fromkeys(matches) if m not in state.voided)
    return [
        AccountClosed(
            player_id=player_id,
            admin=admin,
            reason=_reason(reason),
            at_position=at_position,
            voided=voided,
            flag_id=flag_id,
            seen=seen,
        )
    ]
