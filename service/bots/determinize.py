"""Determinization: one complete position drawn from an information set.

Cowling, Powley and Whitehouse's ISMCTS (and Ginsberg's PIMC before it) search
over positions the viewer cannot tell apart from the real one. Here that is a
uniform shuffle of the cards the viewer cannot see (``InfoSet.unseen``), dealt
into the places they must be: hidden face-down slots, the hidden hands, the
set-aside pile; and secret kept cards picked from their owner's cards. Every
deal of the real seed gives each such filling the same chance, so a uniform
one is a draw from the viewer's belief (taking the other seat's choices as
uninformative, as ISMCTS does).

The future is not known either: the real seed is secret (only its commitment
is public, and it says nothing), so a determinization deals the hands to come
from a fresh seed drawn from the caller's ``rng``, and carries no commitment.

``sample`` answers an immutable ``State`` (for tests and callers that step
with ``service.engine.step``); ``sample_table`` answers the engine's mutable
``Table`` for the self-play loop (``service.engine.decide.run``), which is
what the search uses.
"""

from __future__ import annotations

import random

from schemas.cards import Card
from schemas.events import RoundRevealed, TargetOutcome
from schemas.views import RoundRevealedView
from service.bots.infoset import InfoSet
from service.engine.state import State, Table, freeze, slot


def _subset(cards: list[Card], rng: random.Random) -> tuple[Card, ...]:
    """A uniformly random subset (each of the 2**n equally likely), in hand order."""
    return tuple([c for c in cards if rng.random() < 0.5])


def _last_reveal(seen: RoundRevealedView | None, placed: list[Card | None]) -> RoundRevealed | None:
    """The full reveal event whose redaction is ``seen``, with hidden lone cards
    taken from the determinized slots."""
    if seen is None:
        return None
    outcomes = []
    for index, o in enumerate(seen.outcomes):
        c0, c1 = o.cards
        if c0 is None and o.placed[0]:
            c0 = placed[slot(seen.round, 0, index)]
        if c1 is None and o.placed[1]:
            c1 = placed[slot(seen.round, 1, index)]
        outcomes.append(
            TargetOutcome(
                target=o.target,
                tea_card=o.tea_card,
                cards=(c0, c1),
                shown=o.shown,
                matched=o.matched,
                winner=o.winner,
                due=o.due,
                given=o.given,
            )
        )
    return RoundRevealed(
        v=seen.v, hand=seen.hand, round=seen.round, outcomes=(outcomes[0], outcomes[1])
    )


def sample_table(info: InfoSet, rng: random.Random) -> Table:
    """One position consistent with ``info``, as a fresh mutable table."""
    view = info.view
    pool = list(info.unseen)
    rng.shuffle(pool)
    placed = list(info.placed)
    k = 0
    for i in info.hidden_slots:
        placed[i] = pool[k]
        k += 1
    hands: list[tuple[Card, ...]] = []
    for seat in (0, 1):
        known = info.hands[seat]
        if known is not None:
            hands.append(known)
        else:
            n = info.hand_counts[seat]
            hands.append(tuple(pool[k : k + n]))
            k += n
    set_aside = info.set_aside or tuple(pool[k : k + info.set_aside_count])
    kept: list[tuple[Card, ...] | None] = [None, None]
    for seat in (0, 1):
        known_kept = info.kept[seat]
        count = info.kept_counts[seat]
        if known_kept is not None:
            kept[seat] = known_kept
        elif info.kept_secret[seat]:
            kept[seat] = _subset(list(hands[seat]), rng)
        elif count is not None:
            # Kept at the last hand's end: some of this seat's cards of this hand
            # (still in hand, or played since).
            mine = list(hands[seat]) + [
                c for r in (1, 2, 3) for t in (0, 1) if (c := placed[slot(r, seat, t)]) is not None
            ]
            kept[seat] = tuple(rng.sample(mine, count))
    seats = view.seats
    # Table(): every field at its default first, so a field the engine adds later
    # (terms, times, ...) is never left unset; the view's facts overwrite the rest.
    t = Table()
    t.match_id = view.match_id
    t.players = (seats[0].player, seats[1].player)
    t.ladder_id = None
    t.ruleset = view.ruleset
    t.phase = view.phase
    t.hand = view.hand
    t.round = view.round
    t.dealer = view.dealer
    t.first_dealer = None
    t.to_move = view.to_move
    t.tokens = (seats[0].tokens, seats[1].tokens)
    result = view.result
    t.winner = None if result is None else result.winner
    t.end_reason = None if result is None else result.reason
    t.ended = result is not None and not result.annulled
    t.annulled = result is not None and result.annulled
    t.seed = rng.getrandbits(256).to_bytes(32, "big").hex()
    t.seed_commitment = None
    t.hands = (hands[0], hands[1])
    t.tea = info.tea
    t.placed = placed
    t.passed = [seats[0].passed, seats[1].passed]
    t.kept = (kept[0], kept[1])
    t.set_aside = set_aside
    t.last_reveal = _last_reveal(view.last_reveal, placed)
    t.version = view.version
    return t


def sample(info: InfoSet, rng: random.Random) -> State:
    """One position consistent with ``info`` (see the module docstring)."""
    return freeze(sample_table(info, rng))
