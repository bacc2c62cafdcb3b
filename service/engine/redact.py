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

from schemas.cards import Card, RoundNo, Seat, TokenKind
from schemas.events import (
    CardPlayed,
    CardsKept,
    DisputeFiled,
    Event,
    HandDealt,
    RoundRevealed,
    TargetOutcome,
)
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
from service.engine.state import State, slot
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


def _tokens(counts: dict[TokenKind, int]) -> Tokens:
    return Tokens(
        matcha=counts["matcha"],
        chawan=counts["chawan"],
        water=counts["water"],
        chashaku=counts["chashaku"],
        chasen=counts["chasen"],
    )


def _seat_view(state: State, seat: Seat, viewer: Viewer, over: bool, hide: bool) -> SeatView:
    sees = _sees(viewer, seat, over, hide)
    hand = state.hands[seat]
    kept = state.kept[seat]
    # The keep choice is secret until the deal shows the counts (RULES §7).
    count_public = state.phase != "keeping" or over
    return SeatView(
        seat=seat,
        player=state.players[seat],
        hand=hand if sees else None,
        hand_count=len(hand),
        tokens=state.tokens[seat],
        passed=state.passed[seat],
        must_keep=must_keep(state, seat) and not over,
        kept_count=None if kept is None or not (sees or count_public) else len(kept),
        kept=kept if sees else None,
        qualifies=qualifies(state.tokens[seat], state.ruleset),
        tokens_to_qualify=tokens_to_qualify(state.tokens[seat], state.ruleset),
    )


def _pairs(state: State, viewer: Viewer, over: bool, hide: bool) -> tuple[PairView, ...]:
    last = state.last_reveal.round if state.last_reveal is not None else 0
    pairs: list[PairView] = []
    rounds: tuple[RoundNo, ...] = (1, 2, 3)
    for round_no, tea in zip(rounds, state.tea, strict=False):
        revealed = round_no <= last
        targets: list[TargetView] = []
        for ti, (target, tea_card) in enumerate((("number", tea.number), ("suit", tea.suit))):
            c0 = state.placed[slot(round_no, 0, ti)]
            c1 = state.placed[slot(round_no, 1, ti)]
            shown = revealed and c0 is not None and c1 is not None
            visible: tuple[Card | None, Card | None] = (
                c0 if shown or _sees(viewer, 0, over, hide) else None,
                c1 if shown or _sees(viewer, 1, over, hide) else None,
            )
            targets.append(
                TargetView(
                    target="number" if target == "number" else "suit",
                    tea_card=tea_card,
                    occupied=(c0 is not None, c1 is not None),
                    cards=visible,
                )
            )
        pairs.append(
            PairView(round=round_no, number=targets[0], suit=targets[1], revealed=revealed)
        )
    return tuple(pairs)


def view(
    state: State, viewer: Viewer, *, version: int = 0, hide_hands_in_replay: bool = False
) -> MatchView:
    """The match as ``viewer`` may see it (RULES §8). ``version`` 0: use ``state.version``."""
    hide = hide_hands_in_replay
    over = state.ended or state.annulled
    moves = tuple(legal_moves(state, viewer)) if (viewer == 0 or viewer == 1) and not over else ()
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
        seats=(_seat_view(state, 0, viewer, over, hide), _seat_view(state, 1, viewer, over, hide)),
        tatami=_pairs(state, viewer, over, hide),
        last_reveal=(
            None
            if state.last_reveal is None
            else _redact_reveal(state.last_reveal, viewer, over, hide)
        ),
        supply=_tokens(supply_left(state.tokens, state.ruleset)),
        must_keep=(viewer == 0 or viewer == 1) and must_keep(state, viewer) and not over,
        legal_moves=moves,
        result=(
            Result(winner=state.winner, reason=state.end_reason, annulled=state.annulled)
            if over
            else None
        ),
        seed_commitment=state.seed_commitment,
        seed=state.seed if over else None,
        set_aside=state.set_aside if viewer == "omniscient" or (over and not hide) else None,
    )
