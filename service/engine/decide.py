"""decide: check a command against the rules and emit every event it causes.

Every command a match takes comes here, whoever sends it: a seat's move, the
clock's time-out, a player's dispute, an administrator's decision or
annulment. A seat command's events include all its consequences (automatic
passes, the reveal, the win check, the hand end, the next deal, the match
end), so the log alone tells the whole story. Each emitted event is applied at once to a
scratch copy of the state (``Table``) with the very handler that folding uses
(``evolve.card_played`` for a ``CardPlayed``, ...), called directly since the
type is known here, so consequences are computed from the state the log
will produce.
"""

from contextlib import suppress
from datetime import datetime, timedelta

from msgspec import UNSET, UnsetType

from schemas.cards import Card, RoundNo, Seat
from schemas.commands import (
    AnnulMatch,
    Command,
    DecideDispute,
    FileDispute,
    KeepCards,
    Pass,
    PlayCard,
    Resign,
    StartMatch,
    TimeOut,
)
from schemas.events import (
    CardPlayed,
    CardsKept,
    DisputeDecided,
    DisputeFiled,
    EndReason,
    Event,
    HandEnded,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
    Passed,
)
from schemas.rules import DEFAULT_TERMS, Ruleset
from service.engine import clock
from service.engine.dealing import SCHEME, binding, bound_commitment, deal, fits, valid_seed
from service.engine.evolve import (
    card_played,
    cards_kept,
    dispute_decided,
    dispute_filed,
    hand_dealt,
    hand_ended,
    match_annulled,
    match_created,
    match_ended,
    passed,
    round_revealed,
)
from service.engine.reveal import reveal
from service.engine.state import FIRST_SLOT, State, Table, freeze, thaw
from service.engine.turns import must_keep, other
from service.engine.winning import NO_WINNER, check_win, compare, last_hand
from service.errors import RuleConflict, RuleError, RuleInputError


def decide(state: State, command: Command) -> list[Event]:
    """The events a command causes, in order; raises ``RuleError`` if the rules forbid it."""
    return step(state, command)[1]


def step(state: State, command: Command) -> tuple[State, list[Event]]:
    """``decide`` and the state after its events, in one pass (what a caller usually wants)."""
    t = thaw(state)
    events = run(t, command)
    return freeze(t), events


def run(t: Table, command: Command) -> list[Event]:
    """Decide ``command`` on the mutable table ``t`` and apply its events to it.

    The engine's inner loop (``step`` and self-play use it). If it raises
    ``RuleError``, ``t`` must be thrown away.
    """
    events: list[Event] = []
    at = command.at
    if at is not None:
        t.last_at = at  # the instant every event of this command is recorded at
        if t.clock is not None:
            _check_clock(t, command, at)
            clock.charge(t, at)
    # The common moves first: a class pattern tries each case in turn.
    match command:
        case PlayCard():
            _play(t, command, events)
        case Pass():
            _pass(t, command, events)
        case KeepCards():
            _keep(t, command, events)
        case Resign():
            _check_live(t)
            _end(t, events, other(command.seat), "resigned")
        case TimeOut():
            _time_out(t, command, events)
        case StartMatch():
            _start(t, command, events)
        case FileDispute():
            _file_dispute(t, command, events)
        case DecideDispute():
            _decide_dispute(t, command, events)
        case AnnulMatch():
            _annul(t, command, events)
    _settle(t, events)
    if at is not None and t.clock is not None:
        clock.settle(t, events, at)
    t.version += len(events)  # one per event, as ``evolve.apply`` counts them
    return events


def time_out(state: State, seat: Seat, at: datetime) -> list[Event]:
    """The clock ran out for ``seat`` at ``at``: it loses (RULES §6), or, if it never
    moved, the match is aborted. Refused unless its clock had run out by ``at``."""
    return decide(state, TimeOut(seat=seat, at=at))


_SEAT_COMMANDS = (PlayCard, Pass, KeepCards, Resign)


