"""Emergency routes on Valhalla (issue 56): relaxations only within the radius, and marked.

A tiny hand-made map (Valhalla's tiles built from it), the oracle networkx on the same ways:

    D ---- C          A -> B is one-way (east); E lies 1.46 km east of B.
    |      |
    A ---> B ---- E
    R ---- S          P - Q is closed to general traffic (a bus lane: access=no, psv=yes).
    |      |
    P -xx- Q
    31 - 32 (bollard) - 33 -> 35 (one-way east), detour 31 - 34 - 33;
    51 - 52 a cycleway, detour 51 - 53 - 52; 61 -> 62 a motorway (one-way east), detour 61 - 63 - 62.
    71 - 72 closed to every mode (access=no), detour 71 - 73 - 74 - 72 as for P - Q; 81 - 82 a
    pedestrian zone open to bicycles, 91 - 92 a footway, 111 - 112 closed to trucks (hgv=no), each
    with such a detour (81's and 91's 4.1 km long, so that their 12 km/h beat it); 121 - 122 -
    (access=private) - 123 - 124, detour 122 - 125 - 126 - 123.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import osmium
import pytest
from osmium.osm.mutable import Node, Way

from common.errors import NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from route_service.importing.valhalla_build import build_tiles
from route_service.model import RouteQuery
from route_service.providers import valhalla_emergency
from route_service.providers.valhalla import ValhallaProvider

NODES = {
    1: (49.000, 8.000), 2: (49.000, 8.010), 3: (49.005, 8.010), 4: (49.004, 8.000), 5: (49.000, 8.030),
    11: (49.010, 8.000), 12: (49.010, 8.010), 13: (49.015, 8.000), 14: (49.015, 8.010),
    31: (49.030, 8.000), 32: (49.030, 8.005), 33: (49.030, 8.010), 34: (49.034, 8.005), 35: (49.030, 8.014),
    51: (49.050, 8.000), 52: (49.050, 8.010), 53: (49.054, 8.005),
    61: (49.070, 8.000), 62: (49.070, 8.010), 63: (49.074, 8.005),
    71: (49.090, 8.000), 72: (49.090, 8.010), 73: (49.095, 8.000), 74: (49.095, 8.010),
    81: (49.110, 8.000), 82: (49.110, 8.010), 83: (49.125, 8.000), 84: (49.125, 8.010),
    91: (49.140, 8.000), 92: (49.140, 8.010), 93: (49.155, 8.000), 94: (49.155, 8.010),
    111: (49.170, 8.000), 112: (49.170, 8.010), 113: (49.175, 8.000), 114: (49.175, 8.010),
    121: (49.200, 8.000), 122: (49.200, 8.005), 123: (49.200, 8.015), 124: (49.200, 8.020),
    125: (49.204, 8.005), 126: (49.204, 8.015),
}  # fmt: skip
BOLLARD = 32


STREET = {"highway": "residential"}


def detour(way: int, *nodes: int) -> list[tuple[int, list[int], dict[str, str]]]:
    """One way a piece: Valhalla's edge walk of a route along the closed way from A to B took a
    one-edge detour from A to B instead (same ends), and the walk was not vouched for."""
    return [(way + i, [u, v], STREET) for i, (u, v) in enumerate(itertools.pairwise(nodes))]


WAYS = [
    (101, [1, 2], {**STREET, "oneway": "yes"}),
    (102, [2, 3], STREET), (103, [3, 4], STREET), (104, [4, 1], STREET), (105, [2, 5], STREET),
    (201, [11, 12], {"highway": "service", "access": "no", "psv": "yes"}),
    (202, [11, 13], STREET), (203, [13, 14], STREET), (204, [14, 12], STREET),
    (301, [31, 32, 33], STREET), (302, [31, 34, 33], STREET), (303, [33, 35], {**STREET, "oneway": "yes"}),
    (501, [51, 52], {"highway": "cycleway"}), (502, [51, 53, 52], STREET),
    (601, [61, 62], {"highway": "motorway", "oneway": "yes"}), (602, [61, 63, 62], STREET),
    (701, [71, 72], {**STREET, "access": "no"}), *detour(702, 71, 73, 74, 72),
    (801, [81, 82], {"highway": "pedestrian", "bicycle": "yes"}), *detour(802, 81, 83, 84, 82),
    (901, [91, 92], {"highway": "footway"}), *detour(902, 91, 93, 94, 92),
    (1101, [111, 112], {**STREET, "hgv": "no"}), *detour(1102, 111, 113, 114, 112),
    (1201, [121, 122], STREET), (1202, [122, 123], {**STREET, "access": "private"}), (1203, [123, 124], STREET),
    *detour(1204, 122, 125, 126, 123),
]  # fmt: skip
CLOSED = {  # the closed way of each detour group: its ends and length
    way: (refs[0], refs[-1], haversine_m(LatLon(*NODES[refs[0]]), LatLon(*NODES[refs[-1]])))
    for way, refs, _ in WAYS
    if way in (701, 801, 901, 1101)
}
RADII = (0, 300, 500, 700, 1000, 2000, 5000)


def ll(node: int) -> LatLon:
    return LatLon(*NODES[node])


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> ValhallaProvider:
    folder = tmp_path_factory.mktemp("emergency")
    pbf = folder / "tiny.osm.pbf"
    with osmium.SimpleWriter(str(pbf)) as writer:
        for node, (lat, lon) in sorted(NODES.items()):
            tags = {"barrier": "bollard"} if node == BOLLARD else {}
            writer.add_node(Node(id=node, location=(lon, lat), tags=tags))
        for way, refs, tags in WAYS:
            writer.add_way(Way(id=way, nodes=refs, tags=tags))
    build_tiles(pbf, folder, threads=1)
    return ValhallaProvider.load(Path(folder))


def oracle(origin: int, destination: int, radius: float) -> float:
    """The shortest emergency route by networkx (every street residential: Valhalla's fastest
    route is the shortest; its `shortest` misses relaxed paths, see valhalla_emergency): a car drives along every open way, against a
    one-way or through the bus lane only where the piece lies within the radius of an end, past
    the bollard, along the cycleway and against the motorway never (a straight piece lies in a
    disc when its ends do)."""
    graph = nx.DiGraph()
    ends = (ll(origin), ll(destination))

    def near(*nodes: int) -> bool:
        return any(all(haversine_m(ll(n), end) <= radius for n in nodes) for end in ends)

    for way, refs, tags in WAYS:
        if tags["highway"] == "cycleway" or way in (801, 901, 1101):  # tested on their own below
            continue
        never_against = tags["highway"] == "motorway"
        closed = tags.get("access") == "no"
        for u, v in itertools.pairwise(refs):
            if BOLLARD in (u, v):
                continue
            length = haversine_m(ll(u), ll(v))
            if not closed or near(u, v):
                graph.add_edge(u, v, weight=length)
            if (not closed and tags.get("oneway") != "yes") or (near(u, v) and not never_against):
                graph.add_edge(v, u, weight=length)
    return float(nx.shortest_path_length(graph, origin, destination, weight="weight"))


def route(provider: ValhallaProvider, a: int, b: int, radius: int, route_type: str = "fastest", vehicle: str = "car"):
    query = RouteQuery(ll(a), ll(b), vehicle=vehicle, route_type=route_type, emergency_radius_m=radius)
    return provider.route(query).routes[0]


@pytest.mark.parametrize("radius", RADII)
def test_the_emergency_route_is_networkx_s(provider: ValhallaProvider, radius: int) -> None:
    groups = ((1, 2, 3, 4, 5), (11, 12, 13, 14), (31, 33, 34, 35), (51, 52, 53), (61, 62, 63), (71, 72, 73, 74))
    pairs = [(a, b) for group in groups
             for a, b in itertools.permutations(group, 2)]  # fmt: skip
    for a, b in pairs:
        try:
            expected = oracle(a, b, radius)
        except nx.NetworkXNoPath:  # out of the one-way's dead end at 35, beyond the radius
            with pytest.raises(NoRouteFound):
                route(provider, a, b, radius)
            continue
        assert route(provider, a, b, radius).distance_m == pytest.approx(expected, rel=3e-3), (a, b)


def test_against_a_one_way_within_the_radius_is_marked(provider: ValhallaProvider) -> None:
    relaxed = route(provider, 2, 1, 1000, "fastest")
    [segment] = relaxed.emergency_segments
    assert segment.reason == "oneway_against_direction"
    assert (segment.start_index, segment.end_index) == (0, len(relaxed.geometry) - 1)
    assert segment.distance_m == pytest.approx(haversine_m(ll(2), ll(1)), abs=1)


def test_the_radius_counts_around_the_destination(provider: ValhallaProvider) -> None:
    relaxed = route(provider, 5, 1, 1000, "fastest")
    [segment] = relaxed.emergency_segments
    assert segment.end_index == len(relaxed.geometry) - 1
    assert relaxed.geometry[segment.start_index] == pytest.approx((8.010, 49.000))


def test_a_closed_way_within_the_radius_is_marked_access_restricted(provider: ValhallaProvider) -> None:
    relaxed = route(provider, 11, 12, 1000, "fastest")
    assert [s.reason for s in relaxed.emergency_segments] == ["access_restricted"]


@pytest.mark.parametrize(("a", "b"), [(2, 1), (5, 1), (11, 12)])
def test_a_route_that_needs_no_relaxation_is_the_normal_route(provider: ValhallaProvider, a: int, b: int) -> None:
    """500 m: the one-way (730 m) and the bus lane (730 m) fit in neither disc."""
    normal = provider.route(RouteQuery(ll(a), ll(b)))
    emergency = provider.route(RouteQuery(ll(a), ll(b), emergency_radius_m=500))
    assert np.array_equal(emergency.routes[0].geometry, normal.routes[0].geometry)
    assert emergency.routes[0].duration_s == normal.routes[0].duration_s
    assert emergency.routes[0].emergency_segments == []


@pytest.mark.parametrize(("way", "vehicle"), [(701, "car"), (801, "car"), (1101, "truck")])
def test_a_closed_way_a_vehicle_can_drive_opens_within_the_radius_only(provider: ValhallaProvider, way: int,
                                                                        vehicle: str) -> None:  # fmt: skip
    """access=no (which Valhalla's graph drops unless the import tags it emergency=yes), a
    pedestrian zone, hgv=no for a truck (Valhalla reports the car's access to a truck): taken and
    marked within 1000 m, the 730 m way fits no 300 m disc, so the detour is driven."""
    a, b, metres = CLOSED[way]
    inside = route(provider, a, b, 1000, vehicle=vehicle)
    assert inside.distance_m == pytest.approx(metres, rel=3e-3)
    assert [s.reason for s in inside.emergency_segments] == ["access_restricted"]
    outside = route(provider, a, b, 300, vehicle=vehicle)
    assert outside.distance_m > 2 * metres and outside.emergency_segments == []


@pytest.mark.parametrize("vehicle", ["car", "truck", "bicycle", "pedestrian"])
def test_a_normal_route_never_uses_a_way_closed_to_every_mode(provider: ValhallaProvider, vehicle: str) -> None:
    """The import's emergency=yes opens access=no to no normal route."""
    a, b, metres = CLOSED[701]
    assert provider.route(RouteQuery(ll(a), ll(b), vehicle=vehicle)).routes[0].distance_m > 2 * metres


def test_a_footway_is_never_driven(provider: ValhallaProvider) -> None:
    """`ignore_access` opens a footway to a car (a pedestrian's access bit): not a way a vehicle
    can drive, so never a relaxation, even within the largest radius."""
    a, b, metres = CLOSED[901]
    relaxed = route(provider, a, b, 5000)
    assert relaxed.distance_m > 2 * metres and relaxed.emergency_segments == []


def test_a_private_way_is_driven_through_within_the_radius_only(provider: ValhallaProvider) -> None:
    """Valhalla's normal route never drives through access=private (destination-only) while a
    detour exists; an emergency route does where the way (365-1095 m from the start) lies within
    the radius, marked, and keeps to the detour where it does not."""
    normal = route(provider, 121, 124, 0)
    inside = route(provider, 121, 124, 1200)
    outside = route(provider, 121, 124, 1000)
    assert normal.distance_m == pytest.approx(outside.distance_m) and outside.emergency_segments == []
    assert inside.distance_m == pytest.approx(haversine_m(ll(121), ll(124)), rel=3e-3)
    assert normal.distance_m > inside.distance_m + 500
    [segment] = inside.emergency_segments
    assert segment.reason == "access_restricted"
    assert segment.distance_m == pytest.approx(haversine_m(ll(122), ll(123)), abs=1)


def test_a_relaxed_route_no_faster_than_the_normal_one_is_not_walked(provider: ValhallaProvider,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Against the motorway (never relaxed): the second round's relaxed route is the detour, no
    faster than the normal route, so it is not walked (each round only excludes more)."""
    actions: list[str] = []
    call = provider.call

    def counted(action: str, *args: Any, **kwargs: Any) -> Any:
        actions.append(action)
        return call(action, *args, **kwargs)

    monkeypatch.setattr(provider, "call", counted)
    relaxed = route(provider, 62, 61, 5000)
    assert actions.count("trace_attributes") == 1
    assert relaxed.emergency_segments == [] and relaxed.distance_m > 1.5 * haversine_m(ll(61), ll(62))


def test_more_offending_edges_than_valhalla_excludes_give_the_normal_route(provider: ValhallaProvider) -> None:
    """Valhalla refuses more `exclude_locations` than its limit: the normal route answers instead."""
    config = copy.deepcopy(provider.config)
    config["service_limits"]["max_exclude_locations"] = 0
    strict = ValhallaProvider(config)
    relaxed = strict.route(RouteQuery(ll(62), ll(61), emergency_radius_m=5000)).routes[0]
    normal = strict.route(RouteQuery(ll(62), ll(61))).routes[0]
    assert np.array_equal(relaxed.geometry, normal.geometry) and relaxed.emergency_segments == []


@pytest.fixture(scope="module")
def monaco(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> ValhallaProvider:
    folder = tmp_path_factory.mktemp("emergency-monaco")
    build_tiles(shared_osm / "monaco.osm.pbf", folder, threads=1)
    return ValhallaProvider.load(folder)


def test_no_marked_segment_leaves_the_radius_on_a_real_map(monaco: ValhallaProvider) -> None:
    """Monaco, random pairs of points that Valhalla routes a car between: every marked stretch
    lies within the radius of the start or of the destination, and an emergency route is never
    slower than the normal one."""
    rng = np.random.default_rng(56)
    marked = routed = 0
    while routed < 30:
        a, b = (LatLon(float(p[0]), float(p[1])) for p in rng.uniform((43.727, 7.409), (43.746, 7.439), (2, 2)))
        try:
            normal = monaco.route(RouteQuery(a, b, steps=False)).routes[0]
        except (NoRouteFound, PointNotRoutable):
            continue
        routed += 1
        for radius in (300, 1000):
            query = RouteQuery(a, b, steps=False, emergency_radius_m=radius)
            relaxed = monaco.route(query).routes[0]
            assert relaxed.duration_s <= normal.duration_s + 0.5
            for segment in relaxed.emergency_segments:
                marked += 1
                points = relaxed.geometry[segment.start_index : segment.end_index + 1]
                assert valhalla_emergency.inside(points, query), (a, b, radius, segment)
    assert marked > 0, "Monaco's one-way streets give some emergency route a relaxation"
