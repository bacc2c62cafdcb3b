"""The fair-play signals of one ladder: pure functions from its games and its
thresholds to flags (docs/fairplay.md "Signals").

Every signal looks at the finished matches of one window, the
``window_days`` before the ladder's newest finished match: a time of the log
itself, so recomputing from the log gives the same flags whenever it runs.

The counting is column-wise (numpy over ``games.Columns``): a ladder of a
million matches is counted in seconds, and only the few groups over a
threshold become Python objects. tests/fairplay/reference_signals.py says the
same in plain loops; tests/fairplay/test_signals.py checks both agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec
import numpy as np
import numpy.typing as npt

from schemas.fairplay import FairPlaySettings, Flag, SignalName
from service.fairplay.games import Columns, Game, Ints, columns_of
from service.ratings.elo import EloSettings


class Account(msgspec.Struct, frozen=True, kw_only=True):
    """What the signals know of an account (``players``, ``bot_players``)."""

    created_at: datetime
    service_bot: bool = False


def flag_id(ladder_id: str, signal: SignalName, players: Sequence[str]) -> str:
    """The same case (ladder, signal, players) keeps one id as its numbers grow."""
    key = "\x1f".join((ladder_id, signal, *players)).encode()
    return "flag-" + hashlib.sha256(key).hexdigest()[:16]


def _flag(
    ladder_id: str,
    signal: SignalName,
    players: tuple[str, ...],
    numbers: dict[str, float],
    matches: Sequence[str],
    over: float,
) -> Flag:
    return Flag(
        flag_id=flag_id(ladder_id, signal, players),
        ladder_id=ladder_id,
        signal=signal,
        players=players,
        numbers=numbers,
        matches=tuple(matches),
        weight=round(over * len(matches), 6),
    )


class Groups:
    """Indexes grouped by a key: each group's key and its members in their order."""

    def __init__(self, keys: Ints, members: Ints) -> None:
        order = np.argsort(keys, kind="stable")
        self.members = members[order]
        self.keys, self.starts, self.counts = np.unique(
            keys[order], return_index=True, return_counts=True
        )

    def sums(self, values: npt.NDArray[np.float64] | Ints) -> npt.NDArray[np.float64]:
        """Each group's sum of ``values`` (given per member, in the members' order)."""
        if not len(self.keys):
            return np.zeros(0)
        return np.add.reduceat(np.asarray(values, dtype=np.float64), self.starts)

    def of(self, g: int) -> Ints:
        start = int(self.starts[g])
        return self.members[start : start + int(self.counts[g])]


class Elo(msgspec.Struct, frozen=True, kw_only=True):
    """Each finished game's Elo change and rating before it, per seat."""

    before: npt.NDArray[np.float64]
    """(n, 2)."""
    change: npt.NDArray[np.float64]


def rate(c: Columns, elo: EloSettings) -> Elo:
    """Elo over every finished game in order, as ``service.ratings.elo.EloRatings.rate``
    computes it (K by games played, the sticky master level), to within rounding:
    the signals compare it with thresholds, the refunds use the ratings' own."""
    n = c.size
    # plain lists in the loop (a numpy item assignment costs more than the Elo)
    before0, before1, change0, change1 = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    players = len(c.names)
    rating = [elo.initial] * players
    games = [0] * players
    master = [elo.initial >= elo.master_rating] * players
    peak = [elo.initial] * players
    cap, new_games = elo.max_difference, elo.established_after_games
    k_new, k_master, k_est, level = elo.k_new, elo.k_master, elo.k_established, elo.master_rating
    p0s, p1s, winners = c.p0.tolist(), c.p1.tolist(), c.winner.tolist()
    for i in range(n):
        a, b, w = p0s[i], p1s[i], winners[i]
        ra, rb = rating[a], rating[b]
        d = ra - rb
        d = cap if d > cap else (-cap if d < -cap else d)
        x = 10.0 ** (-d / 400.0)  # one power for both (the ratings' own loop takes two)
        ea = 1.0 / (1.0 + x)
        eb = 1.0 / (1.0 + 1.0 / x)
        ka = k_new if games[a] < new_games else (k_master if master[a] else k_est)
        kb = k_new if games[b] < new_games else (k_master if master[b] else k_est)
        s0 = 0.5 if w < 0 else (1.0 if w == 0 else 0.0)
        ca, cb = ka * (s0 - ea), kb * ((1.0 - s0) - eb)
        na, nb = ra + ca, rb + cb
        rating[a], rating[b] = na, nb
        games[a] += 1
        games[b] += 1
        if na > peak[a]:
            peak[a] = na
            master[a] = master[a] or na >= level
        if nb > peak[b]:
            peak[b] = nb
            master[b] = master[b] or nb >= level
        before0[i], before1[i], change0[i], change1[i] = ra, rb, ca, cb
    return Elo(
        before=np.array((before0, before1)).T.copy(), change=np.array((change0, change1)).T.copy()
    )


