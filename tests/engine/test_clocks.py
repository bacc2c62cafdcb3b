"""The clocks, with an injected clock (every command carries its ``at``; no sleeps).

The engine's clock (``service.engine.clock``) is folded incrementally; these
tests check it against a second, plain definition: a seat's time used is the
sum, over each pair of consecutive events, of the time between them while the
seat had to act after the first.
"""

import random
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.cards import Seat
from schemas.commands import KeepCards, Pass, PlayCard, Resign, StartMatch, TimeOut
from schemas.events import Event, MatchEnded
from schemas.rules import STANDARD, Correspondence, MatchTerms, RealTime, TimeControl
from service.bots.simple import random_bot
from service.engine import State, fold, initial_state, step
from service.engine import clock as clk
from service.engine.evolve import evolve
from service.errors import RuleConflict, RuleError

SEED = "ab" * 32
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REAL = RealTime(base_s=60, increment_s=2, no_show_s=30)
POST = Correspondence(per_move_s=3_600, no_show_s=7_200)
MS = timedelta(milliseconds=1)


def start(
    control: TimeControl, first_dealer: Seat = 0
) -> tuple[State, list[Event], list[datetime]]:
    command = StartMatch(
        match_id="m1",
        players=("p0", "p1"),
        ruleset=STANDARD,
        first_dealer=first_dealer,
        seed=SEED,
        terms=MatchTerms(clock=control),
        at=T0,
    )
    state, events = step(initial_state(SEED), command)
    return state, events, [T0] * len(events)


def seat_to_act(state: State) -> Seat | None:
    now = clk.acting(state)
    return 0 if now[0] else 1 if now[1] else None


def used_by_definition(
    events: list[Event], times: list[datetime], seat: Seat
) -> tuple[timedelta, timedelta, int]:
    """(time used before its first move, after it, its moves), from the log alone."""
    before = after = timedelta()
    moves = 0
    state = initial_state(SEED)
    for i, event in enumerate(events):
        state = evolve(state, event)
        if clk.mover(event) == seat:
            moves += 1
        if i + 1 < len(events) and clk.acting(state)[seat] and not state.ended:
            gap = times[i + 1] - times[i]
            if moves:
                after += gap
            else:
                before += gap
    return before, after, moves


def expected_left_us(
    control: TimeControl, events: list[Event], times: list[datetime], seat: Seat, now: datetime
) -> int:
    before, after, moves = used_by_definition([*events], [*times], seat)
    state = fold(events, SEED, times)
    running = clk.acting(state)[seat] and not state.ended
    tail = (now - times[-1]) if running else timedelta()
    if not moves:
        return control.no_show_s * 1_000_000 - (before + tail) // timedelta(microseconds=1)
    if isinstance(control, RealTime):
        budget = control.base_s + control.increment_s * (moves - 1)
        return budget * 1_000_000 - (after + tail) // timedelta(microseconds=1)
    # Correspondence: the time since the seat last had to start a move.
    return control.per_move_s * 1_000_000 - (
        (now - _turn_began(events, times, seat)) // timedelta(microseconds=1) if running else 0
    )


def _turn_began(events: list[Event], times: list[datetime], seat: Seat) -> datetime:
    """When the seat last began to have to act (its current deadline's start)."""
    state = initial_state(SEED)
    began = times[0]
    was = False
    for event, at in zip(events, times, strict=True):
        state = evolve(state, event)
        now = clk.acting(state)[seat]
        if (now and not was) or (now and clk.mover(event) == seat):
            began = at
        was = now
    return began


def play(
    control: TimeControl, rng: random.Random, thinks: list[int], commands: int
) -> tuple[State, list[Event], list[datetime]]:
    """A random match: each command taken ``thinks[i]`` ms after the previous one."""
    state, events, times = start(control, first_dealer=rng.choice((0, 1)))
    at = T0
    for i in range(commands):
        seat = seat_to_act(state)
        if seat is None:
            break
        at = at + thinks[i % len(thinks)] * MS
        if clk.expired(state, seat, at):
            break
        command = msgspec.structs.replace(random_bot(state, seat, rng), at=at)
        state, new = step(state, command)
        events += new
        times += [at] * len(new)
    return state, events, times


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    thinks=st.lists(st.integers(0, 5_000), min_size=1, max_size=20),
    commands=st.integers(0, 80),
    real=st.booleans(),
    probe_ms=st.integers(0, 100_000),
)
def test_given_any_sequence_of_timed_moves_then_each_seats_remaining_time_is_what_the_log_says(
    seed: int, thinks: list[int], commands: int, real: bool, probe_ms: int
) -> None:
    control: TimeControl = REAL if real else POST
    state, events, times = play(control, random.Random(seed), thinks, commands)
    assert state == fold(events, SEED, times), "decide's clocks are the fold's clocks"
    now = times[-1] + probe_ms * MS
    for seat in (0, 1):
        assert clk.remaining_us(state, seat, now) == expected_left_us(
            control, events, times, seat, now
        )
        assert clk.remaining_ms(state, seat, now) >= 0


