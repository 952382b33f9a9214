"""Why an answer is empty, said in `notes` (issue 10): a filter country without data, a country
the text names against the filter, a town the map does not hold, or a map that covers elsewhere.

Of answers with results, only one that matched less than asked gets a note (a house number not
on the map, `number_not_found`): each result's `matchLevel` says the rest, and guessing
at which words were meant as a town costs time on every query.
"""

from __future__ import annotations

from rapidfuzz import fuzz, process

from geo_service.countries import country_of_name
from geo_service.kinds import KindWords
from geo_service.lexicon import Lexicon
from geo_service.model import GeocodeQuery, GeocodeResult, Note
from geo_service.parser import ParsedQuery

# The same threshold the matcher uses to accept words as a candidate's city.
PLACE_MATCH = 85


class EmptyAnswerNotes:
    def __init__(self, lexicon: Lexicon) -> None:
        self.normalizer = lexicon.normalizer
        self.countries = lexicon.countries
        self.place_keys = lexicon.place_keys

    def why_empty(self, query: GeocodeQuery, parsed: ParsedQuery, named_country: str | None) -> tuple[Note, ...]:
        """`named_country`: the country the text ends with, if any."""
        notes = self.country_notes(query.country, named_country)
        town = self.town_text(query)
        if town and not self.is_known_place(town):
            notes.append(Note("PLACE_NOT_FOUND", f"{town!r} is no city, town or place of the loaded map"))
        if not notes:
            text = query.structured.as_text() if query.structured else query.text
            what = "postcode" if parsed.postcode and not parsed.words else "address"
            notes.append(Note("NO_MATCH", f"no {what} of the loaded map matches {text[:80]!r}{self.coverage()}"))
        return tuple(notes)

    def country_notes(self, asked: str | None, named: str | None) -> list[Note]:
        notes = []
        if asked and named and asked != named:
            notes.append(Note("COUNTRY_CONFLICT", f"the text names {named} but country={asked}"))
        for country in dict.fromkeys(c for c in (asked, named) if c):
            if country not in self.countries:
                notes.append(Note("COUNTRY_NOT_LOADED", f"the loaded map holds no data in {country}{self.coverage()}"))
        return notes

    def coverage(self) -> str:
        return f" (it covers {', '.join(self.countries)})" if self.countries else " (it is empty)"

    def town_text(self, query: GeocodeQuery) -> str | None:
        """The words that name the town: `city=`, or the last comma-separated part of free text
        (a trailing country name and postcode left out). One part alone: the town is unknown."""
        if query.structured is not None:
            return query.structured.city
        parts = [p.strip() for p in query.text.split(",") if p.strip()]
        if parts and country_of_name(" ".join(self.normalizer.words(parts[-1]))):
            parts.pop()
        if len(parts) < 2:
            return None
        words = [w for w in parts[-1].split() if not any(ch.isdigit() for ch in w)]
        return " ".join(words) or None

    def is_known_place(self, town: str) -> bool:
        key = self.normalizer.key(town)
        if not key or not self.place_keys:
            return True
        return process.extractOne(key, self.place_keys, scorer=fuzz.token_set_ratio, score_cutoff=PLACE_MATCH) is not None


def kind_not_found(kind: KindWords, coverage: str) -> Note:
    where = f" in {kind.rest}" if kind.rest else " near the point"
    kinds = ", ".join(sorted(kind.categories))
    return Note("KIND_NOT_FOUND", f"the loaded map has no {kind.kind!r} ({kinds}){where}{coverage}")


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
