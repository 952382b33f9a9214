"""The prepared graph in one file that every process memory-maps (issue 30: what stays ours
reads its data memory-mapped and shared between workers).

Preparing the graph (`prepare.RoadGraph`, the snapping trees) made ~60 MB of a process's own
memory on Heidelberg and grew with the map (a route service process's USS 150 MB at 1x, 664 MB
at 10x, `bench scale`), once in every worker and again in its large-call child. The first
process to need it prepares it once and writes it here; every process then maps that file, so
the kernel holds one copy in its page cache for all of them, and a map switch holds no second
private copy.

The file is the prepared `GraphEngine` as a pickle (protocol 5) whose numpy arrays and KD-trees
are stored out of band, each at a 64-byte aligned offset: `pickle.loads` then makes them views
of the mapping, read-only, without a copy (a cKDTree keeps a private copy of its node buffer
only, ~25 % of it). A pickle, not `graph_format`'s flat arrays, because the prepared objects
(vehicle graphs, tiles, trees) are many and nested; it is a cache, never a dataset's format:
its name carries a digest of the code that prepares and reads it (`engine_key`), so a file
written by other code is never read, and only files this process's own dataset holds are.

Layout: MAGIC, then the pickle's length and the number of buffers (little-endian u64), then
per buffer its offset and length (u64 each), the pickle, and the buffers.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import mmap
import os
import pickle
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from common.vehicles import MOTORIZED
from route_service.graph_engine import GraphEngine

log = logging.getLogger("route_service.graph_engine.shared")

MAGIC = b"RGENGINE"
ALIGN = 64
HEADER = struct.Struct("<QQ")
ENGINE_PREFIX = "engine-"
STALE_TMP_S = 600.0  # preparing and writing took 0.3 s on Heidelberg, seconds on 30x
# The snapping trees built before the file is written, so that every process shares them: car's
# and truck's main network and emergency-only roads (what the graph's routes snap to: emergency
# radius, truck dimensions, matrices with an avoid area) and car's isochrone parts (the default
# vehicle's). On Heidelberg: 4.4-5.1 MB for each of car's and truck's, 0.2 MB an emergency one,
# against bicycle's and pedestrian's 13-16 MB each, built on first use by the process using them.
SHARED_TREES = (
    *((vehicle, emergency, "main") for vehicle in MOTORIZED for emergency in (False, True)),
    ("car", False, "all"),
    ("car", False, "osrm-large"),
)
# What the file's pickle may name: the engine's own classes, numpy's arrays and dtypes, scipy's
# KD-tree. Anything else is refused, so a planted file cannot run code (`EngineUnpickler`).
ALLOWED = {
    "route_service.graph_engine": {"GraphEngine"},
    "route_service.graph_engine.prepare": {"RoadGraph", "VehicleGraph"},
    "route_service.graph_engine.snap": {"Snapper"},
    "route_service.graph_engine.tiles": {"NodeTiles", "EdgeTiles"},
    "numpy": {"dtype", "ndarray"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.dtypes": {"Float64DType", "Float32DType", "Int64DType", "Int32DType", "Int8DType", "UInt8DType",
                     "BoolDType", "StrDType"},
    "scipy.spatial._ckdtree": {"cKDTree"},
}  # fmt: skip


def engine_key() -> str:
    """A digest of the code that prepares and reads the file, and of the libraries whose
    objects it holds: a file made by other code is another file."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for source in sorted(package.glob("*.py")):
        digest.update(source.name.encode() + source.read_bytes())
    digest.update(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
    return digest.hexdigest()[:16]


def engine_path(graph_dir: Path, cache_dir: Path | None = None) -> Path:
    """Where the prepared graph of a dataset's `graph_dir` goes: `cache_dir` (the service's
    ROUTE_GRAPH_CACHE_DIR), else beside the graph, named by the dataset and the code."""
    return (cache_dir or graph_dir) / f"{ENGINE_PREFIX}{graph_dir.parent.name}-{engine_key()}.bin"


def shared_engine(graph_dir: Path, cache_dir: Path | None = None) -> GraphEngine:
    """The dataset's prepared graph, mapped from its file; prepared and written first when no
    process has yet. Where the file cannot be written (a read-only directory), the engine
    prepared here answers from this process's own memory, as before."""
    path = engine_path(graph_dir, cache_dir)
    if path.is_file():
        try:
            return map_engine(path)
        except Exception as exc:  # whatever a damaged file raises, it is prepared again
            log.warning("prepared graph %s unreadable, preparing it again: %s", path.name, exc)
    engine = GraphEngine.load(graph_dir)
    for vehicle, emergency, parts in SHARED_TREES:
        engine.snapper.tree(vehicle, emergency, parts)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_engine(engine, path)
    except OSError as exc:
        log.warning("prepared graph kept in this process's memory, %s not written: %s", path, exc)
        return engine
    remove_stale(path)
    return map_engine(path)


def write_engine(engine: GraphEngine, path: Path) -> None:
    """The engine's file, written whole under a temporary name and then renamed: a reader
    never sees a half-written one (two processes writing at once write the same bytes)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(engine, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    table_end = len(MAGIC) + HEADER.size * (1 + len(raws)) + len(data)
    offsets, position = [], table_end
    for raw in raws:
        position = -(-position // ALIGN) * ALIGN
        offsets.append(position)
        position += raw.nbytes
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        out.write(MAGIC + HEADER.pack(len(data), len(raws)))
        out.write(b"".join(HEADER.pack(offset, raw.nbytes) for offset, raw in zip(offsets, raws, strict=True)))
        out.write(data)
        for offset, raw in zip(offsets, raws, strict=True):
            out.seek(offset)
            out.write(raw)
    tmp.replace(path)


def map_engine(path: Path) -> GraphEngine:
    """The engine whose arrays are read-only views of the mapped file (kept open by them)."""
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)
    if bytes(view[: len(MAGIC)]) != MAGIC:
        raise ValueError("not a prepared graph file")
    length, count = HEADER.unpack_from(view, len(MAGIC))
    table = len(MAGIC) + HEADER.size
    spans = [HEADER.unpack_from(view, table + HEADER.size * i) for i in range(count)]
    start = table + HEADER.size * count
    body = io.BytesIO(view[start : start + length])
    engine = EngineUnpickler(body, buffers=[view[o : o + n] for o, n in spans]).load()
    if not isinstance(engine, GraphEngine):
        raise ValueError("not a prepared graph file")
    return engine


class EngineUnpickler(pickle.Unpickler):
    """Builds only what ALLOWED names (the file is ours, but a file is not code)."""

    def find_class(self, module: str, name: str) -> Any:
        if name not in ALLOWED.get(module, ()):
            raise pickle.UnpicklingError(f"a prepared graph file may not name {module}.{name}")
        return super().find_class(module, name)


def remove_stale(keep: Path) -> None:
    """The other prepared graphs beside `keep`: an earlier dataset's (a process still serving it
    keeps its mapping), one other code prepared, and half-written ones a process left when it
    died (older than STALE_TMP_S: not one being written now)."""
    for old in keep.parent.glob(f"{ENGINE_PREFIX}*.bin"):
        if old != keep:
            old.unlink(missing_ok=True)
    for tmp in keep.parent.glob(f".{ENGINE_PREFIX}*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - tmp.stat().st_mtime > STALE_TMP_S:
                tmp.unlink()
