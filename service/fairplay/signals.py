"""The fair-play signals of one ladder: pure functions from its games and its
thresholds to flags (docs/fairplay.md "Signals").

Every signal looks at the finished matches of one window, the
``window_days`` before the ladder's newest finished match: a time of the log
itself, so recomputing from the log gives the same flags whenever it runs.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta

from schemas.fairplay import FairPlaySettings, Flag, SignalName
from service.fairplay.games import Game
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
        if g.cards_played < settings.early_moves:
            early[(winner, loser)].append(g)
    flags = []
    for (winner, loser), ends in sorted(early.items()):
        if len(ends) < settings.min_early_ends:
            continue
        numbers = {
            "early_ends": float(len(ends)),
            "most_cards_played": float(max(g.cards_played for g in ends)),
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


def flags_of_ladder(
    ladder_id: str, games: Sequence[Game], settings: FairPlaySettings, elo: EloSettings
) -> list[Flag]:
    """Every flag of the ladder, heaviest first (ties by id: a stable order)."""
    inside = window(games, settings)
    flags = [
        *pair_signals(ladder_id, inside, settings),
        *early_end_signals(ladder_id, inside, settings),
        *rating_signals(ladder_id, games, inside, settings, elo),
    ]
    flags.sort(key=lambda f: (-f.weight, f.flag_id))
    return flags
