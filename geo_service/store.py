"""The geocoding index on disk: one SQLite file, read-only once written.

    names         streets (one row per street and town), places and POIs; `key` is the
                  normalized name, searched through names_fts (FTS5, trigram tokenizer)
    addresses     house numbers, each linked to its street row (street_id = names.id)
    addresses_rtree  R*Tree over addresses for reverse geocoding
    name_words    (word, name_id) for every distinct word of every name's key: autocomplete
                  finds the names with a word starting with a prefix by a range scan
    names.group_id  names alike in every text a query is scored on and answered with (the same
                  street name, town and postcodes: one street in many pieces, or in many
                  copies of a town; not the country: a name repeated across a border answers
                  from its most important side, and the five shared extracts have no such
                  group), nth their order by importance (nth_in_country among those of one
                  country, for a country filter): the geocoder scores a group once (nth = 1)
                  and looks up house numbers on its first members only
    name_keys     every distinct name key once, searched through name_keys_fts (FTS5, trigram):
                  the geocoder's candidates, so a street name that a thousand towns share is
                  ranked once, not a thousand times (issue 16: 10 copies of Heidelberg)
    meta          dataset hash, counts, default country/city, vocabulary, known postcodes

Readers open the file with `mode=ro&immutable=1`: no locks and no journal, so any number of
threads and processes read it at full speed. This module reads it (`IndexReader`); the importer
writes it (`geo_service.importing.store_writer`), and nothing that serves imports the writer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from geo_service.records import Address

INDEX_FILE = "index.sqlite3"
PREFIX_END = "\U0010ffff"  # sorts after every character: [p, p + PREFIX_END) holds the texts starting with p
ATTRIBUTION_KEY = "attribution"


@dataclass(frozen=True)
class NameRow:
    id: int
    kind: str
    name: str
    key: str
    city: str | None
    postcode: str | None
    postcodes: tuple[str, ...]
    country: str | None
    lat: float
    lon: float
    importance: float
    category: str | None
    street: str | None
    house_number: str | None
    group_id: int = 0  # 0: an index without groups (written before issue 16), or not read


@dataclass(frozen=True)
class PostcodeArea:
    postcode: str
    city: str | None
    country: str | None
    lat: float
    lon: float
    objects: int  # that carry the postcode in this town


NAME_COLUMNS = (
    "id, kind, name, key, city, postcode, postcodes, country, lat, lon, importance, category, street, house_number"
)
ADDRESS_COLUMNS = (
    "id, street_id, street, house_number, house_key, house_base, postcode, city, country, lat, lon, interpolated"
)


def name_row(row: tuple[Any, ...]) -> NameRow:
    values = list(row)
    values[6] = tuple(values[6].split()) if values[6] else ()
    return NameRow(*values)


def address_row(row: tuple[Any, ...]) -> Address:
    """A row of ADDRESS_COLUMNS."""
    row_id, street_id, street, number, key, base, postcode, city, country, lat, lon, interpolated = row
    return Address(street, number, key, base, postcode, city, country, lat, lon, bool(interpolated), street_id, row_id)


class IndexReader:
    """Read-only access to one index file; each thread gets its own connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._translations: dict[str, dict[str, str]] = {}
        self.meta = {k: json.loads(v) for k, v in self.connection().execute("SELECT key, value FROM meta")}
        columns = {str(r[1]) for r in self.connection().execute("PRAGMA table_info(names)")}
        self.grouped = "group_id" in columns  # see the module doc; older indexes have no groups
        self._columns = NAME_COLUMNS + (", group_id" if self.grouped else "")

    def connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def translations(self, language: str) -> dict[str, str]:
        """Names in "<kind>:<language>" (OSM's name:<lang> of streets, places or POIs; "<kind>:"
        their local names by their other names); {} for an index built before they were kept.
        Read once per key."""
        with self._lock:
            table = self._translations.get(language)
        if table is None:
            try:
                rows = self.connection().execute("SELECT name, translated FROM translations WHERE language = ?", (language,))
                table = {str(name): str(translated) for name, translated in rows}
            except sqlite3.OperationalError:  # no such table
                table = {}
            with self._lock:
                self._translations[language] = table
        return table

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    def search_names(self, fts_query: str, country: str | None, limit: int) -> list[tuple[NameRow, float]]:
        """Names whose key shares trigrams with the query, best bm25 first."""
        sql = (
            f"SELECT {', '.join('n.' + c.strip() for c in NAME_COLUMNS.split(','))}, f.rank "  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            "FROM names_fts f JOIN names n ON n.id = f.rowid WHERE names_fts MATCH ?"
        )
        params: list[Any] = [fts_query]
        if country:
            sql += " AND n.country = ?"
            params.append(country)
        sql += " ORDER BY f.rank LIMIT ?"
        params.append(limit)
        return [(name_row(r[:-1]), float(r[-1])) for r in self.connection().execute(sql, params)]

    def search_keys(self, fts_query: str, limit: int) -> list[str]:
        """Distinct name keys that share trigrams with the query, best bm25 first: the work
        follows the number of distinct names, not of the towns that repeat them."""
        sql = (
            "SELECT k.key FROM name_keys_fts f JOIN name_keys k ON k.id = f.rowid "
            "WHERE name_keys_fts MATCH ? ORDER BY f.rank LIMIT ?"
        )
        return [str(r[0]) for r in self.connection().execute(sql, (fts_query, limit))]

    def names_with_keys(self, keys: list[str], country: str | None, first_of_group: bool = False) -> list[NameRow]:
        """Names whose key is exactly one of `keys`; with `first_of_group` only the most important
        of each group (every name of an index without groups)."""
        return self._names_where("key", keys, country, self._first(country, 1) if first_of_group else "")

    def pois_of(self, categories: Collection[str], country: str | None) -> list[NameRow]:
        """Every POI of the categories ("amenity=pharmacy"), of the country if given."""
        return self._names_where("category", sorted(categories), country, " AND kind = 'poi'")

    def names_by_ids(self, ids: list[int], country: str | None) -> list[NameRow]:
        return self._names_where("id", ids, country)

    def group_member_ids(
        self, group_ids: list[int], country: str | None, per_group: int
    ) -> list[tuple[int, int, float]]:
        """(id, group, importance) of the `per_group` most important names of each group (of
        the country), most important first."""
        marks = ",".join("?" * len(group_ids))
        sql = f"SELECT id, group_id, importance FROM names WHERE group_id IN ({marks})"  # noqa: S608 - "?" only
        params: list[Any] = list(group_ids)
        if country:
            sql += " AND country = ?"
            params.append(country)
        sql += self._first(country, per_group) + " ORDER BY group_id, " + ("nth_in_country" if country else "nth")
        return [(int(i), int(g), float(w)) for i, g, w in self.connection().execute(sql, params)]

    def _first(self, country: str | None, count: int) -> str:
        """The condition for a group's `count` most important names (of the filtered country)."""
        if not self.grouped:
            return ""
        return f" AND {'nth_in_country' if country else 'nth'} <= {int(count)}"

    def _names_where(self, column: str, values: list[Any], country: str | None, condition: str = "",
                     condition_params: list[Any] | None = None) -> list[NameRow]:  # fmt: skip
        """Names whose `column` is one of `values`, and `condition` holds (both constants of ours,
        never input; the country's filter comes first)."""
        marks = ",".join("?" * len(values))
        sql = f"SELECT {self._columns} FROM names WHERE {column} IN ({marks})"  # noqa: S608 - constant column, "?" only
        params: list[Any] = list(values)
        if country:
            sql += " AND country = ?"
            params.append(country)
        sql += condition
        return [name_row(r) for r in self.connection().execute(sql, params + (condition_params or []))]

    def short_keys(self, max_length: int) -> list[str]:
        """Every distinct key of at most max_length characters."""
        rows = self.connection().execute("SELECT DISTINCT key FROM names WHERE length(key) <= ?", (max_length,))
        return sorted(str(k) for (k,) in rows)

    # ------------------------------------------------------------ autocomplete

    def has_table(self, name: str) -> bool:
        row = self.connection().execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return row.fetchone() is not None

    def name_facts(self) -> list[tuple[int, str, float, float, float]]:
        """(id, kind, lat, lon, importance) of every name."""
        return list(self.connection().execute("SELECT id, kind, lat, lon, importance FROM names"))

    def names_with_word_prefix(self, prefix: str, country: str | None, limit: int) -> list[tuple[int, int]]:
        """(name id, length of the word) of names with a word starting with `prefix`, in word order:
        one range scan of name_words, so the cost follows `limit`, not the size of the index."""
        return self._name_words("w.word >= ? AND w.word < ?", [prefix, prefix + PREFIX_END], country, limit)

    def names_with_word(self, word: str, country: str | None, limit: int) -> list[tuple[int, int]]:
        return self._name_words("w.word = ?", [word], country, limit)

    def names_with_word_and_prefix(
        self, word: str, prefix: str, country: str | None, limit: int
    ) -> list[tuple[int, int]]:
        """Names holding `word` and a word starting with `prefix` (found in the key)."""
        condition = "w.word = ? AND instr(' ' || n.key, ' ' || ?) > 0"
        return self._name_words(condition, [word, prefix], country, limit, join=True)

    def _name_words(
        self, condition: str, params: list[Any], country: str | None, limit: int, join: bool = False
    ) -> list[tuple[int, int]]:
        """`condition` is a constant of ours, never input."""
        sql = "SELECT w.name_id, length(w.word) FROM name_words w"
        if country or join:
            sql += " JOIN names n ON n.id = w.name_id"
        sql += f" WHERE {condition}"  # a constant condition of ours; values only as "?" placeholders
        if country:
            sql += " AND n.country = ?"
            params.append(country)
        sql += " LIMIT ?"
        params.append(limit)
        return self.connection().execute(sql, params).fetchall()

    def name_texts(self, ids: list[int]) -> list[tuple[int, str, str | None, str | None, str | None]]:
        """(id, key, city, postcode, postcodes) of the names: what text matching reads, and no more."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        sql = f"SELECT id, key, city, postcode, postcodes FROM names WHERE id IN ({marks})"  # noqa: S608 - "?" only
        return list(self.connection().execute(sql, ids))

    def addresses_with_number_prefix(self, street_id: int, prefix: str, limit: int) -> list[Address]:
        """The street's addresses whose number starts with `prefix`, in number order (2, 2a, 20, 21, …);
        an address mapped several times (entrances, building and node) once."""
        rows = self.connection().execute(
            f"SELECT {ADDRESS_COLUMNS} FROM addresses WHERE street_id = ? AND house_key >= ? AND house_key < ? "  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            "GROUP BY house_key, postcode, city ORDER BY house_base, house_key LIMIT ?",
            (street_id, prefix, prefix + PREFIX_END, limit),
        )
        return [address_row(r) for r in rows]

    def addresses_on(self, street_ids: list[int], house_base: int) -> list[Address]:
        marks = ",".join("?" * len(street_ids))
        rows = self.connection().execute(
            f"SELECT {ADDRESS_COLUMNS} FROM addresses WHERE street_id IN ({marks}) AND house_base = ?",  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            [*street_ids, house_base],
        )
        return [address_row(r) for r in rows]

    def addresses_near(
        self, lat: float, lon: float, d_lat: float, d_lon: float, limit: int, country: str | None = None
    ) -> list[Address]:
        sql = (
            f"SELECT {', '.join('a.' + c.strip() for c in ADDRESS_COLUMNS.split(','))} FROM addresses_rtree r "  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            "JOIN addresses a ON a.id = r.id WHERE r.min_lat >= ? AND r.max_lat <= ? AND r.min_lon >= ? AND r.max_lon <= ?"
        )
        params: list[Any] = [lat - d_lat, lat + d_lat, lon - d_lon, lon + d_lon]
        if country:
            sql += " AND a.country = ?"
            params.append(country)
        sql += " LIMIT ?"
        params.append(limit)
        return [address_row(r) for r in self.connection().execute(sql, params)]

    def postcode_areas(self, postcode: str, country: str | None) -> list[PostcodeArea]:
        """The postcode in each town its objects name, most objects first: their centre. An
        index written before postcode_areas existed has its addresses' only."""
        table = "postcode_areas" if self.has_postcode_areas else "addresses"
        counted = "sum(objects)" if self.has_postcode_areas else "count(*)"
        sql = (
            f"SELECT postcode, city, country, avg(lat), avg(lon), {counted} AS n FROM {table} "  # noqa: S608 - only constant column lists and "?" placeholders are formatted in
            "WHERE postcode = ? COLLATE NOCASE"
            + (" AND country = ?" if country else "")
            + " GROUP BY postcode, city, country ORDER BY n DESC"
        )
        rows = self.connection().execute(sql, [postcode, country] if country else [postcode])
        return [PostcodeArea(*row) for row in rows]

    @cached_property
    def has_postcode_areas(self) -> bool:
        return self.has_table("postcode_areas")

    def place_names(self) -> list[str]:
        """Every city of the index and every place's name: what a text may name as its town."""
        rows = self.connection().execute(
            "SELECT city FROM names WHERE city IS NOT NULL UNION SELECT name FROM names WHERE kind = 'place'"
        )
        return [str(r[0]) for r in rows]

    def street_geometry(self, street_id: int) -> dict[str, Any] | None:
        row = self.connection().execute("SELECT geometry FROM names WHERE id = ?", (street_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def short_word_shares(self, max_letters: int) -> dict[str, float]:
        """The share of the distinct name keys that hold each word of at most `max_letters`
        letters ("de", "am", "bar", "weg"): the matcher reads the most common as no name's own."""
        counts: dict[str, int] = {}
        keys = 0
        for (key,) in self.connection().execute("SELECT DISTINCT key FROM names"):
            keys += 1
            for word in set(str(key).split()):
                if len(word) <= max_letters:
                    counts[word] = counts.get(word, 0) + 1
        return {word: count / max(1, keys) for word, count in counts.items()}

    def trigram_document_counts(self) -> dict[str, int]:
        """How many names contain each trigram: the matcher leaves out the most common ones."""
        connection = self.connection()
        connection.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.names_vocab USING fts5vocab(main, names_fts, row)")
        return {term: count for term, count in connection.execute("SELECT term, doc FROM temp.names_vocab")}
