"""Free text → ranked results: candidate names from the FTS5 trigram index, scored with rapidfuzz.

1. The query is parsed into words, a house number and a postcode (parser.py).
2. Candidates: names sharing trigrams with the words (bm25 order), the most common trigrams
   ("str", "ass") left out because they select everything.
3. Every contiguous run of words is tried as the name (whole, as the start of a longer name,
   or as whole words inside one); the words left over should be the city. Name similarity
   times city agreement picks the best split for each candidate. A candidate that leaves a
   word of its own unexplained, or lacks a word of the name asked, is no answer: the text
   names something else (COMMON_WORD_SHARE).
4. A street candidate with a house number asked becomes its address (exact number, then
   the same number with another suffix); without one it stays a street, with a lower score.
   Places and POIs compete on their names. Postcode agreement adjusts every score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np
from rapidfuzz import fuzz, process

from common.geo import METRES_PER_DEGREE, LatLon, haversine_m
from geo_service.countries import country_of_name
from geo_service.formatter import label
from geo_service.kinds import KindWords, kind_vocabulary
from geo_service.model import GeocodeAnswer, GeocodeQuery, GeocodeResult, Note, ResultAddress, ReverseQuery
from geo_service.normalize import Normalizer, compact
from geo_service.notes import EmptyAnswerNotes
from geo_service.parser import HouseNumber, ParsedQuery, parse_query, parse_structured
from geo_service.records import Address
from geo_service.store import IndexReader, NameRow, PostcodeArea

CANDIDATES = 60
CANDIDATE_MEMO = 4096  # distinct (words, country): a few MB
# House numbers are looked up on this many streets of a group (names alike in every text, see
# `store`): the largest street group in the five shared extracts' index has 4 (Grasweg,
# Heidelberg: one street in 4 pieces), so no answer there changes; 10 copies of Heidelberg hold
# groups of up to 32 streets.
GROUP_ADDRESS_ROWS = 4
# A typo leaves only the name's common trigrams ("enw", "weg" of Erlenweg): more names share them.
TYPO_CANDIDATES = 150
MAX_WORDS = 10
MAX_SPAN_WORDS = 6
MAX_TRIGRAMS = 48
# A typo in a short name ("Tafl" for "Tal") leaves no trigram in common: such names are
# compared with every short query word directly (they are few).
SHORT_NAME = 6
SHORT_NAME_SIMILARITY = 75
COMMON_TRIGRAM_SHARE = 0.2  # trigrams in more names than this select too much to help
RARE_TRIGRAMS_PER_WORD = 3
RARE_TRIGRAM_SHARE = 1 / 3
# A candidate this good (name similarity times city agreement: the words it leaves unexplained
# count against it, so the town alone is not enough) ends the search after the rare trigrams.
CONFIDENT_MATCH = 0.9
MIN_NAME_SIMILARITY = 0.78
# A name asked a letter off (not a prefix or a part) with neither a house number nor a postcode
# is only answered from this score (name similarity times city agreement): nothing else in the
# text vouches for it, and a name of another map one letter off a name here ("Fonum" for Forum,
# "Rheinstraße" for Weinstraße, "Cafe Artisan" for Cafe Aran) reads the same. Measured with
# bench/geocoder_places.py (names of the other extracts, per map and on the merged map "all"):
# 0.8 left 2.5 % answered on Munich and 4.5 % on "all", 0.85 2.0 % and 3.5 %; the cost is typos
# of a name asked alone (a POI's or place's name of those cases with bench/geocoder.py's one
# typo, 646 asked): 95.4 % found with no such floor, 94.0 % at 0.8, 87.3 % at 0.85. Addresses keep
# theirs: bench/geocoder.py's typo cases carry a number (1114/1126 found either way).
ALONE_TYPO_SCORE = 0.85
# A run of words that starts a longer name ("Sendlinger" of "Sendlinger Straße") counts as at
# least this similar, more the more of the name it covers.
PREFIX_SIMILARITY = 0.8
# The run must end where a word of the name ends, and hold MIN_PART_CHARS letters like a part:
# "Friedl" is no prefix of "Friedlandweg", "Kitch" none of "Kitcho", "Hola" none of "Hola
# Andorra …". Measured with bench/geocoder_places.py: at a word's end, names not on the map
# answered on Heidelberg 3.0 -> 1.5 %, Munich 5.0 -> 4.5 %, and its parts of names found 89.2 ->
# 94.6 % on Heidelberg, 90.5 -> 92.1 % on "all"; from 6 letters rather than 4 (with the rules
# below), Munich 2.5 -> 2.0 %, Andorra 1.5 -> 1.0 %, "all" 4.5 -> 3.5 %. No other row and no
# address case changed (bench/geocoder.py in process, 7462/7477 either way).
MIN_PREFIX_CHARS = 6
# So do whole words inside a longer name ("Tuomiokirkko" of "Helsingin tuomiokirkko", issue 34,
# item 3), from this many letters: bench/geocoder_places.py, docs/decisions.md.
MIN_PART_CHARS = 6
# Below this a result is more likely wrong than right: answer nothing. Measured (bench/geocoder.py,
# five extracts in one index): no correct top answer scored under 0.6, and nonsense such as
# "jukexegasse 41, rituna" (two letters off Junkergasse, town unknown) scored 0.51.
MIN_SCORE = 0.6
CITY_MATCH = 0.85
# Score factors: an exact address beats a near one beats the street beats the town.
ADDRESS_EXACT = 1.0
ADDRESS_OTHER_SUFFIX = 0.9
STREET_WITHOUT_NUMBER = 0.95
STREET_NUMBER_UNKNOWN = 0.75
# A place named as asked wins over a POI of the same name ("Helsinki", the city, not the railway
# station called so): bench/geocoder_places.py's place names went 71-95 % -> 98-100 % with 0.94
# for 0.92, one POI of 495 lost to its town's place (docs/decisions.md).
PLACE_ALONE = 0.94
PLACE_WITH_NUMBER = 0.6
POI_ALONE = 0.93
POI_WITH_OTHER_NUMBER = 0.6
# A POI of the kind asked ("Apotheke Heidelberg"): below every name matched exactly (a place
# asked without a city: PLACE_ALONE * NO_CITY_GIVEN = 0.892, "Centrum" in Helsinki), nearer ones
# first (up to 5 % less over 10 km). In a kind query other names count only from NAMED_AS_ASKED.
KIND_MATCH = 0.88
KIND_DISTANCE_SHARE = 0.05
NAMED_AS_ASKED = 0.89
# A POI of the kind asked whose name holds the kind's word ("Löwen-Apotheke" for "Apotheke"): the
# first of its kind, still below names matched exactly. bench/geocoder_places.py, parts of a name
# that are also a kind's word ("Optikko", "Kukkakauppa", "Perruqueria"): see docs/decisions.md.
KIND_NAMED = 0.885
# One of another kind after every POI of the kind (kind_score's least is 0.836).
OTHER_KIND_NAMED = 0.83
KIND_DISTANCE_M = 10_000.0
NO_CITY_GIVEN = 0.97
# A name that is the whole text, exactly (no number, no postcode beside it), outranks a reading that
# splits the text into a name and its town: "Monaco-Monte-Carlo" is the station so named, not the
# district Monte-Carlo in Monaco. In place of NO_CITY_GIVEN: a POI so named then outranks a street
# with its town (0.93 * 1.03 > 0.95), and places, streets and POIs so named keep their order.
# bench/geocoder_places.py and the address benchmark: see docs/decisions.md.
WHOLE_TEXT_NAME = 1.03
# Words that are neither the name nor the city cost up to half the score, by their share of the text.
UNEXPLAINED_WEIGHT = 0.5
# A word left over that is neither the candidate's name nor its city, and says something of its
# own (not a kind the candidate is of, a street type's or a place's word, a common short word
# such as "du", "am": COMMON_WORD_SHARE), means the text names something else: "Hotel Eureka"
# is not "Hotel Opera", "Liebig-Apotheke" not "Apothekergasse" (issue 34, item 4). Such a
# candidate is no answer, and so is one missing a word of the name asked. Measured with
# bench/geocoder_places.py (names of the other extracts asked of each map) and the address
# benchmark (bench/geocoder.py), see docs/decisions.md.
# A short word in this share of the map's names is an article or a common word of names ("de"
# 7.8 %, "am" 1.5 %, "bar" 1.0 %, "der" 0.9 % on the five extracts as one index), not a name of its
# own; "tor" (0.13 %) is: "Brandenburger Tor" is not "Brandenburger Straße".
COMMON_WORD_SHARE = 0.004
COMMON_WORD_LETTERS = 4
# A word left over (neither the name nor the town) is held against the candidate even when common
# ("la", "bar", "fm" of "Spirit FM", "id" of "ID Lounge"): a common word inside the name asked
# may be a typo of the name's (SHORT_TYPO_SIMILARITY), one left out of it says something else
# ("La Terrasse" is not Nepomuk-Terrasse). Only a street type's and a place's words say nothing.
# bench/geocoder_places.py, names not on the map: "all" 5.5 -> 4.5 % (with ALONE_TYPO_SCORE at
# 0.8); no other row and no address case changed. From 2 letters: "l'" and "'s" are left alone.
LEFTOVER_WORD_LETTERS = 2
CITY_WORD_SIMILARITY = 85
# A word of the name asked may carry a typo: one letter off a 4-letter word is 75 alike. A
# 3-letter word one letter off a common word ("dhl" for "del", "nde" for "de" in the address
# benchmark's typos) is only 67 alike to its name, so such a word passes as that common word.
SPAN_WORD_SIMILARITY = 70
SPAN_WORD_LETTERS = 3
SHORT_TYPO_SIMILARITY = 66
LEFTOVER_IN_NAME = 80
POSTCODE_MISMATCH = 0.85
POSTCODE_UNKNOWN = 0.95
REVERSE_RADII_M = (60.0, 250.0, 1000.0, 5000.0)


@dataclass(frozen=True)
class Reading:
    """One way to read the query's words: which are the name and city, which country filters."""

    words: list[str]
    country: str | None
    # read as written though they name a country: a result's name or town must hold these words
    country_words: str = ""

    def explained_by(self, key_of_name: str, key_of_town: str) -> bool:
        needle = f" {self.country_words} "
        return needle in f" {key_of_name} " or needle in f" {key_of_town} "


