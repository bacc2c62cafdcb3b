"""A seat's live frames carry the service's signed receipts; a spectator's carry none.

Each append's last row is signed (docs/audit.md "Receipts"); the frame of that row,
sent to a seat, carries its receipt, which verifies with only the public keys the
service publishes (``GET /api/keys``), and names the log's head at that version.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from live_harness import Driver

from service.evidence.keys import Keyring
from service.evidence.receipts import Receipt, receipt_problem

pytestmark = pytest.mark.anyio


async def test_a_seat_gets_a_receipt_with_each_append_and_a_spectator_none(
    server: str, driver: Driver
) -> None:
    match_id, seat, spectator, final = await driver.watched_duel(server, 6)
    for watcher in (seat, spectator):
        await watcher.until_version(final)
        await watcher.close()
    keys = Keyring.from_json((await driver.http.get("/api/keys")).content)

    receipts = [
        msgspec.convert(r.frame["receipt"], Receipt) for r in seat.events if "receipt" in r.frame
    ]
    assert receipts, "the seat was sent no receipt"
    assert all(receipt_problem(r, keys) is None for r in receipts)
    assert all(r.match_id == match_id for r in receipts)
    assert receipts[-1].version == final  # the match's last append, signed
    assert not [r for r in spectator.events if "receipt" in r.frame]
    # One changed bit and it no longer verifies.
    forged = msgspec.structs.replace(
        receipts[0],
        blinded_hash=("0" if receipts[0].blinded_hash[0] != "0" else "1")
        + receipts[0].blinded_hash[1:],
    )
    assert receipt_problem(forged, keys) is not None
    assert json.dumps(seat.events[-1].frame)  # frames stay plain JSON
