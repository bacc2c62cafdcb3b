"""Glicko-2, as Mark Glickman's "Example of the Glicko-2 system" (2013) writes it,
as plain functions over plain numbers, and a ladder rated period by period.

A player is ``(r, RD, sigma)``: rating, rating deviation, volatility. Results are
rated in *rating periods* (docs/ratings.md says how a result's period is read
from the log); within one period every game is rated against the opponents'
ratings at the period's start, and a player's new rating comes from all their
games of the period at once:

* on the Glicko-2 scale ``μ = (r - 1500) / 173.7178``, ``φ = RD / 173.7178``;
* ``g(φ) = 1 / √(1 + 3φ²/π²)``, ``E = 1 / (1 + exp(-g(φⱼ)(μ - μⱼ)))``;
* ``v = 1 / Σ g(φⱼ)² E (1 - E)``, ``Δ = v Σ g(φⱼ)(sⱼ - E)``;
* the new volatility ``sigma'`` by the paper's Illinois iteration (``ε = 1e-6``);
* ``φ* = √(φ² + sigma'²)``, ``φ' = 1 / √(1/φ*² + 1/v)``, ``μ' = μ + φ'² Σ g(φⱼ)(sⱼ - E)``.

A player who sits out ``k`` periods keeps ``μ`` and ``sigma`` and enters the next
one with ``φ = min(√(φ² + k sigma²), φ_max)``: the paper's step for a period
without games, ``k`` times, written in closed form (one expression, so every
path computes the same bits) and capped at the ladder's largest RD.

The sums are accumulated game by game in log order, and a player's state after
a period is a pure function of their state entering it and those two sums: the
incremental path (:class:`Glicko2Ratings`) and the fast recompute
(``workers.ratings.glicko2_fold``) therefore give the same bits. Nothing is
rounded here; displays round.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Final

import msgspec

SCALE: Final = 173.7178
"""Glicko-2's factor between its internal scale and the displayed one."""
_PI2: Final = math.pi * math.pi
EPSILON: Final = 0.000001
"""The convergence tolerance of the volatility iteration (the paper's)."""


class Glicko2Settings(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag_field="system",
    tag="glicko2",
):
    """A ladder's Glicko-2 rules, from its ``rating`` JSON; an unknown key or a
    value out of range is refused (the API answers 400 naming it)."""

    initial: Annotated[float, msgspec.Meta(ge=0, le=10_000)] = 1500.0
    initial_rd: Annotated[float, msgspec.Meta(ge=10, le=1000)] = 350.0
    initial_volatility: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.06
    tau: Annotated[float, msgspec.Meta(ge=0.1, le=2.5)] = 0.5
    """The system constant: how fast volatility may change (the paper: 0.3 to 1.2)."""
    rating_period_s: Annotated[int, msgspec.Meta(ge=60, le=366 * 86_400)] = 86_400
    """Length of a rating period in seconds; periods are counted from 1970-01-01 UTC."""
    provisional_rd: Annotated[float, msgspec.Meta(ge=0, le=1000)] = 110.0
    """A rating whose RD is above this is provisional (lichess's "?": 110)."""
    max_rd: Annotated[float, msgspec.Meta(ge=10, le=1000)] = 350.0
    """The largest RD: inactivity grows a player's RD up to this, never beyond."""
    max_difference: Annotated[float, msgspec.Meta(gt=0, le=10_000)] = 400.0
    """The largest rating difference the matchmaking queue pairs (Glicko-2
    itself caps no difference)."""

    def __post_init__(self) -> None:
        if self.initial_rd > self.max_rd:
            raise ValueError(
                f"initial_rd ({self.initial_rd:g}) may not exceed max_rd ({self.max_rd:g})"
            )

    @property
    def period_us(self) -> int:
        return self.rating_period_s * 1_000_000


DEFAULT_SETTINGS: Final = Glicko2Settings()


# -- the paper's functions ------------------------------------------------------------


