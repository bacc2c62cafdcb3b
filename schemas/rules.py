"""Rulesets as data. A ruleset is copied into the match-created event, so a
match always replays under the rules it was played with."""

from typing import Final, Literal

import msgspec


class Ruleset(msgspec.Struct, frozen=True, kw_only=True):
    name: Literal["standard", "duel"]
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


DEFAULT_TERMS: Final = MatchTerms()
"""The terms of a match outside any ladder."""

STANDARD: Final = Ruleset(name="standard", max_hands=10, suit_tokens_to_win=4)
DUEL: Final = Ruleset(name="duel", max_hands=2, suit_tokens_to_win=3)
RULESETS: Final[dict[str, Ruleset]] = {r.name: r for r in (STANDARD, DUEL)}
