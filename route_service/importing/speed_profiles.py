"""Speed limits by time (`maxspeed:conditional`, e.g. `maxspeed=50` + `30 @ (22:00-06:00)`) as
Valhalla's weekly speed profiles, written at import (issue 56).

Valhalla parses `maxspeed:conditional` but only reports it; its costings never read it. What they
do read, on a route with a `date_time`, is an edge's predicted speed: a week of 2016 five-minute
buckets (from Sunday 00:00) stored as 200 DCT coefficients, which REPLACES the edge's speed
(time-dependent A*, the timed matrix and isochrones; a route without a time never sees it). So
each directed edge of a way with a time-only rule gets the profile `min(its own speed, the
limits that hold)` a bucket, written as `valhalla_add_predicted_traffic`'s CSV (one file per
tile, `edge_id,freeflow,constrained,coefficients`; 0 leaves free-flow and constrained unset,
so routes without a time keep the tagged speed).

Edges: `valhalla_ways_to_edges` is not in the wheel and the Python bindings read no edge, so
the import asks Valhalla's own `locate` at the middle of every OSM segment of such a way (every
edge holds whole segments) and keeps the answers on that way: one request per way, work
bounded by the way's nodes.

Times: conditions are opening-hours expressions (route_service.time_rules parses them); a week
bucket is limited when the rule holds at any moment of it on any day of the coming year (a
seasonal rule is applied all year, public holidays are not known: slower, never faster). The
profile is the road's local wall clock, as Valhalla looks a bucket up: the request's
`date_time` read as local time in the zone the tiles give its origin (Etc/UTC where they carry
none, where it is then read as it is), so a request passes the local time of its departure.

Fit: 200 coefficients cannot hold a step; encoded as is, 50 -> 30 km/h at 22:00 decoded to 39
km/h inside the rule and 52 outside. The target is ramped down over RAMP_BUCKETS before each
rule, then lowered wherever Valhalla's decoded integer speed exceeds it until none does: the
profile never exceeds the limit where it holds nor the speed elsewhere. Measured (50 -> 30,
100 -> 80, 30 -> 10): inside the rule 28-30 for 30; outside it the day speed except within
~1 h of each change (120 min a day for 22:00-06:00, 86 for Mo-Fr 07:00-18:00); mean error over
the week 1.1 / 0.8 km/h (tests/route_service/test_speed_profiles.py, `python -m bench
night_speeds`).
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import osmium
from opening_hours import OpeningHours, State
from valhalla.baldr import GraphId
from valhalla.baldr.utils import compress_speed_buckets, encode_compressed_speeds

from route_service.time_rules import parse_rules

TAG = "maxspeed:conditional"
BUCKETS = 2016  # five-minute buckets of a week, from Sunday 00:00 (baldr/predictedspeeds.h)
BUCKET_S = 300
COEFFICIENTS = 200
# Valhalla's decoding (baldr/predictedspeeds.cc, DCT-III): speed(b) = norm * (c0 / sqrt 2 + sum c_k
# cos(pi / 2016 * (b + 0.5) * k)); GetSpeed then takes int(max(speed, 0.5) + 0.5).
_BASIS = np.cos(np.pi / BUCKETS * (np.arange(BUCKETS)[:, None] + 0.5) * np.arange(COEFFICIENTS)[None, :])
_BASIS[:, 0] = 1 / math.sqrt(2)
_NORM = math.sqrt(2 / BUCKETS)
# Ramp before and after a rule (buckets): measured on 50 -> 30 at 22:00-06:00 and Mo-Fr 07:00-18:00,
# the mean error of the week's speeds was 1.32 / 0.96 km/h without, 1.13 / 0.81 with 60 min, 1.22
# / 0.89 with 90 min; inside the rule the speed then dips to 28 (24 without).
RAMP_BUCKETS = 12
FIT_ROUNDS = 200
MPH = 1.609344
SPEED = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(mph|km/h|kmh|kph)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ConditionalWay:
    way_id: int
    text: str  # the tag's value
    midpoints: list[tuple[float, float]]  # (lat, lon) of every segment's middle


@dataclass
class Written:
    """What the import wrote, for its log and manifest."""

    ways: int = 0  # ways with the tag
    ways_applied: int = 0  # ways with a time rule lower than their speed
    edges: int = 0  # directed edges given a profile
    tiles: int = 0
    skipped: list[str] = field(default_factory=list)  # rules not about time alone (`80 @ wet`)

    def summary(self) -> dict[str, Any]:
        return {"conditional_speed_ways": self.ways, "ways_applied": self.ways_applied,
                "profiled_edges": self.edges, "profiled_tiles": self.tiles, "rules_skipped": len(self.skipped)}  # fmt: skip


def conditional_ways(pbf: Path) -> list[ConditionalWay]:
    """Every road with the tag, with its segments' middles (one pass; pyosmium's filter keeps
    the other ways out of Python)."""
    found = []
    processor = osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter(TAG))
    for way in processor:
        if not isinstance(way, osmium.osm.Way) or "highway" not in way.tags:
            continue
        nodes = [(n.lat, n.lon) for n in way.nodes if n.location.valid()]
        middles = [((a[0] + b[0]) / 2, (a[1] + b[1]) / 2) for a, b in itertools.pairwise(nodes)]
        if middles:
            found.append(ConditionalWay(way.id, way.tags[TAG], middles))
    return found


def limit_kmh(value: str) -> float | None:
    match = SPEED.match(value)
    if match is None:
        return None  # `none`, `walk`, `signals`: no number to cap by
    return float(match.group(1)) * (MPH if (match.group(2) or "").lower() == "mph" else 1.0)


def weekly_limits(text: str, start: datetime, written: Written) -> np.ndarray | None:
    """The lowest limit holding in each bucket (inf where none), None if no rule is about time
    alone; the other rules (`wet`, `weight>3.5`) are recorded as skipped."""
    limits = np.full(BUCKETS, np.inf)
    parsed = parse_rules({TAG: text})
    written.skipped += parsed.not_about_time + parsed.unparseable
    applied = False
    for rule in parsed.rules:
        kmh = limit_kmh(rule.value)
        if kmh is None or rule.condition.limits or rule.condition.hours is None:
            written.skipped.append(rule.text)
            continue
        limits = np.where(holds(rule.condition.hours, start), np.minimum(limits, kmh), limits)
        applied = True
    return limits if applied else None


@cache
def holds(hours: str, start: datetime) -> np.ndarray:
    """The buckets of the week in which the expression holds at any moment on any day of the
    year from `start` (naive: the road's local time)."""
    active = np.zeros(BUCKETS, dtype=bool)
    for begin, end, state, _ in OpeningHours(hours).intervals(start, start + timedelta(days=366)):
        if state != State.OPEN:
            continue
        first = ((begin.weekday() + 1) % 7 * 86400 + begin.hour * 3600 + begin.minute * 60 + begin.second) // BUCKET_S
        last = first + math.ceil(
            ((end - begin).total_seconds() + (begin.minute * 60 + begin.second) % BUCKET_S) / BUCKET_S
        )
        active[np.arange(first, min(last, first + BUCKETS)) % BUCKETS] = True
        if active.all():
            break
    return active


def decoded(coefficients: np.ndarray) -> np.ndarray:
    """The integer speed Valhalla drives in each bucket (GraphTile::GetSpeed)."""
    return np.floor(np.maximum(_BASIS @ coefficients.astype(np.float64) * _NORM, 0.5) + 0.5)


def ramped(day: float, target: np.ndarray) -> np.ndarray:
    """The target with a raised-cosine ramp into every lowered stretch, on its outside."""
    if RAMP_BUCKETS == 0:
        return target
    shaped = target.copy()
    for shift in range(1, RAMP_BUCKETS + 1):
        weight = 0.5 - 0.5 * math.cos(math.pi * shift / RAMP_BUCKETS)  # 0 at the rule, 1 a ramp away
        for neighbour in (np.roll(target, shift), np.roll(target, -shift)):
            shaped = np.minimum(shaped, neighbour + (day - neighbour) * weight)
    return shaped


@cache
def fit(day: float, limits: bytes) -> np.ndarray:
    """200 coefficients whose decoded speeds never exceed min(day, limit) in any bucket."""
    target = np.minimum(day, np.frombuffer(limits, dtype=np.float64))
    signal = ramped(day, target)
    for _ in range(FIT_ROUNDS):
        coefficients = compress_speed_buckets(signal.astype(np.float32))
        speeds = _BASIS @ coefficients.astype(np.float64) * _NORM
        if (decoded(coefficients) <= target).all():
            return coefficients
        signal -= np.maximum(speeds - (target + 0.2), 0.0) * 1.5
    raise RuntimeError(f"no profile under {day} km/h found in {FIT_ROUNDS} rounds")


def way_edges(actor: Any, way: ConditionalWay) -> Iterator[tuple[GraphId, float]]:
    """The way's directed edges a car may drive, with the speed Valhalla gave each."""
    request = {
        "locations": [{"lat": lat, "lon": lon} for lat, lon in way.midpoints],
        "verbose": True,
        "costing": "auto",
    }
    seen: set[int] = set()
    for location in orjson.loads(actor.locate(orjson.dumps(request).decode())):
        for edge in location.get("edges") or []:
            value = int(edge["edge_id"]["value"])
            if edge["edge_info"]["way_id"] == way.way_id and value not in seen:
                seen.add(value)
                yield GraphId(value), float(edge["edge"]["speeds"]["default"])


def write_csv(actor: Any, pbf: Path, traffic_dir: Path, start: datetime) -> Written:
    """The CSV files `valhalla_add_predicted_traffic` reads, one per tile, under `traffic_dir`."""
    written = Written()
    rows: dict[str, list[str]] = defaultdict(list)
    for way in conditional_ways(pbf):
        written.ways += 1
        limits = weekly_limits(way.text, start, written)
        if limits is None:
            continue
        applied = False
        for edge, day in way_edges(actor, way):
            if not (limits < day).any():
                continue  # a rule higher than the road's speed: Valhalla's speed stays
            coefficients = fit(day, limits.tobytes())
            # one file per tile, at the tile's own path (`0/003/107.gph` -> `0/003/107.csv`)
            rows[os.fspath(edge).removesuffix(".gph") + ".csv"].append(
                f"{edge},0,0,{encode_compressed_speeds(coefficients)}"
            )
            written.edges += 1
            applied = True
        written.ways_applied += applied
    for tile, lines in rows.items():
        path = traffic_dir / tile
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    written.tiles = len(rows)
    return written
