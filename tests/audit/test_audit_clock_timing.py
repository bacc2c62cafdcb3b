"""The audit's timing shows a timed match's clocks by the engine's one clock
function, and names a time-out logged before the clock had run out."""

from datetime import UTC, datetime, timedelta

import msgspec

from schemas.commands import Pass, StartMatch, TimeOut
from schemas.events import Event
from schemas.rules import STANDARD, MatchTerms, RealTime
from service.audit.rows import RawRow
from service.audit.timing import timing
from service.engine import clock, initial_state, step

SEED = "cd" * 32
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def rows_of(commands: list[tuple[object, datetime]]) -> tuple[list[RawRow], object]:
    state = initial_state(SEED)
    rows: list[RawRow] = []
    for command, at in commands:
        state, events = step(state, msgspec.structs.replace(command, at=at))  # type: ignore[type-var]
        for event in events:
            rows.append(_row(len(rows) + 1, event, at))
    return rows, state


def _row(version: int, event: Event, at: datetime) -> RawRow:
    return RawRow(
        position=version,
        match_id="m",
        version=version,
        type=str(type(event).__struct_config__.tag),
        data=msgspec.to_builtins(event),
        actor="system",
        recorded_at=at,
        prev_hash=b"",
        hash=b"",
    )


START = StartMatch(
    match_id="m",
    players=("a", "b"),
    ruleset=STANDARD,
    first_dealer=0,
    seed=SEED,
    terms=MatchTerms(clock=RealTime(base_s=30, no_show_s=10)),
)


def test_given_a_timed_match_the_audit_shows_the_clocks_the_views_show() -> None:
    rows, state = rows_of([(START, T0), (Pass(seat=0), T0 + timedelta(seconds=3))])
    shown = timing(rows, ["a", "b"]).clocks
    assert shown is not None
    assert shown == clock.clocks(state, rows[-1].recorded_at)  # type: ignore[arg-type]
    assert [s.remaining_ms for s in shown.seats] == [30_000, 10_000]


def test_given_a_time_out_logged_before_the_clock_ran_out_the_audit_names_it() -> None:
    rows, _ = rows_of([(START, T0), (TimeOut(seat=0), T0 + timedelta(seconds=10))])
    assert timing(rows, ["a", "b"]).early_time_outs == []
    early = [*rows[:-1], msgspec.structs.replace(rows[-1], recorded_at=T0 + timedelta(seconds=9))]
    assert timing(early, ["a", "b"]).early_time_outs == [rows[-1].version]
