"""Which imported dataset the service serves: the one `<maps>/current.json` names, when its
manifest says it is complete. The importer writes what this module reads."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import shapely
import shapely.geometry

from common.datasets import CURRENT, read_current
from common.errors import DatasetNotReady
from common.geo import Bounds, LatLon, coverage_areas
from common.vocabulary import VEHICLES

MANIFEST = "manifest.json"
# ~100 m: the five extracts as one drawn in 82 KB, no part of the whole 150 m outside (0.001° let
# a corner of Monaco's part 160 m out, as the outline's rings happened to start).
DRAWN_TOLERANCE_DEG = 0.0009

log = logging.getLogger("route_service.dataset")


@dataclass(frozen=True)
class Dataset:
    hash: str
    path: Path
    manifest: dict[str, Any]

    @property
    def bounds(self) -> Bounds | None:
        """What the roads of the map cover (None for a dataset without roads)."""
        return Bounds.from_list(self._coverage().get("bounds"))

    @property
    def sample_points(self) -> list[LatLon]:
        """Road nodes drawn at random at import (route_service.importing.map_facts)."""
        points = self._coverage().get("sample_points")
        if not isinstance(points, list):
            return []
        return [LatLon(float(p[1]), float(p[0])) for p in points if isinstance(p, list) and len(p) == 2]

    @property
    def outline(self) -> dict[str, Any] | None:
        """Where the map has roads (a GeoJSON MultiPolygon of the cells they pass through), if recorded."""
        outline = self._coverage().get("outline")
        return outline if isinstance(outline, dict) else None

    @property
    def cut_points(self) -> np.ndarray | None:
        """[lon, lat] rows where the map cuts a through road (map_facts.cut_points); None: not recorded."""
        points = self._coverage().get("cut_points")
        return np.asarray(points, dtype=np.float64).reshape(-1, 2) if isinstance(points, list) else None

    @cached_property
    def drawn_outline(self) -> dict[str, Any] | None:
        """The outline as /v1/providers and /map draw it: simplified to ~100 m with coordinates
        to 1 m (the five shared extracts as one: 582 KB of JSON whole, 82 KB so, and no part of
        the whole farther than 150 m outside it). The whole one clips isochrones."""
        if self.outline is None:
            return None
        whole = shapely.geometry.shape(self.outline)
        drawn = shapely.simplify(whole, DRAWN_TOLERANCE_DEG, preserve_topology=True)
        drawn = shapely.transform(drawn, lambda lon_lat: np.round(lon_lat, 5))
        parts = list(getattr(drawn, "geoms", [drawn]))  # one part stays a MultiPolygon, as the whole
        return dict(shapely.geometry.mapping(shapely.MultiPolygon(parts)))

    @cached_property
    def areas(self) -> list[Bounds]:
        """The separate areas the map's roads cover (common.geo.coverage_areas of the outline's
        parts), largest first; the whole map's box for a dataset without an outline."""
        polygons = (self.outline or {}).get("coordinates") or []
        boxes = []
        for polygon in polygons:
            ring = np.asarray(polygon[0], dtype=float) if polygon and polygon[0] else None
            if ring is not None and ring.ndim == 2:
                boxes.append(Bounds(*(float(v) for v in (*ring.min(axis=0), *ring.max(axis=0)))))
        if boxes:
            return coverage_areas(boxes)
        return [self.bounds] if self.bounds is not None else []

    @property
    def vehicles(self) -> tuple[str, ...]:
        """The vehicles this map serves (the import's ROUTING_VEHICLES); a dataset from before
        the manifest said so serves those of its OSRM profiles."""
        named = self.manifest.get("vehicles")
        if not isinstance(named, list):
            named = [str(p).split("-", 1)[0] for p in self.manifest.get("profiles", {})]
        return tuple(v for v in VEHICLES if v in named)

    def _coverage(self) -> dict[str, Any]:
        """The import's `coverage` (importer version 8 on)."""
        found = self.manifest.get("coverage")
        return found if isinstance(found, dict) else {}


def read_manifest(dataset_dir: Path) -> dict[str, Any] | None:
    """The manifest of a complete dataset, or None."""
    try:
        manifest: dict[str, Any] = json.loads((dataset_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if manifest.get("complete") else None


def current_dataset(map_dir: Path) -> Dataset:
    """The current complete dataset, or DatasetNotReady (503); the log says what to run."""
    digest = read_current(map_dir)
    if digest is None:
        log.error("no map imported in %s (no valid %s); run `python -m route_service.importing --out %s`",
                  map_dir, CURRENT, map_dir)  # fmt: skip
        raise DatasetNotReady("no map data has been imported yet")
    manifest = read_manifest(map_dir / digest)
    if manifest is None:
        log.error("map dataset %s in %s is missing or incomplete; re-run the importer", digest, map_dir)
        raise DatasetNotReady(f"the map dataset {digest} is missing or incomplete")
    return Dataset(digest, map_dir / digest, manifest)
