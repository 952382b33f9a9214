"""Encoded polylines (Google's format, as OSRM writes them) → coordinate arrays (no aiohttp).

Why not the engine's GeoJSON: the binding hands GeoJSON coordinates over as a tree of
per-point objects, and walking it cost more than the route search itself on long routes
(bench/RESULTS.md). A polyline is one string; decoding it with numpy takes a few µs per
hundred points, and orjson writes the array without a Python object per number.
"""

from __future__ import annotations

import numpy as np

CHUNK_BITS = 5
CONTINUES = 0x20  # a character with this bit set is followed by more of the same value
OFFSET = 63  # every character is stored as its 6-bit value + 63 (printable ASCII)


def decode(encoded: str, precision: int = 6) -> np.ndarray:
    """(n, 2) float64 array of (lon, lat), GeoJSON order, C-contiguous (orjson needs it).

    Raises ValueError on a string that is not a complete polyline."""
    raw = characters(encoded)
    if raw.size == 0:
        return np.zeros((0, 2), dtype=np.float64)
    last_of_value = (raw & CONTINUES) == 0
    if raw[-1] & CONTINUES or np.count_nonzero(last_of_value) % 2:
        raise ValueError("not a complete encoded polyline")
    starts = np.flatnonzero(np.concatenate(([True], last_of_value[:-1])))
    position = np.arange(raw.size) - np.repeat(starts, np.diff(np.append(starts, raw.size)))
    values = np.add.reduceat((raw & (CONTINUES - 1)) << (CHUNK_BITS * position), starts)
    deltas = np.where(values & 1, ~(values >> 1), values >> 1)  # zig-zag sign
    lat_lon = np.cumsum(deltas.reshape(-1, 2), axis=0)
    # Division (not * 1e-6) gives the double nearest the decimal, which prints as written.
    return np.ascontiguousarray(lat_lon[:, ::-1]) / 10.0**precision


# The characters that end a value ('?' to '^') and those that continue one ('_' to '~').
_LAST_OF_VALUE = bytes(range(OFFSET, OFFSET + CONTINUES))
_CONTINUING = bytes(range(OFFSET + CONTINUES, OFFSET + 2 * CONTINUES))


def point_count(encoded: str) -> int:
    """How many points a polyline holds, without decoding it (two values per point).

    With bytes methods, not numpy: it runs for every step of every route (15 a route on
    Heidelberg), where numpy's per-call overhead made it ~10 µs a step, this < 1 µs (measured).
    Non-ASCII text fails to encode, a ValueError too."""
    last = encoded.encode("ascii").translate(None, _CONTINUING)
    if last.strip(_LAST_OF_VALUE):
        raise ValueError("a polyline holds only the characters '?' to '~'")
    return len(last) // 2


def characters(encoded: str) -> np.ndarray:
    raw = np.frombuffer(encoded.encode("ascii"), dtype=np.uint8).astype(np.int64) - OFFSET
    if ((raw < 0) | (raw > 2 * CONTINUES - 1)).any():
        raise ValueError("a polyline holds only the characters '?' to '~'")
    return raw
