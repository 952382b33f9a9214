"""Issue 16: a town repeated many times (copies of Monaco side by side, `bench.synthetic_map`)
answers as one copy does, and the geocoder reads no more candidates for it: names alike in
every text are one group (`store`), scored once, house numbers looked up on a few of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.synthetic_map import write_copies
from geo_service.candidates import GROUP_ADDRESS_ROWS
from geo_service.importing.importer import run_import
from geo_service.importing.store_writer import name_groups
from geo_service.index import LoadedIndex
from geo_service.model import GeocodeQuery
from geo_service.records import Named
from geo_service.store import IndexReader
from tests.geo_service.conftest import open_current
from tests.imports_ahead import ImportsAhead

COPIES = 4


def import_copies(shared_osm: Path, tmp: Path, counts: tuple[int, ...]) -> list[Path]:
    """For each count, an index of that many Monaco copies side by side: its folder."""
    folders = []
    for copies in counts:
        pbf = tmp / f"monaco-{copies}.osm.pbf"
        write_copies([shared_osm / "monaco.osm.pbf"], copies, pbf)
        run_import([pbf], tmp / f"geo-{copies}", emit=lambda line: None)
        folders.append(tmp / f"geo-{copies}")
    return folders


@pytest.fixture(scope="module")
def monaco_copies_indexes(
    shared_osm: Path, tmp_path_factory: pytest.TempPathFactory, imports_ahead: ImportsAhead
) -> Iterator[tuple[LoadedIndex, LoadedIndex]]:
    tmp = imports_ahead.out("geo-copies")
    folders = imports_ahead.result("geo-copies", lambda: import_copies(shared_osm, tmp, (1, COPIES)))
    one, many = (open_current(folder) for folder in folders)
    yield one, many
    one.reader.close()
    many.reader.close()


def addresses(index: LoadedIndex, count: int) -> list[str]:
    rows = index.reader.connection().execute(
        "SELECT street, house_number, postcode, city FROM addresses WHERE interpolated = 0 ORDER BY id LIMIT ?",
        (count,),
    )
    return [f"{s} {n}, {' '.join(p for p in (code, city) if p)}" for s, n, code, city in rows]


def counting(reader: IndexReader, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Rows the reader hands the matcher, by kind: names, and group members looked up."""
    read: Counter[str] = Counter()
    names_where, members = reader._names_where, reader.group_member_ids

    def count_names(*args: Any, **kwargs: Any) -> Any:
        rows = names_where(*args, **kwargs)
        read["names"] += len(rows)
        return rows

    def count_members(*args: Any, **kwargs: Any) -> Any:
        rows = members(*args, **kwargs)
        read["members"] += len(rows)
        read["most in a group"] = max([read["most in a group"], *Counter(g for _, g, _ in rows).values()])
        return rows

    monkeypatch.setattr(reader, "_names_where", count_names)
    monkeypatch.setattr(reader, "group_member_ids", count_members)
    return read


def test_copies_answer_alike_and_read_no_more(monaco_copies_indexes: tuple[LoadedIndex, LoadedIndex],
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    one, many = monaco_copies_indexes
    assert many.reader.grouped and many.counts["streets"] >= COPIES * one.counts["streets"] * 0.9
    texts = addresses(one, 40)
    read = [counting(index.reader, monkeypatch) for index in (one, many)]
    for text in texts:
        first, repeated = (index.matcher.geocode(GeocodeQuery(text, limit=3)).results for index in (one, many))
        assert first and repeated, text
        # the same answer, from any copy (a copy may lie in another country)
        assert replace(first[0].address, country=None) == replace(repeated[0].address, country=None), text
        assert first[0].score == repeated[0].score, text
    # the copies' texts differ only where a copy lies in another country's postcode or town areas
    assert read[1]["names"] <= 1.3 * read[0]["names"], read
    assert read[1]["most in a group"] <= GROUP_ADDRESS_ROWS


def test_name_groups_rank_alike_names_by_importance() -> None:
    def street(importance: float, city: str = "Heidelberg", country: str = "DEU") -> Named:
        return Named("street", "Hauptstraße", "hauptstrasse", 49.4, 8.7, city=city, country=country,
                     importance=importance)  # fmt: skip

    names = [street(0.2), street(0.5, country="CZE"), street(0.9, city="Leimen"), street(0.3)]
    group, nth, nth_in_country = name_groups(names)
    assert group == [1, 1, 2, 1]
    assert nth == [3, 1, 1, 2]
    assert nth_in_country == [2, 1, 1, 1]
