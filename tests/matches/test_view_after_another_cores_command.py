"""A seat's socket view on the process that did not take the command: one read of
the new rows, shared with its stream (``Hub.load_after``), brings the fold there
forward (``Known.learn``), and the view is answered from it, equal to the log's."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest
from core_script import PLAYERS, Clock, one_match_two_cores

from service.accounts.players import Player, caller_of
from service.engine import view
from service.live import commands
from service.live.access import Access
from service.matches import seen_by
from service.store import EventStore, StoredEvent

pytestmark = pytest.mark.anyio


async def test_given_another_cores_command_when_the_seat_asks_its_view_then_one_shared_read_answers(
    store: EventStore, clock: Clock
) -> None:
    mover, here = await one_match_two_cores(store, clock, "duel", None)
    core = here.core
    facts, _ = await core.current_facts(mover.match_id)
    seat = await mover.mover()
    other = 1 - seat
    player = Player(id=PLAYERS[other], name="p", roles=("player",))
    access = Access(
        match_id=mover.match_id,
        seen=seen_by(facts, caller_of(player), over=False, channel="stream"),
        player_id=player.id,
        players=facts.players,
        player=player,
    )
    reads: list[int] = []

    async def catch_up(match_id: str, after: int) -> Sequence[StoredEvent]:
        # What the hub's load_page does: the store's rows, learnt by the core.
        reads.append(after)
        rows = await store.load(match_id, after=after, limit=500)
        core.learn(match_id, rows)
        return rows

    def no_read(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the view read the store on its own")

    before = core.cached(mover.match_id)
    assert before is not None
    await mover.play()  # taken by the other core
    version = await mover.version()
    core.current = no_read  # type: ignore[assignment,method-assign]

    raw = msgspec.json.encode({"kind": "view", "id": "v1", "version": version})
    answer = msgspec.json.decode(await commands.answer(core, access, raw, "/ws", catch_up) or "")

    state, _, _ = await mover.truth()
    assert answer["kind"] == "view" and answer["view"]["version"] == version
    assert answer["view"] == msgspec.json.decode(
        msgspec.json.encode(view(state, other, version=version))
    )
    assert reads == [before.version]
