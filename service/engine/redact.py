"""What each viewer may see (RULES §8): the table of the rules, as ``sight``,
and the one observer that applies it to events (``redact``) and states (``view``).

A viewer is a seat (0 or 1: that seat's player), a ``"spectator"``, or
``"omniscient"`` (an administrator, once a match is over). *Which* viewer a
caller is, on which channel, and under which of the match's terms, is decided
by the viewer policy (``service.matches.policy``); what that viewer then sees
is decided here and nowhere else. During the match a seat sees its own hand,
its own face-down cards and its own kept cards; everything else hidden is
absent. Once the match is over (the replay) everyone sees everything, unless
the match's terms keep hands hidden in replays (``hide_hands_in_replay``): then
hands, kept, face-down and set-aside cards stay hidden from all but their
owner and administrators, and so does the seed, which would re-deal them. The
seed is never shown before the end, to anyone: nobody may know future deals.
"""

from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

from schemas.cards import Card, RoundNo, Seat
from schemas.events import (
    CardPlayed,
    CardsKept,
    DisputeFiled,
    Event,
    HandDealt,
    MatchEnded,
    RoundRevealed,
    TargetOutcome,
    TeaPair,
)
from schemas.rules import Ruleset
from schemas.views import (
    CardPlayedView,
    CardsKeptView,
    DisputeFiledView,
    EventView,
    HandDealtView,
    MatchEndedView,
    MatchView,
    PairView,
    Result,
    RoundRevealedView,
    SeatView,
    TargetOutcomeView,
    TargetView,
    Tokens,
    Viewer,
)
from service.engine import clock
from service.engine.reveal import supply_left
from service.engine.state import State
from service.engine.turns import legal_moves, must_keep
from service.engine.winning import qualifies, tokens_to_qualify

__all__ = ["Sight", "Viewer", "redact", "sight", "view"]


class Sight(NamedTuple):
    """What one viewer sees of the hidden parts of a match (RULES §8), worked out once."""

    seat0: bool
    """Seat 0's hidden cards: its hand, its face-down and lone cards, what it kept."""
    seat1: bool
    set_aside: bool
    seed: bool


@lru_cache(maxsize=32)
def sight(viewer: Viewer, over: bool, hide: bool) -> Sight:
    """RULES §8 as a function: ``viewer`` looking at a match that is ``over`` (ended
    or annulled) or not, on a ladder that keeps hands hidden in replays (``hide``) or not.

    During play a seat sees its own hidden cards and nobody else's, and nobody
    sees the set-aside cards or the seed: not even an administrator (who then
    watches as a spectator: the viewer policy never asks for "omniscient"
    during play, but this table would still hide the seed). After the end
    everyone sees everything, unless hands stay hidden: then each seat still
    sees only its own cards, and only an administrator sees the rest and the
    seed (which would re-deal every hand).
    """
    omniscient = viewer == "omniscient"
    everyone = omniscient or (over and not hide)
    return Sight(
        seat0=everyone or viewer == 0,
        seat1=everyone or viewer == 1,
        set_aside=everyone,
        seed=over and everyone,
    )


def _outcome(o: TargetOutcome, sees0: bool, sees1: bool) -> TargetOutcomeView:
    """One target's reveal: a shown card to everyone, a lone card only to whoever sees its seat."""
    c0, c1 = o.cards
    return TargetOutcomeView(
        target=o.target,
        tea_card=o.tea_card,
        placed=(c0 is not None, c1 is not None),
        cards=(c0 if o.shown or sees0 else None, c1 if o.shown or sees1 else None),
        shown=o.shown,
        matched=o.matched,
        winner=o.winner,
        due=o.due,
        given=o.given,
    )


@lru_cache(maxsize=4096)
def _reveal(event: RoundRevealed, sees0: bool, sees1: bool) -> RoundRevealedView:
    """A reveal as a viewer sees it (cached: every frame of a hand shows its last reveal)."""
    number, suit = event.outcomes
    return RoundRevealedView(
        v=event.v,
        hand=event.hand,
        round=event.round,
        outcomes=(_outcome(number, sees0, sees1), _outcome(suit, sees0, sees1)),
    )