def _check_clock(t: Table, command: Command, at: datetime) -> None:
    """A seat command after its seat's time ran out is refused (the service records
    the time-out); a time-out before it ran out is refused too."""
    if isinstance(command, _SEAT_COMMANDS):
        if not t.ended and not t.annulled and clock.expired(t, command.seat, at):
            raise RuleConflict(
                "time_expired",
                "Your time ran out before this move arrived; you lost on time."
                if t.moved[command.seat]
                else "Your time for a first move ran out; the match is aborted.",
            )
    elif isinstance(command, TimeOut):
        _check_live(t)
        if not clock.expired(t, command.seat, at):
            raise RuleConflict(
                "time_not_expired", "That seat's clock has not run out; the match goes on."
            )


def _time_out(t: Table, command: TimeOut, events: list[Event]) -> None:
    """RULES §6: a seat loses on time only by its clock. ``_check_clock`` judged the
    clock of a timed match at the claim's instant, before the clocks were charged;
    what it cannot judge is refused here: a match without a clock, a claim without
    an instant (whoever sends it: a player, a sweeper, an organiser)."""
    _check_live(t)
    if t.clock is None:
        raise RuleConflict(
            "match_untimed", "This match has no clock, so nobody can lose it on time."
        )
    if command.at is None:
        raise RuleInputError(
            "no_time", "A time-out is judged at the instant it is claimed, and this names none."
        )
    if not t.moved[command.seat]:
        _end(t, events, None, "aborted", no_show=command.seat)  # nobody's result, unrated
    else:
        _end(t, events, other(command.seat), "timeout")


# -- checks: the order is the order a player would want to be told ----------


def _check_live(t: Table) -> None:
    if t.annulled:
        raise RuleError("match_annulled", "This match was annulled; it takes no more moves.")
    if t.ended:
        raise RuleError("match_over", "This match is over.")
    if t.phase == "new":
        raise RuleError("not_started", "This match has not started yet.")


def _check_turn(t: Table, seat: Seat) -> None:
    """Raise unless ``seat`` is to move in a round under way (the callers test that
    first, inline, and call this only to find which error to raise)."""
    if t.phase != "playing":
        _check_live(t)
        raise RuleError(
            "wrong_phase", "The hand is over: choose which cards to keep for the next hand."
        )
    if t.to_move != seat:
        if t.passed[seat]:
            raise RuleError("already_passed", "You have passed; you take no more turns this round.")
        raise RuleError("not_your_turn", "It is not your turn.")


def _check_keeping(t: Table, command: KeepCards) -> None:
    _check_live(t)
    if t.phase != "keeping":
        raise RuleError("wrong_phase", "You can keep cards only after a hand has ended.")
    seat = command.seat
    if t.kept[seat] is not None:
        raise RuleError("already_kept", "You have already chosen which cards to keep.")
    hand = t.hands[seat]
    if not hand:
        raise RuleError("wrong_phase", "You hold no cards, so there is nothing to keep.")
    for card in command.cards:
        if card not in hand:
            raise RuleError("card_not_keepable", "You can keep only cards in your hand.")
    if len(set(command.cards)) != len(command.cards):
        raise RuleError("card_not_keepable", "Name each card you keep only once.")


_ROUND: tuple[RoundNo, ...] = (1, 1, 2, 3)
"""``_ROUND[t.round]``: the table's round as the events' round type."""


# -- commands --------------------------------------------------------------