def mu_of(rating: float) -> float:
    return (rating - 1500.0) / SCALE


def phi_of(rd: float) -> float:
    return rd / SCALE


def rating_of(mu: float) -> float:
    return SCALE * mu + 1500.0


def rd_of(phi: float) -> float:
    return SCALE * phi


def g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / _PI2)


def expected(mu: float, mu_j: float, g_j: float) -> float:
    """``E(μ, μⱼ, φⱼ)`` with ``g_j = g(φⱼ)``: the score the player expects against j."""
    return 1.0 / (1.0 + math.exp(-g_j * (mu - mu_j)))


def v_term(g_j: float, e: float) -> float:
    """One game's part of ``1 / v``."""
    return g_j * g_j * e * (1.0 - e)


def delta_term(g_j: float, score: float, e: float) -> float:
    """One game's part of ``Δ / v`` (and of ``(μ' - μ) / φ'²``)."""
    return g_j * (score - e)


def entering_phi(rd: float, volatility: float, idle: int, max_rd: float) -> float:
    """``φ`` at the start of a period after ``idle`` periods without a game, capped."""
    phi = rd / SCALE
    if idle > 0:
        phi = math.sqrt(phi * phi + idle * volatility * volatility)
    cap = max_rd / SCALE
    return cap if phi > cap else phi


def new_volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    """Step 5: ``sigma'``, by the Illinois algorithm as the paper gives it.

    The paper's ``f(x) = eˣ(Δ² - φ² - v - eˣ) / (2(φ² + v + eˣ)²) - (x - a) / τ²``
    is written out at each use (no closure call), with ``Δ² - φ² - v`` and
    ``φ² + v`` computed once: the same operations in the same order as the
    paper's expression, so the same bits, at a fraction of the cost (this runs
    once per player and period of a recompute)."""
    a = math.log(sigma * sigma)
    phi2 = phi * phi
    delta2 = delta * delta
    tau2 = tau * tau
    exp = math.exp
    rest = delta2 - phi2 - v  # (Δ² - φ²) - v, as the paper's left-to-right expression
    pv = phi2 + v
    big_a = a
    if delta2 > pv:
        big_b = math.log(rest)
    else:
        k = 1
        while True:
            x = a - k * tau
            ex = exp(x)
            if not ex * (rest - ex) / (2.0 * (pv + ex) ** 2) - (x - a) / tau2 < 0:
                break
            k += 1
        big_b = a - k * tau
    ex = exp(big_a)
    f_a = ex * (rest - ex) / (2.0 * (pv + ex) ** 2) - (big_a - a) / tau2
    ex = exp(big_b)
    f_b = ex * (rest - ex) / (2.0 * (pv + ex) ** 2) - (big_b - a) / tau2
    while abs(big_b - big_a) > EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        ex = exp(big_c)
        f_c = ex * (rest - ex) / (2.0 * (pv + ex) ** 2) - (big_c - a) / tau2
        if f_c * f_b <= 0:
            big_a = big_b
            f_a = f_b
        else:
            f_a = f_a / 2.0
        big_b = big_c
        f_b = f_c
    return math.exp(big_a / 2.0)


class Update(msgspec.Struct, frozen=True):
    """Every quantity of one player's period update (the paper's steps 3 to 8)."""

    v: float
    delta: float
    sigma: float
    phi_star: float
    phi: float
    mu: float


def update(mu: float, phi: float, sigma: float, v_sum: float, d_sum: float, tau: float) -> Update:
    """A player's period from ``v_sum = Σ g² E (1 - E)`` and ``d_sum = Σ g (s - E)``."""
    v = 1.0 / v_sum
    delta = v * d_sum
    sigma_new = new_volatility(phi, sigma, v, delta, tau)
    phi_star = math.sqrt(phi * phi + sigma_new * sigma_new)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    return Update(v, delta, sigma_new, phi_star, phi_new, mu + phi_new * phi_new * d_sum)


