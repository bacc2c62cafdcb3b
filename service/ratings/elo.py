"""Elo as chess federations run it, as plain functions over plain data.

Every number is a ladder setting (the ladder's ``rating`` JSON, read into
:class:`EloSettings`). One rated match updates both players from their ratings
*before* the match:

* expected score ``E = 1 / (1 + 10 ** (-d / 400))`` with ``d`` the player's
  rating minus the opponent's, counted as at most ``max_difference`` either way;
* new rating ``R + K * (S - E)`` with ``S`` 1 for a win, ½ for a draw, 0 for a loss;
* ``K`` is ``k_new`` for a player's first ``established_after_games`` games
  (the game being rated is one of them when fewer were played before it), then
  ``k_master`` once the player has *ever* reached ``master_rating`` (sticky,
  like FIDE's "has reached 2400"), else ``k_established``;
* a player is provisional until ``provisional_games`` games are rated;
* a season's start may move every rating part of the way back to ``initial``
  (:func:`soft_reset`); a time-out is an ordinary loss, counted apart.

Ratings are never rounded here: the stored value is the exact float, so a
recompute from the log repeats every operation in the same order and gives the
same bits. Displays round.

The hot loop (:meth:`EloRatings.rate`) runs a million times in a ladder recompute,
so a player's state is a small list indexed by the ``_R``/``_G``... constants
rather than a Struct: one dict lookup per player per match.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Final

import msgspec

from schemas.cards import Seat


class EloSettings(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag_field="system",
    tag="elo",
):
    """A ladder's Elo rules, from its ``rating`` JSON. A key that is not one of
    these is refused (the API answers 400 naming it), never ignored."""

    initial: Annotated[float, msgspec.Meta(ge=0, le=10_000)] = 1500.0
    k_new: Annotated[float, msgspec.Meta(gt=0, le=200)] = 40.0
    """K for a player's first ``established_after_games`` games."""
    k_established: Annotated[float, msgspec.Meta(gt=0, le=200)] = 20.0
    k_master: Annotated[float, msgspec.Meta(gt=0, le=200)] = 10.0
    """K once the player has ever reached ``master_rating`` (after the new-player games)."""
    established_after_games: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 30
    master_rating: Annotated[float, msgspec.Meta(ge=0, le=10_000)] = 2400.0
    max_difference: Annotated[float, msgspec.Meta(gt=0, le=10_000)] = 400.0
    """The largest rating difference that counts (FIDE's 400-point rule); the
    matchmaking queue pairs only players this close."""
    provisional_games: Annotated[int, msgspec.Meta(ge=0, le=1000)] | None = None
    """Provisional until this many games are rated (None: ``established_after_games``)."""

    @property
    def provisional_until(self) -> int:
        if self.provisional_games is None:
            return self.established_after_games
        return self.provisional_games


DEFAULT_SETTINGS: Final = EloSettings()


def soft_reset(rating: float, initial: float, fraction: float) -> float:
    """A rating moved ``fraction`` of the way towards the initial rating (a
    season's soft reset). Every path computes it with this one expression."""
    return initial + (1.0 - fraction) * (rating - initial)


def expected_score(rating: float, opponent: float, max_difference: float = 400.0) -> float:
    """The score the rating difference predicts, the difference capped at ``max_difference``."""
    d = rating - opponent
    if d > max_difference:
        d = max_difference
    elif d < -max_difference:
        d = -max_difference
    return float(1.0 / (1.0 + 10.0 ** (-d / 400.0)))


def k_factor(games_before: int, reached_master: bool, settings: EloSettings) -> float:
    if games_before < settings.established_after_games:
        return settings.k_new
    return settings.k_master if reached_master else settings.k_established


def score_of(winner: Seat | None, seat: Seat) -> float:
    """What a seat scored: 1 win, 0.5 draw (``winner`` None), 0 loss."""
    if winner is None:
        return 0.5
    return 1.0 if winner == seat else 0.0