def test_given_a_real_time_match_when_a_seat_moves_at_once_then_it_gains_the_increment_once() -> (
    None
):
    state, _, _ = start(REAL, first_dealer=0)
    state, _ = step(state, Pass(seat=0, at=T0 + 5 * MS))  # the first move starts the clock
    assert clk.remaining_us(state, 0, T0 + 5 * MS) == REAL.base_s * 1_000_000
    # Seat 1 plays on alone (seat 0 passed): each of its moves is one increment.
    at = T0 + 10 * MS
    state, _ = step(state, msgspec.structs.replace(random_bot(state, 1, random.Random(1)), at=at))
    after_first = clk.remaining_us(state, 1, at)
    assert after_first == REAL.base_s * 1_000_000
    if state.to_move == 1:
        at2 = at + 300 * MS
        command = PlayCard(seat=1, card=state.hands[1][0], target="suit", at=at2)
        if state.placed[6] is not None or state.placed[7] is None:
            command = Pass(seat=1, at=at2)
        state, _ = step(state, command)
        assert clk.remaining_us(state, 1, at2) == after_first - 300_000 + 2_000_000


def _to_keeping() -> tuple[State, datetime]:
    """A real-time match played by random moves 100 ms apart to its first keep choice."""
    for seed in range(50):
        state, _, _ = start(REAL)
        rng = random.Random(seed)
        at = T0
        while state.phase == "playing":
            seat = seat_to_act(state)
            assert seat is not None
            at += 100 * MS
            state, _ = step(state, msgspec.structs.replace(random_bot(state, seat, rng), at=at))
        if state.phase == "keeping" and clk.acting(state) == (True, True):
            return state, at
    raise AssertionError("no random match reached a keep choice with both seats holding cards")


def test_given_the_keep_choice_when_one_seat_keeps_then_the_other_seats_clock_runs_on() -> None:
    state, at = _to_keeping()
    assert clk.acting(state) == (True, True), "both choose at once, each on its own clock"
    left1 = clk.remaining_us(state, 1, at)
    state, _ = step(state, KeepCards(seat=0, cards=(), at=at + 400 * MS))
    assert state.phase == "keeping" and state.clock_since[0] is None
    assert clk.remaining_us(state, 1, at + 1_000 * MS) == left1 - 1_000_000


@pytest.mark.parametrize("control", [REAL, POST], ids=["real_time", "correspondence"])
def test_given_a_running_clock_a_move_1_ms_before_it_runs_out_is_accepted_and_1_ms_after_refused(
    control: TimeControl,
) -> None:
    state, _, _ = start(control, first_dealer=0)
    state, _ = step(state, Pass(seat=0, at=T0 + 10 * MS))
    state, _ = step(state, Pass(seat=1, at=T0 + 20 * MS))  # both have moved: main clocks
    seat = seat_to_act(state)
    assert seat is not None
    due = clk.deadline(state, seat)
    assert due is not None
    move = random_bot(state, seat, random.Random(3))
    step(state, msgspec.structs.replace(move, at=due - MS))  # accepted
    with pytest.raises(RuleConflict) as refused:
        step(state, msgspec.structs.replace(move, at=due + MS))
    assert refused.value.code == "time_expired" and refused.value.status == 409
    with pytest.raises(RuleConflict) as resign:
        step(state, Resign(seat=seat, at=due + MS))
    assert resign.value.code == "time_expired"


def test_given_a_running_clock_an_early_time_out_is_refused_and_one_at_the_deadline_ends_it() -> (
    None
):
    state, _, _ = start(REAL, first_dealer=0)
    state, _ = step(state, Pass(seat=0, at=T0 + 10 * MS))
    state, _ = step(state, Pass(seat=1, at=T0 + 20 * MS))
    seat = seat_to_act(state)
    assert seat is not None
    due = clk.deadline(state, seat)
    assert due is not None
    with pytest.raises(RuleConflict) as early:
        step(state, TimeOut(seat=seat, at=due - MS))
    assert early.value.code == "time_not_expired"
    over, events = step(state, TimeOut(seat=seat, at=due))
    assert events[-1] == MatchEnded(winner=1 - seat, reason="timeout", seed=SEED)
    assert over.clock_since == (None, None)
    with pytest.raises(RuleError) as again:
        step(over, TimeOut(seat=seat, at=due + MS))
    assert again.value.code == "match_over", "a second time-out finds the match over"


def test_given_a_seat_that_never_moves_when_its_no_show_time_runs_out_the_match_is_aborted() -> (
    None
):
    state, _, _ = start(REAL, first_dealer=1)
    due = clk.deadline(state, 1)
    assert due == T0 + timedelta(seconds=REAL.no_show_s)
    assert clk.deadline(state, 0) is None, "only the seat to move has a running clock"
    with pytest.raises(RuleConflict):
        step(state, Pass(seat=1, at=due + MS))
    over, events = step(state, TimeOut(seat=1, at=due + MS))
    assert events == [MatchEnded(winner=None, reason="aborted", seed=SEED, no_show=1)]
    assert over.end_reason == "aborted" and over.winner is None