def rated(
    rating: float,
    phi: float,
    sigma: float,
    v_sum: float,
    d_sum: float,
    settings: Glicko2Settings,
) -> tuple[float, float, float]:
    """``(r', RD', sigma')`` of a player who entered the period at ``rating`` and ``φ``."""
    u = update(mu_of(rating), phi, sigma, v_sum, d_sum, settings.tau)
    rd = rd_of(u.phi)
    return rating_of(u.mu), (settings.max_rd if rd > settings.max_rd else rd), u.sigma


def expected_score(rating: float, rd: float, opponent: float, opponent_rd: float) -> float:
    """The score ``rating`` expects against ``opponent`` before a match, both RDs
    counted (Glickman's ``g(√(φ² + φⱼ²))``): for two players it sums to 1."""
    phi_a, phi_b = phi_of(rd), phi_of(opponent_rd)
    return expected(mu_of(rating), mu_of(opponent), g(math.sqrt(phi_a * phi_a + phi_b * phi_b)))


def soft_reset(value: float, initial: float, fraction: float) -> float:
    """A season's soft reset of a rating (or an RD): ``fraction`` of the way back."""
    return initial + (1.0 - fraction) * (value - initial)


# -- a ladder, one result at a time ---------------------------------------------------


class PlayerState(msgspec.Struct, kw_only=True):
    """What the projection keeps of one player (a row of ``ratings``)."""

    player_id: str
    rating: float
    rd: float
    volatility: float
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    timeouts: int = 0
    peak: float
    """The best rating at the end of a period they played in (an open period's
    rating may still move: displays show the larger of this and ``rating``)."""
    period: int | None = None
    """The last rating period the player played in."""
    period_open: bool = False
    """Their games of ``period`` are rated together (a later game of it joins them)."""
    base_rating: float
    base_rd: float
    base_volatility: float
    base_period: int | None = None
    """The state they entered ``period`` with, before the growth of idle periods."""
    v_sum: float = 0.0
    d_sum: float = 0.0
    period_games: int = 0


class HistoryEntry(msgspec.Struct, kw_only=True):
    player_id: str
    match_id: str
    position: int
    opponent_id: str
    score: float
    before: float
    after: float
    rd_before: float
    rd_after: float
    period: int


