"""What the OpenAPI document says beyond what Litestar writes by itself.

* **Array-like structs are arrays.** A msgspec struct declared ``array_like``
  (a checkpoint's ``Leaf``: ``[match_id, version, hash]``, the form its
  signature covers) is encoded as a JSON array; Litestar described it as an
  object, so every answer that holds one contradicted its own schema.
  ``ArrayLikeStructs`` is the schema plugin that describes them as they are sent.
* **Tuples of one type are ``items`` of a fixed count** (``HomogeneousTuples``).
* **Links**, so that a client (and Schemathesis's stateful phase) can follow an
  answer to the resources it names: the player a registration made, the ladder
  a creation made, the match a pairing or a challenge started, the tournament,
  the season, the job (``LINKS``). Without them a fuzzer only ever meets 404s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, get_args, get_origin

import msgspec
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi.spec import Link, OpenAPIType, Schema
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator


class ArrayLikeStructs(OpenAPISchemaPlugin):
    """``array_like`` msgspec structs, described as the fixed-length arrays they are."""

    @staticmethod
    def is_plugin_supported_type(value: Any) -> bool:
        return (
            isinstance(value, type)
            and issubclass(value, msgspec.Struct)
            and bool(value.__struct_config__.array_like)
        )

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        cls = field_definition.annotation
        hints = msgspec.structs.fields(cls)
        items = [
            schema_creator.for_field_definition(FieldDefinition.from_annotation(f.type))
            for f in hints
        ]
        return Schema(
            type=OpenAPIType.ARRAY,
            prefix_items=items,
            min_items=len(items),
            max_items=len(items),
            title=cls.__name__,
            description=(cls.__doc__ or "").strip() or None,
        )


class HomogeneousTuples(OpenAPISchemaPlugin):
    """``tuple[float, float]`` and its kind (every item of one type, a fixed length),
    described as ``items`` with ``minItems`` = ``maxItems``. Litestar wrote them as
    ``prefixItems``, which converters to older drafts turn into the ``items`` list
    OpenAPI 3.1 forbids (Schemathesis stopped at the win-probability answer's ``p``);
    this form means the same in every draft."""

    @staticmethod
    def is_plugin_supported_type(value: Any) -> bool:
        args = get_args(value)
        return (
            get_origin(value) is tuple
            and len(args) > 1
            and Ellipsis not in args
            and all(a == args[0] for a in args)
        )

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        args = get_args(field_definition.annotation)
        return Schema(
            type=OpenAPIType.ARRAY,
            items=schema_creator.for_field_definition(FieldDefinition.from_annotation(args[0])),
            min_items=len(args),
            max_items=len(args),
        )


def _link(operation_id: str, **parameters: str) -> Link:
    return Link(operation_id=operation_id, parameters=dict(parameters))


_MATCH = "$response.body#/match_id"
_LADDER = "$response.body#/id"
_TOURNAMENT = "$response.body#/id"


def _match_links(expression: str) -> dict[str, Link]:
    return {
        op: _link(op, match_id=expression)
        for op in (
            "getMatch",
            "getMatchEvents",
            "pass",
            "playCard",
            "keepCards",
            "resign",
            "claimTimeOut",
            "listDisputes",
            "fileDispute",
            "auditMatch",
            "annulMatch",
            "getMatchCheckpoint",
            "getMatchOutcome",
            "exportMatchRecord",
            "getReplay",
            "getWinProbability",
        )
    }


LINKS: Final[dict[tuple[str, str], dict[str, Link]]] = {
    ("registerPlayer", "201"): {
        "getPlayerProfile": _link("getPlayerProfile", player_id="$response.body#/id"),
        "getPlayerHeadToHead": _link("getPlayerHeadToHead", player_id="$response.body#/id"),
        "setPlayerRoles": _link("setPlayerRoles", player_id="$response.body#/id"),
    },
    ("createLadder", "201"): {
        op: _link(op, ladder_id=_LADDER)
        for op in (
            "getLadder",
            "listLadderMembers",
            "joinLadder",
            "pairPlayers",
            "challengePlayer",
            "joinQueue",
            "listQueue",
            "ladderLeaderboard",
            "expectedScore",
            "listSeasons",
            "scheduleSeason",
            "recomputeLadder",
        )
    },
    ("pairPlayers", "201"): _match_links(_MATCH),
    ("startPractice", "201"): _match_links(_MATCH),
    ("challengePlayer", "201"): {
        "acceptChallenge": _link("acceptChallenge", challenge_id="$response.body#/id"),
        "declineChallenge": _link("declineChallenge", challenge_id="$response.body#/id"),
    },
    ("acceptChallenge", "200"): _match_links(_MATCH),
    ("playCard", "200"): _match_links("$response.body#/view/match_id"),
    ("pass", "200"): _match_links("$response.body#/view/match_id"),
    ("fileDispute", "201"): {
        "decideDispute": _link("decideDispute", dispute_id="$response.body#/dispute_id"),
    },
    ("createTournament", "201"): {
        op: _link(op, tournament_id=_TOURNAMENT)
        for op in (
            "getTournament",
            "joinTournament",
            "startTournament",
            "tournamentPairings",
            "pairRound",
            "tournamentStandings",
            "tournamentCrosstable",
            "tournamentLog",
            "forbidPairing",
        )
    },
    ("scheduleSeason", "201"): {
        "getSeason": _link(
            "getSeason",
            ladder_id="$response.body#/ladder_id",
            season_id="$response.body#/season_id",
        ),
        "endSeason": _link(
            "endSeason",
            ladder_id="$response.body#/ladder_id",
            season_id="$response.body#/season_id",
        ),
    },
    ("recomputeLadder", "202"): {"getJob": _link("getJob", job_id="$response.body#/job_id")},
}
"""(operation, status) -> the links of that answer."""


def add_links(app: Litestar) -> None:
    """Write ``LINKS`` into the app's OpenAPI document (once, at creation)."""
    openapi = app.plugins.get(OpenAPIPlugin).provide_openapi()
    for item in (openapi.paths or {}).values():
        for method in ("get", "post", "put", "delete", "patch"):
            operation = getattr(item, method, None)
            if operation is None:
                continue
            for status, response in (operation.responses or {}).items():
                links = LINKS.get((operation.operation_id or "", status))
                if links and hasattr(response, "links"):
                    response.links = {**(response.links or {}), **links}


__all__ = ["LINKS", "ArrayLikeStructs", "HomogeneousTuples", "add_links"]
