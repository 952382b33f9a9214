"""The graph engine on a real extract (Monaco): emergency routing against one-way streets,
an exact oracle (networkx Dijkstra on the builder's own model) and agreement with OSRM."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import osrm
import pytest

from common.geo import LatLon
from route_service.graph_engine import PathResult, region
from route_service.graph_engine.search import query_weights, shortest_path
from route_service.graph_engine.weights import Weights
from route_service.graph_format import MODE_EMERGENCY_ONEWAY, MODE_YES
from route_service.importing.graph_build import build_graph
from route_service.importing.graph_model import build_networkx
from route_service.model import RouteQuery
from route_service.providers.graph import GraphProvider

PBF = "monaco.osm.pbf"
OSRM_PROFILES = Path(osrm.__file__).parent / "share" / "profiles"


@pytest.fixture(scope="session")
def monaco_pbf(shared_osm: Path) -> Path:
    return shared_osm / PBF


@pytest.fixture(scope="session")
def monaco(monaco_pbf: Path, tmp_path_factory: pytest.TempPathFactory) -> GraphProvider:
    dataset = tmp_path_factory.mktemp("graph-monaco")
    stats = build_graph(monaco_pbf, dataset / "graph")
    assert stats["nodes"] > 1000 and stats["edges"] > 2000
    return GraphProvider.load(dataset)


@pytest.fixture(scope="session")
def osrm_distance_engine(monaco_pbf: Path, tmp_path_factory: pytest.TempPathFactory) -> osrm.OSRM:
    """OSRM's car profile with the shortest-distance weight, contracted (CH)."""
    work = tmp_path_factory.mktemp("osrm-monaco")
    shutil.copytree(OSRM_PROFILES, work / "profiles")
    profile = work / "profiles" / "car.lua"
    text = profile.read_text()
    profile.write_text(text.replace("weight_name                     = 'routability'",
                                    "weight_name                     = 'distance'", 1))  # fmt: skip
    assert "= 'distance'," in profile.read_text()
    (work / PBF).symlink_to(monaco_pbf)
    for args in (["extract", "-p", str(profile), PBF], ["contract", "monaco.osrm"]):
        subprocess.run([sys.executable, "-m", "osrm", *args], cwd=work, check=True, capture_output=True, timeout=120)
    return osrm.OSRM(str(work / "monaco.osrm"))


def node_point(provider: GraphProvider, node: int) -> LatLon:
    arrays = provider.engine.road.a
    return LatLon(float(arrays["node_lat"][node]), float(arrays["node_lon"][node]))


def snappable_nodes(provider: GraphProvider) -> np.ndarray:
    """Graph nodes at the ends of pieces a car may snap to (in the main network), on the
    surface: a point by a tunnel means the surface road above (graph_engine.snap), which other
    engines, asked directly, do not know."""
    engine = provider.engine
    tree = engine.snapper.tree("car", False)
    assert tree is not None
    owner = tree[1]
    pieces = np.unique(engine.road.point_piece[owner])
    pieces = pieces[~engine.road.underground[pieces]]
    return np.unique(np.concatenate([engine.road.piece_u[pieces], engine.road.piece_v[pieces]]))


def test_relaxed_route_against_oneway_is_shorter(monaco: GraphProvider) -> None:
    road = monaco.engine.road
    car = road.vehicles["car"]
    against = car.edges[car.mode == MODE_EMERGENCY_ONEWAY]
    lengths = road.a["edge_length"][against]
    candidates = against[(lengths > 60) & (lengths < 250)]
    main = set(snappable_nodes(monaco).tolist())
    tried = 0
    for edge in candidates[:200]:
        src, dst = int(road.a["edge_src"][edge]), int(road.a["edge_dst"][edge])
        if src not in main or dst not in main:
            continue
        tried += 1
        query = RouteQuery(node_point(monaco, src), node_point(monaco, dst), route_type="shortest")
        normal = monaco.route(query).routes[0]
        radius = int(2 * road.a["edge_length"][edge]) + 20
        relaxed = monaco.route(RouteQuery(query.origin, query.destination, route_type="shortest",
                                          emergency_radius_m=radius)).routes[0]  # fmt: skip
        if relaxed.distance_m < normal.distance_m - 50:
            assert relaxed.distance_m == pytest.approx(road.a["edge_length"][edge], abs=1.0)
            assert {s.reason for s in relaxed.emergency_segments} == {"oneway_against_direction"}
            assert normal.emergency_segments == []
            zero = monaco.route(RouteQuery(query.origin, query.destination, route_type="shortest",
                                           emergency_radius_m=0)).routes[0]  # fmt: skip
            assert np.array_equal(zero.geometry, normal.geometry) and zero.distance_m == normal.distance_m
            return
    pytest.fail(f"no one-way street in Monaco where driving against it is shorter (tried {tried})")


