"""Geocoder importer: OSM extracts → one content-addressed SQLite index.

    python -m geo_service.importer [--osm FILE ...] [--out DIR]

Inputs come from common.osm_inputs (--osm, else OSM_FILE, else the default Helsinki map);
several inputs are merged into one index. The result is `<out>/<hash>/index.sqlite3`, where
hash = sha256 of the inputs' bytes, the importer version and the options, and
`<out>/current.json` = {"hash": ...} names the index the service opens. Progress, the atomic
publish and current.json are every importer's (`common.datasets`): a crash never leaves a half
index behind, and a re-run on the same inputs only re-points current.json (a no-op).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from common.datasets import STAGE_HELP, Progress, dataset_name, feed_file, publish_current
from common.osm_inputs import ATTRIBUTION, input_files
from geo_service.build import build_dataset, extract_vocabulary, merge_datasets
from geo_service.config import GeoConfig
from geo_service.countries import alpha3_from_tag
from geo_service.country_lookup import CountryLookup
from geo_service.extract import read_osm
from geo_service.records import Dataset
from geo_service.store import INDEX_FILE
from geo_service.store_writer import write_index

# 2: country from geometry (issue 10), autocomplete word table.
IMPORTER_VERSION = "2"


@dataclass(frozen=True)
class ImportResult:
    hash: str
    path: Path
    reused: bool
    counts: dict[str, int]
    seconds: float
    bytes: int


def dataset_hash(inputs: Sequence[Path], options: dict[str, Any]) -> str:
    digest = hashlib.sha256(f"geo-importer:{IMPORTER_VERSION}:{json.dumps(options, sort_keys=True)}".encode())
    for path in inputs:
        feed_file(digest, path)
        digest.update(b"\0")
    return dataset_name(digest)


def counts_of(dataset: Dataset) -> dict[str, int]:
    kinds = Counter(n.kind for n in dataset.names)
    return {
        "addresses": len(dataset.addresses),
        "interpolated": sum(a.interpolated for a in dataset.addresses),
        "streets": kinds["street"],
        "places": kinds["place"],
        "pois": kinds["poi"],
    }


def build_index(
    work: Path, *, inputs: Sequence[Path], hash_: str, options: dict[str, Any], progress: Progress
) -> dict[str, int]:
    """The index in `work`; returns its counts."""
    progress.line("importing", f"{len(inputs)} file(s) → {work.parent / hash_}")
    # Each input is filled in on its own, so each keeps its own default country and city.
    extracts = []
    for path in inputs:
        extracts.append(read_osm(path))
        progress.line(
            f"read {path.name}", f"{len(extracts[-1].addresses)} addresses, {len(extracts[-1].streets)} street ways"
        )
    vocabulary = set().union(*(extract_vocabulary(e) for e in extracts))
    defaults = {"default_country": options["default_country"], "default_city": options["default_city"]}
    countries = CountryLookup()
    dataset = merge_datasets([build_dataset(e, countries=countries, vocabulary=vocabulary, **defaults) for e in extracts])
    counts = counts_of(dataset)
    progress.line("filled and grouped", ", ".join(f"{v} {k}" for k, v in counts.items()))
    meta = {
        "hash": hash_,
        "importer_version": IMPORTER_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "inputs": [p.name for p in inputs],
        "counts": counts,
        "default_country": dataset.default_country,
        "default_city": dataset.default_city,
        "countries": sorted(
            {a.country for a in dataset.addresses if a.country} | {n.country for n in dataset.names if n.country}
        ),
        "postcodes": sorted(
            {a.postcode for a in dataset.addresses if a.postcode} | {p for n in dataset.names for p in n.postcodes}
        ),
        "vocabulary": sorted(dataset.vocabulary),
        "attribution": ATTRIBUTION,
    }
    write_index(work / INDEX_FILE, dataset, meta)
    progress.line("index written", f"{(work / INDEX_FILE).stat().st_size / 1e6:.1f} MB")
    return counts


def run_import(
    inputs: Sequence[Path],
    out: Path,
    *,
    default_country: str | None = None,
    default_city: str | None = None,
    emit: Callable[[str], None] = print,
    stage: bool = False,
) -> ImportResult:
    progress = Progress(emit)
    missing = [p for p in inputs if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no such OSM file: {', '.join(map(str, missing))}")
    # The country data's version is part of the input: a new release may move a border.
    options = {"default_country": default_country, "default_city": default_city, "countries": CountryLookup.version()}
    hash_ = dataset_hash(inputs, options)
    build = partial(build_index, inputs=inputs, hash_=hash_, options=options, progress=progress)
    published = publish_current(out, hash_, stored=stored_counts, build=build, stage=stage)
    size = (published.path / INDEX_FILE).stat().st_size
    if published.reused:
        progress.line("up to date", f"{hash_} already imported; nothing to do")
        return ImportResult(hash_, published.path, True, published.result, 0.0, size)
    seconds = progress.elapsed()
    progress.line("done", f"{hash_} in {seconds:.1f} s, {size / 1e6:.1f} MB on disk; {'staged' if stage else 'current.json updated'}")
    return ImportResult(hash_, published.path, False, published.result, seconds, size)


def stored_counts(dataset_dir: Path) -> dict[str, int] | None:
    """The counts an index already written records; None when there is no index."""
    path = dataset_dir / INDEX_FILE
    if not path.is_file():
        return None
    import sqlite3

    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        row = connection.execute("SELECT value FROM meta WHERE key = 'counts'").fetchone()
    finally:
        connection.close()
    return dict(json.loads(row[0])) if row else {}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m geo_service.importer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--osm", action="append", help="an .osm.pbf file (repeat to merge several)")
    parser.add_argument(
        "--out", type=Path, default=None, help="index directory (default: GEO_INDEX_DIR or <DATA_DIR>/geo)"
    )
    parser.add_argument("--default-country", help="ISO 3166-1 alpha-2/alpha-3 code for objects without one")
    parser.add_argument("--default-city", help="city for objects the data does not place in one")
    parser.add_argument("--stage", action="store_true", help=STAGE_HELP)
    return parser.parse_args(argv)


def default_out() -> Path:
    """Where the geocoding service looks for its index (its configuration: GEO_INDEX_DIR, DATA_DIR)."""
    return GeoConfig.from_env().index_dir


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    country = None
    if args.default_country:
        country = alpha3_from_tag(args.default_country)
        if country is None:
            print(f"error: unknown country code {args.default_country!r}", file=sys.stderr)
            return 2
    try:
        result = run_import(
            input_files(args.osm),
            args.out or default_out(),
            default_country=country,
            default_city=args.default_city,
            stage=args.stage,
        )
    except (OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(" ".join(f"{k}={v}" for k, v in result.counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