Member = tuple[int, float]  # a street of a candidate's group: (name id, importance)


@dataclass(frozen=True)
class KindAsked:
    """A query read as a kind of place, and the POIs found of it."""

    words: KindWords
    results: list[tuple[GeocodeResult, float]]

    def is_of_kind(self, result: GeocodeResult) -> bool:
        return result.type == "poi" and result.category in self.words.categories

    def note(self, coverage: str) -> Note:
        where = f" in {self.words.rest}" if self.words.rest else " near the point"
        kinds = ", ".join(sorted(self.words.categories))
        return Note("KIND_NOT_FOUND", f"the loaded map has no {self.words.kind!r} ({kinds}){where}{coverage}")


@dataclass(frozen=True)
class Candidate:
    row: NameRow
    similarity: float  # of the name, 0..1
    city_factor: float
    # a word left over that neither its name nor its town explains (COMMON_WORD_SHARE): no answer,
    # but a town asked with a street the map lacks ("Gibtesnichtweg 5, München") stays the
    # fallback at PLACE_WITH_NUMBER, which says no more than that the town was found
    names_else: bool = False
    # the name asked is a letter or more off the candidate's, not its prefix or a part (ALONE_TYPO_SCORE)
    typo: bool = False
    # its name is every word, exactly (WHOLE_TEXT_NAME)
    whole_text: bool = False