def test_emergency_routes_are_never_longer(monaco: GraphProvider) -> None:
    rng = np.random.default_rng(7)
    nodes = snappable_nodes(monaco)
    for _ in range(15):
        a, b = (node_point(monaco, int(n)) for n in rng.choice(nodes, 2, replace=False))
        normal = monaco.route(RouteQuery(a, b)).routes[0]
        for radius in (300, 2000):
            relaxed = monaco.route(RouteQuery(a, b, emergency_radius_m=radius)).routes[0]
            assert relaxed.duration_s <= normal.duration_s + 0.5
            for segment in relaxed.emergency_segments:
                assert 0 <= segment.start_index < segment.end_index < len(relaxed.geometry)


def test_shortest_matches_networkx_oracle(monaco: GraphProvider, monaco_pbf: Path) -> None:
    """The numpy/scipy hot path gives exactly networkx's Dijkstra on the networkx model."""
    graph = build_networkx(monaco_pbf)
    order = list(graph.nodes)

    def car_length(u: object, v: object, edges: dict[int, dict]) -> float | None:
        usable = [float(d["length_m"]) for d in edges.values() if d["mode"].get("car") == MODE_YES]
        return min(usable) if usable else None

    rng = np.random.default_rng(3)
    nodes = [n for n in snappable_nodes(monaco) if not isinstance(order[n], tuple)]  # no barrier copies
    for _ in range(20):
        a, b = (int(n) for n in rng.choice(nodes, 2, replace=False))
        expected = nx.shortest_path_length(graph, order[a], order[b], weight=car_length)
        got = monaco.route(RouteQuery(node_point(monaco, a), node_point(monaco, b), route_type="shortest"))
        assert got.origin.distance_m < 0.5 and got.destination.distance_m < 0.5
        assert got.routes[0].distance_m == pytest.approx(expected, abs=0.5)


def test_shortest_agrees_with_osrm(monaco: GraphProvider, osrm_distance_engine: osrm.OSRM) -> None:
    rng = np.random.default_rng(11)
    nodes = snappable_nodes(monaco)
    ratios = []
    for _ in range(20):
        a, b = (node_point(monaco, int(n)) for n in rng.choice(nodes, 2, replace=False))
        ours = monaco.route(RouteQuery(a, b, route_type="shortest")).routes[0].distance_m
        params = osrm.RouteParameters(coordinates=[(a.lon, a.lat), (b.lon, b.lat)])
        theirs = float(osrm_distance_engine.Route(params)["routes"][0]["distance"])
        ratios.append((ours, theirs))
    # OSRM has turn restrictions and no U-turns at the start: it may be a little longer, rarely shorter
    bad = [(o, t) for o, t in ratios if not (0.8 * t - 30 <= o <= 1.02 * t + 30)]
    assert not bad, f"graph vs OSRM distances out of tolerance: {bad}"
    median = float(np.median([o / t for o, t in ratios if t > 0]))
    assert 0.95 <= median <= 1.01