def _start(t: Table, command: StartMatch, events: list[Event]) -> None:
    if t.match_id or t.phase != "new":
        raise RuleError("wrong_phase", "This match has already been created.")
    if not valid_seed(command.seed):
        raise RuleError("no_seed", "The shuffle seed must be 64 lower-case hex characters.")
    if t.seed is not None and t.seed != command.seed:
        raise RuleError("no_seed", "The shuffle seed given twice does not agree.")
    t.seed = command.seed
    identity = (
        command.match_id,
        command.players,
        command.ruleset,
        command.ladder_id,
        command.first_dealer,
    )
    seed_commitment = bound_commitment(command.seed, _binding(*identity))
    _SEED_FITS.remember((command.seed, seed_commitment, *identity))
    created = MatchCreated(
        match_id=command.match_id,
        players=command.players,
        ruleset=command.ruleset,
        first_dealer=command.first_dealer,
        seed_commitment=seed_commitment,
        ladder_id=command.ladder_id,
        dealing_scheme=SCHEME,
        terms=UNSET if command.terms is None else command.terms,
    )
    events.append(created)
    match_created(t, created)
    dealt = deal(command.seed, 1, command.first_dealer, ((), ()), command.ruleset.hand_size)
    events.append(dealt)
    hand_dealt(t, dealt)


def _play(t: Table, command: PlayCard, events: list[Event]) -> None:
    seat, card, target = command.seat, command.card, command.target
    if t.to_move != seat or t.phase != "playing":
        _check_turn(t, seat)  # raises
    if card not in t.hands[seat]:
        # Never echo the card: the sentence must not name a card the opponent may hold.
        raise RuleError("card_not_in_hand", "You do not hold that card.")
    i = FIRST_SLOT[t.round][seat] + (0 if target == "number" else 1)
    if t.placed[i] is not None:
        raise RuleError(
            "target_taken", f"You already have a card beside the {command.target} target."
        )
    played = CardPlayed(seat=seat, hand=t.hand, round=_ROUND[t.round], card=card, target=target)
    events.append(played)
    card_played(t, played)


def _pass(t: Table, command: Pass, events: list[Event]) -> None:
    if t.to_move != command.seat or t.phase != "playing":
        _check_turn(t, command.seat)  # raises
    turn_passed = Passed(seat=command.seat, hand=t.hand, round=_ROUND[t.round])
    events.append(turn_passed)
    passed(t, turn_passed)


def _keep(t: Table, command: KeepCards, events: list[Event]) -> None:
    _check_keeping(t, command)
    # Kept cards keep their order in hand: the order the next deal puts them first in.
    chosen = set(command.cards)
    kept = tuple([c for c in t.hands[command.seat] if c in chosen])
    chose = CardsKept(seat=command.seat, hand=t.hand, cards=kept)
    events.append(chose)
    cards_kept(t, chose)


MAX_RECEIPTS = 200
"""Receipts one dispute may present (a match has a few dozen appends at most)."""

MAX_REASON = 2_000
"""A dispute's, a decision's or an annulment's written reason, in characters."""


def _reason(text: str, what: str) -> str:
    text = text.strip()
    if not text:
        raise RuleInputError("reason_required", f"A {what} needs a written reason.")
    if len(text) > MAX_REASON:
        raise RuleInputError(
            "reason_too_long", f"A {what}'s reason is at most {MAX_REASON} characters."
        )
    return text


def _file_dispute(t: Table, command: FileDispute, events: list[Event]) -> None:
    """RULES §6 and docs/audit.md: a player of an ended match may dispute it, within
    the match's dispute window, with one dispute of theirs waiting at a time."""
    if t.players[command.seat] != command.player:
        raise RuleConflict("not_a_player", "Only the two players of this match may dispute it.")
    if t.annulled:
        raise RuleConflict("match_annulled", "This match was annulled.")
    if not t.ended:
        raise RuleConflict("match_not_finished", "A match can be disputed once it has ended.")
    window = (t.terms or DEFAULT_TERMS).dispute_window_s
    if command.at is None or t.ended_at is None:
        raise RuleConflict("no_time", "A dispute is judged against the time the match ended.")
    if command.at > t.ended_at + timedelta(seconds=window):
        raise RuleConflict(
            "dispute_window_closed",
            f"Disputes on this match closed {window} seconds after it ended.",
        )
    if any(seat == command.seat and upheld is None for _, seat, upheld in t.disputes):
        raise RuleConflict(
            "dispute_pending",
            "You already have a dispute on this match waiting for a decision.",
        )
    if any(d == command.dispute_id for d, _, _ in t.disputes):
        raise RuleConflict("dispute_exists", "A dispute with this id was already filed.")
    if len(command.receipts) > MAX_RECEIPTS:
        raise RuleInputError(
            "too_many_receipts", f"A dispute presents at most {MAX_RECEIPTS} receipts."
        )
    if any(r.match_id != t.match_id for r in command.receipts):
        raise RuleInputError("receipt_of_another_match", "A receipt names another match.")
    filed = DisputeFiled(
        dispute_id=command.dispute_id,
        seat=command.seat,
        player=command.player,
        reason=_reason(command.reason, "dispute"),
        receipts=command.receipts or UNSET,
    )
    events.append(filed)
    dispute_filed(t, filed)