def _window(c: Columns, settings: FairPlaySettings) -> Ints:
    """The window's games (indexes into ``c``), in the order they ended."""
    if not c.size:
        return np.zeros(0, dtype=np.int64)
    since = float(c.ended.max()) - settings.window_days * 86_400.0
    return np.nonzero(c.ended >= since)[0]


def _ids(c: Columns, members: Ints) -> list[str]:
    return [c.match_ids[i] for i in members.tolist()]


def _played(c: Columns, inside: Ints) -> Ints:
    n = len(c.names)
    return np.bincount(c.p0[inside], minlength=n) + np.bincount(c.p1[inside], minlength=n)


def pair_signals(
    ladder_id: str,
    c: Columns,
    inside: Ints,
    pairs: Groups,
    elo: Elo,
    accounts: Mapping[str, Account],
    settings: FairPlaySettings,
) -> list[Flag]:
    """``pair_share``, ``one_sided``, ``rating_from_one`` and ``new_accounts``: what a
    pair's games in the window add up to.

    * pair_share: at least ``min_pair_games`` games, at least ``pair_share`` of one
      player's games; one_sided: one side won ``one_sided`` of the decided ones;
    * rating_from_one: a player gained, net, ``rating_from_one`` Elo points from the
      other (Elo over the ladder's whole history, in order);
    * new_accounts: accounts created within ``created_within_hours`` of each other,
      each playing ``new_accounts_share`` of its games against the other.
    """
    played = _played(c, inside)
    lo = np.minimum(c.p0, c.p1)
    wins_lo = pairs.sums((c.winner_id == lo)[pairs.members])
    wins_hi = pairs.sums(((c.winner_id >= 0) & (c.winner_id != lo))[pairs.members])
    lo_is_seat0 = (c.p0 < c.p1)[pairs.members]
    members_change = elo.change[pairs.members]
    gain_lo = pairs.sums(np.where(lo_is_seat0, members_change[:, 0], members_change[:, 1]))
    gain_hi = pairs.sums(np.where(lo_is_seat0, members_change[:, 1], members_change[:, 0]))
    n_players = len(c.names)
    look = (pairs.counts >= settings.min_pair_games) | (
        np.maximum(gain_lo, gain_hi) >= settings.rating_from_one
    )
    flags: list[Flag] = []
    for g in np.nonzero(look)[0].tolist():
        a_i, b_i = divmod(int(pairs.keys[g]), n_players)
        a, b = c.names[a_i], c.names[b_i]
        n = int(pairs.counts[g])
        matches = _ids(c, pairs.of(g))
        wins = {a: int(wins_lo[g]), b: int(wins_hi[g])}
        first, second = (a, b) if wins[a] >= wins[b] else (b, a)
        share = {a: n / int(played[a_i]), b: n / int(played[b_i])}
        if n >= settings.min_pair_games:
            top = max(share.values())
            if top >= settings.pair_share:
                numbers = {
                    "games": float(n),
                    "share_of_first": round(share[first], 6),
                    "share_of_second": round(share[second], 6),
                }
                over = top / settings.pair_share if settings.pair_share else top
                flags.append(
                    _flag(ladder_id, "pair_share", (first, second), numbers, matches, over)
                )
            decided = wins[a] + wins[b]
            if decided >= settings.min_pair_games:
                one = wins[first] / decided
                if one >= settings.one_sided:
                    numbers = {
                        "decided": float(decided),
                        "wins_of_first": float(wins[first]),
                        "share": round(one, 6),
                    }
                    over = one / settings.one_sided if settings.one_sided else one
                    pair = (first, second)
                    flags.append(_flag(ladder_id, "one_sided", pair, numbers, matches, over))
            flags += _new_accounts(ladder_id, (a, b), share, n, matches, accounts, settings)
        for player, opponent, points in ((a, b, gain_lo[g]), (b, a, gain_hi[g])):
            if points < settings.rating_from_one or points <= 0:
                continue
            numbers = {"gained": round(float(points), 6), "games": float(n)}
            over = float(points) / settings.rating_from_one if settings.rating_from_one else 1.0
            pair = (player, opponent)
            flags.append(_flag(ladder_id, "rating_from_one", pair, numbers, matches, over))
    return flags


