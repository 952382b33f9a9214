"""Speed limits by time through Valhalla's predicted speeds (route_service.importing.speed_profiles):
Heidelberg's Neckarstaden and Rohrbacher Straße are signed 50 km/h with `maxspeed:conditional=30
@ (22:00-06:00)`; the importer's tiles must drive them at 30 at night and at 50 by day."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import osmium
import pytest
import valhalla

from route_service.importing import speed_profiles
from route_service.importing.speed_profiles import BUCKETS, Written, decoded, fit, holds, limit_kmh, weekly_limits
from route_service.importing.valhalla_build import build_tiles
from route_service.valhalla_tiles import config

NECKARSTADEN = 254010810  # one-way, eastbound, 50 km/h, 30 @ (22:00-06:00)
START = datetime(2026, 12, 1)  # a Tuesday
NIGHT, NOON = "2026-12-01T23:30", "2026-12-01T12:00"  # Tuesday, the road's local time
NO_PREDICTED = {"auto": {"speed_types": ["freeflow", "constrained", "current"]}}


def bucket(day: int, hour: int, minute: int = 0) -> int:
    """A week bucket (day 0: Sunday)."""
    return (day * 1440 + hour * 60 + minute) // 5


@pytest.fixture(scope="module")
def heidelberg(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> tuple[Path, dict[str, Any]]:
    dataset_dir = tmp_path_factory.mktemp("valhalla-night-speeds")
    return dataset_dir, build_tiles(shared_osm / "heidelberg.osm.pbf", dataset_dir, threads=1)


@pytest.fixture(scope="module")
def actor(heidelberg: tuple[Path, dict[str, Any]]) -> valhalla.Actor:
    return valhalla.Actor(config(heidelberg[0]))


def speeds(actor: valhalla.Actor, shape: list[tuple[float, float]], way: int, at: str | None,
           costing_options: dict[str, Any] | None = None) -> list[int]:  # fmt: skip
    """Valhalla's speed on each edge of `way` along the traced shape, at a time."""
    request: dict[str, Any] = {
        "shape": [{"lat": lat, "lon": lon} for lat, lon in shape], "costing": "auto", "shape_match": "map_snap",
        "filters": {"attributes": ["edge.speed", "edge.way_id"], "action": "include"},
    }  # fmt: skip
    if at:
        request["date_time"] = {"type": 1, "value": at}
    if costing_options:
        request["costing_options"] = costing_options
    edges = orjson.loads(actor.trace_attributes(orjson.dumps(request).decode()))["edges"]
    return [edge["speed"] for edge in edges if edge["way_id"] == way]


def conditional_roads(pbf: Path) -> list[tuple[int, bool, list[tuple[float, float]]]]:
    """Heidelberg's ways with a night limit: id, one-way, their nodes."""
    roads = []
    for way in (
        osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter("maxspeed:conditional"))
    ):
        if isinstance(way, osmium.osm.Way) and "22:00" in way.tags["maxspeed:conditional"]:
            roads.append((way.id, way.tags.get("oneway") == "yes", [(n.lat, n.lon) for n in way.nodes]))
    return roads


def test_a_street_signed_30_at_night_is_driven_at_30_at_2330_and_50_at_noon(actor: valhalla.Actor) -> None:
    shape = [(49.41345, 8.70785), (49.41348, 8.70915)]
    night, noon, untimed = (speeds(actor, shape, NECKARSTADEN, at) for at in (NIGHT, NOON, None))
    assert night and max(night) <= 30
    assert noon == untimed and set(noon) == {50}


