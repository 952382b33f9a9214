"""How alike a query's words are to the names found for them (rapidfuzz), and whether the words
left beside a name are its town or name something else: candidate names scored, with the
lexicon's words only (no store).

Every contiguous run of words is tried as the name (whole, as the start of a longer name, or as
whole words inside one); the words left over should be the city. Name similarity times city
agreement picks the best split for each candidate. A candidate that leaves a word of its own
unexplained, or lacks a word of the name asked, is no answer: the text names something else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, process

from geo_service.lexicon import Lexicon
from geo_service.normalize import compact
from geo_service.store import NameRow

MEMO = 4096  # distinct texts a scorer remembers its words of: a few MB
MAX_SPAN_WORDS = 6
MIN_NAME_SIMILARITY = 0.78
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
CITY_MATCH = 0.85
NO_CITY_GIVEN = 0.97
# Words that are neither the name nor the city cost up to half the score, by their share of the text.
UNEXPLAINED_WEIGHT = 0.5
# A word left over that is neither the candidate's name nor its city, and says something of its
# own (not a kind the candidate is of, a street type's or a place's word, a common short word
# such as "du", "am": lexicon.COMMON_WORD_SHARE), means the text names something else: "Hotel
# Eureka" is not "Hotel Opera", "Liebig-Apotheke" not "Apothekergasse" (issue 34, item 4). Such a
# candidate is no answer, and so is one missing a word of the name asked. Measured with
# bench/geocoder_places.py (names of the other extracts asked of each map) and the address
# benchmark (bench/geocoder.py), see docs/decisions.md.
# A word left over is held against the candidate even when common ("la", "bar", "fm" of "Spirit
# FM", "id" of "ID Lounge"): a common word inside the name asked may be a typo of the name's
# (SHORT_TYPO_SIMILARITY), one left out of it says something else ("La Terrasse" is not
# Nepomuk-Terrasse). Only a street type's and a place's words say nothing. bench/geocoder_places.py,
# names not on the map: "all" 5.5 -> 4.5 % (with ALONE_TYPO_SCORE at 0.8); no other row and no
# address case changed. From 2 letters: "l'" and "'s" are left alone.
LEFTOVER_WORD_LETTERS = 2
CITY_WORD_SIMILARITY = 85
# A word of the name asked may carry a typo: one letter off a 4-letter word is 75 alike. A
# 3-letter word one letter off a common word ("dhl" for "del", "nde" for "de" in the address
# benchmark's typos) is only 67 alike to its name, so such a word passes as that common word.
SPAN_WORD_SIMILARITY = 70
SPAN_WORD_LETTERS = 3
SHORT_TYPO_SIMILARITY = 66
LEFTOVER_IN_NAME = 80


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

    @property
    def score(self) -> float:
        return self.similarity * self.city_factor


def spans(words: Sequence[str]) -> list[tuple[int, int]]:
    n = len(words)
    return [(i, j) for i in range(n) for j in range(i + 1, min(n, i + MAX_SPAN_WORDS) + 1)]


class Scorer:
    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.own_words = lru_cache(maxsize=MEMO)(self.find_own_words)
        self.leftover_words = lru_cache(maxsize=MEMO)(self.find_leftover_words)
        self.words_found = lru_cache(maxsize=MEMO * 4)(self.every_word_found)

    def score(self, words: list[str], rows: list[NameRow]) -> list[Candidate]:
        """The rows that are a run of the words, each at its best split into name and town."""
        if not rows:
            return []
        word_spans = spans(words)
        span_texts = [" ".join(words[i:j]) for i, j in word_spans]
        similarity, typo = name_similarity(span_texts, [r.key for r in rows])
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
            or (len(word) <= SPAN_WORD_LETTERS and process.extractOne(word, self.lexicon.common_words, scorer=fuzz.ratio,
                                                                      score_cutoff=SHORT_TYPO_SIMILARITY))
            for word in self.own_words(span)
        )  # fmt: skip

    def city_factors(self, leftovers: list[str], rows: list[NameRow], text_length: int) -> tuple[np.ndarray, np.ndarray]:
        """(spans, candidates): 1 when the words outside the name are the candidate's city, less the more
        text they leave unexplained; and whether they hold a word of their own that the candidate
        does not explain (COMMON_WORD_SHARE)."""
        city_key = self.lexicon.city_key
        cities = sorted({city_key(r.city) for r in rows})
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
        city_columns = np.array([column_of[city_key(r.city)] for r in rows])
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
        return tuple(w for w in text.split() if len(w) > 2 and w.isalpha() and w not in self.lexicon.generic_words)

    def find_leftover_words(self, text: str) -> tuple[str, ...]:
        """The words of `text`, left over beside a name, that its candidate must explain
        (LEFTOVER_WORD_LETTERS): common words too, not a street type's, nor those of a place
        named whole ("la massana", a district asked with its town). A word of a place's name
        alone says something: "la" of "La Terrasse" is no place (bench/geocoder_places.py)."""
        words = text.split()
        in_places = self.words_of_places_named(words)
        return tuple(w for i, w in enumerate(words)
                     if len(w) >= LEFTOVER_WORD_LETTERS and w.isalpha() and w not in self.lexicon.street_words
                     and i not in in_places)  # fmt: skip

    def words_of_places_named(self, words: list[str]) -> set[int]:
        """The positions of the words that are a place's whole name, in runs of up to MAX_SPAN_WORDS."""
        found: set[int] = set()
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + MAX_SPAN_WORDS) + 1):
                if " ".join(words[i:j]) in self.lexicon.place_key_set:
                    found.update(range(i, j))
        return found

    def names_else(self, words: tuple[str, ...], row: NameRow, city_given: bool) -> bool:
        """Whether a word left over is not explained by the candidate: by its city's words (when
        the leftover names the city), its own name (a name longer than MAX_SPAN_WORDS), or the
        kind a POI is of ("Hotel" of the hotel "Adler")."""
        city_words = self.lexicon.city_key(row.city).split() if city_given else []
        name = compact(row.key)
        for word in words:
            if row.kind == "poi" and row.category in self.lexicon.kinds.kinds.get(word, ()):
                continue
            if fuzz.partial_ratio(word, name) >= LEFTOVER_IN_NAME:
                continue
            if city_words and process.extractOne(word, city_words, scorer=fuzz.ratio, score_cutoff=CITY_WORD_SIMILARITY):
                continue
            return True
        return False


def name_similarity(span_texts: list[str], keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(spans, candidates) in 0..1: rapidfuzz ratio, with and without spaces, or the prefix and
    whole-word-part rules; and where the ratio alone says it and is below 1 (a typo)."""
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
