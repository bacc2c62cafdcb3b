"""evolve: apply one event to the state. Total over every event type; never
checks a rule (the log is the truth), so folding a log never fails.

One small function per event type. ``fold`` finds it by the event's exact
type: a dictionary lookup is several times faster than ``match`` on msgspec
classes (whose ``isinstance`` is slow), and folding is the hottest path of
the service. ``decide`` knows the type of each event it emits and calls the
handler directly (``card_played(t, event)``).
"""

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from schemas.cards import TokenKind
from schemas.events import (
    CardPlayed,
    CardsKept,
    DisputeDecided,
    DisputeFiled,
    Event,
    HandDealt,
    HandEnded,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    Passed,
    RoundRevealed,
)
from schemas.views import Tokens
from service.engine import clock
from service.engine.state import FIRST_SLOT, State, Table, freeze, thaw

ONE_MORE: dict[TokenKind, Callable[[Tokens], Tokens]] = {
    "matcha": lambda k: Tokens(k.matcha + 1, k.chawan, k.water, k.chashaku, k.chasen),
    "chawan": lambda k: Tokens(k.matcha, k.chawan + 1, k.water, k.chashaku, k.chasen),
    "water": lambda k: Tokens(k.matcha, k.chawan, k.water + 1, k.chashaku, k.chasen),
    "chashaku": lambda k: Tokens(k.matcha, k.chawan, k.water, k.chashaku + 1, k.chasen),
    "chasen": lambda k: Tokens(k.matcha, k.chawan, k.water, k.chashaku, k.chasen + 1),
}
"""``ONE_MORE[kind](tokens)``: the same tokens and one more of ``kind`` (written
out: twice as cheap as copying the counts into a list and back)."""


def card_played(t: Table, e: CardPlayed) -> None:
    # The card leaves the hand for its slot (state.slot: round, seat, target).
    seat = e.seat
    card = e.card
    hands = t.hands
    hand = hands[seat]
    k = hand.index(card)
    rest = hand[:k] + hand[k + 1 :]
    t.hands = (rest, hands[1]) if seat == 0 else (hands[0], rest)
    t.placed[FIRST_SLOT[t.round][seat] + (0 if e.target == "number" else 1)] = card
    # The other seat moves next unless it has passed; then the mover goes on.
    t.to_move = seat if t.passed[1 - seat] else (1 if seat == 0 else 0)


def passed(t: Table, e: Passed) -> None:
    # The other seat moves on alone; when both have passed nobody moves (reveal).
    seat = e.seat
    t.passed[seat] = True
    t.to_move = None if t.passed[1 - seat] else (1 if seat == 0 else 0)


def round_revealed(t: Table, e: RoundRevealed) -> None:
    number, suit = e.outcomes
    given = number.given + suit.given
    if given:
        a, b = t.tokens
        for award in given:
            if award.seat == 0:
                a = ONE_MORE[award.kind](a)
            else:
                b = ONE_MORE[award.kind](b)
        t.tokens = (a, b)
    t.last_reveal = e
    if e.round < 3:
        # The next round starts: nobody has passed, the dealer moves first.
        t.round = e.round + 1
        t.passed = [False, False]
        t.to_move = t.dealer


def hand_dealt(t: Table, e: HandDealt) -> None:
    t.phase = "playing"
    t.hand = e.hand
    t.round = 1
    t.dealer = e.dealer
    t.to_move = e.dealer
    t.tea = e.tea
    t.hands = e.hands
    t.set_aside = e.set_aside
    t.placed = [None] * 12
    t.passed = [False, False]
    t.last_reveal = None


def hand_ended(t: Table, e: HandEnded) -> None:
    # Played cards are collected (they stay in ``placed`` until the deal);
    # each seat still holding cards now chooses which to keep.
    t.phase = "keeping"
    t.to_move = None
    t.kept = (None, None)


def cards_kept(t: Table, e: CardsKept) -> None:
    t.kept = (e.cards, t.kept[1]) if e.seat == 0 else (t.kept[0], e.cards)


def match_created(t: Table, e: MatchCreated) -> None:
    t.match_id = e.match_id
    t.players = e.players
    t.ladder_id = e.ladder_id
    t.ruleset = e.ruleset
    t.first_dealer = e.first_dealer
    t.seed_commitment = e.seed_commitment
    t.terms = e.terms or None  # unset in a match created before terms were copied
    control = t.terms.clock if t.terms is not None else None
    if control:
        t.clock = control
        t.clock_left = clock.start_values(control)


def match_ended(t: Table, e: MatchEnded) -> None:
    t.phase = "ended"
    t.ended = True
    t.to_move = None
    t.winner = None if t.annulled else e.winner
    t.end_reason = None if t.annulled else e.reason
    t.seed = e.seed
    t.ended_at = t.last_at
    t.clock_since = (None, None)


def match_annulled(t: Table, e: MatchAnnulled) -> None:
    # After the fact, or during play: either way the match stands with no result.
    t.annulled = True
    t.phase = "ended"
    t.to_move = None
    t.winner = None
    t.end_reason = None
    t.clock_since = (None, None)


def dispute_filed(t: Table, e: DisputeFiled) -> None:
    t.disputes = (*t.disputes, (e.dispute_id, e.seat, None))


def dispute_decided(t: Table, e: DisputeDecided) -> None:
    t.disputes = tuple(
        (d, seat, e.upheld if d == e.dispute_id else up) for d, seat, up in t.disputes
    )


APPLY: dict[type, Callable[[Table, Any], None]] = {
    CardPlayed: card_played,
    Passed: passed,
    RoundRevealed: round_revealed,
    HandDealt: hand_dealt,
    HandEnded: hand_ended,
    CardsKept: cards_kept,
    MatchCreated: match_created,
    MatchEnded: match_ended,
    MatchAnnulled: match_annulled,
    DisputeFiled: dispute_filed,
    DisputeDecided: dispute_decided,
}


def apply(t: Table, event: Event, at: datetime | None = None) -> None:
    """Apply ``event``, recorded at ``at`` (if known), to the mutable table ``t``
    (the single home of every state change)."""
    t.version += 1
    if at is None:
        APPLY[type(event)](t, event)
        return
    t.last_at = at
    if t.clock is not None:
        clock.charge(t, at)
    APPLY[type(event)](t, event)
    if t.clock is not None:
        clock.settle(t, (event,), at)


def evolve(state: State, event: Event, at: datetime | None = None) -> State:
    """The state after one more event (recorded at ``at``, if known)."""
    t = thaw(state)
    apply(t, event, at)
    return freeze(t)


def fold(
    events: Iterable[Event],
    seed: str | None = None,
    times: Iterable[datetime] | None = None,
) -> State:
    """Rebuild a match's state from its log. ``seed`` is needed only to decide later
    deals; ``times``, each event's ``recorded_at``, only by the rules that read time
    (the dispute window, the clocks): the match core always passes them."""
    t = Table(seed=seed)
    handlers = APPLY
    count = 0
    if times is None:
        for count, event in enumerate(events, start=1):  # noqa: B007 (count is used below)
            handlers[type(event)](t, event)
    else:
        for count, (event, at) in enumerate(zip(events, times, strict=True), start=1):  # noqa: B007
            t.last_at = at
            if t.clock is None:
                handlers[type(event)](t, event)
            else:  # the clocks are folded with the events (service.engine.clock)
                clock.charge(t, at)
                handlers[type(event)](t, event)
                clock.settle(t, (event,), at)
    t.version = count
    return freeze(t)