def test_without_the_profiles_valhalla_drives_the_day_speed_at_night(actor: valhalla.Actor) -> None:
    # The same tiles with Valhalla's predicted speeds switched off: its costing ignores
    # maxspeed:conditional, so the night limit is lost (the 37.7 km/h, here 50).
    shape = [(49.41345, 8.70785), (49.41348, 8.70915)]
    assert set(speeds(actor, shape, NECKARSTADEN, NIGHT, NO_PREDICTED)) == {50}


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_matrix_at_2330_takes_the_night_limit(actor: valhalla.Actor, bidirectional: bool) -> None:
    # TimeDistanceMatrix (Valhalla's choice at a time) and CostMatrix (prioritize_bidirectional)
    def seconds(at: str) -> int:
        request = {
            "sources": [{"lat": 49.41345, "lon": 8.70785}], "targets": [{"lat": 49.41348, "lon": 8.70915}],
            "costing": "auto", "date_time": {"type": 1, "value": at}, "prioritize_bidirectional": bidirectional,
        }  # fmt: skip
        return int(orjson.loads(actor.matrix(orjson.dumps(request).decode()))["sources_to_targets"][0][0]["time"])

    # 94 m: 6.8 s at 50 km/h, 11.3 s at 30
    assert seconds(NOON) <= 7 and seconds(NIGHT) >= 11


def test_every_edge_of_every_way_with_a_night_limit_keeps_it_both_ways(
    actor: valhalla.Actor, heidelberg: tuple[Path, dict[str, Any]], shared_osm: Path
) -> None:
    roads = conditional_roads(shared_osm / "heidelberg.osm.pbf")
    assert len(roads) == 21
    assert heidelberg[1]["ways_applied"] == 21 and heidelberg[1]["rules_skipped"] == 1  # `80 @ wet`
    traced = 0
    for way, oneway, nodes in roads:
        for shape in [nodes] if oneway else [nodes, nodes[::-1]]:
            found = speeds(actor, shape, way, NIGHT)
            traced += len(found)
            assert max(found, default=0) <= 30, way
            assert set(speeds(actor, shape, way, NOON)) <= {50}, way
    assert traced >= heidelberg[1]["profiled_edges"] // 2


@pytest.mark.parametrize("rule", ["22:00-06:00", "Mo-Fr 07:00-18:00;PH off"])
@pytest.mark.parametrize(("day", "limit"), [(50, 30), (100, 80), (30, 10)])
def test_a_profile_never_exceeds_the_limit_where_it_holds_nor_the_speed_elsewhere(
    rule: str, day: int, limit: int
) -> None:
    written = Written()
    limits = weekly_limits(f"{limit} @ ({rule})", START, written)
    assert limits is not None
    target = np.minimum(day, limits)
    driven = decoded(fit(float(day), limits.tobytes()))
    assert (driven <= target).all()
    # what the fit costs: within a few km/h below the target on average, exact far from a change
    assert np.abs(driven - target).mean() < 1.5
    night_only = rule.startswith("22")
    assert driven[bucket(2, 13)] == day if night_only else driven[bucket(6, 13)] == day  # Tuesday / Saturday
    assert driven[bucket(3, 2)] >= limit - 3 if night_only else driven[bucket(2, 13)] >= limit - 3


def test_a_rule_holds_in_the_buckets_its_hours_name_on_any_day_of_the_year() -> None:
    night = holds("22:00-06:00", START)
    assert night[bucket(2, 23, 30)] and night[bucket(0, 5, 55)] and not night[bucket(2, 12)]
    assert night.sum() == BUCKETS // 3
    weekdays = holds("Mo-Fr 07:00-18:00;PH off", START)
    assert weekdays[bucket(1, 7)] and not weekdays[bucket(1, 6, 55)] and not weekdays[bucket(6, 12)]
    summer = holds("Jun-Aug 22:00-06:00", START)  # seasonal: all year, slower, never faster
    assert (summer == night).all()


def test_rules_not_about_time_alone_are_skipped_and_counted() -> None:
    written = Written()
    assert weekly_limits("80 @ wet", START, written) is None
    assert weekly_limits("60 @ (weight>3.5)", START, written) is None
    assert written.skipped == ["80 @ wet", "60 @ (weight>3.5)"]
    assert limit_kmh("30 mph") == pytest.approx(48.28, abs=0.01) and limit_kmh("none") is None


def test_a_map_without_such_limits_runs_no_tool(tmp_path: Path, shared_osm: Path) -> None:
    written = speed_profiles.write_csv(None, shared_osm / "monaco.osm.pbf", tmp_path, START)
    assert written.ways == 0 and not any(tmp_path.iterdir())
