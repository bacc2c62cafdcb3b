"""The Elo recompute's hot loop: a ladder's results rated in flat per-player lists.

``rate_chunks`` does exactly the arithmetic of ``elo.EloRatings.rate`` (same
operations, same order: same bits) for players numbered ``0 .. n - 1``; the
tests check it against ``elo.EloRatings`` bit for bit over varied settings.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator
from operator import eq
from typing import Any, NamedTuple

from service.ratings.elo import EloSettings, soft_reset
from workers.ratings.codes import code_of, tally
from workers.ratings.layout import little_endian

Chunk = tuple[list[int], list[int], list[float], list[int], list[int]]
"""One block of results in order: seat 0's player index, seat 1's, seat 0's score,
and each seat's tag (``position * 256 + code``, codes.py)."""


class Reset(NamedTuple):
    """Between two chunks: a season starts, every rating moves ``fraction`` of the
    way back to the initial rating (``elo.soft_reset``)."""

    fraction: float


class Roster(dict[Any, int]):
    """Player id -> a small integer index, numbering new players as they come.

    The hot loop then keeps each player's state in flat lists indexed by that
    integer (a list subscript is far cheaper than hashing an id), and the ids
    are mapped in C with ``map(roster.__getitem__, ids)`` once per chunk.
    """

    def __missing__(self, player_id: Any) -> int:
        index = self[player_id] = len(self)
        return index


class SelfMatchError(ValueError):
    """A match with one player in both seats: ``rate_chunks`` leaves it to ``elo.EloRatings``."""


class Fold(NamedTuple):
    """What ``rate_chunks`` leaves, per player index (their entries in match order)."""

    rating: list[float]
    afters: list[array[float]]
    """The player's rating after each of their matches."""
    tags: list[array[int]]
    """Each of their matches as ``position * 256 + code``."""
    resets: list[tuple[int, float]]
    """Each soft reset: the number of entries the players had before it, kept as
    ``(tag bound, fraction)``: a history entry whose tag is above the bound
    started from a reset rating (``befores``)."""


def rate_chunks(chunks: Iterable[Chunk | Reset], players: int, settings: EloSettings) -> Fold:
    """Rate blocks of results in order: the hot loop of a recompute.

    Keeps in the loop only what the Elo needs, in flat lists indexed by player:
    ratings, K, the master mark. Per match the loop appends each player's new
    rating to their ``afters`` array; everything else needs no Python step per
    match:

    * each chunk's tags are appended to the players' ``tags`` arrays with
      ``map`` (C) before the chunk is rated;
    * from those, the match where a player plays their
      ``established_after_games``-th game: the loop runs in segments between
      such matches and changes that player's K in between, so it never counts
      games;
    * wins, draws, losses, peak and the whole history come out of the arrays
      afterwards (``folded_table``, copy_out.py).

    A ``Reset`` between chunks soft-resets every rating. A match with one
    player in both seats raises ``SelfMatchError`` (the history's "before"
    would not be the previous "after").
    """
    s = settings
    initial, cap, n_new = s.initial, s.max_difference, s.established_after_games
    ncap = -cap
    k_new, k_est, k_master, master = s.k_new, s.k_established, s.k_master, s.master_rating
    start_master = initial >= master
    rating = [initial] * players
    k_of = [k_new if n_new > 0 else (k_master if start_master else k_est)] * players
    is_master = [start_master] * players
    afters = [array("d") for _ in range(players)]
    tags_of = [array("q") for _ in range(players)]
    new = list(range(players)) if n_new > 0 else []  # players still on K k_new
    consume = deque[None](maxlen=0).extend
    append = [a.append for a in afters]
    resets: list[tuple[int, float]] = []
    last_tag = -1
    for chunk in chunks:
        if isinstance(chunk, Reset):
            f = chunk.fraction
            rating = [soft_reset(r, initial, f) for r in rating]
            resets.append((last_tag, f))
            continue
        seat0, seat1, scores, tags0, tags1 = chunk
        n = len(scores)
        if not n:
            continue
        if any(map(eq, seat0, seat1)):
            raise SelfMatchError("a match with the same player in both seats")
        last_tag = tags0[-1] | 255
        seats = [0] * (2 * n)
        seats[0::2] = seat0
        seats[1::2] = seat1
        tags = [0] * (2 * n)
        tags[0::2] = tags0
        tags[1::2] = tags1
        consume(map(array.append, map(tags_of.__getitem__, seats), tags))
        ends_new = []
        if new:
            still_new = []
            for p in new:
                theirs = tags_of[p]
                if len(theirs) < n_new:
                    still_new.append(p)
                else:  # the match of their n_new-th game is in this chunk
                    ends_new.append((bisect_left(tags0, theirs[n_new - 1] & ~255), p))
            new = still_new
            ends_new.sort()
        ends_new.append((n - 1, -1))
        start = 0
        for last, player in ends_new:
            stop = last + 1
            for i, j, score0 in zip(
                seat0[start:stop], seat1[start:stop], scores[start:stop], strict=True
            ):
                ra = rating[i]
                rb = rating[j]
                d = ra - rb
                if d > cap:
                    d = cap
                elif d < ncap:
                    d = ncap
                x = d / 400.0  # -x is exactly -d / 400.0
                rating[i] = na = ra + k_of[i] * (score0 - 1.0 / (1.0 + 10.0**-x))
                rating[j] = nb = rb + k_of[j] * ((1.0 - score0) - 1.0 / (1.0 + 10.0**x))
                append[i](na)
                append[j](nb)
                if na >= master and not is_master[i]:
                    is_master[i] = True  # rare: first at or above the master rating
                    if len(afters[i]) >= n_new:
                        k_of[i] = k_master
                if nb >= master and not is_master[j]:
                    is_master[j] = True
                    if len(afters[j]) >= n_new:
                        k_of[j] = k_master
            if player >= 0:  # that player's established_after_games-th game is rated
                k_of[player] = k_master if is_master[player] else k_est
            start = max(start, stop)
    return Fold(rating, afters, tags_of, resets)


