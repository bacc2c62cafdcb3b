"""PostgreSQL's binary COPY format, laid out a column at a time with strided
slices (no Python step per element): what the recomputes write with."""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

BINARY_HEADER: Final = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
BINARY_TRAILER: Final = struct.pack(">h", -1)
INT8_OID: Final = 20
FLOAT8_OID: Final = 701
LITTLE_ENDIAN: Final = sys.byteorder == "little"
ARRAY_HEADER: Final = struct.Struct(">iiIii").pack  # ndim 1, no nulls, element type, length, 1
FIELD: Final = struct.Struct(">i").pack
NULL_FIELD: Final = FIELD(-1)
# A score's big-endian float8 from its code (codes.py: 2 win, 1 draw, 0 loss,
# + 4 on time): only the first two bytes differ (1.0 = 3ff0 0000 0000 0000,
# 0.5 = 3fe0 ..., 0.0 = 0).
SCORE_BYTE0: Final = bytes([0x00, 0x3F, 0x3F, 0x00, 0x00, 0x3F, 0x3F] + [0] * 249)
SCORE_BYTE1: Final = bytes([0x00, 0xE0, 0xF0, 0x00, 0x00, 0xE0, 0xF0] + [0] * 249)
assert [struct.pack(">d", v)[:2] for v in (0.0, 0.5, 1.0) * 2] == [
    bytes([SCORE_BYTE0[c], SCORE_BYTE1[c]]) for c in (0, 1, 2, 4, 5, 6)
]


def little_endian(values: array[Any]) -> bytes:
    if LITTLE_ENDIAN:
        return values.tobytes()
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped.tobytes()


def big_endian(values: array[Any]) -> bytes:
    if not LITTLE_ENDIAN:
        return values.tobytes()
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped.tobytes()


def cells(columns: Sequence[bytes | None], n: int) -> bytearray:
    """``n`` array elements in COPY's binary format, each its length (8) and 8
    bytes; byte ``k`` of element ``e`` is ``columns[k][e]`` (None: all zero)."""
    out = bytearray(12 * n)
    out[3::12] = b"\x08" * n
    for k, column in enumerate(columns):
        if column is not None:
            out[4 + k :: 12] = column
    return out


def cells_of(values: array[Any]) -> bytearray:
    """8-byte numbers (``array('d')`` or ``array('q')``) as COPY array elements."""
    raw = big_endian(values)
    return cells([raw[k::8] for k in range(8)], len(values))


_FLOAT8_CELL: Final = np.dtype([("size", ">i4"), ("value", ">f8")])
_INT8_CELL: Final = np.dtype([("size", ">i4"), ("value", ">i8")])


def number_cells(values: NDArray[np.float64] | NDArray[np.int64]) -> bytes:
    """A numpy column (float64 or int64) as COPY array elements, the length (8)
    and the big-endian value of each, laid out by numpy in one pass."""
    cell = _FLOAT8_CELL if values.dtype.kind == "f" else _INT8_CELL
    out = np.empty(len(values), dtype=cell)
    out["size"] = 8
    out["value"] = values
    return out.tobytes()
