"""The omniscient truth a browser test checks pages against: the full events, folded."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from schemas.events import Event, HandDealt, RoundRevealed, decode_event
from service.engine import fold, view


def full_events(admin_database_url: str, match_id: str) -> list[Event]:
    with psycopg.connect(admin_database_url) as conn:
        rows = conn.execute(
            "SELECT data FROM events WHERE match_id = %s ORDER BY version", (match_id,)
        ).fetchall()
    return [decode_event(json.dumps(row[0])) for row in rows]


def hidden_at(events: list[Event], version: int) -> set[str]:
    """Cards nobody but their owner may see after ``version`` events (RULES §8):
    both hands, face-down cards not yet revealed, lone cards, the set-aside cards."""
    state = fold(events[:version])
    seen = view(state, "omniscient", version=version)
    hidden: set[str] = set()
    for seat in seen.seats:
        hidden.update(seat.hand or ())
    for pair in seen.tatami:
        for target in (pair.number, pair.suit):
            both = all(target.occupied)
            for card in target.cards:
                if card is not None and (not pair.revealed or not both):
                    hidden.add(card)
    hidden.update(getattr(state, "set_aside", None) or ())
    return hidden


def public_cards(event: Event) -> set[str]:
    """The cards an event shows to everyone: tea cards, and cards turned face up."""
    match event:
        case HandDealt(tea=tea):
            return {c for pair in tea for c in (pair.number, pair.suit)}
        case RoundRevealed(outcomes=outcomes):
            shown = {o.tea_card for o in outcomes}
            for o in outcomes:
                if o.shown:
                    shown.update(c for c in o.cards if c is not None)
            return shown
        case _:
            return set()


def summary(api_view: dict[str, Any]) -> tuple[Any, ...]:
    """Final tokens and winner of a match view (as JSON), for comparing pages with the API."""
    tokens = tuple(tuple(sorted(s["tokens"].items())) for s in api_view["seats"])
    return tokens, api_view["result"]["winner"] if api_view["result"] else None