def _new_accounts(
    ladder_id: str,
    pair: tuple[str, str],
    share: dict[str, float],
    n: int,
    matches: list[str],
    accounts: Mapping[str, Account],
    settings: FairPlaySettings,
) -> list[Flag]:
    a, b = pair
    if a not in accounts or b not in accounts:
        return []
    apart = abs((accounts[a].created_at - accounts[b].created_at).total_seconds()) / 3600
    low = min(share[a], share[b])
    if apart > settings.created_within_hours or low < settings.new_accounts_share:
        return []
    numbers = {
        "hours_apart": round(apart, 6),
        "games": float(n),
        "share_of_first": round(share[a], 6),
        "share_of_second": round(share[b], 6),
    }
    over = low / settings.new_accounts_share if settings.new_accounts_share else 1.0
    return [_flag(ladder_id, "new_accounts", pair, numbers, matches, over)]


def early_end_signals(
    ladder_id: str, c: Columns, inside: Ints, settings: FairPlaySettings
) -> list[Flag]:
    """``early_ends``: one player resigns or times out against one opponent, again
    and again, before ``early_moves`` cards are played or within ``early_seconds``
    of the match's creation. The flag names the winner
    first (the account being fed), then the player who gave up."""
    n_players = len(c.names)
    soon = (c.cards[inside] < settings.early_moves) | (c.lasted[inside] < settings.early_seconds)
    early = inside[c.early_end[inside] & (c.winner[inside] >= 0) & soon]
    loser = np.where(c.winner[early] == 0, c.p1[early], c.p0[early])
    groups = Groups(c.winner_id[early] * n_players + loser, early)
    flags = []
    for g in np.nonzero(groups.counts >= settings.min_early_ends)[0].tolist():
        w, lo = divmod(int(groups.keys[g]), n_players)
        members = groups.of(g)
        numbers = {
            "early_ends": float(len(members)),
            "most_cards_played": float(c.cards[members].max()),
            "longest_s": round(float(c.lasted[members].max()), 3),
        }
        over = len(members) / settings.min_early_ends
        players = (c.names[w], c.names[lo])
        flags.append(_flag(ladder_id, "early_ends", players, numbers, _ids(c, members), over))
    return flags


def losing_streak_signals(
    ladder_id: str,
    c: Columns,
    inside: Ints,
    elo: Elo,
    settings: FairPlaySettings,
    initial: float,
) -> list[Flag]:
    """``losing_streak`` (sandbagging): ``streak_losses`` losses in a row in the
    window that take a player at least ``streak_drop`` Elo points below the peak
    they had reached before the streak, a peak at least ``streak_peak_above`` over
    the ladder's initial rating. One flag per player: its deepest streak."""
    n = c.size
    if not n:
        return []
    in_window = np.zeros(n, dtype=np.bool_)
    in_window[inside] = True
    # one line per (player, game), ordered by player then game
    player = np.concatenate((c.p0, c.p1))
    game = np.concatenate((np.arange(n), np.arange(n)))
    seat = np.concatenate((np.zeros(n, np.int64), np.ones(n, np.int64)))
    order = np.argsort(player * n + game)  # by player, then game (keys unique)
    player, game, seat = player[order], game[order], seat[order]
    before = elo.before[game, seat]
    after = before + elo.change[game, seat]
    lost = c.winner[game] == 1 - seat
    # a run starts at a loss whose line before is another player's or not a loss
    prev_same = np.concatenate(([False], player[1:] == player[:-1]))
    prev_lost = np.concatenate(([False], lost[:-1]))
    starts = np.nonzero(lost & ~(prev_same & prev_lost))[0]
    # a run ends at a loss whose line after is another player's or not a loss
    next_same = np.concatenate((prev_same[1:], [False]))
    next_lost = np.concatenate((lost[1:], [False]))
    ends = np.nonzero(lost & ~(next_same & next_lost))[0]  # one per run, in the same order
    counted = np.cumsum(in_window[game])
    in_run: Ints = counted[ends] - np.where(starts > 0, counted[starts - 1], 0)
    first_line = np.searchsorted(player, player[starts])
    worst: dict[int, tuple[float, float, float, list[str]]] = {}
    for r in np.nonzero(in_run >= settings.streak_losses)[0].tolist():
        s, e, f = int(starts[r]), int(ends[r]), int(first_line[r])
        highs = np.maximum(before[f:s], after[f:s])
        peak = max(float(highs.max()) if s > f else float("-inf"), float(before[s]))
        low = float(after[e])
        drop = peak - low
        if drop < settings.streak_drop or peak < initial + settings.streak_peak_above:
            continue
        p = int(player[s])
        if p not in worst or drop > worst[p][0]:
            run = game[s : e + 1]
            worst[p] = (drop, peak, low, _ids(c, run[in_window[run]]))
    flags = []
    for p in sorted(worst):
        drop, peak, low, matches = worst[p]
        numbers = {
            "losses": float(len(matches)),
            "peak": round(peak, 6),
            "low": round(low, 6),
            "drop": round(drop, 6),
        }
        over = drop / settings.streak_drop if settings.streak_drop else 1.0
        flags.append(_flag(ladder_id, "losing_streak", (c.names[p],), numbers, matches, over))
    return flags


