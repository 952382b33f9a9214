"""The importer: content-addressed layout, no-op re-runs, merged inputs, filled-in fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.datasets import STAGED, read_current, switch_staged
from geo_service.countries import ALPHA2_TO_ALPHA3, ALPHA3_CODES, alpha3_from_tag
from geo_service.importing.importer import ImportResult, IndexImporter, run_import
from geo_service.index import LoadedIndex
from geo_service.store import INDEX_FILE


def test_layout_and_counts(munich_import: ImportResult, munich_dir: Path) -> None:
    assert json.loads((munich_dir / "current.json").read_text()) == {"hash": munich_import.hash}
    assert munich_import.path == munich_dir / munich_import.hash
    assert (munich_import.path / INDEX_FILE).is_file()
    counts = munich_import.record
    assert counts["addresses"] > 3000 and counts["streets"] > 200 and counts["pois"] > 1000 and counts["places"] > 5
    assert [p.name for p in munich_dir.iterdir() if p.name.startswith(".")] == []


def test_rerun_on_the_same_input_is_a_no_op(munich_import: ImportResult, munich_dir: Path, shared_osm: Path) -> None:
    index = munich_import.path / INDEX_FILE
    before = index.stat().st_mtime_ns
    lines: list[str] = []
    again = run_import([shared_osm / "munich.osm.pbf"], munich_dir, emit=lines.append)
    assert again.reused and again.hash == munich_import.hash and again.record == munich_import.record
    assert index.stat().st_mtime_ns == before
    assert any("up to date" in line for line in lines)


def test_cli_prints_progress_and_a_summary(
    shared_osm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert IndexImporter().main(["--osm", str(shared_osm / "munich.osm.pbf"), "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    assert "read munich.osm.pbf" in output and "MB on disk" in output and "addresses=" in output
    assert IndexImporter().main(["--osm", str(tmp_path / "missing.osm.pbf"), "--out", str(tmp_path)]) == 1


def test_merged_inputs_keep_every_country(andorra_monaco_helsinki: LoadedIndex) -> None:
    meta = andorra_monaco_helsinki.reader.meta
    assert {"AND", "MCO", "FIN"} <= set(meta["countries"])
    assert meta["inputs"] == ["andorra.osm.pbf", "monaco.osm.pbf", "helsinki.osm.pbf"]


def test_missing_city_postcode_and_country_are_filled(heidelberg: LoadedIndex) -> None:
    total, no_city, no_postcode, no_country = (
        heidelberg.reader.connection()
        .execute("SELECT count(*), sum(city IS NULL), sum(postcode IS NULL), sum(country IS NULL) FROM addresses")
        .fetchone()
    )
    assert total > 900 and no_country == 0
    # Heidelberg has ~30 addresses without addr:city and ~50 without addr:postcode in OSM.
    assert no_city <= 5 and no_postcode <= 10
    countries = heidelberg.reader.connection().execute("SELECT DISTINCT country FROM addresses").fetchall()
    assert countries == [("DEU",)]
    assert heidelberg.reader.meta["default_country"] is None  # from geometry, not a majority
    assert heidelberg.reader.meta["counts"]["interpolated"] > 100


def test_alpha3_table() -> None:
    assert len(ALPHA2_TO_ALPHA3) == 249 and len(ALPHA3_CODES) == 249
    assert [alpha3_from_tag(v) for v in ("DE", "fi", "MC", "AND", "XX", None)] == [
        "DEU",
        "FIN",
        "MCO",
        "AND",
        None,
        None,
    ]


def test_the_operators_default_country_fills_only_what_nothing_else_places(
    shared_osm: Path, tmp_path: Path
) -> None:
    """--default-country is a last resort: it does not override where an object lies."""
    result = run_import([shared_osm / "helsinki.osm.pbf"], tmp_path, default_country="EST", emit=lambda line: None)
    import sqlite3

    connection = sqlite3.connect(result.path / INDEX_FILE)
    try:
        assert connection.execute("SELECT DISTINCT country FROM addresses").fetchall() == [("FIN",)]
    finally:
        connection.close()


def test_a_staged_import_leaves_the_current_index_in_service(shared_osm: Path, tmp_path: Path) -> None:
    """`--stage` (the launcher's import into a running platform): built and staged; the current
    index changes only when `switch_staged` switches routing and geocoding together."""
    first = run_import([shared_osm / "monaco.osm.pbf"], tmp_path, emit=lambda line: None)
    assert IndexImporter().main(["--osm", str(shared_osm / "andorra.osm.pbf"), "--out", str(tmp_path), "--stage"]) == 0
    assert read_current(tmp_path) == first.hash
    staged = read_current(tmp_path, STAGED)
    assert staged is not None and staged != first.hash and (tmp_path / staged / INDEX_FILE).is_file()
    assert switch_staged([tmp_path]) == {tmp_path: staged} and read_current(tmp_path) == staged
