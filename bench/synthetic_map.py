"""A synthetic large map on any machine: N copies of shared extracts laid side by side.

`python -m bench.synthetic_map --copies 10 --out var/bench-cache/synthetic/heidelberg-10.osm.pbf`
writes a valid PBF (sorted: every node, then every way, then every relation, ids ascending)
holding `copies` copies of the sources, copy k shifted onto its own cell of a grid (columns
first) with a gap between cells, and every id offset by k * ID_STRIDE, so no two objects share
an id and every way and relation refers to its own copy's members. Tags, versions and
timestamps are kept; each copy's roads are not connected to the others' (they never touch).

So 1x, 10x and 30x maps exist without a download: the scale benchmark (issue 16) imports them
like any extract. Memory: one pass per object type and copy (streamed by pyosmium).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import osmium

from common.config import REPO_ROOT

SHARED_OSM = REPO_ROOT.parent / "shared" / "osm"
# Larger than every OpenStreetMap id so far (nodes reach ~1.3e10): copy k's ids start at k * ID_STRIDE.
ID_STRIDE = 1 << 35
GAP_DEGREES = 0.05  # between copies, so no road of one copy comes near another's


@dataclass(frozen=True)
class Box:
    min_lon: float
    min_lat: float
    max_lon: float
    max_lat: float


def objects[T: (osmium.osm.Node, osmium.osm.Way, osmium.osm.Relation)](path: Path, kind: type[T]) -> Iterator[T]:
    """The objects of one kind in a file, typed."""
    entity = {
        osmium.osm.Node: osmium.osm.NODE,
        osmium.osm.Way: osmium.osm.WAY,
        osmium.osm.Relation: osmium.osm.RELATION,
    }
    for item in osmium.FileProcessor(str(path), entity[kind]):
        if isinstance(item, kind):
            yield item


def source_box(paths: Sequence[Path]) -> Box:
    """The box holding every node of the sources (their headers' boxes may be absent or loose)."""
    lons: list[float] = []
    lats: list[float] = []
    for path in paths:
        low_lon = low_lat = math.inf
        high_lon = high_lat = -math.inf
        for node in objects(path, osmium.osm.Node):
            if node.location.valid():
                lon, lat = node.location.lon, node.location.lat
                low_lon, high_lon = min(low_lon, lon), max(high_lon, lon)
                low_lat, high_lat = min(low_lat, lat), max(high_lat, lat)
        lons += [low_lon, high_lon]
        lats += [low_lat, high_lat]
    return Box(min(lons), min(lats), max(lons), max(lats))


def offsets(copies: int, box: Box) -> list[tuple[float, float]]:
    """(lon, lat) shift of each copy: a grid of near-square shape, inside valid coordinates."""
    columns = math.ceil(math.sqrt(copies))
    width = box.max_lon - box.min_lon + GAP_DEGREES
    height = box.max_lat - box.min_lat + GAP_DEGREES
    shifts = [((k % columns) * width, (k // columns) * height) for k in range(copies)]
    if box.max_lon + shifts[-1][0] > 180 or box.max_lat + max(s[1] for s in shifts) > 85:
        raise ValueError(f"{copies} copies of a {width:.2f}° x {height:.2f}° map do not fit on the globe there")
    return shifts


def write_copies(sources: Sequence[Path], copies: int, out: Path) -> dict[str, int]:
    """Writes the map; returns how many objects of each kind it holds."""
    shifts = offsets(copies, source_box(sources))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial.osm.pbf")
    partial.unlink(missing_ok=True)
    counts = {"nodes": 0, "ways": 0, "relations": 0}
    writer = osmium.SimpleWriter(str(partial))
    try:
        for k, (dlon, dlat) in enumerate(shifts):
            for path in sources:
                counts["nodes"] += write_nodes(writer, path, k * ID_STRIDE, dlon, dlat)
        for k in range(copies):
            for path in sources:
                counts["ways"] += write_ways(writer, path, k * ID_STRIDE)
        for k in range(copies):
            for path in sources:
                counts["relations"] += write_relations(writer, path, k * ID_STRIDE)
    finally:
        writer.close()
    partial.replace(out)  # a reader never sees a half-written map
    return counts


def write_nodes(writer: osmium.SimpleWriter, path: Path, id_offset: int, dlon: float, dlat: float) -> int:
    count = 0
    for node in objects(path, osmium.osm.Node):
        location = osmium.osm.Location(node.location.lon + dlon, node.location.lat + dlat)
        writer.add_node(node.replace(id=node.id + id_offset, location=location))
        count += 1
    return count


def write_ways(writer: osmium.SimpleWriter, path: Path, id_offset: int) -> int:
    count = 0
    for way in objects(path, osmium.osm.Way):
        writer.add_way(way.replace(id=way.id + id_offset, nodes=[n.ref + id_offset for n in way.nodes]))
        count += 1
    return count


def write_relations(writer: osmium.SimpleWriter, path: Path, id_offset: int) -> int:
    count = 0
    for relation in objects(path, osmium.osm.Relation):
        members = [(m.type, m.ref + id_offset, m.role) for m in relation.members]
        writer.add_relation(relation.replace(id=relation.id + id_offset, members=members))
        count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.synthetic_map", description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--source", action="append", help="extract name in ../shared/osm or a path; default heidelberg")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    names = args.source or ["heidelberg"]
    sources = [Path(n) if n.endswith(".pbf") else SHARED_OSM / f"{n}.osm.pbf" for n in names]
    counts = write_copies(sources, args.copies, args.out)
    print(f"{args.out}: {args.copies} copies, " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
