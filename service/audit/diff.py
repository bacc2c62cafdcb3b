"""The first place where two JSON values differ, as a readable path."""

from __future__ import annotations

from typing import Any

_MISSING: Any = object()


def first_difference(logged: Any, expected: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """``(path, logged_part, expected_part)`` of the first difference, or None.

    Keys are visited in sorted order, so the answer does not depend on the
    order jsonb happened to store them in. A key present on one side only is a
    difference (its other side is reported as None), which is how an injected
    field is caught even though a Struct decoder would silently ignore it.
    """
    if isinstance(logged, dict) and isinstance(expected, dict):
        for key in sorted(set(logged) | set(expected)):
            here = f"{path}.{key}" if path else str(key)
            if key not in logged or key not in expected:
                return here, logged.get(key), expected.get(key)
            found = first_difference(logged[key], expected[key], here)
            if found:
                return found
        return None
    if isinstance(logged, list) and isinstance(expected, list):
        for i, (a, b) in enumerate(zip(logged, expected, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(logged) != len(expected):
            return path or "(whole)", logged, expected
        return None
    # bool is an int in Python: True == 1 must still count as a difference.
    if type(logged) is not type(expected) or logged != expected:
        return path or "(whole)", logged, expected
    return None