class Glicko2Ratings:
    """The Glicko-2 ratings of one ladder, updated one result at a time.

    After every result the two players' ratings are what their period gives so
    far (a later result of the same period refines them); the history entries
    of an open period are refined with them.
    """

    def __init__(
        self,
        settings: Glicko2Settings = DEFAULT_SETTINGS,
        players: Iterable[PlayerState] = (),
        *,
        period: int = -1,
    ) -> None:
        self.settings = settings
        self.players = {p.player_id: p for p in players}
        self.period = period
        """The ladder's current rating period: results never go back to an earlier one."""
        self.history: list[HistoryEntry] = []
        self._open_entries: dict[str, list[HistoryEntry]] = {}
        self._stored_open = {p.player_id for p in self.players.values() if p.period_open}
        self.tail_rewrites: dict[str, tuple[float, float]] = {}
        """Players whose stored open period got new games: its new ``(r, RD)``, for
        the stored history entries of that period."""

    def _new(self, player_id: str) -> PlayerState:
        s = self.settings
        return PlayerState(
            player_id=player_id,
            rating=s.initial,
            rd=s.initial_rd,
            volatility=s.initial_volatility,
            peak=s.initial,
            base_rating=s.initial,
            base_rd=s.initial_rd,
            base_volatility=s.initial_volatility,
        )

    def period_of(self, clock_period: int) -> int:
        """A result's period: its clock's, never before the ladder's current one."""
        return clock_period if clock_period > self.period else self.period

    def _enter(self, p: PlayerState, period: int) -> None:
        """``p`` plays in ``period``: start it unless it is already their open one."""
        if p.period_open and p.period == period:
            return
        if p.rating > p.peak:  # their last period is over: its rating is final
            p.peak = p.rating
        p.base_rating, p.base_rd, p.base_volatility = p.rating, p.rd, p.volatility
        p.base_period = p.period
        p.period = period
        p.period_open = True
        p.v_sum = p.d_sum = 0.0
        p.period_games = 0
        self._open_entries[p.player_id] = []
        self._stored_open.discard(p.player_id)

    def entering(self, p: PlayerState) -> tuple[float, float]:
        """``(μ, φ)`` of ``p`` at the start of their open period."""
        idle = 0 if p.base_period is None else p.period - p.base_period - 1  # type: ignore[operator]
        phi = entering_phi(p.base_rd, p.base_volatility, idle, self.settings.max_rd)
        return mu_of(p.base_rating), phi

    def rate(
        self,
        match_id: str,
        position: int,
        player0: str,
        player1: str,
        score0: float,
        clock_period: int,
        timeout: bool = False,
    ) -> None:
        period = self.period = self.period_of(clock_period)
        a = self.players.get(player0) or self.players.setdefault(player0, self._new(player0))
        b = self.players.get(player1) or self.players.setdefault(player1, self._new(player1))
        self._enter(a, period)
        self._enter(b, period)
        mu_a, phi_a = self.entering(a)
        mu_b, phi_b = self.entering(b)
        g_a, g_b = g(phi_a), g(phi_b)
        d = mu_a - mu_b
        e_a = 1.0 / (1.0 + math.exp(-g_b * d))
        e_b = 1.0 / (1.0 + math.exp(g_a * d))  # = expected(mu_b, mu_a, g_a), to the bit
        score1 = 1.0 - score0
        for p, q, g_q, e, s, phi in (
            (a, b, g_b, e_a, score0, phi_a),
            (b, a, g_a, e_b, score1, phi_b),
        ):
            p.v_sum += v_term(g_q, e)
            p.d_sum += delta_term(g_q, s, e)
            p.period_games += 1
            p.games += 1
            if s == 1.0:
                p.wins += 1
            elif s == 0.0:
                p.losses += 1
                p.timeouts += timeout
            else:
                p.draws += 1
            p.rating, p.rd, p.volatility = rated(
                p.base_rating, phi, p.base_volatility, p.v_sum, p.d_sum, self.settings
            )
            entry = HistoryEntry(
                player_id=p.player_id,
                match_id=match_id,
                position=position,
                opponent_id=q.player_id,
                score=s,
                before=p.base_rating,
                after=p.rating,
                rd_before=rd_of(phi),
                rd_after=p.rd,
                period=period,
            )
            self.history.append(entry)
            entries = self._open_entries.setdefault(p.player_id, [])
            entries.append(entry)
            for earlier in entries:
                earlier.after, earlier.rd_after = p.rating, p.rd
            if p.player_id in self._stored_open:
                self.tail_rewrites[p.player_id] = (p.rating, p.rd)

    def close_periods(self) -> None:
        """A season starts or ends: every open period is over (a boundary of its own)."""
        for p in self.players.values():
            if p.period_open and p.rating > p.peak:
                p.peak = p.rating
            p.period_open = False
        self._open_entries.clear()
        self._stored_open.clear()

    def soft_reset(self, fraction: float) -> None:
        """A season starts: ratings and RDs move part of the way back to the initial ones."""
        self.close_periods()
        s = self.settings
        for p in self.players.values():
            p.rating = soft_reset(p.rating, s.initial, fraction)
            p.rd = soft_reset(p.rd, s.initial_rd, fraction)

    def table(self) -> list[PlayerState]:
        """Every rated player, best first (ties by player id)."""
        return sorted(self.players.values(), key=lambda p: (-p.rating, p.player_id))

    def rows(self) -> Iterator[tuple[Any, ...]]:
        for p in self.table():
            yield msgspec.structs.astuple(p)
