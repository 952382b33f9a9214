"""Geocoder importer: OSM extracts → one content-addressed SQLite index.

    python -m geo_service.importer [--osm FILE ...] [--out DIR]

Inputs come from common.osm_inputs (--osm, else OSM_FILE, else the default Helsinki map);
several inputs are merged into one index. The result is `<out>/<hash>/index.sqlite3`, where
hash = sha256 of the inputs' bytes, the importer version and the options, and
`<out>/current.json` = {"hash": ...} names the index the service opens. Building happens in a
hidden temporary directory renamed into place, so a crash never leaves a half index behind;
a re-run on the same inputs finds `<hash>/` and only re-points current.json (a no-op).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common.config import data_dir
from common.osm_inputs import ATTRIBUTION, input_files
from geo_service.build import Dataset, build_dataset, extract_vocabulary, merge_datasets
from geo_service.countries import alpha3_from_tag
from geo_service.country_lookup import CountryLookup
from geo_service.extract import read_osm
from geo_service.store import INDEX_FILE, write_index

# 2: country from geometry (issue 10), autocomplete word table.
IMPORTER_VERSION = "2"
CURRENT = "current.json"
HASH_LENGTH = 16


@dataclass
class Progress:
    emit: Callable[[str], None] = print
    started: float = field(default_factory=time.perf_counter)

    def line(self, step: str, detail: str = "") -> None:
        self.emit(f"[{time.perf_counter() - self.started:6.1f} s] {step:<28} {detail}".rstrip())


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
        with path.open("rb") as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:HASH_LENGTH]


def write_current(out: Path, hash_: str) -> None:
    part = out / f".{CURRENT}.{os.getpid()}"
    part.write_text(json.dumps({"hash": hash_}) + "\n")
    os.replace(part, out / CURRENT)


def read_current(out: Path) -> str | None:
    try:
        value = json.loads((out / CURRENT).read_text()).get("hash")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def counts_of(dataset: Dataset) -> dict[str, int]:
    kinds = Counter(n.kind for n in dataset.names)
    return {
        "addresses": len(dataset.addresses),
        "interpolated": sum(a.interpolated for a in dataset.addresses),
        "streets": kinds["street"],
        "places": kinds["place"],
        "pois": kinds["poi"],
    }


def build(
    inputs: Sequence[Path], target: Path, hash_: str, options: dict[str, Any], progress: Progress
) -> dict[str, int]:
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
    write_index(target / INDEX_FILE, dataset, meta)
    progress.line("index written", f"{(target / INDEX_FILE).stat().st_size / 1e6:.1f} MB")
    return counts


def run_import(
    inputs: Sequence[Path],
    out: Path,
    *,
    default_country: str | None = None,
    default_city: str | None = None,
    emit: Callable[[str], None] = print,
) -> ImportResult:
    progress = Progress(emit)
    missing = [p for p in inputs if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no such OSM file: {', '.join(map(str, missing))}")
    # The country data's version is part of the input: a new release may move a border.
    options = {"default_country": default_country, "default_city": default_city, "countries": CountryLookup.version()}
    hash_ = dataset_hash(inputs, options)
    final = out / hash_
    out.mkdir(parents=True, exist_ok=True)
    if (final / INDEX_FILE).is_file():
        write_current(out, hash_)
        meta_counts = _stored_counts(final / INDEX_FILE)
        progress.line("up to date", f"{hash_} already imported; nothing to do")
        return ImportResult(hash_, final, True, meta_counts, 0.0, (final / INDEX_FILE).stat().st_size)
    progress.line("importing", f"{len(inputs)} file(s) → {final}")
    temporary = out / f".{hash_}.{os.getpid()}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    try:
        counts = build(inputs, temporary, hash_, options, progress)
        os.replace(temporary, final)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    write_current(out, hash_)
    seconds = time.perf_counter() - progress.started
    size = (final / INDEX_FILE).stat().st_size
    progress.line("done", f"{hash_} in {seconds:.1f} s, {size / 1e6:.1f} MB on disk; current.json updated")
    return ImportResult(hash_, final, False, counts, seconds, size)


def _stored_counts(path: Path) -> dict[str, int]:
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
    return parser.parse_args(argv)


def default_out() -> Path:
    return Path(os.environ.get("GEO_INDEX_DIR") or data_dir() / "geo")


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
            input_files(args.osm), args.out or default_out(), default_country=country, default_city=args.default_city
        )
    except (OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(" ".join(f"{k}={v}" for k, v in result.counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