def fast_move_signals(
    ladder_id: str,
    c: Columns,
    inside: Ints,
    accounts: Mapping[str, Account],
    settings: FairPlaySettings,
) -> list[Flag]:
    """``fast_moves``: a player (not a service bot) who made at least
    ``min_fast_moves`` moves in the window, ``fast_share`` of them within
    ``fast_move_s`` of the event before: faster than a person reads the table."""
    n_players = len(c.names)
    moves = np.bincount(c.p0[inside], c.moves[inside, 0], n_players) + np.bincount(
        c.p1[inside], c.moves[inside, 1], n_players
    )
    fast = np.bincount(c.p0[inside], c.fast[inside, 0], n_players) + np.bincount(
        c.p1[inside], c.fast[inside, 1], n_players
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(moves > 0, fast / np.maximum(moves, 1), 0.0)
    look = (moves >= settings.min_fast_moves) & (share >= settings.fast_share)
    flags = []
    for p in np.nonzero(look)[0].tolist():
        name = c.names[p]
        account = accounts.get(name)
        if account is not None and account.service_bot:
            continue
        quick = inside[
            ((c.p0[inside] == p) & (c.fast[inside, 0] > 0))
            | ((c.p1[inside] == p) & (c.fast[inside, 1] > 0))
        ]
        numbers = {
            "moves": float(moves[p]),
            "fast": float(fast[p]),
            "share": round(float(share[p]), 6),
        }
        over = float(share[p]) / settings.fast_share if settings.fast_share else 1.0
        flags.append(_flag(ladder_id, "fast_moves", (name,), numbers, _ids(c, quick), over))
    return flags


def flags_of_ladder(
    ladder_id: str,
    games: Sequence[Game],
    settings: FairPlaySettings,
    elo: EloSettings,
    accounts: Mapping[str, Account] | None = None,
) -> list[Flag]:
    """Every flag of the ladder, heaviest first (ties by id: a stable order)."""
    return flags_of_columns(ladder_id, columns_of(games), settings, elo, accounts)


def flags_of_columns(
    ladder_id: str,
    c: Columns,
    settings: FairPlaySettings,
    elo: EloSettings,
    accounts: Mapping[str, Account] | None = None,
) -> list[Flag]:
    """``flags_of_ladder`` over the games already in columns (the store's path)."""
    known = accounts or {}
    inside = _window(c, settings)
    rated = rate(c, elo)
    n_players = len(c.names)
    lo, hi = np.minimum(c.p0, c.p1), np.maximum(c.p0, c.p1)
    pairs = Groups(lo[inside] * n_players + hi[inside], inside)
    flags = [
        *pair_signals(ladder_id, c, inside, pairs, rated, known, settings),
        *early_end_signals(ladder_id, c, inside, settings),
        *losing_streak_signals(ladder_id, c, inside, rated, settings, elo.initial),
        *fast_move_signals(ladder_id, c, inside, known, settings),
    ]
    flags.sort(key=lambda f: (-f.weight, f.flag_id))
    return flags
