"""What each viewer may see (RULES §8). The only place that decides it.

A viewer is a seat (0 or 1: that seat's player), a live ``"spectator"``, or
``"omniscient"`` (an administrator or auditor). During the match a seat sees
its own hand, its own face-down cards and its own kept cards; everything
else hidden is absent. Once the match is over (the replay) everyone sees
everything, unless the ladder keeps hands hidden in replays
(``hide_hands_in_replay``): then hands, kept, face-down and set-aside cards
stay hidden from non-owners, while the seed is shown. The seed is never
shown before the end, to anyone: nobody may know future deals.
"""

from functools import lru_cache

from schemas.cards import Card, RoundNo, Seat
from schemas.events import (
    CardPlayed,
    CardsKept,
    DisputeFiled,
    Event,
    HandDealt,
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
from service.engine.reveal import supply_left
from service.engine.state import State
from service.engine.turns import legal_moves, must_keep
from service.engine.winning import qualifies, tokens_to_qualify

__all__ = ["Viewer", "redact", "view"]


def _sees(viewer: Viewer, owner: int, match_over: bool, hide: bool) -> bool:
    """May ``viewer`` see a hidden card owned by seat ``owner``?"""
    return viewer == owner or viewer == "omniscient" or (match_over and not hide)


def _redact_outcome(
    o: TargetOutcome, viewer: Viewer, match_over: bool, hide: bool
) -> TargetOutcomeView:
    c0, c1 = o.cards
    return TargetOutcomeView(
        target=o.target,
        tea_card=o.tea_card,
        placed=(c0 is not None, c1 is not None),
        cards=(
            c0 if o.shown or _sees(viewer, 0, match_over, hide) else None,
            c1 if o.shown or _sees(viewer, 1, match_over, hide) else None,
        ),
        shown=o.shown,
        matched=o.matched,
        winner=o.winner,
        due=o.due,
        given=o.given,
    )


def _redact_reveal(
    event: RoundRevealed, viewer: Viewer, match_over: bool, hide: bool
) -> RoundRevealedView:
    number, suit = event.outcomes
    return RoundRevealedView(
        v=event.v,
        hand=event.hand,
        round=event.round,
        outcomes=(
            _redact_outcome(number, viewer, match_over, hide),
            _redact_outcome(suit, viewer, match_over, hide),
        ),
    )


def redact(
    event: Event, viewer: Viewer, *, match_over: bool, hide_hands_in_replay: bool = False
) -> EventView:
    """One event as ``viewer`` may see it; ``match_over``: the match has ended (replay)."""
    hide = hide_hands_in_replay
    match event:
        case HandDealt():
            h0, h1 = event.hands
            return HandDealtView(
                v=event.v,
                hand=event.hand,
                dealer=event.dealer,
                tea=event.tea,
                hand_counts=(len(h0), len(h1)),
                hands=(
                    h0 if _sees(viewer, 0, match_over, hide) else None,
                    h1 if _sees(viewer, 1, match_over, hide) else None,
                ),
                set_aside=(
                    event.set_aside if viewer == "omniscient" or (match_over and not hide) else None
                ),
            )
        case CardPlayed():
            return CardPlayedView(
                v=event.v,
                seat=event.seat,
                hand=event.hand,
                round=event.round,
                target=event.target,
                card=event.card if _sees(viewer, event.seat, match_over, hide) else None,
            )
        case RoundRevealed():
            return _redact_reveal(event, viewer, match_over, hide)
        case CardsKept():
            sees = _sees(viewer, event.seat, match_over, hide)
            return CardsKeptView(
                v=event.v,
                seat=event.seat,
                hand=event.hand,
                count=len(event.cards) if sees or match_over else None,
                cards=event.cards if sees else None,
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


def _seat_view(
    state: State, seat: Seat, sees: bool, over: bool, count_public: bool
) -> SeatView:
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


@lru_cache(maxsize=_CACHE)
def _last_reveal(event: RoundRevealed, sees0: bool, sees1: bool) -> RoundRevealedView:
    """``_redact_reveal`` with the viewer reduced to which seats' cards it sees."""
    number, suit = event.outcomes
    return RoundRevealedView(
        v=event.v,
        hand=event.hand,
        round=event.round,
        outcomes=(_outcome(number, sees0, sees1), _outcome(suit, sees0, sees1)),
    )


def _outcome(o: TargetOutcome, sees0: bool, sees1: bool) -> TargetOutcomeView:
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


def view(
    state: State, viewer: Viewer, *, version: int = 0, hide_hands_in_replay: bool = False
) -> MatchView:
    """The match as ``viewer`` may see it (RULES §8). ``version`` 0: use ``state.version``."""
    over = state.ended or state.annulled
    # _sees(viewer, seat, over, hide), once per seat
    everyone = viewer == "omniscient" or (over and not hide_hands_in_replay)
    sees0 = everyone or viewer == 0
    sees1 = everyone or viewer == 1
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
        tatami=_pairs(
            state.tea, state.placed, 0 if reveal is None else reveal.round, sees0, sees1
        ),
        last_reveal=None if reveal is None else _last_reveal(reveal, sees0, sees1),
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
        seed=state.seed if over else None,
        set_aside=state.set_aside if everyone else None,
    )
