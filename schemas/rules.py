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


STANDARD: Final = Ruleset(name="standard", max_hands=10, suit_tokens_to_win=4)
DUEL: Final = Ruleset(name="duel", max_hands=2, suit_tokens_to_win=3)
RULESETS: Final[dict[str, Ruleset]] = {r.name: r for r in (STANDARD, DUEL)}