class PlayerRating(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    rating: float
    games: int
    wins: int
    draws: int
    losses: int
    peak: float
    reached_master: bool
    provisional: bool
    timeouts: int = 0
    """Matches this player lost on time (among ``losses``)."""


class RatingChange(msgspec.Struct, frozen=True, kw_only=True):
    """One player's line in the rating history for one match."""

    player_id: str
    match_id: str
    position: int
    opponent_id: str
    score: float
    before: float
    after: float
    change: float


# indexes into a player's state list
_R, _G, _W, _D, _L, _PEAK, _MASTER, _T = range(8)

HistoryRow = tuple[str, str, int, str, float, float, float, float]
"""(player, match, position, opponent, score, before, after, change): the COPY row layout."""


class EloRatings:
    """The ratings of one ladder, updated one rated match at a time."""

    __slots__ = ("history", "keep_history", "players", "settings")

    def __init__(
        self,
        settings: EloSettings = DEFAULT_SETTINGS,
        players: Iterable[PlayerRating] = (),
        *,
        keep_history: bool = True,
    ) -> None:
        self.settings = settings
        self.players: dict[str, list[Any]] = {
            p.player_id: [
                p.rating,
                p.games,
                p.wins,
                p.draws,
                p.losses,
                p.peak,
                p.reached_master,
                p.timeouts,
            ]
            for p in players
        }
        self.keep_history = keep_history
        self.history: list[HistoryRow] = []

    def rate(
        self,
        match_id: str,
        position: int,
        player0: str,
        player1: str,
        score0: float,
        timeout: bool = False,
    ) -> None:
        """Rate one finished match; ``score0`` is what seat 0 scored (1, 0.5 or 0);
        ``timeout``: it ended because the loser's clock ran out."""
        s = self.settings
        players = self.players
        a = players.get(player0)
        if a is None:
            a = players[player0] = self._new()
        b = players.get(player1)
        if b is None:
            b = players[player1] = self._new()
        ra = a[_R]
        rb = b[_R]
        d = ra - rb
        cap = s.max_difference
        if d > cap:
            d = cap
        elif d < -cap:
            d = -cap
        ea = 1.0 / (1.0 + 10.0 ** (-d / 400.0))
        eb = 1.0 / (1.0 + 10.0 ** (d / 400.0))
        n = s.established_after_games
        ka = s.k_new if a[_G] < n else (s.k_master if a[_MASTER] else s.k_established)
        kb = s.k_new if b[_G] < n else (s.k_master if b[_MASTER] else s.k_established)
        score1 = 1.0 - score0
        ca = ka * (score0 - ea)
        cb = kb * (score1 - eb)
        na = ra + ca
        nb = rb + cb
        a[_R] = na
        b[_R] = nb
        a[_G] += 1
        b[_G] += 1
        if score0 == 1.0:
            a[_W] += 1
            b[_L] += 1
            b[_T] += timeout
        elif score0 == 0.0:
            a[_L] += 1
            b[_W] += 1
            a[_T] += timeout
        else:
            a[_D] += 1
            b[_D] += 1
        if na > a[_PEAK]:
            a[_PEAK] = na
            if na >= s.master_rating:
                a[_MASTER] = True
        if nb > b[_PEAK]:
            b[_PEAK] = nb
            if nb >= s.master_rating:
                b[_MASTER] = True
        if self.keep_history:
            h = self.history
            h.append((player0, match_id, position, player1, score0, ra, na, ca))
            h.append((player1, match_id, position, player0, score1, rb, nb, cb))

    def _new(self) -> list[Any]:
        s = self.settings
        return [s.initial, 0, 0, 0, 0, s.initial, s.initial >= s.master_rating, 0]

    def soft_reset(self, fraction: float) -> None:
        """A season starts: every rated player's rating moves towards the initial one."""
        initial = self.settings.initial
        for state in self.players.values():
            state[_R] = soft_reset(state[_R], initial, fraction)

    def rating(self, player_id: str) -> float:
        state = self.players.get(player_id)
        return self.settings.initial if state is None else float(state[_R])

    def table(self) -> list[PlayerRating]:
        """Every rated player, best first (ties by player id, so the order is stable)."""
        provisional_games = self.settings.provisional_until
        rows = [
            PlayerRating(
                player_id=pid,
                rating=st[_R],
                games=st[_G],
                wins=st[_W],
                draws=st[_D],
                losses=st[_L],
                peak=st[_PEAK],
                reached_master=bool(st[_MASTER]),
                provisional=st[_G] < provisional_games,
                timeouts=st[_T],
            )
            for pid, st in self.players.items()
        ]
        rows.sort(key=lambda p: (-p.rating, p.player_id))
        return rows

    def changes(self) -> list[RatingChange]:
        return [
            RatingChange(
                player_id=p,
                match_id=m,
                position=pos,
                opponent_id=o,
                score=sc,
                before=bf,
                after=af,
                change=ch,
            )
            for (p, m, pos, o, sc, bf, af, ch) in self.history
        ]


def recompute(
    results: Iterable[tuple[str, int, str, str, float]],
    settings: EloSettings = DEFAULT_SETTINGS,
    *,
    keep_history: bool = True,
) -> EloRatings:
    """Rate ``(match_id, position, player0, player1, score0)`` results in order, from nothing."""
    ladder = EloRatings(settings, keep_history=keep_history)
    rate = ladder.rate
    for match_id, position, p0, p1, score0 in results:
        rate(match_id, position, p0, p1, score0)
    return ladder
