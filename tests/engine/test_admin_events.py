"""Admin events only record: disputes are remembered, an annulment leaves no result."""

from engine_script import SEED, TEA, created, dealt

from schemas.events import DisputeDecided, DisputeFiled, MatchAnnulled, MatchEnded
from service.engine import fold, is_terminal, view

HAND0 = ("M1", "M3", "C2", "S2", "Z1")
HAND1 = ("M4", "C4", "W3", "S3", "Z2")
ENDED = [created(), dealt(TEA, HAND0, HAND1), MatchEnded(winner=1, reason="resigned", seed=SEED)]


def test_given_a_finished_match_when_a_dispute_is_decided_then_the_result_stands() -> None:
    state = fold(
        [
            *ENDED,
            DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="misclick"),
            DisputeDecided(dispute_id="d1", upheld=False, admin="ada", reason="no evidence"),
        ]
    )
    assert state.disputes == (("d1", 0, False),)
    assert state.winner == 1 and state.end_reason == "resigned" and not state.annulled


def test_given_a_finished_match_when_an_admin_annuls_it_then_it_has_no_result() -> None:
    state = fold([*ENDED, MatchAnnulled(admin="ada", reason="collusion", dispute_id="d1")])
    assert is_terminal(state) and state.annulled and state.ended
    assert state.winner is None and state.end_reason is None
    result = view(state, "spectator").result
    assert result is not None and result.annulled and result.winner is None
    assert view(state, "spectator").seed == SEED, "the seed was revealed at the end"


def test_a_dispute_shows_its_filer_and_reason_only_to_that_seat_and_admins() -> None:
    import msgspec

    from service.engine import redact

    filed = DisputeFiled(dispute_id="d1", seat=0, player="ann", reason="opponent-was-slow")
    for viewer in (0, "omniscient"):
        seen = redact(filed, viewer, match_over=True)
        assert b"opponent-was-slow" in msgspec.json.encode(seen), viewer
    for viewer in (1, "spectator"):
        seen = redact(filed, viewer, match_over=True)
        raw = msgspec.json.encode(seen)
        assert b"opponent-was-slow" not in raw and b"ann" not in raw, viewer
