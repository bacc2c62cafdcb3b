"""The match core: one pipeline for every command of a match, one policy for
who sees what (docs/architecture.md).

* ``MatchCore`` (``core``): start a match; ``run`` any command through fold →
  decide → append → after-commit hooks; its reads (``current``, ``current_facts``,
  ``at_version``, ``log``, ``seed_of``...) are ``Known``'s (``known``: the three
  caches, held to the log);
* the commands that are not a seat's, through ``run``: ``disputes``
  (``file_dispute``, ``decide_dispute``, ``annul``) and ``clocks`` (``time_out``,
  ``claim_time_out``); a seat's are ``seats`` (their bodies, ``seat_maker``, the
  answer's view);
* ``keys``: what an idempotency key promises.
* ``seen_by``, ``public_sight``, ``replay_viewer`` (``policy``): what a caller (or the
  public) may see, on which channel.
* ``MatchFacts`` (``facts``): how a match began and the terms it is played on.
* ``Folded`` / ``FoldCache`` (``folds``): the cached fold, keyed by version and head.
* ``summaries``: the ``match_summaries`` projection kept in step with the events.

Imports only the engine, the store and the schemas.
"""

from service.matches.core import (
    Accepted,
    AfterCommit,
    Committed,
    MakeCommand,
    MatchCore,
    StartedMatch,
    new_id,
)
from service.matches.facts import MatchFacts
from service.matches.folds import Folded
from service.matches.keys import command_hash
from service.matches.policy import (
    ANONYMOUS,
    Caller,
    Channel,
    Seen,
    check_record_export,
    public_sight,
    replay_viewer,
    seen_by,
)

__all__ = [
    "ANONYMOUS",
    "Accepted",
    "AfterCommit",
    "Caller",
    "Channel",
    "Committed",
    "Folded",
    "MakeCommand",
    "MatchCore",
    "MatchFacts",
    "Seen",
    "StartedMatch",
    "check_record_export",
    "command_hash",
    "new_id",
    "public_sight",
    "replay_viewer",
    "seen_by",
]
