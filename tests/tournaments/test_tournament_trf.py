"""TRF-2026: a finished Swiss exported, read back unchanged, seeding a new one;
hostile files refused with a problem and nothing created."""

from __future__ import annotations

import pytest
from test_tournament_api import assert_problem, finished_swiss
from tournament_harness import TournamentApi

from service.tournaments import trf

pytestmark = pytest.mark.anyio


async def test_given_a_finished_swiss_when_exported_then_the_trf_round_trips(
    api: TournamentApi,
) -> None:
    _organiser, t, _players = await finished_swiss(api)
    response = await api.client.get(f"/api/tournaments/{t['id']}/trf")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    parsed = trf.read(text)
    # Reading and writing again gives the same bytes: nothing is lost.
    assert trf.write(parsed) == text
    assert parsed.rounds == 3 and len(parsed.players) == 5
    standings = (await api.read(t["id"], "standings"))["rows"]
    by_name = {p.name: p for p in parsed.players}
    for row in standings:
        assert by_name[row["name"]].points == row["points"]
        assert by_name[row["name"]].rank == row["rank"]
    # Every game appears twice, each side's result the mirror of the other.
    mirror = {"1": "0", "0": "1", "=": "=", "+": "-", "-": "+"}
    number = {p.number: p for p in parsed.players}
    for p in parsed.players:
        for k, r in enumerate(p.rounds):
            if r.opponent:
                other = number[r.opponent].rounds[k]
                assert other.opponent == p.number and mirror[r.result] == other.result
                assert {r.colour, other.colour} == {"w", "b"}
            else:
                assert r.result in "UHZF"
    assert sum(1 for p in parsed.players for r in p.rounds if r.result == "U") == 3


async def test_given_an_exported_trf_when_imported_then_the_same_players_are_seeded(
    api: TournamentApi,
) -> None:
    organiser, t, _players = await finished_swiss(api)
    text = (await api.client.get(f"/api/tournaments/{t['id']}/trf")).text
    ladder = (await api.read(t["id"]))["ladder_id"]
    response = await api.post(
        "/api/tournaments/import", organiser, {"ladder_id": ladder, "trf": text, "name": "again"}
    )
    assert response.status_code == 201, response.text
    seeded = response.json()
    assert seeded["players"] == 5 and seeded["phase"] == "registering"
    assert seeded["format"]["rounds"] == 3
    again = trf.read((await api.client.get(f"/api/tournaments/{seeded['id']}/trf")).text)
    before = trf.read(text)
    assert [(p.number, p.name, p.rating) for p in again.players] == [
        (p.number, p.name, p.rating) for p in before.players
    ]


async def test_given_a_hostile_trf_when_imported_then_it_is_refused_and_nothing_is_created(
    api: TournamentApi,
) -> None:
    organiser = await api.organiser()
    ladder = await api.ladder(organiser, "duel")
    before = (await api.client.get("/api/tournaments")).json()
    for text, code in [
        ("012 nobody\r\n", "bad_trf"),
        ("001 abcd      x\r\n", "bad_trf"),
        (
            "001    1      Nobody Known                      1500" + " " * 40 + "\r\n",
            "unknown_players",
        ),
        ("001 " + "9" * 40 + "\r\n", "unknown_players"),
        ("001    1      A" + " " * 76 + "0002 x 1\r\n", "bad_trf"),
        ("001    1      A" + " " * 76 + "0002 w 7\r\n", "bad_trf"),
    ]:
        response = await api.post(
            "/api/tournaments/import", organiser, {"ladder_id": ladder, "trf": text}
        )
        assert_problem(response, 422, code)
    assert (await api.client.get("/api/tournaments")).json() == before