def redact(
    event: Event, viewer: Viewer, *, match_over: bool, hide_hands_in_replay: bool = False
) -> EventView:
    """One event as ``viewer`` may see it; ``match_over``: the match has ended (replay)."""
    seen = sight(viewer, match_over, hide_hands_in_replay)
    match event:
        case HandDealt():
            h0, h1 = event.hands
            return HandDealtView(
                v=event.v,
                hand=event.hand,
                dealer=event.dealer,
                tea=event.tea,
                hand_counts=(len(h0), len(h1)),
                hands=(h0 if seen.seat0 else None, h1 if seen.seat1 else None),
                set_aside=event.set_aside if seen.set_aside else None,
            )
        case CardPlayed():
            return CardPlayedView(
                v=event.v,
                seat=event.seat,
                hand=event.hand,
                round=event.round,
                target=event.target,
                card=event.card if seen[event.seat] else None,
            )
        case RoundRevealed():
            return _reveal(event, seen.seat0, seen.seat1)
        case CardsKept():
            sees = seen[event.seat]
            return CardsKeptView(
                v=event.v,
                seat=event.seat,
                hand=event.hand,
                count=len(event.cards) if sees or match_over else None,
                cards=event.cards if sees else None,
            )
        case MatchEnded():
            return MatchEndedView(
                v=event.v,
                winner=event.winner,
                reason=event.reason,
                seed=event.seed if seen.seed else None,
            )
        case DisputeFiled():
            # Never opened by the match ending: a dispute is between its filer and the admins.
            own = viewer == event.seat or viewer == "omniscient"
            return DisputeFiledView(
                v=event.v,
                dispute_id=event.dispute_id,
                seat=event.seat if own else None,
                player=event.player if own else None,
                reason=event.reason if own else None,
                receipts=(event.receipts or None) if own else None,
            )
        case _:
            return event


# -- views -----------------------------------------------------------------------------------
#
# ``view`` runs for every frame of every replay archive (one or two per event),
# so it is built for speed: who sees which seat's hidden cards is decided once
# per call (``sees0``/``sees1``), and the parts that repeat from one state to
# the next (the tatami of a hand, the last reveal, the supply, how close a seat
# is to qualifying) come from small caches keyed by the values they are built
# from. The views are immutable, so a cached one is the same value as a fresh one.

_CACHE = 4096
"""Entries per cache: a match has at most a few hundred distinct parts."""


@lru_cache(maxsize=_CACHE)
def _supply(tokens: tuple[Tokens, Tokens], ruleset: Ruleset) -> Tokens:
    counts = supply_left(tokens, ruleset)
    return Tokens(
        matcha=counts["matcha"],
        chawan=counts["chawan"],
        water=counts["water"],
        chashaku=counts["chashaku"],
        chasen=counts["chasen"],
    )


def _seat_view(state: State, seat: Seat, sees: bool, over: bool, count_public: bool) -> SeatView:
    kept = state.kept[seat]
    hand = state.hands[seat]
    return _seat(
        seat,
        state.players[seat],
        hand,
        kept,
        state.tokens[seat],
        state.passed[seat],
        state.ruleset,
        sees,
        not over and state.phase == "keeping" and kept is None and bool(hand),
        None if kept is None or not (sees or count_public) else len(kept),
    )


@lru_cache(maxsize=_CACHE)
def _seat(
    seat: Seat,
    player: str,
    hand: tuple[Card, ...],
    kept: tuple[Card, ...] | None,
    tokens: Tokens,
    passed: bool,
    ruleset: Ruleset,
    sees: bool,
    must_keep: bool,
    kept_count: int | None,
) -> SeatView:
    """A seat as a viewer sees it; cached: most events change one seat at most."""
    qualified, short = _qualifying(tokens, ruleset)
    return SeatView(
        seat=seat,
        player=player,
        hand=hand if sees else None,
        hand_count=len(hand),
        tokens=tokens,
        passed=passed,
        must_keep=must_keep,
        kept_count=kept_count,
        kept=kept if sees else None,
        qualifies=qualified,
        tokens_to_qualify=short,
    )


@lru_cache(maxsize=_CACHE)
def _qualifying(tokens: Tokens, ruleset: Ruleset) -> tuple[bool, int]:
    return qualifies(tokens, ruleset), tokens_to_qualify(tokens, ruleset)


