"""Which imported dataset the service serves: the one `<maps>/current.json` names."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.errors import DatasetNotReady
from route_service.importer import CURRENT, read_manifest

log = logging.getLogger("route_service.dataset")


@dataclass(frozen=True)
class Dataset:
    hash: str
    path: Path
    manifest: dict[str, Any]


def current_dataset(map_dir: Path) -> Dataset:
    """The current complete dataset, or DatasetNotReady (503); the log says what to run."""
    try:
        digest = str(json.loads((map_dir / CURRENT).read_text())["hash"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.error("no map imported in %s (%s); run `python -m route_service.importer --out %s`", map_dir, exc, map_dir)
        raise DatasetNotReady("no map data has been imported yet") from exc
    manifest = read_manifest(map_dir / digest)
    if manifest is None:
        log.error("map dataset %s in %s is missing or incomplete; re-run the importer", digest, map_dir)
        raise DatasetNotReady(f"the map dataset {digest} is missing or incomplete")
    return Dataset(digest, map_dir / digest, manifest)
