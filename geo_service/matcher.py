"""Free text → ranked results, as a pipeline: the query analysed once (`analysis`, reading the
lexicon the index opened with) → candidates found (`candidates`, the only step that reads the
store; names scored by `similarity`) → results scored and ranked (`ranking`) → an empty or
partial answer explained (`notes`). Another reading of the text (another number as the house
number, names in their local language) is searched only while nothing convincing is found.
"""

from __future__ import annotations

from geo_service.analysis import Analysis, Parse, analyse
from geo_service.candidates import CONFIDENT_MATCH, CandidateFinder
from geo_service.lexicon import Lexicon
from geo_service.model import GeocodeAnswer, GeocodeQuery, GeocodeResult, Note, ReverseQuery
from geo_service.notes import EmptyAnswerNotes, kind_not_found, number_not_found
from geo_service.ranking import (
    PLACE_ALONE,
    Scored,
    city_explains,
    postcode_of_city,
    postcode_result,
    rank,
    results,
    with_kind,
)
from geo_service.reverse import reverse
from geo_service.store import IndexReader


class Matcher:
    def __init__(self, reader: IndexReader) -> None:
        self.reader = reader
        self.lexicon = Lexicon(reader)
        self.candidates = CandidateFinder(reader, self.lexicon)
        self.notes = EmptyAnswerNotes(self.lexicon)

    def geocode(self, query: GeocodeQuery) -> GeocodeAnswer:
        analysis = analyse(query, self.lexicon)
        found: list[Scored] = []
        for parse in analysis.parses:
            if any(result.score >= CONFIDENT_MATCH for result, _ in found):
                break
            found += self.search(parse)
        kind = self.candidates.of_kind(analysis.kind, query.country, analysis.near) if analysis.kind else None
        if kind:
            found = with_kind(kind, found, not kind.words.rest and analysis.near is None, self.lexicon)
        ranked = rank(found, query.limit)
        return GeocodeAnswer(ranked, self.explained(analysis, ranked, kind is not None))

    def search(self, parse: Parse) -> list[Scored]:
        """The results of one reading of the text."""
        parsed, found = parse.parsed, []
        for reading in parse.readings:
            if reading.words:
                candidates = self.candidates.names(tuple(reading.words), reading.country)
                streets = self.candidates.streets(candidates, parsed.house_number, reading.country)
                of_reading = results(candidates, parsed, streets)
                if reading.country_words:  # only this reading normalizes its results' names again
                    of_reading = [(r, w) for r, w in of_reading if city_explains(reading, r, self.lexicon)]
                found += of_reading
                if parse.town_postcode:
                    areas = self.candidates.postcode_areas(parse.town_postcode, reading.country)
                    found += postcode_of_city(reading, areas, self.lexicon)
            elif parsed.postcode:
                areas = self.candidates.postcode_areas(parsed.postcode, reading.country)
                found += [postcode_result(areas[0], PLACE_ALONE)] if areas else []
        return found

    def explained(self, analysis: Analysis, ranked: list[GeocodeResult], kind_asked: bool) -> tuple[Note, ...]:
        """Why an answer is empty, or what of the query it lacks."""
        if ranked:
            return number_not_found(analysis.parsed, ranked[0])
        if kind_asked and analysis.kind is not None:
            return (kind_not_found(analysis.kind, self.notes.coverage()),)
        return self.notes.why_empty(analysis.query, analysis.parsed, analysis.named_country)

    def reverse(self, query: ReverseQuery) -> GeocodeAnswer:
        return reverse(self.reader, query, self.notes.coverage())
