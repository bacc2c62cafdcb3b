"""Fairness check: the revealed seed is the one committed to when the match
was created, and it derives every logged deal (RULES §10, docs/dealing.md).

The dealing itself is the engine's (``service.engine.dealing``); this module
only walks the raw rows so that it can name the exact version at fault, then
asks the engine's own ``check_deals`` as a second opinion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.cards import Card
from schemas.events import CardsKept, HandDealt, HandEnded, MatchCreated, MatchEnded
from service.audit.diff import first_difference
from service.audit.refold import ADMIN_TYPES, as_json, decode, same_json
from service.audit.report import FairnessCheck, Finding
from service.audit.rows import RawRow
from service.engine import dealing


def revealed_seed(rows: Sequence[RawRow]) -> tuple[str | None, int | None]:
    """The seed the match-ended event reveals, and that event's version."""
    for row in rows:
        if row.type == "match_ended":
            seed = row.data.get("seed")
            return (seed if isinstance(seed, str) else None), row.version
    return None, None


def _first_deal_fits(game: Sequence[RawRow], seed: str, created: MatchCreated) -> bool:
    """The first logged deal is exactly what ``seed`` deals."""
    row = next((r for r in game if r.type == "hand_dealt"), None)
    if row is None:
        return False
    expected = dealing.deal(seed, 1, created.first_dealer, ((), ()), created.ruleset.hand_size)
    return same_json(row.data, as_json(expected))


def fairness(rows: Sequence[RawRow], seed: str | None, *, live: bool) -> FairnessCheck:
    """Check ``seed`` (the revealed one; for a live match, the stored one or None)."""
    game = [r for r in rows if r.type not in ADMIN_TYPES]
    created_row = game[0] if game else None
    created = decode(created_row) if created_row else None
    if created_row is None or not isinstance(created, MatchCreated):
        return FairnessCheck(
            status="inconsistent",
            commitment_ok=None,
            deals_checked=0,
            first_bad_deal=Finding(
                version=created_row.version if created_row else None,
                problem="no match_created event to read the commitment from",
            ),
        )
    if seed is None:
        return FairnessCheck(
            status="pending" if live else "inconsistent",
            commitment_ok=None,
            deals_checked=0,
            note="the seed is revealed when the match ends"
            if live
            else "the match ended without revealing a seed",
        )
    note = "match live: checked with the stored seed" if live else None
    ended_version = next((r.version for r in game if r.type == "match_ended"), None)
    if created.dealing_scheme not in dealing.SCHEMES:
        return FairnessCheck(
            status="inconsistent",
            commitment_ok=None,
            deals_checked=0,
            first_bad_deal=Finding(
                version=created_row.version,
                event_type="match_created",
                problem=f"unknown dealing scheme {created.dealing_scheme!r}",
            ),
        )
    if not dealing.valid_seed(seed) or created.seed_commitment != dealing.expected_commitment(
        created, seed
    ):
        if (
            created.dealing_scheme == dealing.SCHEME
            and dealing.valid_seed(seed)
            and _first_deal_fits(game, seed, created)
        ):
            # The seed derives the logged deals, so it is the real one (no other
            # seed gives them): what changed is the identity it was bound to.
            return FairnessCheck(
                status="inconsistent",
                commitment_ok=False,
                deals_checked=0,
                first_bad_deal=Finding(
                    version=created_row.version,
                    event_type="match_created",
                    problem="the match's identity is not the one its seed was committed with "
                    "(matcha-deal-v2 binds the match id, players, ruleset, ladder and first "
                    "dealer): the match was copied under another id, or its seats or ladder "
                    "were changed",
                    expected=created.seed_commitment,
                ),
                note=note,
            )
        return FairnessCheck(
            status="inconsistent",
            commitment_ok=False,
            deals_checked=0,
            first_bad_deal=Finding(
                version=ended_version if not live else created_row.version,
                event_type="match_ended" if not live else "match_created",
                problem="the revealed seed does not match the commitment published at version "
                f"{created_row.version}",
                logged=None if live else seed,
                expected=created.seed_commitment,
            ),
            note=note,
        )
    kept: list[tuple[Card, ...]] = [(), ()]
    deals = 0

    def bad_deal(finding: Finding) -> FairnessCheck:
        # Past the commitment: it held, and ``deals`` deals were checked so far.
        return FairnessCheck(
            status="inconsistent",
            commitment_ok=True,
            deals_checked=deals,
            first_bad_deal=finding,
            note=note,
        )

    for row in game:
        event = decode(row)
        match event:
            case HandEnded():
                kept = [(), ()]
            case CardsKept():
                kept[event.seat] = event.cards
            case HandDealt():
                deals += 1
                expected = dealing.deal(
                    seed, event.hand, event.dealer, (kept[0], kept[1]), created.ruleset.hand_size
                )
                want = as_json(expected)
                found = None if same_json(row.data, want) else first_difference(row.data, want)
                if found is not None:
                    path, logged, wanted = found
                    return bad_deal(
                        Finding.at(
                            row,
                            problem=f"hand {event.hand} was not dealt as the seed gives "
                            f"(at {path})",
                            path=path,
                            logged=logged,
                            expected=wanted,
                        )
                    )
            case None if row.type == "hand_dealt":
                return bad_deal(
                    Finding.at(
                        row, problem="this hand_dealt row is not a valid deal", logged=row.data
                    )
                )
            case MatchEnded() if event.seed != seed:
                return bad_deal(
                    Finding.at(
                        row, problem="the match revealed a different seed from the one checked"
                    )
                )
            case _:
                pass
    if not live:
        # Second opinion from the engine's own checker, over the decoded log.
        events: list[Any] = [decode(r) for r in game]
        if all(e is not None for e in events):
            problems = dealing.check_deals(events, seed)
            if problems:
                return FairnessCheck(
                    status="inconsistent",
                    commitment_ok=True,
                    deals_checked=deals,
                    first_bad_deal=Finding(version=None, problem=problems[0]),
                    note="the engine's check_deals disagrees with this audit's walk",
                )
    return FairnessCheck(status="consistent", commitment_ok=True, deals_checked=deals, note=note)
