"""Map matching of tracks longer than one OSRM Match call (no aiohttp here): the detour
engine's tracks and POST /v1/match alike.

A track is matched in chunks of MATCH_CHUNK points that share their boundary point, so no
stretch of road between two chunks is lost; the result is in indices of the whole track. A
chunk whose matching fails in the engine counts as unmatched, and the track goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from common.geo import LatLon
from route_service.model import Matching, MatchQuery, MatchResult, Snapped
from route_service.providers.base import MatchPlugin

log = logging.getLogger("route_service.matching")

# Points per OSRM Match call: 2000 take a fraction of a second (measured on Heidelberg tracks);
# OSRM's own HTTP server stops at 100 by default, the binding has no limit.
MATCH_CHUNK = 2000


def match_in_chunks(
    match: MatchPlugin,
    points: Sequence[LatLon],
    timestamps: Sequence[int] | None,
    vehicle: str,
    route_type: str,
    *,
    detail: bool = False,
    gps_accuracy_m: float | None = None,
    chunk_size: int = MATCH_CHUNK,
) -> MatchResult:
    count = len(points)
    matchings: list[Matching] = []
    matched = [False] * count
    snapped: list[Snapped | None] = [None] * count if detail else []
    start = 0
    while start < count - 1:
        stop = min(start + chunk_size, count)
        times = list(timestamps[start:stop]) if timestamps is not None else None
        query = MatchQuery(list(points[start:stop]), times, vehicle, route_type, detail, gps_accuracy_m)
        try:
            result = match(query)
        except RuntimeError:  # an engine failure: this stretch stays unmatched, the track goes on
            log.exception("map matching failed for %d points", stop - start)
            result = MatchResult([], [False] * (stop - start))
        for m in result.matchings:
            matchings.append(replace(m, first_index=start + m.first_index, last_index=start + m.last_index))
        for offset, ok in enumerate(result.matched):
            # the boundary point belongs to both chunks: matched if either matched it
            matched[start + offset] = matched[start + offset] or ok
            if detail and ok and snapped[start + offset] is None:
                snapped[start + offset] = result.snapped[offset]
        start = stop - 1
    return MatchResult(matchings, matched, snapped)
