"""A tournament game ended by the clock: a time-out is a loss, a no-show a forfeit of
the seat that did not come (the match's abort names it)."""

from datetime import UTC, datetime

from schemas.events import MatchEnded
from service.store import StoredEvent
from service.tournaments.match_adapter import command_for

AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _stored(event: MatchEnded) -> StoredEvent:
    return StoredEvent(
        position=9, match_id="m1", version=9, type="match_ended", event=event,
        actor="system", recorded_at=AT, prev_hash=b"\0" * 32, hash=b"\1" * 32,
    )  # fmt: skip


def test_given_a_no_show_abort_the_tournament_records_the_absent_seats_forfeit() -> None:
    ended = MatchEnded(winner=None, reason="aborted", seed="5e" * 32, no_show=1)
    command = command_for(_stored(ended), AT)
    assert command is not None and command.reason == "aborted"
    assert command.forfeit == 1 and command.winner is None


def test_given_a_time_out_the_tournament_records_a_win_and_no_forfeit() -> None:
    ended = MatchEnded(winner=0, reason="timeout", seed="5e" * 32)
    command = command_for(_stored(ended), AT)
    assert command is not None and command.winner == 0 and command.forfeit is None