def befores(fold: Fold, p: int, initial: float) -> list[float]:
    """Player ``p``'s rating before each of their matches: the previous one's
    after, or its soft reset when a season started in between."""
    theirs = fold.afters[p].tolist()
    out = [initial, *theirs][:-1]
    if fold.resets:
        tags = fold.tags[p]
        for bound, fraction in fold.resets:
            k = bisect_left(tags, bound + 1)
            if k < len(out):
                # every reset since the previous match applies, in order
                out[k] = soft_reset(out[k], initial, fraction)
    return out


def reset_entries(fold: Fold, p: int) -> list[int]:
    """The indexes of player ``p``'s entries whose before is not the previous after."""
    if not fold.resets:
        return []
    tags = fold.tags[p]
    found = {bisect_left(tags, bound + 1) for bound, _ in fold.resets}
    return sorted(k for k in found if k < len(tags))


def folded_table(fold: Fold, settings: EloSettings) -> Iterator[tuple[int, list[Any]]]:
    """Each rated player's index and ``[rating, games, wins, draws, losses, peak,
    reached_master, timeouts]``, as ``elo.EloRatings`` keeps them."""
    initial, master = settings.initial, settings.master_rating
    for p, (theirs, tags) in enumerate(zip(fold.afters, fold.tags, strict=True)):
        if theirs:
            wins, draws, losses, timeouts = tally(little_endian(tags)[0::8])
            peak = max(initial, max(theirs))
            yield (
                p,
                [fold.rating[p], len(theirs), wins, draws, losses, peak, peak >= master, timeouts],
            )


RatedResult = tuple[str, int, str, str, float] | tuple[str, int, str, str, float, bool]
"""``(match_id, position, player0, player1, score0[, timeout])``."""


def rate_results(
    results: Iterable[RatedResult | Reset], settings: EloSettings
) -> tuple[dict[str, list[Any]], dict[str, list[tuple[int, float, float, float]]]]:
    """``rate_chunks`` over results in memory (what ``elo.recompute`` takes), with
    ``Reset`` items between them: per player id their ``folded_table`` row and
    their history ``(position, before, after, score)``. For tests."""
    roster = Roster()
    blocks: list[Chunk | Reset] = []
    block: Chunk = ([], [], [], [], [])
    for item in results:
        if isinstance(item, Reset):
            blocks += [block, item]
            block = ([], [], [], [], [])
            continue
        _match, position, p0, p1, score0 = item[:5]
        timeout = bool(item[5]) if len(item) > 5 else False
        seat0, seat1, scores, tags0, tags1 = block
        seat0.append(roster[p0])
        seat1.append(roster[p1])
        scores.append(score0)
        tags0.append(position * 256 + code_of(score0, timeout))
        tags1.append(position * 256 + code_of(1.0 - score0, timeout))
    blocks.append(block)
    fold = rate_chunks(blocks, len(roster), settings)
    ids = list(roster)
    table = {ids[p]: row for p, row in folded_table(fold, settings)}
    history = {}
    for p, player_id in enumerate(ids):
        history[player_id] = [
            (tag >> 8, before, after, (tag & 3) / 2)
            for tag, before, after in zip(
                fold.tags[p], befores(fold, p, settings.initial), fold.afters[p], strict=True
            )
        ]
    return table, history