def _decide_dispute(t: Table, command: DecideDispute, events: list[Event]) -> None:
    """Each dispute is decided once; upholding it annuls the match (unless it already is)."""
    found = next((d for d in t.disputes if d[0] == command.dispute_id), None)
    if found is None:
        raise RuleConflict("dispute_not_found", "No dispute of this match has this id.")
    if found[2] is not None:
        state = "upheld" if found[2] else "rejected"
        raise RuleConflict("dispute_decided", f"This dispute was already {state}.")
    reason = _reason(command.reason, "decision")
    decided = DisputeDecided(
        dispute_id=command.dispute_id, upheld=command.upheld, admin=command.admin, reason=reason
    )
    events.append(decided)
    dispute_decided(t, decided)
    if command.upheld and not t.annulled:
        annulled = MatchAnnulled(admin=command.admin, reason=reason, dispute_id=command.dispute_id)
        events.append(annulled)
        match_annulled(t, annulled)


def _annul(t: Table, command: AnnulMatch, events: list[Event]) -> None:
    """An administrator annuls a match once, during play or after its end."""
    if t.annulled:
        raise RuleConflict("match_annulled", "This match is already annulled.")
    if not t.match_id:
        raise RuleConflict("not_started", "This match has not been created.")
    annulled = MatchAnnulled(admin=command.admin, reason=_reason(command.reason, "annulment"))
    events.append(annulled)
    match_annulled(t, annulled)


# -- consequences ----------------------------------------------------------


def settle(t: Table) -> list[Event]:
    """The consequences a table still owes when it stands between the events of one
    command (a replay's frame after an automatic pass, before its reveal; a hand's
    end before the next deal): every automatic step until a seat has to act. A
    table where a seat has to act already is left as it is ([])."""
    events: list[Event] = []
    _settle(t, events)
    return events


def _settle(t: Table, events: list[Event]) -> None:
    """Emit every consequence until a seat has to act (or the match is over)."""
    while True:  # an ended or annulled match is in phase "ended"
        phase = t.phase
        if phase == "playing":
            seat = t.to_move
            if seat is None:  # both passed
                _reveal(t, events)
                continue
            # Has the seat a legal play? A card in hand and a target of this round
            # still free for it (asked after every move, so written inline).
            i = FIRST_SLOT[t.round][seat]  # the number target; the suit target follows
            if t.hands[seat] and (t.placed[i] is None or t.placed[i + 1] is None):
                return
            # RULES §4 decision: no card, or both targets of the round taken -> pass.
            turn_passed = Passed(seat=seat, hand=t.hand, round=_ROUND[t.round], automatic=True)
            events.append(turn_passed)
            passed(t, turn_passed)
        elif phase == "keeping":
            if must_keep(t, 0) or must_keep(t, 1):
                return
            _deal_next(t, events)
        else:
            return