def trigrams(word: str) -> set[str]:
    return {word[i : i + 3] for i in range(len(word) - 2)}


def or_query(grams: Sequence[str]) -> str | None:
    return " OR ".join('"' + g.replace('"', '""') + '"' for g in grams) if grams else None


def spans(words: Sequence[str]) -> list[tuple[int, int]]:
    n = len(words)
    return [(i, j) for i in range(n) for j in range(i + 1, min(n, i + MAX_SPAN_WORDS) + 1)]


class Matcher:
    def __init__(self, reader: IndexReader) -> None:
        self.reader = reader
        meta = reader.meta
        self.normalizer = Normalizer(meta.get("vocabulary", []))
        self.postcodes = {str(p).lower(): str(p) for p in meta.get("postcodes", [])}
        self.notes = EmptyAnswerNotes(reader, self.normalizer)
        self.trigram_counts = reader.trigram_document_counts()
        total = sum(meta.get("counts", {}).get(k, 0) for k in ("streets", "places", "pois")) or 1
        self.common_trigrams = frozenset(t for t, c in self.trigram_counts.items() if c > COMMON_TRIGRAM_SHARE * total)
        self._city_keys: dict[str, str] = {}
        self.short_keys = reader.short_keys(SHORT_NAME)
        # an index written before name_keys existed ranks name rows (as every index did before)
        self.rank_keys = reader.has_table("name_keys_fts")
        # Address lists name the same streets again and again with other numbers: the names a
        # street's words find do not depend on the number, so they are found once per matcher
        # (bench/geocoder_batch.py: 80 % of a lookup's time is in finding them).
        self.candidates = lru_cache(maxsize=CANDIDATE_MEMO)(self.find_candidates)
        self.kinds = kind_vocabulary(tuple(sorted(self.normalizer.expansions.items())))
        # words that say no name of their own: a street type's, a place's (a district asked with
        # its town); a kind's word says one unless the candidate is of that kind
        street_words = {w for v in self.normalizer.expansions.values() for w in self.normalizer.words(v)}
        common = {w for w, share in reader.short_word_shares(COMMON_WORD_LETTERS).items() if share >= COMMON_WORD_SHARE}
        places = {w for key in self.notes.place_keys for w in key.split()}
        self.generic_words = frozenset(street_words | places | common)
        self.street_words = frozenset(street_words)
        self.place_key_set = frozenset(self.notes.place_keys)
        self.common_words = sorted(common)
        self.own_words = lru_cache(maxsize=CANDIDATE_MEMO)(self.find_own_words)
        self.leftover_words = lru_cache(maxsize=CANDIDATE_MEMO)(self.find_leftover_words)
        self.words_found = lru_cache(maxsize=CANDIDATE_MEMO * 4)(self.every_word_found)

    # ------------------------------------------------------------ forward

    def geocode(self, query: GeocodeQuery) -> GeocodeAnswer:
        text, near = near_point(query.text)
        parsed = self.parse(replace(query, text=text))
        results, named_country = self.search(parsed, query.country)
        kind = self.kind_asked(parsed, query.country, near)
        # Another number as the house number ("Avenue du 3 Septembre 126"), only when the first
        # reading found nothing convincing: most texts have one number.
        for alternative in parsed.alternatives:
            if any(result.score >= CONFIDENT_MATCH for result, _ in results):
                break
            results += self.search(alternative, query.country)[0]
        if kind:
            results = self.with_kind(kind, results, alone=not kind.words.rest and near is None)
        ranked = rank(results, query.limit)
        if kind and not ranked:
            return GeocodeAnswer([], (kind.note(self.notes.coverage()),))
        if not ranked:
            return GeocodeAnswer(ranked, self.notes.why_empty(query, parsed, named_country))
        return GeocodeAnswer(ranked, number_not_found(parsed, ranked[0]))

    def with_kind(
        self, kind: KindAsked, results: list[tuple[GeocodeResult, float]], alone: bool
    ) -> list[tuple[GeocodeResult, float]]:
        """Places of the kind, and names matched as asked ("Marktplatz Heidelberg", the square;
        "Centrum", a Helsinki district), not a name that merely resembles the kind's word
        ("Apothekergasse" for "Apotheke Heidelberg"). The kind `alone` (no town, no point: its
        POIs in no order of place) is also a name's part: a POI of the kind whose name holds the
        kind's word comes first (KIND_NAMED: "Optikko" is the optician "Optikko Kaisla"), and one
        of another kind after the kind's (OTHER_KIND_NAMED), so it is the answer where the map
        has none of the kind ("Pastissería": the bar "Granja Pastissería Xocolatí")."""
        kept = []
        for result, importance in results:
            holds = alone and self.holds_kind_word(kind, result)
            if holds and self.of_kind_there(kind, result):
                kept.append((replace(result, score=max(result.score, KIND_NAMED)), importance))
            elif result.score >= NAMED_AS_ASKED or self.of_kind_there(kind, result):
                kept.append((result, importance))
            elif holds:
                kept.append((replace(result, score=min(result.score, OTHER_KIND_NAMED)), importance))
        return kept + kind.results

    def holds_kind_word(self, kind: KindAsked, result: GeocodeResult) -> bool:
        return bool(result.name) and f" {kind.words.kind} " in f" {self.result_key(result)} "

    def result_key(self, result: GeocodeResult) -> str:
        """The normalized name a result was found by (a street's, for an address)."""
        return self.normalizer.key(result.name or result.address.street or "")

    def of_kind_there(self, kind: KindAsked, result: GeocodeResult) -> bool:
        """A name's result of the kind asked, in the place asked if one was ("Apotheke Heidelberg"
        is no Bio-Apotheke in Munich, whose name holds the word)."""
        return kind.is_of_kind(result) and (not kind.words.rest or self.city_key(result.address.city) == kind.words.rest)

    def search(self, parsed: ParsedQuery, country: str | None) -> tuple[list[tuple[GeocodeResult, float]], str | None]:
        """Results of one parse, and the country the text ends with (if any)."""
        readings, named_country = self.readings(list(parsed.words[:MAX_WORDS]), country)
        results: list[tuple[GeocodeResult, float]] = []
        for reading in readings:
            if reading.words:
                found = self.results(self.candidates(tuple(reading.words), reading.country), parsed, reading.country)
                if reading.country_words:  # only this reading normalizes its results' names again
                    found = [(r, w) for r, w in found if reading.explained_by(self.result_key(r), self.city_key(r.address.city))]
                results += found
                if parsed.postcode and parsed.house_number is None:
                    results += self.postcode_of_city(parsed, reading)
                elif parsed.house_number and not parsed.postcode and parsed.house_number.text in self.postcodes:
                    # "500 Santa Coloma": a number that is a known postcode, beside a town its objects name
                    results += self.postcode_of_city(replace(parsed, postcode=parsed.house_number.text), reading)
            elif parsed.postcode:
                results += self.postcode_only(parsed, reading.country)
        return results, named_country

    def parse(self, query: GeocodeQuery) -> ParsedQuery:
        if query.structured is not None:
            return self.in_local_names(parse_structured(query.structured, self.normalizer))
        return self.in_local_names(parse_query(query.text, self.normalizer, self.postcodes.keys()))

    @cached_property
    def local_names(self) -> dict[str, str]:
        """A street's or place's other names (name:<lang>, alt_name …) → its local name, as
        normalized keys: "mannerheimvagen" → "mannerheimintie" (the index's translations table).
        A POI's other names are names of their own in the index ("Heidelberg Hbf")."""
        table = {}
        for other, local in (self.reader.translations("street:") | self.reader.translations("place:")).items():
            key, local_key = self.normalizer.key(other), self.normalizer.key(local)
            if key and local_key and key != local_key and len(key.split()) <= MAX_OTHER_NAME_WORDS:
                table[key] = local_key
        return {key: local for key, local in table.items() if self.names_a_street_or_place(local)}

    def names_a_street_or_place(self, key: str) -> bool:
        """Whether a street or place of the map is named so (a bus stop named in Swedish is not)."""
        return any(row.kind != "poi" for row in self.reader.names_with_keys([key], None))

    def in_local_names(self, parsed: ParsedQuery) -> ParsedQuery:
        """Another reading of words that name a street or place in another of its languages:
        its local name ("Mannerheimvägen 10 Helsingfors" as Mannerheimintie 10 Helsinki:
        addresses are keyed by the local names), unless a street or place of the map is named so
        itself. An alternative, searched when the text as written finds nothing convincing
        ("McDonalds Stachus" is a POI's name, Stachus Karlsplatz's other name)."""
        words, table = list(parsed.words), self.local_names
        if not table:
            return parsed
        out, at = [], 0
        while at < len(words):
            for size in range(min(MAX_OTHER_NAME_WORDS, len(words) - at), 0, -1):
                run = " ".join(words[at : at + size])
                local = table.get(run)
                if local is not None and not self.names_a_street_or_place(run):
                    out += local.split()
                    at += size
                    break
            else:
                out.append(words[at])
                at += 1
        if out == words:
            return parsed
        return replace(parsed, alternatives=(*parsed.alternatives, replace(parsed, words=tuple(out), alternatives=())))

    def readings(self, words: list[str], asked: str | None) -> tuple[list[Reading], str | None]:
        """A country named at the end of the text ("…, Finland") filters like `country`. The
        words are read as written too, and the better answer wins: they may name a place of the
        map (Monaco, Luxembourg, "Andorra" for Andorra la Vella, San Marino) or end a name
        ("Embajada de España", an embassy in Andorra). Read so, a result's name or town holds
        the country's words ("Marienplatz 8, München, France" is not München's square)."""
        for size in (2, 1):
            if len(words) > size and (named := country_of_name(country_words := " ".join(words[-size:]))):
                as_filter = [] if asked and asked != named else [Reading(words[:-size], named)]
                return [*as_filter, Reading(words, asked, country_words)], named
        return [Reading(words, asked)], None

    def fts_query(self, words: Sequence[str]) -> str | None:
        """Every trigram of the words but the most common: finds names despite a typo."""
        grams: set[str] = set()
        for word in words:
            grams |= trigrams(word)
        useful = grams - self.common_trigrams
        return or_query(sorted(useful if len(useful) >= 3 else grams)[:MAX_TRIGRAMS])

    def selective_fts_query(self, words: Sequence[str]) -> str | None:
        """The rarest third (at least RARE_TRIGRAMS_PER_WORD) of each word's trigrams: every word
        has its say, and rare trigrams have short posting lists, so the search reads little."""
        chosen: set[str] = set()
        for word in words:
            grams = sorted(trigrams(word), key=lambda g: (self.trigram_counts.get(g, 0), g))
            chosen.update(grams[: max(RARE_TRIGRAMS_PER_WORD, math.ceil(len(grams) * RARE_TRIGRAM_SHARE))])
        return or_query(sorted(chosen))

    def kind_asked(self, parsed: ParsedQuery, country: str | None, near: LatLon | None) -> KindAsked | None:
        """"Apotheke Heidelberg", "pharmacy near 49.41,8.69", "pharmacie": the POIs of the kind the
        words name, in the place the other words name (nearest its centre first), near the point
        (within KIND_DISTANCE_M), or anywhere (a preset's name only, not a search term alone). None when the words are no kind, or other words are
        left that name no place exactly: then they are a name ("Hotel Adler", "Am Markt")."""
        found = self.kinds.find(parsed.words) if self.kinds.available and parsed.house_number is None else None
        if found is None or (not found.preset_name and not found.rest and near is None):
            # A search term alone is no kind: iD's terms hold brands ("KappAhl", "Cubus" for a
            # clothes shop in Finnish) that are names elsewhere (bench geocoder_places)
            return None
        pois = self.reader.pois_of(found.categories, country)
        if found.rest:
            # The place as named exactly: "am heidelberg" (the street Am Markt's words) is none.
            centre = self.place_centre(found.rest, country)
            pois = [p for p in pois if self.city_key(p.city) == found.rest]
            if centre is None and not pois:
                return None
            near = near or centre
        if near is None:  # the kind alone: its POIs, most important first
            return KindAsked(found, [(self.name_result(p, "poi", KIND_MATCH), p.importance) for p in pois])
        measured = [(p, haversine_m(near, LatLon(p.lat, p.lon))) for p in pois]
        results = [(self.name_result(p, "poi", kind_score(metres)), p.importance) for p, metres in measured
                   if found.rest or metres <= KIND_DISTANCE_M]  # fmt: skip
        return KindAsked(found, results)

    def place_centre(self, words: str, country: str | None) -> LatLon | None:
        """The point of the most important place named exactly so (its centre), if any."""
        places = [r for r in self.reader.names_with_keys([words], country) if r.kind == "place"]
        best = max(places, key=lambda r: r.importance, default=None)
        return None if best is None else LatLon(best.lat, best.lon)

    def exact_rows(self, words: list[str], span_texts: list[str], country: str | None) -> list[NameRow]:
        """Every name that is exactly a run of the words, and short names near a short word."""
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
        short_words = [w for w in words if 3 <= len(w) <= SHORT_NAME + 1]
        if not short_words or not self.short_keys:
            return set()
        scores = process.cdist(short_words, self.short_keys, scorer=fuzz.ratio, score_cutoff=SHORT_NAME_SIMILARITY)
        return {self.short_keys[int(i)] for i in np.flatnonzero(scores.max(axis=0))}

    def find_candidates(self, words: tuple[str, ...], country: str | None) -> tuple[Candidate, ...]:
        """Names found by the rare trigrams first; only when none of them matches well (a typo in
        a rare trigram, most often) by every trigram. Measured on the shared extracts in one
        index (bench/geocoder.py): the first search alone takes a third of the time."""
        listed = list(words)
        word_spans = spans(listed)
        span_texts = [" ".join(listed[i:j]) for i, j in word_spans]
        rows = self.exact_rows(listed, span_texts, country)
        rows += self.trigram_rows(self.selective_fts_query(listed), country, {r.id for r in rows}, CANDIDATES)
        found = self.score(listed, word_spans, span_texts, rows)
        if not any(c.similarity * c.city_factor >= CONFIDENT_MATCH and not c.names_else for c in found):
            more = self.trigram_rows(self.fts_query(listed), country, {r.id for r in rows}, TYPO_CANDIDATES)
            found += self.score(listed, word_spans, span_texts, more)
        return tuple(found)

    def score(
        self, words: list[str], word_spans: list[tuple[int, int]], span_texts: list[str], rows: list[NameRow]
    ) -> list[Candidate]:
        if not rows:
            return []
        similarity, typo = self.name_similarity(span_texts, [r.key for r in rows])
        leftovers = [" ".join(words[:i] + words[j:]) for i, j in word_spans]
        city_factors, named_else = self.city_factors(leftovers, rows, sum(len(w) for w in words))
        combined = similarity * city_factors
        # The best reading that explains every word left over, if one is similar enough; else the
        # best (a town beside a street the map lacks stays the fallback): "Avinguda del Fenre …
        # Andorra la Vella" is the street's whole name and its town, not "Avinguda" and four
        # words more.
        explained = ~named_else & (similarity >= MIN_NAME_SIMILARITY)
        best = np.where(explained, combined + 2.0, combined).argmax(axis=0)
        whole = (0, len(words))
        found = []
        for c, row in enumerate(rows):
            s = int(best[c])
            if similarity[s, c] >= MIN_NAME_SIMILARITY and (similarity[s, c] >= 1.0 or self.words_found(span_texts[s], row.key)):
                found.append(Candidate(row, float(similarity[s, c]), float(city_factors[s, c]), bool(named_else[s, c]),
                                       bool(typo[s, c]), word_spans[s] == whole and similarity[s, c] >= 1.0))  # fmt: skip
        return found

    def every_word_found(self, span: str, key: str) -> bool:
        """Whether each word of a name asked that says something of its own is in the candidate's
        name, give or take a typo: "hotel eureka" is not "hotel opera" (0.78 alike as a whole)."""
        name = compact(key)
        return all(
            fuzz.partial_ratio(word, name) >= SPAN_WORD_SIMILARITY
            or (len(word) <= SPAN_WORD_LETTERS and process.extractOne(word, self.common_words, scorer=fuzz.ratio,
                                                                      score_cutoff=SHORT_TYPO_SIMILARITY))
            for word in self.own_words(span)
        )  # fmt: skip

    @staticmethod
    def name_similarity(span_texts: list[str], keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(spans, candidates) in 0..1: rapidfuzz ratio, with and without spaces, or the prefix
        and whole-word-part rules; and where the ratio alone says it and is below 1 (a typo)."""
        compact_spans = [compact(s) for s in span_texts]
        compact_keys = [compact(k) for k in keys]
        similarity = (
            np.maximum(
                process.cdist(span_texts, keys, scorer=fuzz.ratio, workers=1),
                process.cdist(compact_spans, compact_keys, scorer=fuzz.ratio, workers=1),
            )
            / 100.0
        )
        by_ratio = similarity.copy()
        for s, span in enumerate(compact_spans):
            if len(span) < MIN_PREFIX_CHARS:
                continue
            starts = span_texts[s] + " "  # at the end of a word of the name (MIN_PREFIX_CHARS)
            for c in [c for c, key in enumerate(keys) if key.startswith(starts)]:
                prefix = PREFIX_SIMILARITY + (1 - PREFIX_SIMILARITY) * len(span) / len(compact_keys[c])
                similarity[s, c] = max(similarity[s, c], prefix)
        spaced = [f" {key} " for key in keys]
        for s, span in enumerate(span_texts):
            if len(compact_spans[s]) < MIN_PART_CHARS:
                continue
            needle = f" {span} "
            for c in [c for c, key in enumerate(spaced) if needle in key and key != needle]:
                part = PREFIX_SIMILARITY + (1 - PREFIX_SIMILARITY) * len(compact_spans[s]) / len(compact_keys[c])
                similarity[s, c] = max(similarity[s, c], part)
        return similarity, (similarity == by_ratio) & (similarity < 1.0)

    def city_key(self, city: str | None) -> str:
        if not city:
            return ""
        key = self._city_keys.get(city)
        if key is None:
            key = self._city_keys[city] = self.normalizer.key(city)
        return key

    def city_factors(self, leftovers: list[str], rows: list[NameRow], text_length: int) -> tuple[np.ndarray, np.ndarray]:
        """(spans, candidates): 1 when the words outside the name are the candidate's city, less the more
        text they leave unexplained; and whether they hold a word of their own that the candidate
        does not explain (COMMON_WORD_SHARE)."""
        cities = sorted({self.city_key(r.city) for r in rows})
        present = [x for x in leftovers if x]
        factors = np.full((len(leftovers), len(rows)), NO_CITY_GIVEN)
        named_else = np.zeros((len(leftovers), len(rows)), dtype=bool)
        if not present:
            return factors, named_else
        # token_set_ratio says whether the city is among the words; token_sort_ratio how much of
        # the words it is, so "del fener andorra la vella" is not taken for "Andorra la Vella" alone.
        contains = process.cdist(present, cities, scorer=fuzz.token_set_ratio, workers=1) / 100.0
        covers = process.cdist(present, cities, scorer=fuzz.token_sort_ratio, workers=1) / 100.0
        row_of = {text: i for i, text in enumerate(present)}
        column_of = {city: i for i, city in enumerate(cities)}
        city_columns = np.array([column_of[self.city_key(r.city)] for r in rows])
        for s, text in enumerate(leftovers):
            if text:
                row = row_of[text]
                unexplained = 1.0 - UNEXPLAINED_WEIGHT * min(1.0, len(text.replace(" ", "")) / max(1, text_length))
                with_city = np.maximum(unexplained, 1.0 - UNEXPLAINED_WEIGHT * (1.0 - covers[row, city_columns]))
                factors[s] = np.where(contains[row, city_columns] >= CITY_MATCH, with_city, unexplained)
                # a word of its own left unexplained: not this candidate (COMMON_WORD_SHARE)
                own = self.leftover_words(text)
                if own:  # most leftovers are a town's words: nothing to explain
                    named_else[s] = [self.names_else(own, r, contains[row, city_columns[c]] >= CITY_MATCH)
                                     for c, r in enumerate(rows)]  # fmt: skip
        return factors, named_else

    def find_own_words(self, text: str) -> tuple[str, ...]:
        """The words of `text` that say something of their own (COMMON_WORD_SHARE)."""
        # only words of letters: "0ad" of a postcode written "0AD 200", "4-6", "3a" are numbers
        return tuple(w for w in text.split() if len(w) > 2 and w.isalpha() and w not in self.generic_words)

    def find_leftover_words(self, text: str) -> tuple[str, ...]:
        """The words of `text`, left over beside a name, that its candidate must explain
        (LEFTOVER_WORD_LETTERS): common words too, not a street type's, nor those of a place
        named whole ("la massana", a district asked with its town). A word of a place's name
        alone says something: "la" of "La Terrasse" is no place (bench/geocoder_places.py)."""
        words = text.split()
        in_places = self.words_of_places_named(words)
        return tuple(w for i, w in enumerate(words)
                     if len(w) >= LEFTOVER_WORD_LETTERS and w.isalpha() and w not in self.street_words
                     and i not in in_places)  # fmt: skip

    def words_of_places_named(self, words: list[str]) -> set[int]:
        """The positions of the words that are a place's whole name, in runs of up to MAX_SPAN_WORDS."""
        found: set[int] = set()
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + MAX_SPAN_WORDS) + 1):
                if " ".join(words[i:j]) in self.place_key_set:
                    found.update(range(i, j))
        return found

    def names_else(self, words: tuple[str, ...], row: NameRow, city_given: bool) -> bool:
        """Whether a word left over is not explained by the candidate: by its city's words (when
        the leftover names the city), its own name (a name longer than MAX_SPAN_WORDS), or the
        kind a POI is of ("Hotel" of the hotel "Adler")."""
        city_words = self.city_key(row.city).split() if city_given else []
        name = compact(row.key)
        for word in words:
            if row.kind == "poi" and row.category in self.kinds.kinds.get(word, ()):
                continue
            if fuzz.partial_ratio(word, name) >= LEFTOVER_IN_NAME:
                continue
            if city_words and process.extractOne(word, city_words, scorer=fuzz.ratio, score_cutoff=CITY_WORD_SIMILARITY):
                continue
            return True
        return False

    def results(
        self, candidates: Sequence[Candidate], parsed: ParsedQuery, country: str | None
    ) -> list[tuple[GeocodeResult, float]]:
        number = parsed.house_number
        out: list[tuple[GeocodeResult, float]] = []
        streets = [c for c in candidates if c.row.kind == "street"]
        members = self.group_members(streets, country) if number else {}
        addresses = self.addresses_for([m for ms in members.values() for m, _ in ms], number) if number else {}
        alone = number is None and parsed.postcode is None
        for candidate in candidates:
            city_factor = WHOLE_TEXT_NAME if alone and candidate.whole_text else candidate.city_factor
            base = candidate.similarity * city_factor
            row = candidate.row
            if candidate.names_else and (row.kind != "place" or number is None):
                continue  # the text names something else (COMMON_WORD_SHARE)
            if candidate.typo and number is None and parsed.postcode is None and base < ALONE_TYPO_SCORE:
                continue  # a name a letter off, and nothing else asked to vouch for it
            if row.kind == "street":
                group = members.get(row.id, [(row.id, row.importance)])
                out += self.street_results(candidate, base, number, group, addresses, parsed.postcode)
            elif row.kind == "place":
                # With a house number the other words are a street we did not find: the town is
                # the fallback, at a fixed lower score, whatever those words were.
                factor = PLACE_ALONE * city_factor if number is None else PLACE_WITH_NUMBER
                score = candidate.similarity * factor * self.postcode_factor(row, parsed.postcode)
                out.append((self.name_result(row, "place", score), row.importance))
            else:
                factor = POI_ALONE if number is None or same_number(row.house_number, number) else POI_WITH_OTHER_NUMBER
                out.append(
                    (
                        self.name_result(row, "poi", base * factor * self.postcode_factor(row, parsed.postcode)),
                        row.importance,
                    )
                )
        return out

    def group_members(self, streets: list[Candidate], country: str | None) -> dict[int, list[Member]]:
        """(id, importance) of the streets of each candidate's group (`store`), most important
        first: they share its score, and the house number may be on any of them. The first
        GROUP_ADDRESS_ROWS only, so that a street name that many copies of a town repeat is not
        looked up in each."""
        if not streets or not self.reader.grouped:
            return {c.row.id: [(c.row.id, c.row.importance)] for c in streets}
        found: dict[int, list[Member]] = {}
        for member, group, importance in self.reader.group_member_ids(
            sorted({c.row.group_id for c in streets}), country, GROUP_ADDRESS_ROWS
        ):
            found.setdefault(group, []).append((member, importance))
        return {c.row.id: found.get(c.row.group_id, [(c.row.id, c.row.importance)]) for c in streets}

    def addresses_for(self, street_ids: list[int], number: HouseNumber) -> dict[int, list[Address]]:
        found: dict[int, list[Address]] = {}
        if street_ids:
            for address in self.reader.addresses_on(street_ids, number.base):
                found.setdefault(address.street_id, []).append(address)
        return found

    def street_results(
        self,
        candidate: Candidate,
        base: float,
        number: HouseNumber | None,
        members: list[Member],
        addresses: dict[int, list[Address]],
        postcode: str | None,
    ) -> list[tuple[GeocodeResult, float]]:
        """The street's addresses with the number, on each street of its group; the street itself
        when one of them has no such number (the most important one: they read alike)."""
        row = candidate.row
        if number is None:
            return [
                (
                    self.name_result(row, "street", base * STREET_WITHOUT_NUMBER * self.postcode_factor(row, postcode)),
                    row.importance,
                )
            ]
        results = []
        without: int | None = None
        for member, importance in members:
            found = addresses.get(member, [])
            exact = [a for a in found if a.house_key == number.text]
            chosen, factor = (exact, ADDRESS_EXACT) if exact else (found, ADDRESS_OTHER_SUFFIX)
            if not chosen and without is None:
                without = member
            for address in chosen:
                postcode_factor = address_postcode_factor(address, postcode)
                factor_here = factor * (0.99 if address.interpolated else 1.0)
                results.append((address_result(address, base * factor_here * postcode_factor), importance))
        if without is not None:
            street = row if without == row.id else self.reader.names_by_ids([without], None)[0]
            score = base * STREET_NUMBER_UNKNOWN * self.postcode_factor(street, postcode)
            results.append((self.name_result(street, "street", score), street.importance))
        return results

    def postcode_factor(self, row: NameRow, postcode: str | None) -> float:
        if postcode is None:
            return 1.0
        known = {p.lower() for p in row.postcodes} | ({row.postcode.lower()} if row.postcode else set())
        if not known:
            return POSTCODE_UNKNOWN
        return 1.0 if postcode in known else POSTCODE_MISMATCH

    def name_result(self, row: NameRow, kind: str, score: float) -> GeocodeResult:
        if kind == "street":
            address = ResultAddress(street=row.name, postcode=row.postcode, city=row.city, country=row.country)
            return GeocodeResult(row.lat, row.lon, address, "street", score)
        address = ResultAddress(
            street=row.street, house_number=row.house_number, postcode=row.postcode, city=row.city, country=row.country
        )
        name = None if kind == "place" and row.name == row.city else row.name
        return GeocodeResult(row.lat, row.lon, address, kind, score, name=name or row.name, category=row.category)

    def postcode_only(self, parsed: ParsedQuery, country: str | None) -> list[tuple[GeocodeResult, float]]:
        area = self.postcode_area(parsed, country)
        return [] if area is None else [postcode_result(area, PLACE_ALONE)]

    def postcode_of_city(self, parsed: ParsedQuery, reading: Reading) -> list[tuple[GeocodeResult, float]]:
        """"80331 München", "AD300 Llorts": when the words are just a town the postcode's objects
        name, the postcode's area there (above the town itself, which would drop the postcode).
        Words that also name a street are not the town alone (token_sort_ratio), so an address's
        street keeps its rank."""
        assert parsed.postcode is not None
        asked = " ".join(reading.words)
        areas = self.reader.postcode_areas(self.postcodes.get(parsed.postcode, parsed.postcode), reading.country)
        covered = [(fuzz.token_sort_ratio(asked, self.city_key(a.city)) / 100.0, a) for a in areas if a.city]
        covers, area = max(covered, key=lambda pair: pair[0], default=(0.0, None))
        return [postcode_result(area, PLACE_ALONE * covers)] if area is not None and covers >= CITY_MATCH else []

    def postcode_area(self, parsed: ParsedQuery, country: str | None) -> PostcodeArea | None:
        """The postcode's area in the town most of its objects name."""
        assert parsed.postcode is not None
        areas = self.reader.postcode_areas(self.postcodes.get(parsed.postcode, parsed.postcode), country)
        return areas[0] if areas else None

    # ------------------------------------------------------------ reverse

    def reverse(self, query: ReverseQuery) -> GeocodeAnswer:
        """Nearest addresses first, searching ever larger boxes until enough are found. An address
        mapped twice (a node and its building, or two entrances) is answered once, at its nearest."""
        rows: list[Address] = []
        for radius in REVERSE_RADII_M:
            d_lat = radius / METRES_PER_DEGREE
            d_lon = d_lat / max(0.01, math.cos(math.radians(query.lat)))
            rows = self.reader.addresses_near(query.lat, query.lon, d_lat, d_lon, limit=2000)
            if len({address_identity(r) for r in rows}) >= query.limit:
                break
        here = LatLon(query.lat, query.lon)
        measured = sorted(((haversine_m(here, LatLon(r.lat, r.lon)), r) for r in rows), key=lambda p: p[0])
        results: list[GeocodeResult] = []
        seen: set[tuple[str | None, ...]] = set()
        for distance, row in measured:
            if (identity := address_identity(row)) in seen:
                continue
            seen.add(identity)
            result = address_result(row, 1.0 / (1.0 + distance / 100.0))
            results.append(GeocodeResult(**{**result.__dict__, "distance_m": distance}))
            if len(results) == query.limit:
                break
        if results:
            return GeocodeAnswer(results)
        note = f"no address within {REVERSE_RADII_M[-1] / 1000:g} km of the point{self.notes.coverage()}"
        return GeocodeAnswer([], (Note("NO_MATCH", note),))


