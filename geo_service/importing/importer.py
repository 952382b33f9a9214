"""Geocoder importer: OSM extracts → one content-addressed SQLite index.

    python -m geo_service.importing [--osm FILE ...] [--out DIR] [--default-country CC] [--default-city NAME]

Inputs come from common.osm_inputs (--osm, else OSM_FILE, else the default Helsinki map);
several inputs are merged into one index. The result is `<out>/<hash>/index.sqlite3`, where
hash = sha256 of the inputs' bytes, the importer version, the options and the country data,
and `<out>/current.json` = {"hash": ...} names the index the service opens. Progress, the
atomic publish, current.json and the command line are every importer's (`common.importing`): a
crash never leaves a half index behind, and a re-run on the same inputs only re-points
current.json (a no-op).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from common.datasets import Progress
from common.importing import Imported, Importer
from common.osm_inputs import ATTRIBUTION
from geo_service.config import GeoConfig
from geo_service.countries import alpha3_from_tag
from geo_service.importing.build import build_dataset, extract_vocabulary, merge_datasets
from geo_service.importing.country_lookup import CountryLookup
from geo_service.importing.extract import read_osm
from geo_service.importing.store_writer import write_index
from geo_service.records import Dataset
from geo_service.store import INDEX_FILE

# 2: country from geometry (issue 10), autocomplete word table.
IMPORTER_VERSION = "4"  # 3: names in other languages (translations, issue 35); 4: postcode areas (issue 34)


ImportResult = Imported[dict[str, int]]


@dataclass(frozen=True)
class IndexOptions:
    """What an index is built with besides its inputs (part of its name): the country and city
    given to objects the data places in none."""

    default_country: str | None = None
    default_city: str | None = None


def counts_of(dataset: Dataset) -> dict[str, int]:
    kinds = Counter(n.kind for n in dataset.names)
    return {
        "addresses": len(dataset.addresses),
        "interpolated": sum(a.interpolated for a in dataset.addresses),
        "streets": kinds["street"],
        "places": kinds["place"],
        "pois": kinds["poi"],
    }


def build_index(work: Path, inputs: Sequence[Path], name: str, options: IndexOptions, progress: Progress) -> dict[str, int]:
    """The index in `work`; returns its counts."""
    progress.line("importing", f"{len(inputs)} file(s) → {work.parent / name}")
    # Each input is filled in on its own, so each keeps its own default country and city.
    extracts = []
    for path in inputs:
        extracts.append(read_osm(path))
        progress.line(
            f"read {path.name}", f"{len(extracts[-1].addresses)} addresses, {len(extracts[-1].streets)} street ways"
        )
    vocabulary = set().union(*(extract_vocabulary(e) for e in extracts))
    defaults = {"default_country": options.default_country, "default_city": options.default_city}
    countries = CountryLookup()
    dataset = merge_datasets([build_dataset(e, countries=countries, vocabulary=vocabulary, **defaults) for e in extracts])
    counts = counts_of(dataset)
    progress.line("filled and grouped", ", ".join(f"{v} {k}" for k, v in counts.items()))
    meta = {
        "hash": name,
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
            {a.postcode for a in dataset.addresses if a.postcode}
            | {p for n in dataset.names for p in n.postcodes}
            | {p.postcode for p in dataset.postcodes}
        ),
        "vocabulary": sorted(dataset.vocabulary),
        "attribution": ATTRIBUTION,
    }
    write_index(work / INDEX_FILE, dataset, meta)
    progress.line("index written", f"{(work / INDEX_FILE).stat().st_size / 1e6:.1f} MB")
    return counts


class IndexImporter(Importer[IndexOptions, dict[str, int]]):
    """The geocoder's importer; an index records its counts (addresses, streets, places, POIs)."""

    module = "geo_service.importing"
    version = IMPORTER_VERSION
    description = "Geocoder importer: OSM extracts → one content-addressed SQLite index."
    out_help = "index directory (default: GEO_INDEX_DIR or <DATA_DIR>/geo)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--default-country", help="ISO 3166-1 alpha-2/alpha-3 code for objects without one")
        parser.add_argument("--default-city", help="city for objects the data does not place in one")

    def options_from(self, args: argparse.Namespace) -> IndexOptions:
        country = None
        if args.default_country:
            country = alpha3_from_tag(args.default_country)
            if country is None:
                raise ValueError(f"unknown country code {args.default_country!r}")
        return IndexOptions(country, args.default_city)

    def default_out(self) -> Path:
        """Where the geocoding service looks for its index (its configuration: GEO_INDEX_DIR, DATA_DIR)."""
        return GeoConfig.from_env().index_dir

    def depends_on(self, options: IndexOptions) -> Iterable[bytes]:
        # The country data's version is part of the input: a new release may move a border.
        yield CountryLookup.version().encode()

    def stored(self, dataset_dir: Path) -> dict[str, int] | None:
        return stored_counts(dataset_dir)

    def build(
        self, work: Path, inputs: Sequence[Path], name: str, options: IndexOptions, progress: Progress
    ) -> dict[str, int]:
        return build_index(work, inputs, name, options, progress)

    def summary(self, result: ImportResult) -> str:
        size = (result.path / INDEX_FILE).stat().st_size
        state = "already imported (no-op)" if result.reused else f"imported in {result.seconds:.1f} s"
        counts = " ".join(f"{kind}={count}" for kind, count in result.record.items())
        return f"index {result.hash}: {state}, {size / 1e6:.1f} MB on disk in {result.path}\n  {counts}\n{ATTRIBUTION}"


def run_import(
    inputs: Sequence[Path],
    out: Path,
    *,
    default_country: str | None = None,
    default_city: str | None = None,
    emit: Callable[[str], None] = print,
    stage: bool = False,
) -> ImportResult:
    """Imports `inputs` into `out/<hash>/` and makes it current (IndexImporter)."""
    options = IndexOptions(default_country, default_city)
    return IndexImporter().run(inputs, out, options, progress=Progress(emit), stage=stage)


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
