"""Disputes, decisions, annulments and time-outs are commands the engine decides
like any move: given these events, when this command, then these events (or
this refusal, with its code)."""

from datetime import UTC, datetime, timedelta

import pytest
from engine_script import SEED, TEA, created, dealt

from schemas.commands import AnnulMatch, Command, DecideDispute, FileDispute, Pass, TimeOut
from schemas.events import (
    DisputeDecided,
    DisputeFiled,
    Event,
    MatchAnnulled,
    MatchCreated,
    MatchEnded,
)
from schemas.rules import MatchTerms
from service.engine import decide, fold
from service.errors import RuleError

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")
START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WINDOW = 3_600


def _created() -> MatchCreated:
    import msgspec

    return msgspec.structs.replace(created(), terms=MatchTerms(dispute_window_s=WINDOW))


def given(*events: Event, ended_at: datetime = START) -> tuple[list[Event], list[datetime]]:
    log = [_created(), dealt(TEA, HAND0, HAND1), *events]
    times = [START - timedelta(minutes=10)] * 2 + [ended_at] * len(events)
    return log, times


ENDED = MatchEnded(winner=1, reason="resigned", seed=SEED)


def when(log: tuple[list[Event], list[datetime]], command: Command) -> list[Event]:
    events, times = log
    return decide(fold(events, SEED, times=times), command)


def dispute(
    at: datetime, seat: int = 0, dispute_id: str = "d1", reason: str = "a misclick"
) -> FileDispute:
    player = ("ann", "bo")[seat]
    return FileDispute(dispute_id=dispute_id, seat=seat, player=player, reason=reason, at=at)  # type: ignore[arg-type]


def refused(
    code: str, status: int, log: tuple[list[Event], list[datetime]], command: Command
) -> None:
    with pytest.raises(RuleError) as raised:
        when(log, command)
    assert (raised.value.code, raised.value.status) == (code, status)


def test_given_an_ended_match_when_a_player_disputes_it_in_time_then_the_dispute_is_filed() -> None:
    assert when(given(ENDED), dispute(START + timedelta(seconds=WINDOW))) == [
        DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="a misclick")
    ]


def test_given_a_live_match_when_a_player_disputes_it_then_it_is_refused() -> None:
    refused("match_not_finished", 409, given(), dispute(START))


def test_given_an_ended_match_when_the_window_has_closed_then_a_dispute_is_refused() -> None:
    late = START + timedelta(seconds=WINDOW, microseconds=1)
    refused("dispute_window_closed", 409, given(ENDED), dispute(late))


def test_given_a_pending_dispute_when_the_same_seat_disputes_again_then_it_is_refused() -> None:
    filed = DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="r")
    refused("dispute_pending", 409, given(ENDED, filed), dispute(START, dispute_id="d2"))
    # ...while the other seat may still file its own.
    assert when(given(ENDED, filed), dispute(START, seat=1, dispute_id="d2"))[0].seat == 1  # type: ignore[attr-defined]


def test_given_a_dispute_from_someone_else_than_the_seat_then_it_is_refused() -> None:
    command = FileDispute(dispute_id="d1", seat=0, player="bo", reason="r", at=START)
    refused("not_a_player", 409, given(ENDED), command)


def test_given_an_ended_match_when_a_dispute_has_no_reason_then_it_is_refused() -> None:
    refused("reason_required", 400, given(ENDED), dispute(START, reason="   "))


def test_given_a_dispute_when_an_admin_upholds_it_then_the_match_is_annulled_too() -> None:
    filed = DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="r")
    decision = DecideDispute(dispute_id="d1", upheld=True, admin="ada", reason="rigged", at=START)
    assert when(given(ENDED, filed), decision) == [
        DisputeDecided(dispute_id="d1", upheld=True, admin="ada", reason="rigged"),
        MatchAnnulled(admin="ada", reason="rigged", dispute_id="d1"),
    ]


def test_given_a_decided_dispute_when_it_is_decided_again_then_it_is_refused() -> None:
    filed = DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="r")
    decided = DisputeDecided(dispute_id="d1", upheld=False, admin="ada", reason="no")
    again = DecideDispute(dispute_id="d1", upheld=True, admin="eve", reason="yes", at=START)
    refused("dispute_decided", 409, given(ENDED, filed, decided), again)
    unknown = DecideDispute(dispute_id="nope", upheld=True, admin="eve", reason="yes", at=START)
    refused("dispute_not_found", 409, given(ENDED, filed), unknown)


def test_given_an_annulled_match_when_it_is_annulled_again_then_it_is_refused() -> None:
    annulled = MatchAnnulled(admin="ada", reason="collusion")
    refused("match_annulled", 409, given(ENDED, annulled), AnnulMatch(admin="eve", reason="x"))
    refused("match_annulled", 409, given(ENDED, annulled), dispute(START))


def test_given_a_live_match_when_an_admin_annuls_it_then_it_takes_no_more_moves() -> None:
    annulled = when(given(), AnnulMatch(admin="ada", reason="collusion", at=START))
    assert annulled == [MatchAnnulled(admin="ada", reason="collusion")]
    refused("match_annulled", 422, given(*annulled), Pass(seat=0))


def test_given_an_untimed_live_match_when_a_time_out_is_claimed_then_it_is_refused() -> None:
    refused("match_untimed", 409, given(), TimeOut(seat=0, at=START))
    refused("match_untimed", 409, given(), TimeOut(seat=1, at=START + timedelta(days=9)))
    refused("match_over", 422, given(ENDED), TimeOut(seat=0, at=START))
