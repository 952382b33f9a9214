"""Detour results → the JSON body of POST /v1/detour/file (no aiohttp here).

Distances in metres, durations in seconds, both to 0.1; percentages to 0.1 and null when
the base distance is zero. `summary.linesRead == summary.answered + summary.failed` always
holds, and every failed line has an entry in `errors` (a track that cannot be answered as a
whole adds one entry with `line` null and counts all of its lines as failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.geo import LatLon
from common.osm_inputs import ATTRIBUTION
from route_service.detour.csvfile import LineError
from route_service.detour.engine import DetourResult, TrackResult, percent, rounded
from route_service.model import Cost


@dataclass(frozen=True)
class Request:
    """What the answer repeats about the request."""

    filename: str
    provider: str
    vehicle: str
    route_type: str
    dataset: str


def cost(value: Cost) -> dict[str, float]:
    return {"distance": rounded(value.distance_m), "duration": rounded(value.duration_s)}


def point(value: LatLon) -> dict[str, float]:
    return {"lat": value.lat, "lon": value.lon}


def errors_body(errors: list[LineError]) -> list[dict[str, Any]]:
    # Whole-track errors (line None) first, then by line.
    ordered = sorted(errors, key=lambda e: (e.line is not None, e.line or 0))
    return [{"line": e.line, "code": e.code, "message": e.message} for e in ordered]


def envelope(kind: str, request: Request, summary: dict[str, Any], results: list[dict[str, Any]],
             errors: list[LineError]) -> dict[str, Any]:  # fmt: skip
    return {
        "kind": kind,
        "filename": request.filename,
        "provider": request.provider,
        "vehicle": request.vehicle,
        "type": request.route_type,
        "summary": summary,
        "results": results,
        "errors": errors_body(errors),
        "dataset": request.dataset,
        "attribution": ATTRIBUTION,
    }


def detour_item(result: DetourResult) -> dict[str, Any]:
    return {
        "line": result.case.line,
        "id": result.case.id,
        "direct": cost(result.direct),
        "viaRoute": cost(result.via),
        "extraDistance": rounded(result.extra_distance_m),
        "extraDuration": rounded(result.extra_duration_s),
        "extraPercent": result.extra_percent,
    }


def detours_body(
    request: Request, lines_read: int, results: list[DetourResult], errors: list[LineError]
) -> dict[str, Any]:
    results = sorted(results, key=lambda r: r.case.line)
    direct = Cost(sum(r.direct.distance_m for r in results), sum(r.direct.duration_s for r in results))
    via = Cost(sum(r.via.distance_m for r in results), sum(r.via.duration_s for r in results))
    summary = {
        "linesRead": lines_read,
        "answered": len(results),
        "failed": lines_read - len(results),
        "direct": cost(direct),
        "viaRoute": cost(via),
        "extraDistance": rounded(via.distance_m - direct.distance_m),
        "extraDuration": rounded(via.duration_s - direct.duration_s),
        "extraPercent": percent(via.distance_m - direct.distance_m, direct.distance_m),
    }
    return envelope("detours", request, summary, [detour_item(r) for r in results], errors)


def track_item(result: TrackResult) -> dict[str, Any]:
    return {
        "firstLine": result.first.line,
        "lastLine": result.last.line,
        "from": point(result.first.point),
        "to": point(result.last.point),
        "driven": cost(result.driven),
        "best": cost(result.best),
        "extraDistance": rounded(result.extra_distance_m),
        "extraDuration": rounded(result.extra_duration_s),
        "extraPercent": result.extra_percent,
        "matched": result.method != "straight-line",
        "method": result.method,
        "pointsUsed": result.points_used,
        "matchedPoints": result.matched_points,
        "straightLineDistance": rounded(result.straight_line_m),
        "elapsed": None if result.elapsed_s is None else rounded(result.elapsed_s),
        "notes": result.notes,
    }


def track_body(
    request: Request, lines_read: int, result: TrackResult | None, errors: list[LineError]
) -> dict[str, Any]:
    answered = result.points_used if result is not None else 0
    summary = {"linesRead": lines_read, "answered": answered, "failed": lines_read - answered}
    return envelope("track", request, summary, [track_item(result)] if result is not None else [], errors)
