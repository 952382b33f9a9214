"""The names, addresses, postcode areas and POIs an analysed query may mean: the one step of a
geocode that reads the store.

Candidate names come from the FTS5 trigram index (bm25 order), the most common trigrams ("str",
"ass") left out because they select everything, and from the names that are exactly a run of the
words; they are scored as they are found (`similarity`), since how well the first ones match
decides whether a typo's wider search is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, process

from common.geo import LatLon, haversine_m
from geo_service.kinds import KindWords
from geo_service.lexicon import SHORT_NAME, Lexicon
from geo_service.parser import HouseNumber
from geo_service.records import Address
from geo_service.similarity import Candidate, Scorer, spans
from geo_service.store import IndexReader, NameRow, PostcodeArea

CANDIDATES = 60
CANDIDATE_MEMO = 4096  # distinct (words, country): a few MB
# A typo leaves only the name's common trigrams ("enw", "weg" of Erlenweg): more names share them.
TYPO_CANDIDATES = 150
SHORT_NAME_SIMILARITY = 75
# A candidate this good (name similarity times city agreement: the words it leaves unexplained
# count against it, so the town alone is not enough) ends the search after the rare trigrams.
CONFIDENT_MATCH = 0.9
# House numbers are looked up on this many streets of a group (names alike in every text, see
# `store`): the largest street group in the five shared extracts' index has 4 (Grasweg,
# Heidelberg: one street in 4 pieces), so no answer there changes; 10 copies of Heidelberg hold
# groups of up to 32 streets.
GROUP_ADDRESS_ROWS = 4
KIND_DISTANCE_M = 10_000.0

Member = tuple[int, float]  # a street of a candidate's group: (name id, importance)


@dataclass(frozen=True)
class Streets:
    """What the store holds of the candidate streets for a house number: each one's group (the
    streets it may be on, most important first), their addresses with the number's base, and
    the first of each group without such addresses (answered as the street)."""

    members: dict[int, list[Member]] = field(default_factory=dict)
    addresses: dict[int, list[Address]] = field(default_factory=dict)
    rows: dict[int, NameRow] = field(default_factory=dict)


@dataclass(frozen=True)
class KindFound:
    """The POIs of a kind asked, each with its distance from where it was asked (None: asked
    anywhere, no order of place)."""

    words: KindWords
    pois: list[tuple[NameRow, float | None]]


class CandidateFinder:
    def __init__(self, reader: IndexReader, lexicon: Lexicon) -> None:
        self.reader = reader
        self.lexicon = lexicon
        self.scorer = Scorer(lexicon)
        # an index written before name_keys existed ranks name rows (as every index did before)
        self.rank_keys = reader.has_table("name_keys_fts")
        # Address lists name the same streets again and again with other numbers: the names a
        # street's words find do not depend on the number, so they are found once per index
        # (bench/geocoder_batch.py: 80 % of a lookup's time is in finding them).
        self.names = lru_cache(maxsize=CANDIDATE_MEMO)(self.find_names)

    def find_names(self, words: tuple[str, ...], country: str | None) -> tuple[Candidate, ...]:
        """Names found by the rare trigrams first; only when none of them matches well (a typo in
        a rare trigram, most often) by every trigram. Measured on the shared extracts in one
        index (bench/geocoder.py): the first search alone takes a third of the time."""
        listed = list(words)
        rows = self.exact_rows(listed, country)
        rows += self.trigram_rows(self.lexicon.selective_fts_query(listed), country, {r.id for r in rows}, CANDIDATES)
        found = self.scorer.score(listed, rows)
        if not any(c.score >= CONFIDENT_MATCH and not c.names_else for c in found):
            more = self.trigram_rows(self.lexicon.fts_query(listed), country, {r.id for r in rows}, TYPO_CANDIDATES)
            found += self.scorer.score(listed, more)
        return tuple(found)

    def exact_rows(self, words: list[str], country: str | None) -> list[NameRow]:
        """Every name that is exactly a run of the words, and short names near a short word."""
        span_texts = [" ".join(words[i:j]) for i, j in spans(words)]
        rows = self.reader.names_with_keys(span_texts, country, first_of_group=True)
        similar_short = sorted(self.similar_short_keys(words) - set(span_texts))
        if similar_short:
            rows += self.reader.names_with_keys(similar_short, country, first_of_group=True)
        return rows

    def trigram_rows(self, fts: str | None, country: str | None, seen: set[int], limit: int) -> list[NameRow]:
        """The names of the `limit` keys (without name_keys: the `limit` names) best ranked by bm25."""
        if not fts:
            return []
        if self.rank_keys:
            keys = self.reader.search_keys(fts, limit)
            order = {key: i for i, key in enumerate(keys)}
            rows = sorted(self.reader.names_with_keys(keys, country, first_of_group=True), key=lambda r: order[r.key])
        else:
            rows = [row for row, _ in self.reader.search_names(fts, country, limit)]
        return [r for r in rows if r.id not in seen]

    def similar_short_keys(self, words: list[str]) -> set[str]:
        short_keys = self.lexicon.short_keys
        short_words = [w for w in words if 3 <= len(w) <= SHORT_NAME + 1]
        if not short_words or not short_keys:
            return set()
        scores = process.cdist(short_words, short_keys, scorer=fuzz.ratio, score_cutoff=SHORT_NAME_SIMILARITY)
        return {short_keys[int(i)] for i in np.flatnonzero(scores.max(axis=0))}

    def streets(self, candidates: tuple[Candidate, ...], number: HouseNumber | None, country: str | None) -> Streets:
        """The candidate streets' groups, addresses and fallback streets for a house number."""
        streets = [c.row for c in candidates if c.row.kind == "street"]
        if number is None or not streets:
            return Streets()
        members = self.group_members(streets, country)
        addresses: dict[int, list[Address]] = {}
        for address in self.reader.addresses_on([m for ms in members.values() for m, _ in ms], number.base):
            addresses.setdefault(address.street_id, []).append(address)
        rows = {row.id: row for row in streets}
        missing = sorted({m for ms in members.values() for m in first_without(ms, addresses)} - rows.keys())
        rows |= {row.id: row for row in self.reader.names_by_ids(missing, None)} if missing else {}
        return Streets(members, addresses, rows)

    def group_members(self, streets: list[NameRow], country: str | None) -> dict[int, list[Member]]:
        """(id, importance) of the streets of each candidate's group (`store`), most important
        first: they share its score, and the house number may be on any of them. The first
        GROUP_ADDRESS_ROWS only, so that a street name that many copies of a town repeat is not
        looked up in each."""
        if not self.reader.grouped:
            return {row.id: [(row.id, row.importance)] for row in streets}
        found: dict[int, list[Member]] = {}
        for member, group, importance in self.reader.group_member_ids(
            sorted({row.group_id for row in streets}), country, GROUP_ADDRESS_ROWS
        ):
            found.setdefault(group, []).append((member, importance))
        return {row.id: found.get(row.group_id, [(row.id, row.importance)]) for row in streets}

    def postcode_areas(self, postcode: str, country: str | None) -> list[PostcodeArea]:
        """The postcode's areas, the town most of its objects name first."""
        return self.reader.postcode_areas(self.lexicon.postcodes.get(postcode, postcode), country)

    def of_kind(self, kind: KindWords, country: str | None, near: LatLon | None) -> KindFound | None:
        """The POIs of the kind: in the place the other words name (measured from its centre),
        near the point (within KIND_DISTANCE_M), or anywhere. None when the other words name
        no place exactly and no POI of the kind is in a town so named: then they are a name
        ("Hotel Adler", "Am Markt")."""
        pois = self.reader.pois_of(kind.categories, country)
        if kind.rest:
            # The place as named exactly: "am heidelberg" (the street Am Markt's words) is none.
            centre = self.place_centre(kind.rest, country)
            pois = [p for p in pois if self.lexicon.city_key(p.city) == kind.rest]
            if centre is None and not pois:
                return None
            near = near or centre
        if near is None:  # the kind alone: its POIs, most important first
            return KindFound(kind, [(p, None) for p in pois])
        measured = [(p, haversine_m(near, LatLon(p.lat, p.lon))) for p in pois]
        return KindFound(kind, [(p, metres) for p, metres in measured if kind.rest or metres <= KIND_DISTANCE_M])

    def place_centre(self, words: str, country: str | None) -> LatLon | None:
        """The point of the most important place named exactly so (its centre), if any."""
        places = [r for r in self.reader.names_with_keys([words], country) if r.kind == "place"]
        best = max(places, key=lambda r: r.importance, default=None)
        return None if best is None else LatLon(best.lat, best.lon)


def first_without(members: list[Member], addresses: dict[int, list[Address]]) -> list[int]:
    """The first street of a group without an address of the number (answered as the street)."""
    return next(([member] for member, _ in members if member not in addresses), [])
