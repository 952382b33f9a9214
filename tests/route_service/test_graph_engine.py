"""The graph engine on a tiny hand-built OSM file: paths, one-ways, emergency relaxations, errors.

Cluster 1 (car):  D ---- C        A -> B is one-way (east), everything else two-way;
                  |      |        E lies 1.46 km east of B.
                  A ---> B ---- E
Cluster 2 (car):  R ---- S        P - Q is access=no (closed to general traffic).
                  |      |
                  P -xx- Q
The clusters are not connected to each other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from common.errors import InvalidParameter, NoRouteFound, ParameterErrors, PointNotRoutable
from common.geo import LatLon, haversine_m_arrays
from route_service.importing.graph_build import build_graph
from route_service.importing.graph_model import build_networkx
from route_service.model import MatrixQuery, RouteQuery
from route_service.providers.graph import GraphProvider
from route_service.providers.registry import ProviderRegistry

NODES = {
    1: (49.000, 8.000),  # A
    2: (49.000, 8.010),  # B
    3: (49.005, 8.010),  # C
    4: (49.004, 8.000),  # D
    5: (49.000, 8.030),  # E
    11: (49.010, 8.000),  # P
    12: (49.010, 8.010),  # Q
    13: (49.015, 8.000),  # R
    14: (49.015, 8.010),  # S
    31: (49.030, 8.000),  # cluster 3: 31 - 32 (bollard) - 33, detour 31 - 34 - 33
    32: (49.030, 8.005),
    33: (49.030, 8.010),
    34: (49.034, 8.005),
    41: (49.040, 8.000),  # cluster 4: a surface street 41 - 42, a tunnel 43 - 44 north of it
    42: (49.040, 8.010),
    43: (49.0405, 8.000),  # ~56 m north
    44: (49.0405, 8.010),
}
NODE_TAGS = {32: {"barrier": "bollard"}}
WAYS = [
    (101, [1, 2], {"highway": "residential", "name": "Einbahnstrasse", "oneway": "yes"}),
    (102, [2, 3], {"highway": "residential", "name": "Ostweg"}),
    (103, [3, 4], {"highway": "residential", "name": "Nordweg"}),
    (104, [4, 1], {"highway": "residential", "name": "Westweg"}),
    (105, [2, 5], {"highway": "residential", "name": "Langer Weg"}),
    (201, [11, 12], {"highway": "service", "name": "Feuerwehrzufahrt", "access": "no"}),
    (202, [11, 13], {"highway": "residential", "name": "Links"}),
    (203, [13, 14], {"highway": "residential", "name": "Oben"}),
    (204, [14, 12], {"highway": "residential", "name": "Rechts"}),
    (301, [31, 32, 33], {"highway": "residential", "name": "Pollerweg"}),
    (302, [31, 34, 33], {"highway": "residential", "name": "Umweg"}),
    (401, [41, 42], {"highway": "residential", "name": "Oberflaeche"}),
    (402, [43, 44], {"highway": "service", "name": "Tunnel", "tunnel": "yes", "layer": "-2"}),
]


def ll(node: int) -> LatLon:
    return LatLon(*NODES[node])


def dist(*nodes: int) -> float:
    """Length of the polyline through these nodes, as the builder measures it."""
    lats = np.array([NODES[n][0] for n in nodes])
    lons = np.array([NODES[n][1] for n in nodes])
    return float(haversine_m_arrays(lats[:-1], lons[:-1], lats[1:], lons[1:]).sum())


def osm_xml() -> str:
    lines = ["<?xml version='1.0' encoding='UTF-8'?>", "<osm version='0.6' generator='test'>"]
    for node_id, (lat, lon) in NODES.items():
        node_tags = "".join(f"<tag k='{k}' v='{v}'/>" for k, v in NODE_TAGS.get(node_id, {}).items())
        lines.append(f"<node id='{node_id}' version='1' lat='{lat}' lon='{lon}'>{node_tags}</node>")
    for way_id, refs, tags in WAYS:
        lines.append(f"<way id='{way_id}' version='1'>")
        lines += [f"<nd ref='{ref}'/>" for ref in refs]
        lines += [f"<tag k='{k}' v='{v}'/>" for k, v in tags.items()]
        lines.append("</way>")
    lines.append("</osm>")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def tiny_osm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "tiny.osm"
    path.write_text(osm_xml(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def provider(tiny_osm: Path) -> GraphProvider:
    dataset = tiny_osm.parent / "dataset"
    stats = build_graph(tiny_osm, dataset / "graph")
    # node 34 lies inside a piece (no graph node); the bollard is split into two joined copies
    assert stats["nodes"] == len(NODES) - 1 + 1
    assert stats["edges"] == 2 * (len(WAYS) + 1) + 2
    return GraphProvider.load(dataset)


def route(provider: GraphProvider, a: int, b: int, radius: int = 0, vehicle: str = "car", route_type: str = "fastest"):
    query = RouteQuery(ll(a), ll(b), vehicle=vehicle, route_type=route_type, emergency_radius_m=radius)
    return provider.route(query).routes[0]


def test_networkx_model_has_edge_attributes(tiny_osm: Path) -> None:
    graph = build_networkx(tiny_osm)
    data = graph.get_edge_data(1, 2)[0]
    assert data["highway"] == "residential"
    assert data["oneway"] == 1
    assert data["mode"]["car"] == 1 and data["mode"]["pedestrian"] == 1
    assert data["length_m"] == pytest.approx(dist(1, 2))
    # against the one-way: only an emergency vehicle (mode 3), a pedestrian normally
    back = graph.get_edge_data(2, 1)[1]
    assert back["mode"]["car"] == 3 and back["mode"]["pedestrian"] == 1


@pytest.mark.parametrize("route_type", ["shortest", "fastest"])
def test_known_shortest_path(provider: GraphProvider, route_type: str) -> None:
    best = route(provider, 1, 3, route_type=route_type)  # A -> D -> C beats A -> B -> C
    assert best.distance_m == pytest.approx(dist(1, 4, 3), abs=0.5)
    assert best.duration_s == pytest.approx(dist(1, 4, 3) / (25 / 3.6), rel=1e-3)
    assert best.geometry[0] == pytest.approx((8.000, 49.000))
    assert best.geometry[-1] == pytest.approx((8.010, 49.005))
    assert best.emergency_segments == []
    steps = best.legs[0].steps  # one per street, then the arrival (route_service.maneuvers)
    assert [s.name for s in steps] == ["Westweg", "Nordweg", "Nordweg"]
    assert [s.maneuver.type for s in steps if s.maneuver is not None] == ["depart", "turn", "arrive"]


def test_oneway_is_respected(provider: GraphProvider) -> None:
    assert route(provider, 1, 2).distance_m == pytest.approx(dist(1, 2), abs=0.5)
    assert route(provider, 2, 1).distance_m == pytest.approx(dist(2, 3, 4, 1), abs=0.5)


def test_pedestrian_walks_against_oneway(provider: GraphProvider) -> None:
    assert route(provider, 2, 1, vehicle="pedestrian").distance_m == pytest.approx(dist(2, 1), abs=0.5)


def test_emergency_uses_reverse_oneway_within_radius(provider: GraphProvider) -> None:
    relaxed = route(provider, 2, 1, radius=1000)
    assert relaxed.distance_m == pytest.approx(dist(2, 1), abs=0.5)
    [segment] = relaxed.emergency_segments
    assert segment.reason == "oneway_against_direction"
    assert (segment.start_index, segment.end_index) == (0, len(relaxed.geometry) - 1)
    assert segment.distance_m == pytest.approx(dist(2, 1), abs=0.5)


def test_emergency_not_used_outside_radius(provider: GraphProvider) -> None:
    # the one-way is 730 m long: a 500 m disc around either end does not contain it
    normal = route(provider, 2, 1, radius=500)
    assert normal.distance_m == pytest.approx(dist(2, 3, 4, 1), abs=0.5)
    assert normal.emergency_segments == []


def test_emergency_radius_counts_around_destination(provider: GraphProvider) -> None:
    # from E the one-way is far, but it lies within 1000 m of the destination A
    relaxed = route(provider, 5, 1, radius=1000)
    assert relaxed.distance_m == pytest.approx(dist(5, 2, 1), abs=0.5)
    [segment] = relaxed.emergency_segments
    assert segment.end_index == len(relaxed.geometry) - 1
    assert relaxed.geometry[segment.start_index] == pytest.approx((8.010, 49.000))
    # 700 m: the one-way (730 m) fits in neither disc
    assert route(provider, 5, 1, radius=700).distance_m == pytest.approx(dist(5, 2, 3, 4, 1), abs=0.5)


def test_access_no_used_only_within_radius(provider: GraphProvider) -> None:
    assert route(provider, 11, 12).distance_m == pytest.approx(dist(11, 13, 14, 12), abs=0.5)
    assert route(provider, 11, 12, radius=300).distance_m == pytest.approx(dist(11, 13, 14, 12), abs=0.5)
    relaxed = route(provider, 11, 12, radius=1000)
    assert relaxed.distance_m == pytest.approx(dist(11, 12), abs=0.5)
    assert [s.reason for s in relaxed.emergency_segments] == ["access_restricted"]


def test_radius_zero_is_the_normal_route(provider: GraphProvider) -> None:
    default = provider.route(RouteQuery(ll(2), ll(1)))
    zero = provider.route(RouteQuery(ll(2), ll(1), emergency_radius_m=0))
    assert np.array_equal(zero.routes[0].geometry, default.routes[0].geometry)
    assert zero.routes[0].emergency_segments == []


def test_start_on_the_middle_of_a_road(provider: GraphProvider) -> None:
    # 20 m south of the middle of A-B, heading to D: back west along the one-way is not allowed
    start = LatLon(48.99982, 8.005)
    best = provider.route(RouteQuery(start, ll(4))).routes[0]
    assert best.distance_m == pytest.approx(dist(2, 3, 4) + dist(1, 2) / 2, abs=2)
    assert provider.route(RouteQuery(start, ll(4))).origin.distance_m == pytest.approx(20, abs=1)
    relaxed = provider.route(RouteQuery(start, ll(4), emergency_radius_m=1000)).routes[0]
    assert relaxed.distance_m == pytest.approx(dist(1, 4) + dist(1, 2) / 2, abs=2)


def test_a_point_nearest_a_tunnel_snaps_to_the_surface_road_a_little_farther(provider: GraphProvider) -> None:
    """A point has no height: 40 m from the street and 16 m from the tunnel above it, it means
    the street (graph_engine.snap.SURFACE_PREFERENCE_M)."""
    origin = provider.route(RouteQuery(LatLon(49.04036, 8.005), ll(42))).origin
    assert origin.name == "Oberflaeche" and origin.distance_m == pytest.approx(40, abs=1)


def test_a_point_by_a_tunnel_far_from_any_surface_road_snaps_to_the_tunnel(provider: GraphProvider) -> None:
    origin = provider.route(RouteQuery(LatLon(49.04045, 8.005), ll(44))).origin
    assert origin.name == "Tunnel" and origin.distance_m == pytest.approx(5.6, abs=1)


def test_same_road_both_points(provider: GraphProvider) -> None:
    best = provider.route(RouteQuery(LatLon(49.0, 8.002), LatLon(49.0, 8.006))).routes[0]
    assert best.distance_m == pytest.approx(dist(1, 2) * 0.4, abs=1)
    assert len(best.geometry) == 2


def test_bollard_blocks_cars_not_pedestrians(provider: GraphProvider) -> None:
    assert route(provider, 31, 33).distance_m == pytest.approx(dist(31, 34, 33), abs=0.5)
    assert route(provider, 31, 33, vehicle="pedestrian").distance_m == pytest.approx(dist(31, 33), abs=0.5)


def test_unreachable_raises_no_route(provider: GraphProvider) -> None:
    with pytest.raises(NoRouteFound):
        route(provider, 1, 12)


def test_far_point_raises_point_not_routable(provider: GraphProvider) -> None:
    with pytest.raises(PointNotRoutable) as caught:
        provider.route(RouteQuery(ll(1), LatLon(49.1, 8.0)))
    assert caught.value.violations[0].parameter == "to"
    assert "1000 m" in str(caught.value)


def test_invalid_vehicle_raises_invalid_parameter(provider: GraphProvider) -> None:
    """Refused where every request is validated, before the provider: the registry's choice."""
    with pytest.raises(InvalidParameter) as caught:
        ProviderRegistry({"graph": provider}, "graph").choose("graph", "tank", "fastest", ParameterErrors())
    assert caught.value.violations[0].parameter == "vehicle"


def test_matrix_matches_routes(provider: GraphProvider) -> None:
    points = [ll(1), ll(2), ll(3)]
    result = provider.matrix(MatrixQuery(points, points, route_type="shortest"))
    for i, a in enumerate((1, 2, 3)):
        for j, b in enumerate((1, 2, 3)):
            expected = route(provider, a, b, route_type="shortest") if a != b else None
            cell = result.distances_m[i][j]
            assert cell == pytest.approx(expected.distance_m if expected else 0.0, abs=0.5)
            duration = result.durations_s[i][j]
            assert duration == pytest.approx(expected.duration_s if expected else 0.0, abs=0.5)


def test_matrix_unreachable_is_none(provider: GraphProvider) -> None:
    result = provider.matrix(MatrixQuery([ll(1)], [ll(12)]))
    assert result.durations_s == [[None]]


def test_info(provider: GraphProvider) -> None:
    info = provider.info()
    assert info.name == "graph" and info.emergency_routing and not info.alternatives
    assert info.vehicles == ("car", "truck", "bicycle", "pedestrian") and info.route_types == ("fastest", "shortest")
    plugins = provider.plugins()
    assert plugins.matrix is not None and plugins.waypoints is None and plugins.cost is None  # served leg by leg
