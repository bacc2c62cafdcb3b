"""Rulesets as data. A ruleset is copied into the match-created event, so a
match always replays under the rules it was played with."""

from typing import Annotated, Final, Literal, TypeAlias, get_args

import msgspec
from msgspec import UNSET, UnsetType

RulesetName: TypeAlias = Literal["standard", "duel"]
"""The name of every ruleset, the one spelling: the ladders' and the practice
routes' bodies, the ``ladders.ruleset`` CHECK of migration 0002 and the practice
page's choice (``service/web/static/practice.js``) are tested against it
(tests/test_ruleset_names.py)."""

RULESET_NAMES: Final[tuple[RulesetName, ...]] = get_args(RulesetName)


class Ruleset(msgspec.Struct, frozen=True, kw_only=True):
    name: RulesetName
    max_hands: int
    """Safety limit: after this many hands the end comparison decides (RULES §6, §9)."""
    hand_size: int = 5
    token_supply: int = 7
    """Tokens of each kind; a token due from an empty supply is not given."""
    suit_tokens_to_win: int
    """A player qualifies with this many tokens of one suit (4 standard, 3 duel)."""
    chasen_tokens_to_win: int = 4
    one_of_each_wins: bool = True
    """A player qualifies with at least one token of each of the five kinds."""


Seconds = Annotated[int, msgspec.Meta(ge=1, le=366 * 86_400)]


class RealTime(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="kind",
    tag="real_time",
    forbid_unknown_fields=True,
):
    """Real-time play: each seat starts with ``base_s`` and gains ``increment_s``
    after each move of its own (Fischer increment)."""

    base_s: Seconds
    increment_s: Annotated[int, msgspec.Meta(ge=0, le=3_600)] = 0
    no_show_s: Seconds = 60
    """A seat that has made no move yet has this long for its first one; else the
    match is aborted, unrated."""


class Correspondence(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="kind",
    tag="correspondence",
    forbid_unknown_fields=True,
):
    """Correspondence play: a deadline of ``per_move_s`` for every move."""

    per_move_s: Seconds
    no_show_s: Seconds = 86_400


TimeControl: TypeAlias = RealTime | Correspondence
"""How a ladder's matches are timed (``service.engine.clock`` reads it)."""


class MatchTerms(msgspec.Struct, frozen=True, kw_only=True):
    """What the match's ladder set when the match was created, copied into
    ``MatchCreated`` so that a match is always shown and judged under the terms
    it was played on (a ladder's settings never change after its creation).

    The viewer policy (``service.matches.policy``) reads the first two; the
    engine's dispute rule reads the window.
    """

    spectator_delay_s: float = 0.0
    """Live spectators see each event this many seconds after it was recorded."""
    hide_hands_in_replay: bool = False
    """After the end, cards hidden during play stay hidden from everyone but
    administrators (and each seat's own from its player), the seed included."""
    dispute_window_s: int = 86_400
    """A player may dispute the match for this long after it ended."""
    clock: TimeControl | UnsetType = UNSET
    """The time control (unset: untimed, and absent from the bytes of the terms
    of every match created before clocks, so their events keep their hashes)."""


DEFAULT_TERMS: Final = MatchTerms()
"""The terms of a match outside any ladder."""

STANDARD: Final = Ruleset(name="standard", max_hands=10, suit_tokens_to_win=4)
DUEL: Final = Ruleset(name="duel", max_hands=2, suit_tokens_to_win=3)
RULESETS: Final[dict[str, Ruleset]] = {r.name: r for r in (STANDARD, DUEL)}
"""Every ruleset by name, in ``RULESET_NAMES`` order."""