NEAR = re.compile(r"\s+near\s+(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)\s*$", re.IGNORECASE)


def near_point(text: str) -> tuple[str, LatLon | None]:
    """"pharmacy near 49.41,8.69" → ("pharmacy", the point); other texts unchanged."""
    match = NEAR.search(text)
    if match is None:
        return text, None
    lat, lon = float(match.group(1)), float(match.group(2))
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return text, None
    return text[: match.start()], LatLon(lat, lon)


def postcode_result(area: PostcodeArea, score: float) -> tuple[GeocodeResult, float]:
    """The postcode's area: the centre of its addresses, with the postcode in the answer."""
    address = ResultAddress(postcode=area.postcode, city=area.city, country=area.country)
    return GeocodeResult(area.lat, area.lon, address, "place", score, category="postcode"), 1.0


def kind_score(metres: float) -> float:
    """A POI of the asked kind: KIND_MATCH, less up to KIND_DISTANCE_SHARE with its distance
    (over KIND_DISTANCE_M), so the nearest come first."""
    return KIND_MATCH * (1.0 - KIND_DISTANCE_SHARE * min(1.0, metres / KIND_DISTANCE_M))


def number_not_found(parsed: ParsedQuery, best: GeocodeResult) -> tuple[Note, ...]:
    """A house number asked that no street found holds: said so, beside the street (or the town)
    answered in its place. A POI that carries the number is no such case."""
    number = parsed.house_number
    if number is None or best.type not in ("street", "place"):
        return ()
    where = ", ".join(p for p in (best.address.street, best.address.city) if p)
    if best.type == "street":
        message = f"house number {number.text} was not found on {where}: the street is answered"
    else:
        message = f"no street with house number {number.text} was found: {where or best.name} is answered"
    return (Note("HOUSE_NUMBER_NOT_FOUND", message),)


