"""A viewer's information set: what a ``MatchView`` says, arranged for sampling.

The search bot and the spectators' estimate never see the engine's ``State``:
they get a ``MatchView`` (``service.engine.view(state, viewer)``), and this
module turns it into an ``InfoSet``: every public fact and every card the
viewer may see, in the engine's own layout (``placed`` slots, hands by seat),
plus the cards it cannot see and the places they must go:

* the opponent's hand (a spectator: both hands), by count;
* face-down cards the viewer may not see (a lone card never revealed, a card
  of the round under way), by slot;
* the cards set aside (two, RULES §3);
* kept cards whose identity is secret (RULES §7: only the count is public,
  and not even that while the choice is being made).

``service.bots.determinize`` fills those places with the unseen cards; every
filling gives back the same view (tests/bots/test_determinize.py).

What the view does not carry is the history of earlier hands. All cards are
collected and reshuffled between hands, so the only trace an earlier hand
leaves on this one is the opponent's kept cards, which the view shows as a
count: a determinization draws them from every card the viewer cannot see.
"""

from __future__ import annotations

from typing import Final

import msgspec

from schemas.cards import ALL_CARDS, Card, Seat
from schemas.events import TeaPair
from schemas.views import MatchView, PairView, Viewer
from service.engine.state import slot

SEAT_PAIR: Final[tuple[Seat, Seat]] = (0, 1)


class NotAPosition(ValueError):
    """The view has no position to sample (no hand dealt yet, or inconsistent counts)."""


class InfoSet(msgspec.Struct, frozen=True, kw_only=True):
    """One viewer's knowledge of a match, derived from its view alone."""

    view: MatchView
    """The view it was built from (public facts are read from it)."""
    observer: Viewer
    tea: tuple[TeaPair, ...]
    """Tea cards of the three rounds of this hand."""
    placed: tuple[Card | None, ...]
    """The 12 slots (``state.slot``) with every card the observer sees; None
    where no card lies *or* where a card lies that it may not see."""
    hidden_slots: tuple[int, ...]
    """Slots holding a card the observer may not see (a lone card, a card of
    the round under way)."""
    hands: tuple[tuple[Card, ...] | None, tuple[Card, ...] | None]
    """Each seat's hand where the observer sees it (None: only the count)."""
    hand_counts: tuple[int, int]
    unseen: tuple[Card, ...]
    """Every card the observer cannot see, in canonical order."""
    set_aside_count: int
    """Set-aside cards the observer cannot see (2 during the match, 0 once it shows them)."""
    set_aside: tuple[Card, ...] | None
    """The set-aside cards, where the observer sees them."""
    kept: tuple[tuple[Card, ...] | None, tuple[Card, ...] | None]
    """Kept cards where the observer sees them, else None."""
    kept_counts: tuple[int | None, int | None]
    """How many cards a seat kept, where that is public and the cards are not."""
    kept_secret: tuple[bool, bool]
    """Between hands: the seat has chosen which cards to keep, and the choice is
    secret from the observer (count included, until the deal)."""

    @property
    def hidden_hand_counts(self) -> tuple[int, int]:
        """Cards to draw into each seat's hand (0 where the observer sees the hand)."""
        return (
            0 if self.hands[0] is not None else self.hand_counts[0],
            0 if self.hands[1] is not None else self.hand_counts[1],
        )


def _slots_of(pair: PairView) -> tuple[tuple[int, Seat, bool, Card | None], ...]:
    """(slot, seat, occupied, card seen) of a pair's four places."""
    out = []
    for seat in SEAT_PAIR:
        for index, target in enumerate((pair.number, pair.suit)):
            out.append(
                (slot(pair.round, seat, index), seat, target.occupied[seat], target.cards[seat])
            )
    return tuple(out)


def info_set(view: MatchView) -> InfoSet:
    """The information set of ``view``'s viewer; ``NotAPosition`` before the first deal."""
    if not view.tatami or view.hand == 0:
        raise NotAPosition("No hand has been dealt yet: there is no position to sample.")
    tea = tuple(TeaPair(number=p.number.tea_card, suit=p.suit.tea_card) for p in view.tatami)
    seen: set[Card] = set()
    for pair in tea:
        seen.add(pair.number)
        seen.add(pair.suit)
    placed: list[Card | None] = [None] * 12
    hidden: list[int] = []
    for pair_view in view.tatami:
        for i, _seat, occupied, card in _slots_of(pair_view):
            if card is not None:
                placed[i] = card
                seen.add(card)
            elif occupied:
                hidden.append(i)
    seats = view.seats
    hands = (seats[0].hand, seats[1].hand)
    for hand in hands:
        seen.update(hand or ())
    if view.set_aside is not None:
        seen.update(view.set_aside)
    unseen = tuple(c for c in ALL_CARDS if c not in seen)
    counts = (seats[0].hand_count, seats[1].hand_count)
    to_hands = sum(n for n, h in zip(counts, hands, strict=True) if h is None)
    set_aside_count = len(unseen) - to_hands - len(hidden)
    expected_aside = 0 if view.set_aside is not None else 2
    if set_aside_count != expected_aside:
        raise NotAPosition(
            f"The view's counts do not add up: {len(unseen)} unseen cards for {to_hands} in"
            f" hands, {len(hidden)} face down and {expected_aside} set aside."
        )
    keeping = view.phase == "keeping"
    return InfoSet(
        view=view,
        observer=view.viewer,
        tea=tea,
        placed=tuple(placed),
        hidden_slots=tuple(hidden),
        hands=hands,
        hand_counts=counts,
        unseen=unseen,
        set_aside_count=set_aside_count,
        set_aside=view.set_aside,
        kept=(seats[0].kept, seats[1].kept),
        kept_counts=(
            None if seats[0].kept is not None else seats[0].kept_count,
            None if seats[1].kept is not None else seats[1].kept_count,
        ),
        kept_secret=tuple(  # type: ignore[arg-type]
            keeping and s.kept is None and not s.must_keep and s.hand_count > 0 for s in seats
        ),
    )