@pytest.mark.parametrize("radius_m", [300.0, 2000.0])
def test_emergency_edges_opened_by_the_index_are_those_wholly_inside_a_disc(monaco: GraphProvider,
                                                                           radius_m: float) -> None:  # fmt: skip
    """The index of emergency piece centres only narrows the candidates: the opened edges are
    exactly those every piece-point of which lies within the radius of the start or the end."""
    road = monaco.engine.road
    rng = np.random.default_rng(11)
    nodes = snappable_nodes(monaco)
    for vehicle in ("car", "truck"):
        graph = road.vehicles[vehicle]
        for _ in range(10):
            a, b = (node_point(monaco, int(n)) for n in rng.choice(nodes, 2))
            origin = monaco.engine.snap(vehicle, a.lat, a.lon, max_distance_m=1000.0)
            dest = monaco.engine.snap(vehicle, b.lat, b.lon, max_distance_m=1000.0)
            assert origin is not None and dest is not None
            weights = query_weights(road, graph, "fastest", origin, dest, radius_m)
            pieces = road.a["edge_piece"][graph.edges[graph.emergency_pos]]
            center, spread = road.piece_center[pieces], road.piece_radius[pieces]
            inside = np.zeros(len(pieces), dtype=bool)
            for xyz in (origin.query_xyz, dest.query_xyz):
                inside |= np.linalg.norm(center - np.asarray(xyz), axis=1) + spread <= radius_m
            opened = np.isfinite(weights[graph.emergency_pos])
            assert np.array_equal(opened, inside & np.isfinite(graph.emergency_weights["fastest"]))


def same_path(a: PathResult | None, b: PathResult | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.distance_m, a.duration_s, a.geometry, a.emergency) == (b.distance_m, b.duration_s, b.geometry,
                                                                     b.emergency)  # fmt: skip


@pytest.mark.parametrize("first_reach", ["measured", "tiny"])
def test_region_search_equals_the_whole_graph_search(monaco: GraphProvider, monkeypatch: pytest.MonkeyPatch,
                                                     first_reach: str) -> None:  # fmt: skip
    """The region search (bounded) finds exactly the unlimited Dijkstra's path on the whole graph,
    for every vehicle and route type, with emergency radii and closed pieces; `tiny` first
    regions make nearly every search grow its region, some up to the whole-graph fallback."""
    monkeypatch.setattr(region, "WHOLE_MAP_SHARE", 2.0)  # Monaco is one town: search regions all the same
    if first_reach == "tiny":
        monkeypatch.setattr(region, "FIRST_REACH", {"fastest": 0.0, "shortest": 0.0})
        monkeypatch.setattr(region, "REACH_MARGIN_M", 0.0)
        monkeypatch.setattr(region, "REACH_FACTORS", (0.5,))
    road = monaco.engine.road
    rng = np.random.default_rng(16)
    nodes = snappable_nodes(monaco)
    compared = 0
    for vehicle in ("car", "truck", "bicycle", "pedestrian"):
        for route_type in ("fastest", "shortest"):
            for radius_m in (0.0, 300.0, 2000.0):
                for _ in range(4):
                    a, b = (node_point(monaco, int(n)) for n in rng.choice(nodes, 2))
                    shift = rng.uniform(-2e-4, 2e-4, 4)  # off the junctions, into the pieces
                    origin = monaco.engine.snap(vehicle, a.lat + shift[0], a.lon + shift[1], max_distance_m=500.0,
                                                radius_m=radius_m)  # fmt: skip
                    dest = monaco.engine.snap(vehicle, b.lat + shift[2], b.lon + shift[3], max_distance_m=500.0,
                                              radius_m=radius_m)  # fmt: skip
                    if origin is None or dest is None:
                        continue
                    closed = rng.choice(road.n_pieces, 40, replace=False) if rng.random() < 0.5 else None
                    found = [shortest_path(road, vehicle, route_type, origin, dest, radius_m, bounded=bounded,
                                           closed_pieces=closed) for bounded in (True, False)]  # fmt: skip
                    assert same_path(*found), (vehicle, route_type, radius_m, a, b)
                    compared += 1
    assert compared > 80


def test_weights_overrides_read_like_a_copy() -> None:
    base = np.arange(10, dtype=np.float64)
    weights = Weights(base).with_values(np.array([7, 2]), np.array([70.0, 20.0]))
    weights = weights.with_values(np.array([2, 9]), np.inf)
    expected = base.copy()
    expected[[7, 2, 9]] = [70.0, np.inf, np.inf]
    assert np.array_equal(weights.dense(), expected)
    assert np.array_equal(weights.take(np.array([9, 0, 2, 7, 7])), expected[[9, 0, 2, 7, 7]])
    assert weights[3] == 3.0 and weights[7] == 70.0
    assert np.array_equal(base, np.arange(10))  # the cached vector is never written