def address_identity(row: Address) -> tuple[str | None, ...]:
    """What makes two address rows the same address for a reader of the answer."""
    return (row.street, row.house_number, row.postcode, row.city, row.country)


def same_number(tagged: str | None, number: HouseNumber) -> bool:
    return bool(tagged) and tagged.lower().replace(" ", "") == number.text  # type: ignore[union-attr]


def address_postcode_factor(address: Address, postcode: str | None) -> float:
    if postcode is None:
        return 1.0
    if not address.postcode:
        return POSTCODE_UNKNOWN
    return 1.0 if address.postcode.lower() == postcode else POSTCODE_MISMATCH


def address_result(row: Address, score: float) -> GeocodeResult:
    address = ResultAddress(row.street, row.house_number, row.postcode, row.city, row.country)
    return GeocodeResult(row.lat, row.lon, address, "address", score, interpolated=row.interpolated)


# The longest other name read as a local one, in words ("Helsingfors domkyrka" has two).
MAX_OTHER_NAME_WORDS = 4


def rank(results: Iterable[tuple[GeocodeResult, float]], limit: int) -> list[GeocodeResult]:
    """Best score first (importance breaks ties); the same label once, at its best."""
    ordered = sorted((p for p in results if p[0].score >= MIN_SCORE), key=lambda p: (-round(p[0].score, 6), -p[1]))
    seen: set[tuple[str, str]] = set()
    ranked = []
    for result, _ in ordered:
        identity = (result.type, label(result.address, result.name))
        if identity in seen:
            continue
        seen.add(identity)
        ranked.append(GeocodeResult(**{**result.__dict__, "score": min(1.0, max(0.0, result.score))}))
        if len(ranked) == limit:
            break
    return ranked