def test_given_a_correspondence_match_each_move_has_its_own_deadline() -> None:
    state, _, _ = start(POST, first_dealer=0)
    state, _ = step(state, Pass(seat=0, at=T0 + timedelta(hours=1)))  # within no-show
    assert clk.deadline(state, 1) == T0 + timedelta(hours=1) + timedelta(seconds=POST.no_show_s)
    at = T0 + timedelta(hours=2)
    state, _ = step(state, msgspec.structs.replace(random_bot(state, 1, random.Random(2)), at=at))
    seat = seat_to_act(state)
    if seat == 1:  # seat 0 passed: seat 1 plays on, with a fresh deadline
        assert clk.deadline(state, 1) == at + timedelta(seconds=POST.per_move_s)


def test_given_an_untimed_match_a_time_out_is_refused_and_nothing_is_emitted() -> None:
    command = StartMatch(
        match_id="m1", players=("p0", "p1"), ruleset=STANDARD, first_dealer=0, seed=SEED, at=T0
    )
    state, _ = step(initial_state(SEED), command)
    assert state.clock is None and clk.clocks(state, T0) is None
    for seat in (0, 1):
        for at in (T0 + MS, T0 + timedelta(days=400), None):
            with pytest.raises(RuleConflict) as refused:
                step(state, TimeOut(seat=seat, at=at))
            assert refused.value.code == "match_untimed" and refused.value.status == 409


def test_given_a_timed_match_a_time_out_that_names_no_instant_is_refused() -> None:
    state, _, _ = start(REAL, first_dealer=0)
    due = clk.deadline(state, 0)
    assert due is not None
    with pytest.raises(RuleError) as refused:
        step(state, TimeOut(seat=0))
    assert refused.value.code == "no_time"
    _, events = step(state, TimeOut(seat=0, at=due))
    assert events[-1].reason == "aborted"  # type: ignore[attr-defined]


def test_given_a_seat_whose_clock_is_stopped_a_time_out_of_it_is_refused_whenever_claimed() -> None:
    state, _, _ = start(REAL, first_dealer=0)
    for at in (T0, T0 + timedelta(seconds=REAL.no_show_s), T0 + timedelta(days=30)):
        with pytest.raises(RuleConflict) as refused:
            step(state, TimeOut(seat=1, at=at))  # seat 0 is to move: seat 1's clock stands
        assert refused.value.code == "time_not_expired"


@settings(max_examples=60, deadline=None)
@given(
    control=st.sampled_from([REAL, POST, RealTime(base_s=5, increment_s=0, no_show_s=2)]),
    moves=st.integers(min_value=0, max_value=40),
    gaps_ms=st.lists(st.integers(min_value=0, max_value=90_000), min_size=41, max_size=41),
    claim_ms=st.integers(min_value=-5_000, max_value=5_000),
    seat=st.sampled_from([0, 1]),
    rng_seed=st.integers(min_value=0, max_value=2**16),
)
def test_a_time_out_is_accepted_exactly_when_the_claimed_seats_clock_has_run_out(
    control: TimeControl,
    moves: int,
    gaps_ms: list[int],
    claim_ms: int,
    seat: Seat,
    rng_seed: int,
) -> None:
    """Random timed matches, a claim at a random instant near the deadline: the engine
    accepts it iff the seat's clock is running and has no time left at that instant."""
    state, _, _ = start(control, first_dealer=0)
    rng = random.Random(rng_seed)
    at = T0
    for gap in gaps_ms[:moves]:
        mover = seat_to_act(state)
        if mover is None or state.ended:
            break
        move = random_bot(state, mover, rng)
        at += gap * MS
        try:
            state, _ = step(state, msgspec.structs.replace(move, at=at))
        except RuleConflict:  # its time ran out before this move: the match stops here
            break
    due = clk.deadline(state, seat)
    claim = (due or at) + claim_ms * MS
    ran_out = due is not None and clk.remaining_us(state, seat, claim) <= 0
    try:
        _, events = step(state, TimeOut(seat=seat, at=claim))
    except RuleError as refused:
        assert not ran_out, f"refused {refused.code} though the clock had run out"
        assert refused.code in ("time_not_expired", "match_over")
    else:
        assert ran_out, "a time-out was accepted before the seat's clock ran out"
        assert isinstance(events[-1], MatchEnded) and events[-1].reason in ("timeout", "aborted")


def test_the_clocks_shown_carry_the_time_control_and_the_instant_they_were_measured_at() -> None:
    state, _, _ = start(REAL, first_dealer=0)
    shown = clk.clocks(state, T0 + 1_500 * MS)
    assert shown is not None
    assert shown.control == REAL and shown.measured_at == T0 + 1_500 * MS
    assert [s.remaining_ms for s in shown.seats] == [28_500, 30_000]
    assert [s.running for s in shown.seats] == [True, False]
    assert all(s.first_move for s in shown.seats)
