"""The store's head cache (``service.cache.Bounded``) can be emptied: the cold-cache
append bench relies on it, and an emptied cache must behave as a new one."""

from __future__ import annotations

from service.cache import Bounded


def test_given_a_full_cache_when_cleared_then_it_holds_nothing_and_takes_new_entries() -> None:
    cache: Bounded[str, int] = Bounded(2)
    cache.put("a", 1)
    cache.put("b", 2)

    cache.clear()

    assert len(cache) == 0
    assert cache.get("a") is None and "b" not in cache
    cache.put("c", 3)
    cache.put("d", 4)
    cache.put("e", 5)
    assert list(cache) == ["d", "e"]