def _reveal(t: Table, events: list[Event]) -> None:
    round_no = _ROUND[t.round]
    i = FIRST_SLOT[round_no][0]  # the round's four slots: seat 0 number, suit; seat 1 number, suit
    placed = t.placed[i : i + 4]
    revealed = reveal(t.hand, round_no, t.tea[round_no - 1], placed, t.tokens, t.ruleset)
    events.append(revealed)
    round_revealed(t, revealed)
    number, suit = revealed.outcomes
    # Only a reveal that gave a token can make a winner: without one the tokens
    # are those the previous check found no winner in (or the start's, the same
    # for both seats: neither qualifies, or both and the comparison ties). A fifth
    # of the reveals give none; skipping their check saved 0.6 % of a self-played
    # match's instructions (callgrind: 1,348,724 -> 1,341,225).
    winner, by_comparison = (
        check_win(t.tokens, t.ruleset) if number.given or suit.given else NO_WINNER
    )
    if winner is not None:
        _end(t, events, winner, "comparison" if by_comparison else "qualified")
    elif round_no == 3:
        if last_hand(t.hand, t.ruleset):
            _end(t, events, compare(t.tokens[0], t.tokens[1]), "hand_limit")
        else:
            ended = HandEnded(hand=t.hand)
            events.append(ended)
            hand_ended(t, ended)


class _SeedChecks:
    """Whether a match's seed fits its commitment (``dealing.fits``), asked before
    every deal: the answer for the latest ``size`` matches is remembered, and a
    match started here is remembered as fitting at once (its commitment was just
    made from that seed), so its first deal does not encode its binding again.

    Measured by callgrind (docs/rules-engine.md): remembering the answer saved
    the binding's encoding and two SHA-256s before every deal (1,421,636 ->
    1,370,500 instructions per self-played match); remembering it at the start
    saves the one binding left per match (1,370,584 -> 1,348,724, -1.6 %)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.answers: dict[tuple[object, ...], bool] = {}

    def remember(self, key: tuple[object, ...], answer: bool = True) -> None:
        answers = self.answers
        if len(answers) >= self.size:
            with suppress(KeyError, RuntimeError, StopIteration):  # another thread evicted it
                del answers[next(iter(answers))]  # the oldest
        answers[key] = answer

    def fits(self, t: Table, seed: str, seed_commitment: str) -> bool:
        identity = (t.match_id, t.players, t.ruleset, t.ladder_id, t.first_dealer or 0)
        key = (seed, seed_commitment, *identity)
        answer = self.answers.get(key)
        if answer is None:
            answer = fits(seed, seed_commitment, _binding(*identity))
            self.remember(key, answer)
        return answer


def _binding(
    match_id: str, players: tuple[str, str], ruleset: Ruleset, ladder_id: str | None, dealer: int
) -> bytes:
    return binding(
        match_id=match_id,
        players=players,
        ruleset=ruleset,
        ladder_id=ladder_id,
        first_dealer=dealer,
    )


_SEED_FITS = _SeedChecks(4096)


def _deal_next(t: Table, events: list[Event]) -> None:
    if t.seed is None:
        raise RuleError("no_seed", "The next hand cannot be dealt without the match's seed.")
    if t.seed_commitment is not None and not _SEED_FITS.fits(t, t.seed, t.seed_commitment):
        raise RuleError("no_seed", "The seed given does not match this match's commitment.")
    kept: tuple[tuple[Card, ...], tuple[Card, ...]] = (t.kept[0] or (), t.kept[1] or ())
    dealer = other(t.dealer if t.dealer is not None else 1)
    dealt = deal(t.seed, t.hand + 1, dealer, kept, t.ruleset.hand_size)
    events.append(dealt)
    hand_dealt(t, dealt)


def _end(
    t: Table,
    events: list[Event],
    winner: Seat | None,
    reason: EndReason,
    *,
    no_show: Seat | UnsetType = UNSET,
) -> None:
    if t.seed is None:
        raise RuleError("no_seed", "The match cannot end without revealing its seed.")
    over = MatchEnded(winner=winner, reason=reason, seed=t.seed, no_show=no_show)
    events.append(over)
    match_ended(t, over)
