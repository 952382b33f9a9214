"""A geocoding query analysed, once, before anything is looked up: its text folded (what the cache
key holds), a point it is asked near, its words, house number and postcode in each way the text
can be read, a country it names at its end, and a kind of place its words name. Reads the
lexicon, never the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from common.geo import LatLon
from geo_service.countries import country_of_name
from geo_service.kinds import KindWords
from geo_service.lexicon import MAX_OTHER_NAME_WORDS, Lexicon
from geo_service.model import GeocodeQuery
from geo_service.normalize import fold, tidy
from geo_service.parser import ParsedQuery, parse_query, parse_structured

MAX_WORDS = 10
NEAR = re.compile(r"\s+near\s+(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)\s*$", re.IGNORECASE)


def folded_text(text: str) -> str:
    """Case, accents and spacing do not change the answer, so they share a cache entry."""
    return tidy(fold(text))


def cache_parts(query: GeocodeQuery) -> tuple[Any, ...]:
    """What of a query decides its answer: its folded text (what `analyse` reads), country, limit."""
    structured = query.structured
    if structured is None:
        return ("text", folded_text(query.text), query.country, query.limit)
    fields = "\x1e".join(p or "" for p in structured.__dict__.values())
    return ("structured", folded_text(fields), query.country, query.limit)


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


@dataclass(frozen=True)
class Parse:
    """The text read one way (which number is the house number, names in their local language),
    and the readings of its words."""

    parsed: ParsedQuery
    readings: list[Reading]
    # a postcode asked beside words that may be its town alone ("80331 München"); a number that
    # is a known postcode when no house number is ("500 Santa Coloma")
    town_postcode: str | None = None


@dataclass(frozen=True)
class Analysis:
    query: GeocodeQuery
    # the text as parsed first, then its other readings, searched while nothing convincing is found
    parses: list[Parse]
    named_country: str | None  # the country the text ends with, if any
    near: LatLon | None  # "… near 49.41,8.69"
    kind: KindWords | None  # the kind of place its words name, if they are read so

    @property
    def parsed(self) -> ParsedQuery:
        return self.parses[0].parsed


def analyse(query: GeocodeQuery, lexicon: Lexicon) -> Analysis:
    if query.structured is not None:
        near, parsed = None, parse_structured(query.structured, lexicon.normalizer)
    else:
        text, near = near_point(folded_text(query.text))
        parsed = parse_query(text, lexicon.normalizer, lexicon.postcodes.keys())
    parsed = in_local_names(parsed, lexicon.local_names)
    first, named_country = readings(list(parsed.words[:MAX_WORDS]), query.country)
    parses = [Parse(parsed, first, town_postcode(parsed, lexicon))]
    for other in parsed.alternatives:
        parses.append(Parse(other, readings(list(other.words[:MAX_WORDS]), query.country)[0], town_postcode(other, lexicon)))
    return Analysis(query, parses, named_country, near, kind_words(parsed, near, lexicon))


def town_postcode(parsed: ParsedQuery, lexicon: Lexicon) -> str | None:
    number = parsed.house_number
    if parsed.postcode and number is None:
        return parsed.postcode
    if number and not parsed.postcode and number.text in lexicon.postcodes:
        return number.text
    return None


def near_point(text: str) -> tuple[str, LatLon | None]:
    """"pharmacy near 49.41,8.69" → ("pharmacy", the point); other texts unchanged."""
    match = NEAR.search(text)
    if match is None:
        return text, None
    lat, lon = float(match.group(1)), float(match.group(2))
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return text, None
    return text[: match.start()], LatLon(lat, lon)


def in_local_names(parsed: ParsedQuery, table: dict[str, str]) -> ParsedQuery:
    """Another reading of words that name a street or place in another of its languages: its
    local name ("Mannerheimvägen 10 Helsingfors" as Mannerheimintie 10 Helsinki: addresses are
    keyed by the local names; `table`: Lexicon.local_names). An alternative, searched when the
    text as written finds nothing convincing ("McDonalds Stachus" is a POI's name, Stachus
    Karlsplatz's other name)."""
    words = list(parsed.words)
    if not table:
        return parsed
    out, at = [], 0
    while at < len(words):
        for size in range(min(MAX_OTHER_NAME_WORDS, len(words) - at), 0, -1):
            local = table.get(" ".join(words[at : at + size]))
            if local is not None:
                out += local.split()
                at += size
                break
        else:
            out.append(words[at])
            at += 1
    if out == words:
        return parsed
    return replace(parsed, alternatives=(*parsed.alternatives, replace(parsed, words=tuple(out), alternatives=())))


def readings(words: list[str], asked: str | None) -> tuple[list[Reading], str | None]:
    """A country named at the end of the text ("…, Finland") filters like `country`. The words
    are read as written too, and the better answer wins: they may name a place of the map
    (Monaco, Luxembourg, "Andorra" for Andorra la Vella, San Marino) or end a name ("Embajada de
    España", an embassy in Andorra). Read so, a result's name or town holds the country's words
    ("Marienplatz 8, München, France" is not München's square)."""
    for size in (2, 1):
        if len(words) > size and (named := country_of_name(country_words := " ".join(words[-size:]))):
            as_filter = [] if asked and asked != named else [Reading(words[:-size], named)]
            return [*as_filter, Reading(words, asked, country_words)], named
    return [Reading(words, asked)], None


def kind_words(parsed: ParsedQuery, near: LatLon | None, lexicon: Lexicon) -> KindWords | None:
    """"Apotheke Heidelberg", "pharmacy near 49.41,8.69", "pharmacie": the words that name a kind
    of place, and the others (a place to look in). None when the words name no kind, or a search
    term alone: iD's terms hold brands ("KappAhl", "Cubus" for a clothes shop in Finnish) that
    are names elsewhere (bench geocoder_places)."""
    kinds = lexicon.kinds
    found = kinds.find(parsed.words) if kinds.available and parsed.house_number is None else None
    if found is None or (not found.preset_name and not found.rest and near is None):
        return None
    return found
