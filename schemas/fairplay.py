"""Fair play (issue 28): a ladder's thresholds, the flags the signals raise, and
the admins' decisions as events of a stream of their own (``fairplay_events``).

Signals and flags are a projection of the match log (``service.fairplay``):
nothing here is stored as truth but the decisions. docs/fairplay.md defines
each signal and its threshold.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

import msgspec

SignalName: TypeAlias = Literal[
    "pair_share",
    "one_sided",
    "early_ends",
    "rating_from_one",
    "losing_streak",
    "new_accounts",
    "fast_moves",
]
"""The signals computed today (docs/fairplay.md "Signals")."""

Share = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Games = Annotated[int, msgspec.Meta(ge=1, le=100_000)]
Moves = Annotated[int, msgspec.Meta(ge=0, le=1_000)]
Points = Annotated[float, msgspec.Meta(ge=0.0, le=10_000.0)]
Days = Annotated[int, msgspec.Meta(ge=1, le=3_650)]
Hours = Annotated[float, msgspec.Meta(ge=0.0, le=87_600.0)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=3_600.0)]


class FairPlaySettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ladder's fair-play thresholds (an organiser's settings). A key that is not
    one of these, or a value out of its range, is refused with a 400 naming it."""

    window_days: Days = 30
    """The window every signal looks at: the ``window_days`` before the ladder's
    newest finished match (a time of the log, never the wall clock, so a rebuild
    gives the same flags)."""
    min_pair_games: Games = 10
    """A pair is looked at once it played this many finished matches in the window."""
    pair_share: Share = 0.5
    """pair_share: the pair's games are at least this share of one player's games."""
    one_sided: Share = 0.9
    """one_sided: one player won at least this share of the pair's decided games."""
    early_moves: Moves = 3
    """early_ends: a resignation or time-out with fewer cards played than this is early ..."""
    early_seconds: Seconds = 30.0
    """early_ends: ... and so is one this soon after the match was created (by the clock
    of the log: its creation's and its end's recorded times)."""
    min_early_ends: Games = 5
    """early_ends: this many early ends of one player against one opponent."""
    rating_from_one: Points = 150.0
    """rating_from_one: Elo points one player gained, net, from one opponent."""
    streak_losses: Games = 10
    """losing_streak: this many losses in a row ..."""
    streak_drop: Points = 150.0
    """losing_streak: ... taking the player this many Elo points below their peak ..."""
    streak_peak_above: Points = 200.0
    """losing_streak: ... a peak at least this far above the ladder's initial rating."""
    created_within_hours: Hours = 24.0
    """new_accounts: two accounts created this close together ..."""
    new_accounts_share: Share = 0.8
    """new_accounts: ... each playing at least this share of its games against the other
    (and at least ``min_pair_games`` together)."""
    fast_move_s: Seconds = 0.3
    """fast_moves: a move made this soon after the event before it is faster than a person ..."""
    fast_share: Share = 0.9
    """fast_moves: ... and a player this share of whose moves are that fast ..."""
    min_fast_moves: Games = 50
    """fast_moves: ... over at least this many moves in the window is flagged (service
    bots, ``bot_players``, are left out: they are bots by design)."""


DEFAULT_FAIRPLAY = FairPlaySettings()


class Flag(msgspec.Struct, frozen=True, kw_only=True):
    """A signal over its threshold: who, what, the numbers and the matches behind it."""

    flag_id: str
    """Stable for (ladder, signal, players): the same case keeps its id as it grows."""
    ladder_id: str
    signal: SignalName
    players: tuple[str, ...]
    """The players it names; the first is the one suspected (the winner who is fed,
    the player who gives up early)."""
    numbers: dict[str, float]
    matches: tuple[str, ...]
    """The matches behind it, oldest first."""
    weight: float
    """How far over its threshold, times the matches behind it: the admin page's order."""


# -- the decisions' stream ---------------------------------------------------------------

Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
MatchIds = Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=1_000)]


class _FairPlayEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    v: int = 1
    seen: Flag | None = None
    """The flag as the admin saw it when deciding (its numbers move on afterwards)."""


class FlagDismissed(_FairPlayEvent, frozen=True, tag="flag_dismissed"):
    flag_id: str
    admin: str
    reason: str


class MatchesVoided(_FairPlayEvent, frozen=True, tag="matches_voided"):
    """The matches stop counting: each gets its ``match_annulled`` in the match log."""

    match_ids: tuple[str, ...]
    admin: str
    reason: str
    flag_id: str | None = None


class AccountClosed(_FairPlayEvent, frozen=True, tag="account_closed"):
    """The account is closed for fair play; its finished matches on a ladder are voided
    (``voided``) and its opponents refunded what they lost to it."""

    player_id: str
    admin: str
    reason: str
    at_position: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
    """The match log's last position when it was decided: refunds are computed
    over the results up to it (``service.fairplay.refunds``)."""
    voided: tuple[str, ...]
    flag_id: str | None = None


FairPlayEvent: TypeAlias = FlagDismissed | MatchesVoided | AccountClosed

fairplay_event_encoder = msgspec.json.Encoder()
fairplay_event_decoder = msgspec.json.Decoder(FairPlayEvent)


# -- what an admin sends -------------------------------------------------------------------


class _Body(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Dismiss(_Body, frozen=True, tag_field="action", tag="dismiss"):
    reason: Reason


class VoidMatches(_Body, frozen=True, tag_field="action", tag="void"):
    reason: Reason
    match_ids: MatchIds | None = None
    """None: the flag's own matches."""


class CloseAccount(_Body, frozen=True, tag_field="action", tag="close"):
    reason: Reason
    player_id: str | None = None
    """None: the first player the flag names."""


FlagDecision: TypeAlias = Dismiss | VoidMatches | CloseAccount
"""The body of ``POST /api/admin/flags/{id}/decision``, tagged by ``action``."""

Decision: TypeAlias = Literal["dismissed", "voided", "closed"]
