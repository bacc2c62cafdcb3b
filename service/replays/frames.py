"""Replay frames: what a viewer sees after each event, and how an archive stores them.

After each event a frame holds the public view and the omniscient view, both
built by ``service.engine.view`` (the one place that decides visibility);
format 2 stores each as the fields that changed since the previous frame
(``StoredFrame``), and reading an archive expands them again (``expand_frames``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from schemas.views import MatchView, PairView, SeatView
from service.engine import view
from service.engine.state import State
from service.replays.record import MatchRecord, tag_of


class ReplayFrame(msgspec.Struct, frozen=True, kw_only=True):
    """What a viewer sees after event ``version``."""

    version: int
    type: str
    omniscient: MatchView
    public: MatchView | None = None
    """None: the same as ``omniscient`` (a finished match shows everyone
    everything, RULES §8, unless its ladder hides hands in replays)."""

    def public_view(self) -> MatchView:
        return self.omniscient if self.public is None else self.public


class StoredFrame(msgspec.Struct, frozen=True, kw_only=True):
    """A frame as format 2 stores it: the ``MatchView`` fields that changed.

    ``omniscient``: the fields of this frame's omniscient view that differ
    from the previous frame's (the first frame: every field). ``public``:
    None, the same as ``omniscient``; else the fields of the public view that
    differ from the previous frame's public view (the first: every field).
    """

    version: int
    type: str
    omniscient: dict[str, Any]
    public: dict[str, Any] | None = None


_VIEW_FIELDS = MatchView.__struct_fields__


_BY_ELEMENT = ("seats", "tatami")
"""Stored element by element (``_changes``): a seat or a pair is never null."""


def _differ(cls: type[msgspec.Struct], name: str, by_element: tuple[str, ...] = ()) -> Any:
    """A function ``(new, old) -> {field: new value}`` of the fields of ``cls``
    whose values differ, in field order; the fields in ``by_element``, when as
    long as before, go element by element (``_elements``).

    Written out field by field from ``cls.__struct_fields__`` when this module
    is loaded (as ``dataclasses`` writes ``__init__``): a frame compares ~20
    fields, most of them the very objects of the previous view (the engine's
    view caches), and a loop over ``zip`` of two ``astuple``s cost 1.8x as much.
    A field is unchanged when it is equal: ``is`` only saves the comparison.
    """
    lines = [f"def {name}(new, old):", "    changed = {}"]
    for field in cls.__struct_fields__:
        value = "_elements(a, b) if len(a) == len(b) else a" if field in by_element else "a"
        lines += [
            f"    a = new.{field}",
            f"    b = old.{field}",
            "    if a is not b and a != b:",
            f"        changed[{field!r}] = {value}",
        ]
    lines.append("    return changed")
    namespace: dict[str, Any] = {"_elements": _elements}
    exec("\n".join(lines), namespace)  # our own field names: nothing from outside
    return namespace[name]


def _elements(value: tuple[Any, ...], before: tuple[Any, ...]) -> list[Any]:
    """A changed ``seats``/``tatami`` of the same length, element by element:
    None for a seat or pair equal to before, else the fields of it that differ."""
    return [
        None if new is old or new == old else _PART_CHANGES[type(new)](new, old)
        for new, old in zip(value, before, strict=True)
    ]


_PART_CHANGES: dict[type, Any] = {
    SeatView: _differ(SeatView, "_seat_changes"),
    PairView: _differ(PairView, "_pair_changes"),
}
_view_changes = _differ(MatchView, "_view_changes", _BY_ELEMENT)


def _changes(new: MatchView, old: MatchView | None) -> dict[str, Any]:
    """The fields of a view that differ from ``old``'s, in field order.

    ``seats`` and ``tatami`` (when as long as before) go element by element:
    null for a seat or pair that did not change, else its changed fields (a
    card played changes one seat and one pair, and of that pair one target).
    The first frame (``old`` None) has every field.
    """
    if old is None:
        first = dict(zip(_VIEW_FIELDS, msgspec.structs.astuple(new), strict=True))
        if first.get("clocks") is None:  # untimed: as the view's own bytes leave it out
            first.pop("clocks", None)
        return first
    changed: dict[str, Any] = _view_changes(new, old)
    return changed


def _apply(view: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``view`` (JSON fields) with ``changes`` (``_changes``) applied."""
    merged = view | changes
    for name in _BY_ELEMENT:
        value = changes.get(name)
        if value is not None and name in view and len(value) == len(view[name]):
            merged[name] = [
                b if v is None else b | v for v, b in zip(value, view[name], strict=True)
            ]
    return merged


