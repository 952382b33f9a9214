"""OSM data for the route tests: a tiny synthetic map, and real ways read from the extracts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import osmium
from osmium.osm.mutable import Node, Way

from bench.maps import input_pbfs, road_nodes
from common.geo import LatLon, haversine_m

# The dense part of Heidelberg (see ../shared/osm/README.md beside the repository).
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)
CAR_ROADS = ("residential", "unclassified", "tertiary", "secondary", "primary", "living_street")


@dataclass(frozen=True)
class TinyMap:
    """Two residential streets 1 km apart that no road connects."""

    pbf: Path
    west: tuple[LatLon, LatLon]
    east: tuple[LatLon, LatLon]


def write_tiny_map(directory: Path, name: str = "tiny.osm.pbf", lon_offset: float = 0.0) -> TinyMap:
    path = directory / name
    streets = []
    writer = osmium.SimpleWriter(str(path))
    try:
        for street, lon in enumerate((8.0 + lon_offset, 8.014 + lon_offset)):
            base_id = 1000 * (street + 1) + int(lon_offset * 1e5)
            points = [LatLon(49.0 + i * 0.001, lon) for i in range(5)]
            for i, point in enumerate(points):
                writer.add_node(Node(id=base_id + i, location=(point.lon, point.lat)))
            streets.append((points[0], points[-1]))
            tags = {"highway": "residential", "name": f"Street {street + 1}"}
            writer.add_way(Way(id=base_id, nodes=[base_id + i for i in range(5)], tags=tags))
    finally:
        writer.close()
    return TinyMap(path, streets[0], streets[1])


def write_cut_off_map(directory: Path, name: str = "cut-off.osm.pbf") -> Path:
    """A map made to hold what the diagnostics explain (the shared extracts may lack them): a
    main network (a 30 x 30 grid of residential streets, about 100 m apart), a short street
    2.2 km east of it that no road joins (cut off: no route leaves or reaches it; two nodes, too
    few for the diagnosis to take it for an area of its own), and a short street 2.2 km north
    joined to the grid by one one-way link out of it (routes leave it, none reaches it)."""
    path = directory / name
    writer = osmium.SimpleWriter(str(path))
    next_id = iter(range(1, 1_000_000))
    step = 0.0009  # ~100 m of latitude (~66 m of longitude at 49°N)
    size = 30

    def node(lat: float, lon: float) -> int:
        ident = next(next_id)
        writer.add_node(Node(id=ident, location=(lon, lat)))
        return ident

    def way(nodes: list[int], **tags: str) -> None:
        writer.add_way(Way(id=next(next_id), nodes=nodes, tags={"highway": "residential", **tags}))

    try:
        grid = [[node(49.0 + r * step, 8.0 + c * step) for c in range(size)] for r in range(size)]
        for r in range(size):
            way(grid[r], name=f"Row {r}")
        for c in range(size):
            way([grid[r][c] for r in range(size)], name=f"Column {c}")
        # Beyond the 1 km snapping radius: OSRM would snap a point of a tiny piece nearer than
        # that onto the main network and route it from there.
        east = 8.0 + (size - 1) * step + 0.03  # ~2.2 km east of the grid
        way([node(49.0, east), node(49.0 + step, east)], name="Island Street")
        north = 49.0 + (size - 1) * step + 0.02  # ~2.2 km north of the grid
        exit_street = [node(north, 8.0), node(north, 8.0 + step)]
        way(exit_street, name="Exit Street")
        way([exit_street[0], grid[size - 1][0]], name="Exit Link", oneway="yes")  # out of the piece only
    finally:
        writer.close()
    return path


@dataclass(frozen=True)
class RealWay:
    id: int
    points: list[LatLon]
    tags: dict[str, str]

    @property
    def length_m(self) -> float:
        return sum(haversine_m(a, b) for a, b in zip(self.points, self.points[1:], strict=False))


def in_box(point: LatLon, box: tuple[float, float, float, float] = DENSE_BOX) -> bool:
    return box[0] <= point.lat <= box[1] and box[2] <= point.lon <= box[3]


def read_ways(pbf: Path) -> list[RealWay]:
    """Every car-road way starting in the dense box, with node locations, sorted by id."""
    ways = []
    processor = osmium.FileProcessor(str(pbf)).with_locations()
    processor = processor.with_filter(osmium.filter.EntityFilter(osmium.osm.WAY))
    for way in processor.with_filter(osmium.filter.KeyFilter("highway")):
        if not isinstance(way, osmium.osm.Way) or way.tags.get("highway") not in CAR_ROADS:
            continue
        points = [LatLon(n.lat, n.lon) for n in way.nodes]
        if in_box(points[0]):
            ways.append(RealWay(way.id, points, dict(way.tags)))
    return sorted(ways, key=lambda w: w.id)


def one_way_streets(ways: list[RealWay]) -> list[RealWay]:
    """Plain one-way streets for cars (no access or bicycle exceptions), longer than 150 m."""
    return [
        w
        for w in ways
        if w.tags.get("oneway") == "yes"
        and w.tags["highway"] in ("residential", "unclassified", "tertiary")
        and not {"access", "motor_vehicle", "motorcar", "vehicle"} & w.tags.keys()
        and w.length_m > 150
        and haversine_m(w.points[1], w.points[-2]) > 60
    ]


def weight_limited(ways: list[RealWay], below_t: float) -> list[RealWay]:
    """Two-way streets longer than 150 m with a maxweight under `below_t` tonnes."""
    out = []
    for w in ways:
        try:
            limit = float(w.tags.get("maxweight", "x"))
        except ValueError:
            continue
        two_way = w.tags.get("oneway") in (None, "no")
        if limit < below_t and two_way and w.length_m > 150 and haversine_m(w.points[1], w.points[-2]) > 60:
            out.append(w)
    return out


@dataclass(frozen=True)
class ZoneMap:
    """A pedestrian street open to motor vehicles Mo-Sa 06:00-11:00 for reaching places on it
    (`Shortcut`, 730 m from west to east) and a 5 km residential detour round it."""

    pbf: Path
    west: LatLon
    east: LatLon
    inside: LatLon  # on the pedestrian street, halfway


def write_zone_map(directory: Path, name: str = "zone.osm.pbf") -> ZoneMap:
    path = directory / name
    writer = osmium.SimpleWriter(str(path))
    points = {1: (49.0, 8.0), 2: (49.0, 8.005), 3: (49.0, 8.01), 4: (49.02, 8.0), 5: (49.02, 8.01)}
    try:
        for ident, (lat, lon) in points.items():
            writer.add_node(Node(id=ident, location=(lon, lat)))
        zone = {"highway": "pedestrian", "name": "Shortcut", "motor_vehicle:conditional": "destination @ (Mo-Sa 06:00-11:00)"}
        writer.add_way(Way(id=10, nodes=[1, 2], tags=zone))
        writer.add_way(Way(id=11, nodes=[2, 3], tags=zone))
        writer.add_way(Way(id=12, nodes=[1, 4, 5, 3], tags={"highway": "residential", "name": "Detour"}))
    finally:
        writer.close()
    return ZoneMap(path, LatLon(*points[1]), LatLon(*points[3]), LatLon(49.0, 8.0025))


@dataclass(frozen=True)
class GateMap:
    """A 3 km residential approach (`Approach`, side streets every 100 m) to a junction, from
    which `Gate` (500 m, closed to motor vehicles 08:00-09:00) and `Ring` (2.7 km) both reach
    the destination: a car leaving at 07:57 reaches the gate after it closed. Approach has a
    night speed limit (30 km/h 22:00-06:00)."""

    pbf: Path
    start: LatLon
    end: LatLon
    ways: list[tuple[str, list[LatLon]]]  # every way's name and points: the networkx oracle's


def write_gate_map(directory: Path, name: str = "gate.osm.pbf") -> GateMap:
    path = directory / name
    approach = [LatLon(49.0, 8.0 + 0.00137 * i) for i in range(31)]  # 100 m apart
    junction, end = approach[-1], LatLon(49.0, approach[-1].lon + 0.0069)
    ring = [junction, LatLon(49.01, junction.lon), LatLon(49.01, end.lon), end]
    sides = [[point, LatLon(point.lat - 0.0003, point.lon)] for point in approach[1:-1]]
    ways = [("Approach", approach), ("Gate", [junction, end]), ("Ring", ring), *(("Side", side) for side in sides)]
    ids: dict[LatLon, int] = {}
    writer = osmium.SimpleWriter(str(path))
    try:
        for point in [p for _, points in ways for p in points]:
            if point not in ids:
                ids[point] = len(ids) + 1
                writer.add_node(Node(id=ids[point], location=(point.lon, point.lat)))
        for way_id, (street, points) in enumerate(ways, start=100):
            tags = {"highway": "residential", "name": street}
            if street == "Gate":
                tags["motor_vehicle:conditional"] = "no @ (08:00-09:00)"
            if street == "Approach":
                tags["maxspeed:conditional"] = "30 @ (22:00-06:00)"
            writer.add_way(Way(id=way_id, nodes=[ids[p] for p in points], tags=tags))
    finally:
        writer.close()
    return GateMap(path, approach[0], end, ways)



def dataset_road_nodes(record: dict[str, Any], dataset_dir: Path) -> np.ndarray:
    """(n, 2) lat, lon of every road node of the files a dataset was imported from (bench.maps)."""
    return road_nodes(input_pbfs(dataset_dir, record))
