"""One bounded cache type for the service's in-process memories.

Every cache in the service holds values that are always right for their key
(a fold at a version, a committed row's hash, a seed that never changes, a
token's player for a few seconds), so an entry evicted is simply read again:
the bound only caps memory. Least recently used goes first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """A mapping of at most ``size`` entries; reading or writing an entry makes it
    the most recently used."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a bounded cache holds at least one entry")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> None:
        entries = self._entries
        entries[key] = value
        entries.move_to_end(key)
        if len(entries) > self.size:
            entries.popitem(last=False)

    def put_if(self, key: K, value: V, newer: Callable[[V, V], bool]) -> None:
        """Remember ``value`` unless the entry already held is not ``newer(value, held)``."""
        held = self._entries.get(key)
        if held is None or newer(value, held):
            self.put(key, value)
        else:
            self._entries.move_to_end(key)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget every entry (a bench measures the cold cache this way)."""
        self._entries.clear()

    def drop(self, keep: Callable[[K, V], bool]) -> None:
        """Forget every entry ``keep`` says no to."""
        for key in [k for k, v in self._entries.items() if not keep(k, v)]:
            del self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))