_ROUNDS: tuple[RoundNo, RoundNo, RoundNo] = (1, 2, 3)


def _pairs(
    tea: tuple[TeaPair, ...],
    placed: tuple[Card | None, ...],
    last: int,
    sees0: bool,
    sees1: bool,
) -> tuple[PairView, ...]:
    """The tatami: ``placed`` is indexed by ``state.slot``; ``last``: the last revealed round."""
    # slot(round, seat, target) = (round - 1) * 4 + seat * 2 + target: a round's four
    # slots are seat 0 number, seat 0 suit, seat 1 number, seat 1 suit.
    if len(tea) == 3:  # every hand after the deal: one card played changes one pair
        return (
            _pair(1, tea[0], *placed[0:4], last >= 1, sees0, sees1),
            _pair(2, tea[1], *placed[4:8], last >= 2, sees0, sees1),
            _pair(3, tea[2], *placed[8:12], last >= 3, sees0, sees1),
        )
    return tuple(
        _pair(round_no, tea_pair, *placed[(round_no - 1) * 4 : round_no * 4],
              round_no <= last, sees0, sees1)
        for round_no, tea_pair in zip(_ROUNDS, tea, strict=False)
    )  # fmt: skip


@lru_cache(maxsize=_CACHE)
def _pair(
    round_no: RoundNo,
    tea: TeaPair,
    n0: Card | None,
    s0: Card | None,
    n1: Card | None,
    s1: Card | None,
    revealed: bool,
    sees0: bool,
    sees1: bool,
) -> PairView:
    """One tatami pair; a card lying face down shows only to a viewer who sees its seat."""
    n_shown = revealed and n0 is not None and n1 is not None
    s_shown = revealed and s0 is not None and s1 is not None
    return PairView(
        round=round_no,
        number=TargetView(
            target="number",
            tea_card=tea.number,
            occupied=(n0 is not None, n1 is not None),
            cards=(n0 if n_shown or sees0 else None, n1 if n_shown or sees1 else None),
        ),
        suit=TargetView(
            target="suit",
            tea_card=tea.suit,
            occupied=(s0 is not None, s1 is not None),
            cards=(s0 if s_shown or sees0 else None, s1 if s_shown or sees1 else None),
        ),
        revealed=revealed,
    )


def view(
    state: State,
    viewer: Viewer,
    *,
    version: int = 0,
    hide_hands_in_replay: bool = False,
    now: datetime | None = None,
) -> MatchView:
    """The match as ``viewer`` may see it (RULES §8). ``version`` 0: use ``state.version``.
    ``now``: the server's time, to show both clocks at (``clock.clocks``)."""
    over = state.ended or state.annulled
    sees0, sees1, set_aside, seed = sight(viewer, over, hide_hands_in_replay)
    seat_viewer = viewer == 0 or viewer == 1
    # The keep choice is secret until the deal shows the counts (RULES §7).
    count_public = state.phase != "keeping" or over
    reveal = state.last_reveal
    return MatchView(
        match_id=state.match_id,
        version=version or state.version,
        viewer=viewer,
        ruleset=state.ruleset,
        phase=state.phase,
        hand=state.hand,
        round=state.round,
        dealer=state.dealer,
        to_move=state.to_move,
        seats=(
            _seat_view(state, 0, sees0, over, count_public),
            _seat_view(state, 1, sees1, over, count_public),
        ),
        tatami=_pairs(state.tea, state.placed, 0 if reveal is None else reveal.round, sees0, sees1),
        last_reveal=None if reveal is None else _reveal(reveal, sees0, sees1),
        supply=_supply(state.tokens, state.ruleset),
        must_keep=seat_viewer and not over and must_keep(state, viewer),  # type: ignore[arg-type]
        legal_moves=(
            tuple(legal_moves(state, viewer)) if seat_viewer and not over else ()  # type: ignore[arg-type]
        ),
        result=(
            Result(winner=state.winner, reason=state.end_reason, annulled=state.annulled)
            if over
            else None
        ),
        seed_commitment=state.seed_commitment,
        seed=state.seed if seed else None,
        set_aside=state.set_aside if set_aside else None,
        clocks=None if now is None else clock.clocks(state, now),
    )
