"""The fair-play signals in plain loops, one game at a time: the reference
``service.fairplay.signals`` (column-wise) must agree with, flag for flag
(tests/fairplay/test_signals.py). Definitions: docs/fairplay.md "Signals".

Every signal looks at the finished matches of one window, the
``window_days`` before the ladder's newest finished match: a time of the log
itself, so recomputing from the log gives the same flags whenever it runs.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import timedelta

from schemas.fairplay import FairPlaySettings, Flag, SignalName
from service.fairplay.games import Game
from service.fairplay.signals import Account
from service.ratings.elo import EloRatings, EloSettings

EARLY_REASONS = ("resigned", "timeout")
"""How a match ends early on purpose: the loser resigns or lets the clock run out."""


def flag_id(ladder_id: str, signal: SignalName, players: Sequence[str]) -> str:
    """The same case (ladder, signal, players) keeps one id as its numbers grow."""
    key = "\x1f".join((ladder_id, signal, *players)).encode()
    return "flag-" + hashlib.sha256(key).hexdigest()[:16]


def _flag(
    ladder_id: str,
    signal: SignalName,
    players: tuple[str, ...],
    numbers: dict[str, float],
    games: Sequence[Game],
    over: float,
) -> Flag:
    return Flag(
        flag_id=flag_id(ladder_id, signal, players),
        ladder_id=ladder_id,
        signal=signal,
        players=players,
        numbers=numbers,
        matches=tuple(g.match_id for g in games),
        weight=round(over * len(games), 6),
    )


def window(games: Sequence[Game], settings: FairPlaySettings) -> list[Game]:
    """The finished games of the window, in the order they ended."""
    done = sorted((g for g in games if g.finished), key=lambda g: g.position)
    if not done:
        return []
    newest = max(g.ended_at for g in done if g.ended_at is not None)
    since = newest - timedelta(days=settings.window_days)
    return [g for g in done if g.ended_at is not None and g.ended_at >= since]


def _pairs(games: Sequence[Game]) -> dict[tuple[str, str], list[Game]]:
    pairs: dict[tuple[str, str], list[Game]] = defaultdict(list)
    for g in games:
        a, b = sorted(g.players)
        pairs[(a, b)].append(g)
    return pairs


def pair_signals(ladder_id: str, games: Sequence[Game], settings: FairPlaySettings) -> list[Flag]:
    """``pair_share`` and ``one_sided``: a pair that plays mostly each other, and
    a pair where one side wins nearly every decided game."""
    played: dict[str, int] = defaultdict(int)
    for g in games:
        for p in g.players:
            played[p] += 1
    flags: list[Flag] = []
    for (a, b), between in sorted(_pairs(games).items()):
        n = len(between)
        if n < settings.min_pair_games:
            continue
        wins = {a: 0, b: 0}
        for g in between:
            w = g.winner_id()
            if w is not None:
                wins[w] += 1
        first, second = (a, b) if wins[a] >= wins[b] else (b, a)
        share = {p: n / played[p] for p in (a, b)}
        top = max(share.values())
        if top >= settings.pair_share:
            numbers = {
                "games": float(n),
                "share_of_first": round(share[first], 6),
                "share_of_second": round(share[second], 6),
            }
            over = top / settings.pair_share if settings.pair_share else top
            flags.append(_flag(ladder_id, "pair_share", (first, second), numbers, between, over))
        decided = wins[a] + wins[b]
        if decided >= settings.min_pair_games:
            one_share = wins[first] / decided
            if one_share >= settings.one_sided:
                numbers = {
                    "decided": float(decided),
                    "wins_of_first": float(wins[first]),
                    "share": round(one_share, 6),
                }
                over = one_share / settings.one_sided if settings.one_sided else one_share
                flags.append(_flag(ladder_id, "one_sided", (first, second), numbers, between, over))
    return flags


def early_end_signals(
    ladder_id: str, games: Sequence[Game], settings: FairPlaySettings
) -> list[Flag]:
    """``early_ends``: one player resigns or times out against one opponent, again
    and again, before ``early_moves`` cards are played. The flag names the winner
    first (the account being fed), then the player who gave up."""
    early: dict[tuple[str, str], list[Game]] = defaultdict(list)
    for g in games:
        loser, winner = g.loser(), g.winner_id()
        if loser is None or winner is None or g.reason not in EARLY_REASONS:
            continue
        lasted = (
            (g.ended_at - g.started_at).total_seconds()
            if g.started_at is not None and g.ended_at is not None
            else float("inf")
        )
        if g.cards_played < settings.early_moves or lasted < settings.early_seconds:
            early[(winner, loser)].append(g)
    flags = []
    for (winner, loser), ends in sorted(early.items()):
        if len(ends) < settings.min_early_ends:
            continue
        numbers = {
            "early_ends": float(len(ends)),
            "most_cards_played": float(max(g.cards_played for g in ends)),
            "longest_s": round(
                max(
                    (g.ended_at - g.started_at).total_seconds()
                    if g.started_at is not None and g.ended_at is not None
                    else float("inf")
                    for g in ends
                ),
                3,
            ),
        }
        over = len(ends) / settings.min_early_ends
        flags.append(_flag(ladder_id, "early_ends", (winner, loser), numbers, ends, over))
    return flags


def rated(games: Sequence[Game], elo: EloSettings) -> EloRatings:
    """Elo over every finished game, in the order they ended (the ratings' order)."""
    ratings = EloRatings(elo)
    for g in sorted((g for g in games if g.finished), key=lambda g: g.position):
        score0 = 0.5 if g.winner is None else (1.0 if g.winner == 0 else 0.0)
        ratings.rate(g.match_id, g.position, g.players[0], g.players[1], score0)
    return ratings


def rating_signals(
    ladder_id: str,
    all_games: Sequence[Game],
    in_window: Sequence[Game],
    settings: FairPlaySettings,
    elo: EloSettings,
) -> list[Flag]:
    """``rating_from_one``: the Elo a player gained, net, from one opponent in the
    window (Elo over the ladder's whole history, as its ratings are computed)."""
    ids = {g.match_id: g for g in in_window}
    gained: dict[tuple[str, str], float] = defaultdict(float)
    behind: dict[tuple[str, str], list[Game]] = defaultdict(list)
    for player, match_id, _pos, opponent, _score, _before, _after, change in rated(
        all_games, elo
    ).history:
        game = ids.get(match_id)
        if game is None:
            continue
        gained[(player, opponent)] += change
        behind[(player, opponent)].append(game)
    flags = []
    for (player, opponent), points in sorted(gained.items()):
        if points < settings.rating_from_one or points <= 0:
            continue
        matches = behind[(player, opponent)]
        numbers = {"gained": round(points, 6), "games": float(len(matches))}
        over = points / settings.rating_from_one if settings.rating_from_one else 1.0
        flags.append(
            _flag(ladder_id, "rating_from_one", (player, opponent), numbers, matches, over)
        )
    return flags


Line = tuple[str, float, float, float]
"""One rated match of a player: (match id, score, rating before, rating after)."""


def _losing_runs(lines: Sequence[Line]) -> list[tuple[float, list[Line]]]:
    """Each run of losses in a row, with the peak reached before it began."""
    runs: list[tuple[float, list[Line]]] = []
    peak = float("-inf")
    run: list[Line] = []
    for line in lines:
        if line[1] == 0.0:
            if not run:
                runs.append((max(peak, line[2]), run))
            run.append(line)
        else:
            run = []
        peak = max(peak, line[2], line[3])
    return runs


def losing_streak_signals(
    ladder_id: str,
    all_games: Sequence[Game],
    in_window: Sequence[Game],
    settings: FairPlaySettings,
    elo: EloSettings,
) -> list[Flag]:
    """``losing_streak`` (sandbagging): ``streak_losses`` losses in a row in the
    window that take a player at least ``streak_drop`` Elo points below the peak
    they had reached before the streak, a peak at least ``streak_peak_above`` over
    the ladder's initial rating. One flag per player: its deepest streak."""
    ids = {g.match_id: g for g in in_window}
    lines: dict[str, list[Line]] = defaultdict(list)
    for player, match_id, _p, _o, score, before, after, _c in rated(all_games, elo).history:
        lines[player].append((match_id, score, before, after))
    flags = []
    for player in sorted(lines):
        worst: tuple[float, float, float, list[str]] | None = None  # drop, peak, low, matches
        for peak, run in _losing_runs(lines[player]):
            counted = [line[0] for line in run if line[0] in ids]
            drop = peak - run[-1][3]
            if len(counted) < settings.streak_losses or drop < settings.streak_drop:
                continue
            if peak < elo.initial + settings.streak_peak_above:
                continue
            if worst is None or drop > worst[0]:
                worst = (drop, peak, run[-1][3], counted)
        if worst is None:
            continue
        drop, peak, low, matches = worst
        numbers = {
            "losses": float(len(matches)),
            "peak": round(peak, 6),
            "low": round(low, 6),
            "drop": round(drop, 6),
        }
        behind = [ids[m] for m in matches]
        over = drop / settings.streak_drop if settings.streak_drop else 1.0
        flags.append(_flag(ladder_id, "losing_streak", (player,), numbers, behind, over))
    return flags


def new_account_signals(
    ladder_id: str,
    games: Sequence[Game],
    accounts: Mapping[str, Account],
    settings: FairPlaySettings,
) -> list[Flag]:
    """``new_accounts``: two accounts created within ``created_within_hours`` of
    each other that play (nearly) only each other: at least ``min_pair_games``
    together, each at least ``new_accounts_share`` of its games in the window."""
    played: dict[str, int] = defaultdict(int)
    for g in games:
        for p in g.players:
            played[p] += 1
    flags = []
    for (a, b), between in sorted(_pairs(games).items()):
        if len(between) < settings.min_pair_games or a not in accounts or b not in accounts:
            continue
        apart = abs((accounts[a].created_at - accounts[b].created_at).total_seconds()) / 3600
        shares = (len(between) / played[a], len(between) / played[b])
        if apart > settings.created_within_hours or min(shares) < settings.new_accounts_share:
            continue
        numbers = {
            "hours_apart": round(apart, 6),
            "games": float(len(between)),
            "share_of_first": round(shares[0], 6),
            "share_of_second": round(shares[1], 6),
        }
        over = min(shares) / settings.new_accounts_share if settings.new_accounts_share else 1.0
        flags.append(_flag(ladder_id, "new_accounts", (a, b), numbers, between, over))
    return flags


def fast_move_signals(
    ladder_id: str,
    games: Sequence[Game],
    accounts: Mapping[str, Account],
    settings: FairPlaySettings,
) -> list[Flag]:
    """``fast_moves``: a player (not a service bot) who made at least
    ``min_fast_moves`` moves in the window, ``fast_share`` of them within
    ``fast_move_s`` of the event before: faster than a person reads the table."""
    moves: dict[str, int] = defaultdict(int)
    fast: dict[str, int] = defaultdict(int)
    behind: dict[str, list[Game]] = defaultdict(list)
    for g in games:
        for seat, player in enumerate(g.players):
            moves[player] += g.moves[seat]
            fast[player] += g.fast[seat]
            if g.fast[seat]:
                behind[player].append(g)
    flags = []
    for player in sorted(moves):
        account = accounts.get(player)
        if account is not None and account.service_bot:
            continue
        if moves[player] < settings.min_fast_moves:
            continue
        share = fast[player] / moves[player]
        if share < settings.fast_share:
            continue
        numbers = {
            "moves": float(moves[player]),
            "fast": float(fast[player]),
            "share": round(share, 6),
        }
        over = share / settings.fast_share if settings.fast_share else 1.0
        flags.append(_flag(ladder_id, "fast_moves", (player,), numbers, behind[player], over))
    return flags


def flags_of_ladder(
    ladder_id: str,
    games: Sequence[Game],
    settings: FairPlaySettings,
    elo: EloSettings,
    accounts: Mapping[str, Account] | None = None,
) -> list[Flag]:
    """Every flag of the ladder, heaviest first (ties by id: a stable order)."""
    known = accounts or {}
    inside = window(games, settings)
    flags = [
        *pair_signals(ladder_id, inside, settings),
        *early_end_signals(ladder_id, inside, settings),
        *rating_signals(ladder_id, games, inside, settings, elo),
        *losing_streak_signals(ladder_id, games, inside, settings, elo),
        *new_account_signals(ladder_id, inside, known, settings),
        *fast_move_signals(ladder_id, inside, known, settings),
    ]
    flags.sort(key=lambda f: (-f.weight, f.flag_id))
    return flags
