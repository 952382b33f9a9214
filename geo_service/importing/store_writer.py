"""Writes the geocoding index (its tables: `geo_service.store`), for the importer only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from geo_service.records import Address, Dataset, Named, PostcodePoint

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE names (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL,
    city TEXT, postcode TEXT, postcodes TEXT, country TEXT, lat REAL NOT NULL, lon REAL NOT NULL,
    importance REAL NOT NULL, category TEXT, street TEXT, house_number TEXT, geometry TEXT,
    group_id INTEGER NOT NULL, nth INTEGER NOT NULL, nth_in_country INTEGER NOT NULL
);
CREATE VIRTUAL TABLE names_fts USING fts5(key, content='names', content_rowid='id', tokenize='trigram');
CREATE TABLE addresses (
    id INTEGER PRIMARY KEY, street_id INTEGER NOT NULL, street TEXT NOT NULL, house_number TEXT NOT NULL,
    house_key TEXT NOT NULL, house_base INTEGER NOT NULL, postcode TEXT, city TEXT, country TEXT,
    lat REAL NOT NULL, lon REAL NOT NULL, interpolated INTEGER NOT NULL
);
CREATE VIRTUAL TABLE addresses_rtree USING rtree(id, min_lat, max_lat, min_lon, max_lon);
CREATE TABLE name_words (word TEXT NOT NULL, name_id INTEGER NOT NULL, PRIMARY KEY (word, name_id)) WITHOUT ROWID;
CREATE TABLE name_keys (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE translations (
    name TEXT NOT NULL, language TEXT NOT NULL, translated TEXT NOT NULL, PRIMARY KEY (language, name)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE name_keys_fts USING fts5(key, content='name_keys', content_rowid='id', tokenize='trigram');
CREATE TABLE postcode_areas (
    postcode TEXT NOT NULL, city TEXT, country TEXT, lat REAL NOT NULL, lon REAL NOT NULL, objects INTEGER NOT NULL
);
"""
INDEXES = """
CREATE INDEX addresses_by_street ON addresses (street_id, house_base);
CREATE INDEX names_by_key ON names (key, nth);
CREATE INDEX names_by_key_in_country ON names (key, country, nth_in_country);
CREATE INDEX names_by_group ON names (group_id, nth);
CREATE INDEX names_by_category ON names (category);
CREATE INDEX names_by_group_in_country ON names (group_id, country, nth_in_country);
CREATE INDEX addresses_by_postcode ON addresses (postcode COLLATE NOCASE);
CREATE INDEX postcode_areas_by_postcode ON postcode_areas (postcode COLLATE NOCASE);
"""

def _geometry_json(named: Named) -> str | None:
    if not named.geometry:
        return None
    lines = [[[round(lon, 6), round(lat, 6)] for lat, lon in line] for line in named.geometry]
    return json.dumps({"type": "MultiLineString", "coordinates": lines}, separators=(",", ":"))


def text_identity(n: Named) -> tuple[Any, ...]:
    """What a query is scored on and answered with: names alike in all of it form one group."""
    return (n.kind, n.key, n.name, n.city, n.postcode, tuple(sorted(n.postcodes)), n.category, n.street,
            n.house_number)  # fmt: skip


def name_groups(names: list[Named]) -> tuple[list[int], list[int], list[int]]:
    """Each name's group (1, 2, … by first appearance) and its rank by importance (1 = most) in
    the group and among the group's names of its country."""
    ids: dict[tuple[Any, ...], int] = {}
    group = [ids.setdefault(text_identity(n), len(ids) + 1) for n in names]
    seen: dict[Any, int] = {}
    nth, nth_in_country = [0] * len(names), [0] * len(names)
    for i in sorted(range(len(names)), key=lambda i: -names[i].importance):  # stable: ties by position
        nth[i] = seen[group[i]] = seen.get(group[i], 0) + 1
        both = (group[i], names[i].country)
        nth_in_country[i] = seen[both] = seen.get(both, 0) + 1
    return group, nth, nth_in_country


def _name_rows(names: list[Named]) -> Iterable[tuple[Any, ...]]:
    group, nth, nth_in_country = name_groups(names)
    for i, n in enumerate(names, start=1):
        postcodes = " ".join(sorted(n.postcodes)) or None
        yield (i, n.kind, n.name, n.key, n.city, n.postcode, postcodes, n.country, n.lat, n.lon, n.importance,
               n.category, n.street, n.house_number, _geometry_json(n), group[i - 1], nth[i - 1],
               nth_in_country[i - 1])  # fmt: skip


def _address_rows(addresses: list[Address]) -> Iterable[tuple[Any, ...]]:
    for i, a in enumerate(addresses, start=1):
        yield (i, a.street_id + 1, a.street, a.house_number, a.house_key, a.house_base, a.postcode,
               a.city, a.country, a.lat, a.lon, int(a.interpolated))  # fmt: skip


def _postcode_area_rows(points: list[PostcodePoint]) -> Iterable[tuple[Any, ...]]:
    """One row per postcode, town and country: the centre of their objects, and how many."""
    areas: dict[tuple[str, str | None, str | None], list[PostcodePoint]] = {}
    for point in points:
        areas.setdefault((point.postcode, point.city, point.country), []).append(point)
    for (postcode, city, country), members in areas.items():
        lat = sum(p.lat for p in members) / len(members)
        lon = sum(p.lon for p in members) / len(members)
        yield (postcode, city, country, lat, lon, len(members))


def _name_word_rows(names: list[Named]) -> Iterable[tuple[str, int]]:
    for i, n in enumerate(names, start=1):
        for word in set(n.key.split()):
            yield (word, i)


def write_index(path: Path, dataset: Dataset, meta: dict[str, Any]) -> None:
    """Writes the whole dataset in one transaction; `meta` values are stored as JSON."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        connection.executescript(SCHEMA)
        with connection:
            names_sql = f"INSERT INTO names VALUES ({','.join('?' * 18)})"  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            connection.executemany(names_sql, _name_rows(dataset.names))
            addresses_sql = f"INSERT INTO addresses VALUES ({','.join('?' * 12)})"  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            connection.executemany(addresses_sql, _address_rows(dataset.addresses))
            connection.executemany("INSERT INTO name_words VALUES (?, ?)", _name_word_rows(dataset.names))
            connection.executemany(
                "INSERT INTO translations VALUES (?, ?, ?)",
                [(name, language, translated) for (name, language), translated in dataset.translations.items()],
            )
            connection.executemany(
                "INSERT INTO postcode_areas VALUES (?, ?, ?, ?, ?, ?)", _postcode_area_rows(dataset.postcodes)
            )
            connection.execute("INSERT INTO names_fts(names_fts) VALUES ('rebuild')")
            connection.execute("INSERT INTO name_keys (key) SELECT DISTINCT key FROM names ORDER BY key")
            connection.execute("INSERT INTO name_keys_fts(name_keys_fts) VALUES ('rebuild')")
            connection.execute("INSERT INTO addresses_rtree SELECT id, lat, lat, lon, lon FROM addresses")
            connection.executescript(INDEXES)
            connection.executemany(
                "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()]
            )
        connection.execute("INSERT INTO names_fts(names_fts) VALUES ('optimize')")
        connection.execute("INSERT INTO name_keys_fts(name_keys_fts) VALUES ('optimize')")
        connection.execute("ANALYZE")
        connection.commit()
        connection.execute("VACUUM")
    finally:
        connection.close()
