"""Build the road graph for the graph engine from an .osm.pbf extract.

The graph model is a `networkx.MultiDiGraph` (see `build_networkx`): one node per way
junction, way end or barrier; one edge per direction of each stretch of way between two
such nodes ("piece"), carrying length, highway class, oneway, per-vehicle access mode and
speed. `build_graph` exports that model to flat numpy arrays (`graph.npz`) that the hot
path in `graph_engine` reads without networkx.

Access mode per directed edge and vehicle (`MODE_*`): usable normally, usable only by an
emergency vehicle (closed to general traffic, or against a one-way street), or never.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import osmium

GRAPH_FILE = "graph.npz"
FORMAT_VERSION = 1
EARTH_RADIUS_M = 6_371_008.8

VEHICLES = ("car", "truck", "bicycle", "pedestrian")
MODE_NO = 0
MODE_YES = 1
MODE_EMERGENCY_ACCESS = 2  # way closed to general traffic (access=no/private, bus-only, pedestrian zone)
MODE_EMERGENCY_ONEWAY = 3  # against the direction of a one-way street
REASONS = {MODE_EMERGENCY_ACCESS: "access_restricted", MODE_EMERGENCY_ONEWAY: "oneway_against_direction"}

# km/h by highway class; a class missing here is not part of that vehicle's network.
# Car speeds follow OSRM's car.lua so durations are comparable with the OSRM provider.
CAR_SPEEDS: dict[str, float] = {
    "motorway": 90, "motorway_link": 45, "trunk": 85, "trunk_link": 40,
    "primary": 65, "primary_link": 30, "secondary": 55, "secondary_link": 25,
    "tertiary": 40, "tertiary_link": 20, "unclassified": 25, "residential": 25,
    "living_street": 10, "service": 15, "road": 20,
}  # fmt: skip
TRUCK_MAX_KMH = 80.0
BICYCLE_SPEEDS: dict[str, float] = {
    "cycleway": 18, "primary": 15, "primary_link": 15, "secondary": 15, "secondary_link": 15,
    "tertiary": 15, "tertiary_link": 15, "unclassified": 15, "residential": 15, "living_street": 12,
    "service": 14, "road": 14, "track": 12, "path": 12, "bridleway": 8,
    # pushing the bicycle where cycling is not allowed but walking is
    "footway": 5, "pedestrian": 5, "corridor": 4, "platform": 4,
}  # fmt: skip
PEDESTRIAN_SPEEDS: dict[str, float] = {
    **{k: 5.0 for k in ("footway", "path", "pedestrian", "living_street", "residential", "service", "track",
                        "unclassified", "tertiary", "tertiary_link", "secondary", "secondary_link", "primary",
                        "primary_link", "trunk", "trunk_link", "road", "cycleway", "bridleway", "corridor",
                        "platform", "access_ramp")},
    "steps": 2.0,
}  # fmt: skip
# Ways a motor vehicle can physically drive but that are closed to general motor traffic.
MOTOR_EMERGENCY_HIGHWAYS: dict[str, float] = {"pedestrian": 10, "busway": 30, "bus_guideway": 30}
# Speed of an emergency vehicle on a relaxed stretch (km/h): careful driving, not the class speed.
EMERGENCY_MAX_KMH = 30.0

ACCESS_HIERARCHY: dict[str, tuple[str, ...]] = {
    "car": ("motorcar", "motor_vehicle", "vehicle", "access"),
    "truck": ("hgv", "goods", "motor_vehicle", "vehicle", "access"),
    "bicycle": ("bicycle", "vehicle", "access"),
    "pedestrian": ("foot", "access"),
}
ALLOWED_VALUES = frozenset(
    {"yes", "designated", "permissive", "destination", "delivery", "customers", "official", "motorcar",
     "motor_vehicle", "vehicle", "hgv", "residents", "permit", "discouraged", "use_sidepath", "dismount"}
)  # fmt: skip
# Legal closures an emergency vehicle may ignore (physical limits like maxweight are never relaxed).
CLOSED_VALUES = frozenset(
    {"no", "private", "psv", "bus", "taxi", "minibus", "share_taxi", "emergency", "emergency_vehicle",
     "agricultural", "forestry", "restricted", "foot", "bicycle", "military"}
)  # fmt: skip
# Dual carriageways are never driven against their direction, even with blue lights.
NO_WRONG_WAY_HIGHWAYS = frozenset({"motorway", "motorway_link", "trunk", "trunk_link"})
# Barriers a vehicle cannot pass (OSRM-like); anything else (gates, lift gates) is passable.
PASSABLE_BY_CAR = frozenset(
    {"cattle_grid", "border_control", "toll_booth", "sally_port", "gate", "lift_gate", "no", "entrance",
     "height_restrictor", "arch", "swing_gate", "yes", "kerb"}
)  # fmt: skip
BLOCKS_BICYCLE = frozenset({"fence", "wall", "stile", "turnstile", "full-height_turnstile", "ditch", "hedge",
                            "retaining_wall", "city_wall", "log"})  # fmt: skip
BLOCKS_PEDESTRIAN = frozenset({"fence", "wall", "ditch", "hedge", "retaining_wall", "city_wall"})
TRUCK_MAX_WEIGHT_T = 7.5

_NUMBER = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*(mph|km/h|kmh|t)?\s*$")


@dataclass
class DirectionModes:
    """Access mode and speed of one vehicle on one way, per direction."""

    forward: int
    backward: int
    speed_kmh: float


@dataclass
class WayRecord:
    osm_id: int
    refs: list[int]
    lats: list[float]
    lons: list[float]
    highway: str
    name: str
    oneway: int  # 1 forward only, -1 backward only, 0 both
    modes: dict[str, DirectionModes]


@dataclass
class ReadResult:
    ways: list[WayRecord] = field(default_factory=list)
    # barrier node id -> vehicles that can pass it
    barriers: dict[int, frozenset[str]] = field(default_factory=dict)


# ---------------------------------------------------------------- tag interpretation


def parse_number(value: str | None, *, default_unit: str = "km/h") -> float | None:
    """A numeric tag like `50`, `30 mph`, `7.5 t`, `7,5`; None when unparsable."""
    if not value:
        return None
    match = _NUMBER.match(value.split(";")[0])
    if not match:
        return None
    number = float(match.group(1).replace(",", "."))
    return number * 1.609344 if (match.group(2) or default_unit) == "mph" else number


def parse_maxspeed(value: str | None) -> float | None:
    if value is None:
        return None
    named = {"de:urban": 50.0, "de:rural": 100.0, "de:living_street": 7.0, "walk": 7.0, "de:zone30": 30.0}
    return named.get(value.strip().lower()) or parse_number(value)


def oneway_of(tags: Mapping[str, str], vehicle: str) -> int:
    """1: forward only, -1: backward only, 0: both ways (for this vehicle)."""
    if vehicle == "pedestrian":
        value = tags.get("oneway:foot", "no")
    elif vehicle == "bicycle" and (
        tags.get("oneway:bicycle") == "no" or tags.get("cycleway", "").startswith("opposite")
    ):
        return 0
    else:
        value = tags.get("oneway", "")
        if not value and (tags.get("junction") in ("roundabout", "circular") or tags.get("highway") == "motorway"):
            value = "yes"
    return {"yes": 1, "1": 1, "true": 1, "-1": -1, "reverse": -1}.get(value, 0)


def access_value(tags: Mapping[str, str], vehicle: str) -> str | None:
    for key in ACCESS_HIERARCHY[vehicle]:
        value = tags.get(key)
        if value:
            return value.split(";")[0].strip()
    return None


def base_speed(tags: Mapping[str, str], vehicle: str) -> tuple[float | None, bool]:
    """(speed km/h, emergency-only class) for the highway class; None when not drivable at all."""
    highway = tags.get("highway", "")
    if vehicle in ("car", "truck"):
        if highway in CAR_SPEEDS:
            speed = parse_maxspeed(tags.get("maxspeed"))
            # OSRM drives at 80 % of the posted limit
            kmh = speed * 0.8 if speed else CAR_SPEEDS[highway]
            return (min(kmh, TRUCK_MAX_KMH) if vehicle == "truck" else kmh), False
        if highway in MOTOR_EMERGENCY_HIGHWAYS:
            return MOTOR_EMERGENCY_HIGHWAYS[highway], True
        return None, False
    table = BICYCLE_SPEEDS if vehicle == "bicycle" else PEDESTRIAN_SPEEDS
    return table.get(highway), False


def classify(tags: Mapping[str, str], vehicle: str) -> DirectionModes | None:
    """How `vehicle` may use a way with these tags; None when it cannot use it at all."""
    speed, closed_class = base_speed(tags, vehicle)
    if speed is None or tags.get("area") == "yes":
        return None
    if vehicle == "truck" and (parse_number(tags.get("maxweight"), default_unit="t") or 0) > TRUCK_MAX_WEIGHT_T:
        return None
    access = access_value(tags, vehicle)
    if access in ALLOWED_VALUES:
        closed = False
    elif access in CLOSED_VALUES or closed_class or tags.get("service") == "emergency_access":
        closed = True
    else:
        closed = False
    relaxable = tags.get("emergency") != "no"
    if closed and not relaxable:
        return None
    normal = MODE_EMERGENCY_ACCESS if closed else MODE_YES
    oneway = oneway_of(tags, vehicle)
    if oneway == 0:
        return DirectionModes(normal, normal, speed)
    if tags.get("oneway") == "reversible":
        return None
    against = MODE_NO
    if relaxable and tags.get("highway") not in NO_WRONG_WAY_HIGHWAYS:
        against = MODE_EMERGENCY_ACCESS if closed else MODE_EMERGENCY_ONEWAY
    forward, backward = (normal, against) if oneway == 1 else (against, normal)
    return DirectionModes(forward, backward, speed)


def barrier_passers(tags: Mapping[str, str]) -> frozenset[str]:
    """Vehicles that can pass a barrier node with these tags."""
    barrier = tags.get("barrier", "")
    passers = set(VEHICLES)
    if barrier not in PASSABLE_BY_CAR or tags.get("motor_vehicle") == "no" or tags.get("access") == "no":
        passers -= {"car", "truck"}
    if barrier in BLOCKS_BICYCLE:
        passers.discard("bicycle")
    if barrier in BLOCKS_PEDESTRIAN:
        passers.discard("pedestrian")
    return frozenset(passers)


# ---------------------------------------------------------------- reading


def read_pbf(pbf: Path) -> ReadResult:
    """Routable ways (with node locations) and blocking barrier nodes of the extract."""
    result = ReadResult()
    processor = (
        osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter("highway", "barrier"))
    )
    for obj in processor:
        if isinstance(obj, osmium.osm.Node):
            if "barrier" in obj.tags:
                passers = barrier_passers(dict(obj.tags))
                if len(passers) < len(VEHICLES):
                    result.barriers[obj.id] = passers
        elif isinstance(obj, osmium.osm.Way) and "highway" in obj.tags:
            record = way_record(obj)
            if record is not None:
                result.ways.append(record)
    return result


def way_record(way: osmium.osm.Way) -> WayRecord | None:
    tags = {tag.k: tag.v for tag in way.tags}
    modes = {vehicle: m for vehicle in VEHICLES if (m := classify(tags, vehicle)) is not None}
    if not modes or len(way.nodes) < 2:
        return None
    refs, lats, lons = [], [], []
    for node in way.nodes:
        if not node.location.valid():
            continue  # node missing from the extract: the way is cut at the boundary
        refs.append(node.ref)
        lats.append(node.lat)
        lons.append(node.lon)
    if len(refs) < 2:
        return None
    return WayRecord(
        way.id,
        refs,
        lats,
        lons,
        tags["highway"],
        tags.get("name") or tags.get("ref") or "",
        oneway_of(tags, "car"),
        modes,
    )


# ---------------------------------------------------------------- the networkx model


def haversine_m(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dlat, dlon = p2 - p1, np.radians(lon2 - lon1)
    a = np.sin(dlat / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlon / 2) ** 2
    return np.asarray(2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0))))


def split_points(ways: Iterable[WayRecord], barriers: Mapping[int, frozenset[str]]) -> set[int]:
    """Nodes where a piece must end: way ends, junctions (used twice or more), barriers."""
    uses: Counter[int] = Counter()
    ends: set[int] = set()
    for way in ways:
        uses.update(way.refs)
        ends.update((way.refs[0], way.refs[-1]))
    return ends | {ref for ref, count in uses.items() if count > 1} | (set(barriers) & set(uses))


def build_networkx(pbf: Path) -> nx.MultiDiGraph:
    """The road graph as a networkx MultiDiGraph.

    Nodes: OSM node id (barrier nodes are split into one node per incident piece, joined by
    zero-length connector edges only for vehicles that can pass), attributes lat, lon.
    Edges: key `2*piece` (way direction) and `2*piece+1` (against it), attributes piece,
    reverse, length_m, highway, name, oneway, way_id, mode {vehicle: MODE_*}, speed_kmh
    {vehicle: km/h}. Piece geometry: graph attribute `geometry` {piece: (lats, lons)}.
    """
    read = read_pbf(pbf)
    graph = nx.MultiDiGraph(geometry={})
    splits = split_points(read.ways, read.barriers)
    piece = 0
    for way in read.ways:
        start = 0
        for i in range(1, len(way.refs)):
            if way.refs[i] in splits or i == len(way.refs) - 1:
                add_piece(graph, way, start, i, piece, read.barriers)
                piece += 1
                start = i
    add_barrier_connectors(graph, read.barriers)
    return graph


def barrier_node(ref: int, piece: int, barriers: Mapping[int, frozenset[str]]) -> tuple[int, ...] | int:
    """Graph node for OSM node `ref` as seen from `piece`: a barrier gets one copy per piece."""
    return (ref, piece) if ref in barriers else ref


def add_piece(
    graph: nx.MultiDiGraph, way: WayRecord, start: int, end: int, piece: int, barriers: Mapping[int, frozenset[str]]
) -> None:
    lats = np.asarray(way.lats[start : end + 1])
    lons = np.asarray(way.lons[start : end + 1])
    length = float(haversine_m(lats[:-1], lons[:-1], lats[1:], lons[1:]).sum())
    u = barrier_node(way.refs[start], piece, barriers)
    v = barrier_node(way.refs[end], piece, barriers)
    graph.add_node(u, lat=float(lats[0]), lon=float(lons[0]), osm_id=way.refs[start])
    graph.add_node(v, lat=float(lats[-1]), lon=float(lons[-1]), osm_id=way.refs[end])
    graph.graph["geometry"][piece] = (lats, lons)
    common = {"piece": piece, "length_m": length, "highway": way.highway, "name": way.name,
              "oneway": way.oneway, "way_id": way.osm_id}  # fmt: skip
    speeds = {vehicle: m.speed_kmh for vehicle, m in way.modes.items()}
    forward = {vehicle: m.forward for vehicle, m in way.modes.items()}
    backward = {vehicle: m.backward for vehicle, m in way.modes.items()}
    graph.add_edge(u, v, key=2 * piece, reverse=False, mode=forward, speed_kmh=speeds, **common)
    graph.add_edge(v, u, key=2 * piece + 1, reverse=True, mode=backward, speed_kmh=speeds, **common)


def add_barrier_connectors(graph: nx.MultiDiGraph, barriers: Mapping[int, frozenset[str]]) -> None:
    copies: dict[int, list[tuple[int, int]]] = {}
    for node in graph.nodes:
        if isinstance(node, tuple):
            copies.setdefault(node[0], []).append(node)
    for ref, nodes in copies.items():
        modes = {vehicle: MODE_YES for vehicle in barriers[ref]}
        for a in nodes:
            for b in nodes:
                if a != b:
                    graph.add_edge(
                        a,
                        b,
                        piece=-1,
                        reverse=False,
                        length_m=0.0,
                        highway="barrier",
                        name="",
                        oneway=0,
                        way_id=0,
                        mode=modes,
                        speed_kmh=dict.fromkeys(modes, 5.0),
                    )


# ---------------------------------------------------------------- export to arrays


def export_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    """Flat arrays for the hot path: nodes, CSR-sorted directed edges, piece geometry."""
    index = {node: i for i, node in enumerate(graph.nodes)}
    arrays: dict[str, np.ndarray] = {
        "format_version": np.array([FORMAT_VERSION]),
        "node_lat": np.array([graph.nodes[n]["lat"] for n in graph.nodes], dtype=np.float64),
        "node_lon": np.array([graph.nodes[n]["lon"] for n in graph.nodes], dtype=np.float64),
    }
    arrays.update(edge_arrays(graph, index))
    arrays.update(piece_arrays(graph))
    return arrays


def edge_arrays(graph: nx.MultiDiGraph, index: Mapping[object, int]) -> dict[str, np.ndarray]:
    edges = list(graph.edges(data=True))
    src = np.array([index[u] for u, _, _ in edges], dtype=np.int32)
    order = np.argsort(src, kind="stable")
    out: dict[str, np.ndarray] = {
        "edge_src": src[order],
        "edge_dst": np.array([index[v] for _, v, _ in edges], dtype=np.int32)[order],
        "edge_piece": np.array([d["piece"] for _, _, d in edges], dtype=np.int32)[order],
        "edge_reverse": np.array([d["reverse"] for _, _, d in edges], dtype=bool)[order],
        "edge_length": np.array([d["length_m"] for _, _, d in edges], dtype=np.float64)[order],
    }
    for vehicle in VEHICLES:
        out[f"mode_{vehicle}"] = np.array([d["mode"].get(vehicle, MODE_NO) for _, _, d in edges], np.int8)[order]
        out[f"speed_{vehicle}"] = np.array([d["speed_kmh"].get(vehicle, 0.0) for _, _, d in edges], dtype=np.float32)[
            order
        ]
    counts = np.bincount(out["edge_src"], minlength=graph.number_of_nodes())
    out["indptr"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return out


def piece_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    geometry: dict[int, tuple[np.ndarray, np.ndarray]] = graph.graph["geometry"]
    count = len(geometry)
    names: dict[str, int] = {"": 0}
    highways: dict[str, int] = {}
    name_idx = np.zeros(count, dtype=np.int32)
    highway_idx = np.zeros(count, dtype=np.int32)
    for _, _, data in graph.edges(data=True):
        if data["piece"] >= 0 and not data["reverse"]:
            name_idx[data["piece"]] = names.setdefault(data["name"], len(names))
            highway_idx[data["piece"]] = highways.setdefault(data["highway"], len(highways))
    lats = [geometry[p][0] for p in range(count)]
    lons = [geometry[p][1] for p in range(count)]
    sizes = np.array([len(a) for a in lats], dtype=np.int64)
    geom_lat, geom_lon = np.concatenate(lats), np.concatenate(lons)
    step = haversine_m(geom_lat[:-1], geom_lon[:-1], geom_lat[1:], geom_lon[1:])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    cum = np.concatenate([[0.0], np.cumsum(step)])
    # distance along the piece: subtract the running total at the piece's first point
    cum = cum - np.repeat(cum[ptr[:-1]], sizes)
    return {
        "geom_ptr": ptr, "geom_lat": geom_lat, "geom_lon": geom_lon, "geom_cum": cum,
        "piece_name": name_idx, "piece_highway": highway_idx,
        "names": np.array(list(names), dtype=str), "highways": np.array(list(highways), dtype=str),
    }  # fmt: skip


def build_graph(pbf: Path, out_dir: Path) -> dict[str, int]:
    """Read `pbf`, build the networkx model and write `out_dir/graph.npz`. Returns counts."""
    started = time.perf_counter()
    graph = build_networkx(pbf)
    arrays = export_arrays(graph)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (GRAPH_FILE + ".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(out_dir / GRAPH_FILE)  # atomic: a reader never sees a half-written file
    return {
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "pieces": len(graph.graph["geometry"]),
        "build_ms": math.ceil((time.perf_counter() - started) * 1000),
    }