def stored_frames(frames: Sequence[ReplayFrame]) -> list[StoredFrame]:
    """Frames as format 2 stores them (see ``StoredFrame``)."""
    out: list[StoredFrame] = []
    omniscient: MatchView | None = None
    public: MatchView | None = None
    for f in frames:
        out.append(
            StoredFrame(
                version=f.version,
                type=f.type,
                omniscient=_changes(f.omniscient, omniscient),
                public=None if f.public is None else _changes(f.public, public),
            )
        )
        omniscient, public = f.omniscient, f.public_view()
    return out


def expand_frames(stored: Sequence[StoredFrame]) -> list[ReplayFrame]:
    """Whole frames from stored ones (the inverse of ``stored_frames``)."""
    frames: list[ReplayFrame] = []
    omniscient: dict[str, Any] = {}
    public: dict[str, Any] = {}
    for s in stored:
        omniscient = _apply(omniscient, s.omniscient)
        o = msgspec.convert(omniscient, MatchView)
        if s.public is None:
            public = omniscient
            frames.append(ReplayFrame(version=s.version, type=s.type, omniscient=o))
        else:
            public = _apply(public, s.public)
            frames.append(
                ReplayFrame(
                    version=s.version,
                    type=s.type,
                    omniscient=o,
                    public=msgspec.convert(public, MatchView),
                )
            )
    return frames


def _at(e: Any, s: State) -> datetime | None:
    """The instant a frame's clocks are shown at: its event's (None: untimed)."""
    return None if s.clock is None else datetime.fromisoformat(e.recorded_at)


def public_view(state: State, hide_hands_in_replay: bool) -> MatchView:
    """The frame anyone may watch once the match is over (RULES §8).

    A finished match shows everything to everyone ("anyone after the match
    ends" sees what an administrator sees), which for an earlier state is the
    engine's omniscient view; a ladder that hides hands in replays shows each
    earlier state as a live spectator saw it, and the last as the engine's
    replay view with hands hidden.
    """
    over = state.ended or state.annulled
    now = state.last_at if state.clock is not None else None
    if over:
        return view(state, "spectator", hide_hands_in_replay=hide_hands_in_replay, now=now)
    return view(state, "spectator" if hide_hands_in_replay else "omniscient", now=now)


def _public_frame(state: State, omniscient: MatchView, hide: bool) -> MatchView:
    """``public_view``, without building the omniscient view a second time."""
    if not hide and not (state.ended or state.annulled):
        return omniscient
    return public_view(state, hide)


def build_frames(record: MatchRecord, states: Sequence[State]) -> list[ReplayFrame]:
    hide = record.headers.hide_hands_in_replay
    frames = []
    for e, s in zip(record.events, states, strict=True):
        omniscient = view(s, "omniscient", now=_at(e, s))
        public = _public_frame(s, omniscient, hide)
        frames.append(
            ReplayFrame(
                version=e.version,
                type=tag_of(e.event),
                omniscient=omniscient,
                public=None if public is omniscient else public,
            )
        )
    return frames


def frames_of_states(record: MatchRecord, states: Sequence[State]) -> list[StoredFrame]:
    """``stored_frames(build_frames(record, states))`` in one pass (the worker's path).

    The same views (``view`` and ``_public_frame``, as ``build_frames``) and
    the same changes (``_changes``, as ``stored_frames``), without the whole
    ``ReplayFrame`` of every step in between: tests/workers/test_replays.py checks
    that both give the same bytes.
    """
    hide = record.headers.hide_hands_in_replay
    changes, frame, tag = _changes, StoredFrame, tag_of
    out: list[StoredFrame] = []
    omniscient: MatchView | None = None
    public: MatchView | None = None
    for e, s in zip(record.events, states, strict=True):
        seen = view(s, "omniscient", now=_at(e, s))
        if not hide and not (s.ended or s.annulled):  # _public_frame(s, seen, hide) is seen
            out.append(
                frame(version=e.version, type=tag(e.event), omniscient=changes(seen, omniscient))
            )
            public = seen
        else:
            shown = _public_frame(s, seen, hide)
            out.append(
                frame(
                    version=e.version,
                    type=tag(e.event),
                    omniscient=changes(seen, omniscient),
                    public=changes(shown, public),
                )
            )
            public = shown
        omniscient = seen
    return out
