"""evolve: apply one event to the state. Total over every event type; never
checks a rule (the log is the truth), so folding a log never fails."""

from collections.abc import Iterable

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
from service.engine.reveal import add_tokens
from service.engine.state import EMPTY_PLACED, State, Table, freeze, slot, thaw
from service.engine.turns import next_to_move


def apply(t: Table, event: Event) -> None:
    """Apply ``event`` to the mutable table ``t`` (the single home of every state change)."""
    t.version += 1
    match event:
        case CardPlayed(seat=seat, card=card, target=target):
            hands = t.hands
            rest = tuple(c for c in hands[seat] if c != card)
            t.hands = (rest, hands[1]) if seat == 0 else (hands[0], rest)
            i = slot(t.round, seat, 0 if target == "number" else 1)
            placed = t.placed
            t.placed = (*placed[:i], card, *placed[i + 1 :])
            t.to_move = next_to_move(t, seat)
        case Passed(seat=seat):
            t.passed = (True, t.passed[1]) if seat == 0 else (t.passed[0], True)
            t.to_move = next_to_move(t, seat)
        case RoundRevealed():
            gains: tuple[list[TokenKind], list[TokenKind]] = ([], [])
            for o in event.outcomes:
                for award in o.given:
                    gains[award.seat].append(award.kind)
            if gains[0] or gains[1]:
                t.tokens = (
                    add_tokens(t.tokens[0], gains[0]) if gains[0] else t.tokens[0],
                    add_tokens(t.tokens[1], gains[1]) if gains[1] else t.tokens[1],
                )
            t.last_reveal = event
            if event.round < 3:
                t.round = event.round + 1
                t.passed = (False, False)
                t.to_move = t.dealer
        case HandDealt():
            t.phase = "playing"
            t.hand = event.hand
            t.round = 1
            t.dealer = event.dealer
            t.to_move = event.dealer
            t.tea = event.tea
            t.hands = event.hands
            t.set_aside = event.set_aside
            t.placed = EMPTY_PLACED
            t.passed = (False, False)
            t.last_reveal = None
        case HandEnded():
            # Played cards are collected; hands stay as they are until keeping.
            t.phase = "keeping"
            t.to_move = None
            t.kept = (None, None)
        case CardsKept(seat=seat, cards=cards):
            t.kept = (cards, t.kept[1]) if seat == 0 else (t.kept[0], cards)
        case MatchCreated():
            t.match_id = event.match_id
            t.players = event.players
            t.ladder_id = event.ladder_id
            t.ruleset = event.ruleset
            t.first_dealer = event.first_dealer
            t.seed_commitment = event.seed_commitment
        case MatchEnded():
            t.phase = "ended"
            t.ended = True
            t.to_move = None
            t.winner = None if t.annulled else event.winner
            t.end_reason = None if t.annulled else event.reason
            t.seed = event.seed
        case MatchAnnulled():
            t.annulled = True
            t.phase = "ended"
            t.to_move = None
            t.winner = None
            t.end_reason = None
        case DisputeFiled():
            t.disputes = (*t.disputes, (event.dispute_id, None))
        case DisputeDecided():
            t.disputes = tuple(
                (d, event.upheld if d == event.dispute_id else upheld) for d, upheld in t.disputes
            )


def evolve(state: State, event: Event) -> State:
    """The state after one more event."""
    t = thaw(state)
    apply(t, event)
    return freeze(t)


def fold(events: Iterable[Event], seed: str | None = None) -> State:
    """Rebuild a match's state from its log. ``seed`` is needed only to decide later deals."""
    t = Table(seed=seed)
    for event in events:
        apply(t, event)
    return freeze(t)
