"""thaw and freeze copy every field of State, whatever its value (state.py
writes both out field by field, for speed)."""

import random

import msgspec

from schemas.rules import DUEL
from service.bots import random_bot
from service.engine.selfplay import play_match
from service.engine.state import State, Table, freeze, thaw


def test_every_field_survives_thaw_and_freeze() -> None:
    # A distinct non-default value in every field: a field dropped or two swapped shows.
    values = {name: (name, i) for i, name in enumerate(State.__struct_fields__)}
    values["placed"] = tuple(f"card{i}" for i in range(12))
    values["passed"] = (True, False)
    state = State(**values)  # type: ignore[arg-type]
    table = thaw(state)
    assert [getattr(table, name) for name in Table.__slots__] == [
        list(v) if name in ("placed", "passed") else v for name, v in values.items()
    ]
    assert msgspec.structs.asdict(freeze(table)) == values


def test_states_of_a_whole_match_survive_thaw_and_freeze() -> None:
    final, _ = play_match((random_bot, random_bot), DUEL, random.Random(3))
    assert freeze(thaw(final)) == final
    assert final.version > 0 and final.ended
