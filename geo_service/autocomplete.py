"""Suggestions while typing: the last word is a prefix, the words before it may hold typos.

1. The text is read into finished words, the word being typed (the last one, unless the text
   ends in a space or comma), a house number (a prefix of house numbers when it is the last
   token: "Mannerheimintie 2" → 2, 20, 21, …) and a postcode.
2. Candidates come from the index's name_words table by key lookups and range scans only, so
   their cost follows the number of rows read, not the size of the index: names with a word
   starting with the prefix, and names holding the longest finished word exactly (both at
   once when each alone selects too many). Up to SCAN_ROWS ids are pre-ranked in numpy by
   prefix fit, importance and focus; the best CANDIDATES are scored precisely.
3. Each typed word is compared with the words of each candidate's name and city, all
   candidates at once: rapidfuzz ratio for finished words, the prefix rule for the last one.
4. Only when no candidate matches well (a typo in the words the lookups rely on) the FTS5
   trigram search of the geocoder runs: typo-tolerant, but a few milliseconds.
5. Score = text similarity * kind * importance tie-break * focus factor; a street with a house
   number typed gives way to its addresses, in house-number order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

from common.geo import EARTH_RADIUS_M
from geo_service.model import AutocompleteQuery, GeocodeResult
from geo_service.normalize import ABBREVIATIONS, Normalizer, compact, fold, raw_tokens, unify_digraphs
from geo_service.parser import parse_house_number
from geo_service.ranking import address_result, distinct, name_result, postcode_factor
from geo_service.records import Address
from geo_service.store import IndexReader

MAX_WORDS = 10
MAX_NAME_WORDS = 8  # words of a name compared; longer names are POI descriptions
SCAN_ROWS = 2000  # name_words rows read per lookup at most: about 0.5 ms, whatever the index size
CANDIDATES = 100  # names scored precisely
FTS_CANDIDATES = 60
WORD_MATCH = 0.75  # a typed word less similar than this to every word of a name explains nothing
MIN_TEXT = 0.7
GOOD_MATCH = 0.9  # no candidate this good: look for names with typos through the trigram index
# A prefix that starts a word counts as at least this similar, more the more of the word it
# covers: "Mannerheimintie" beats "Mannerheiminaukio" for "Mannerheimint", and a finished
# word ("Tal") beats the longer ones it starts ("Talstraße").
PREFIX_BASE = 0.9
# The whole text read as one compound ("Sendlingerstr" for "Sendlinger Straße") from this length
# on, a little below a word-by-word match: "Boulevard des" is also the start of "Boulevard de Suisse".
MIN_WHOLE_CHARS = 6
COMPOUND = 0.95
# A prefix with a typo ("Manerh") is compared with the word's start; from 4 letters on only,
# shorter ones are too ambiguous. It ranks below every exact prefix.
MIN_TYPO_PREFIX = 4
PREFIX_TYPO = 0.9
MIN_PREFIX_WEIGHT = 3  # the word being typed weighs at least like a 3-letter word
# Name words the text does not cover cost up to this share: "Mannerheimintie" before
# "Kaivopiha, Mannerheimintie" for "Mannerh".
COVERAGE_WEIGHT = 0.1
POI_FACTOR = 0.97  # a street or town named like the text is what is typed most often
IMPORTANCE_WEIGHT = 0.05  # importance (0..1) only breaks near-ties
# Focus: factor = 1 - w + w·exp(-d / scale). w = 0.3 lets a near match beat a better-spelled
# far one by up to 30 %: while typing, "Haupt" means the Hauptstraße of the town the user is
# in. scale = 5 km: inside a city a kilometre still orders the candidates (-5 %), and beyond
# about 20 km everything is equally "elsewhere" (-28..30 %).
FOCUS_WEIGHT = 0.3
FOCUS_SCALE_M = 5000.0
# House numbers: the exact number first, then the numbers it starts; the street itself and
# other kinds of names below them.
ADDRESS_EXACT = 1.0
ADDRESS_PREFIX = 0.99
NUMBER_STREETS = 3  # the best streets whose addresses are listed
STREET_WITH_NUMBER = 0.9
OTHER_WITH_NUMBER = 0.85

KINDS = ("street", "place", "poi")
_COARSE_SPLIT = re.compile(r"[\s,;]+")
# Numbers too long for a house number are postcodes, as parser.py reads them.
_POSTCODE_DIGITS = re.compile(r"\d{5,6}")
_LETTER = re.compile(r"[a-z]")

TrigramQuery = Callable[[Sequence[str]], str | None]


def last_word_complete(text: str) -> bool:
    """A space or comma after the last word says it is finished: no longer a prefix."""
    return text[-1:].isspace() or text[-1:] in {",", ";"}


@dataclass(frozen=True)
class Typed:
    words: tuple[str, ...]  # finished words, normalized
    # Each finished word's readings: itself, and for an abbreviation every word it may stand for
    # ("av" is avinguda in Andorra even where the index's vocabulary made it avenue).
    forms: tuple[tuple[str, ...], ...]
    prefixes: tuple[str, ...]  # the word being typed: as typed, and expanded when an abbreviation; () if none
    number: str | None = None  # a house number's key ("12a"), or its start when number_is_prefix
    number_is_prefix: bool = False
    postcode: str | None = None


def read_text(text: str, normalizer: Normalizer, postcodes: Collection[str] = ()) -> Typed:
    tokens = [t for t in _COARSE_SPLIT.split(fold(text)) if t]
    # "Bd." is a finished abbreviation even without a space after it.
    typing = bool(tokens) and not last_word_complete(text) and not tokens[-1].endswith(".")
    words: list[tuple[str, ...]] = []
    prefixes: tuple[str, ...] = ()
    number: str | None = None
    number_at = -1
    number_is_prefix = False
    postcode: str | None = None
    for i, token in enumerate(tokens):
        last = typing and i == len(tokens) - 1
        bare = token.strip(".")
        if postcode is None and (bare in postcodes or _POSTCODE_DIGITS.fullmatch(bare)):
            postcode = bare
            continue
        if number is None and not token.endswith(".") and (house := parse_house_number(bare)) is not None:
            number, number_at, number_is_prefix = house.text, i, last
            continue
        if number is not None and number_at == i - 1 and number.isdigit() and _LETTER.fullmatch(bare):
            number, number_is_prefix = number + bare, last  # "12 a" is 12a
            continue
        token_words = [w for w in normalizer.words(token) if w]
        pieces = [piece.replace(".", "") for piece in raw_tokens(token)]
        if len(pieces) != len(token_words):  # an abbreviation rewritten as a whole ("p.za"): no alternatives
            pieces = token_words
        if last and token_words:
            prefixes = tuple(dict.fromkeys(p for p in (unify_digraphs(pieces[-1]), token_words[-1]) if p))
            token_words, pieces = token_words[:-1], pieces[:-1]
        for word, piece in zip(token_words, pieces, strict=True):
            readings = ABBREVIATIONS.get(piece, ()) if word != piece else ()
            words.append((word, *(unify_digraphs(w) for w in readings)))
    words = [tuple(dict.fromkeys(w)) for w in words[:MAX_WORDS]]
    return Typed(tuple(w[0] for w in words), tuple(words), prefixes, number, number_is_prefix, postcode)


def scan_prefixes(prefixes: Sequence[str]) -> list[str]:
    """The prefixes whose ranges hold the others': "hauptstr" covers "hauptstrasse"."""
    return [p for p in prefixes if not any(q != p and p.startswith(q) for q in prefixes)]


def focus_factors(lats: np.ndarray, lons: np.ndarray, focus: tuple[float, float] | None) -> np.ndarray:
    if focus is None:
        return np.ones(len(lats))
    lat0, lon0 = math.radians(focus[0]), math.radians(focus[1])
    # Equirectangular distance: exact to < 1 % over the few tens of kilometres where the factor still changes.
    dx = (np.radians(lons) - lon0) * math.cos(lat0)
    dy = np.radians(lats) - lat0
    distance = EARTH_RADIUS_M * np.hypot(dx, dy)
    return 1.0 - FOCUS_WEIGHT + FOCUS_WEIGHT * np.exp(-distance / FOCUS_SCALE_M)


def prefix_scores(prefixes: Sequence[str], words: list[str]) -> np.ndarray:
    """How well the word being typed starts each of `words`, 0..1."""
    best = np.zeros(len(words))
    lengths = np.fromiter((len(w) for w in words), float, len(words))
    for p in prefixes:
        starts = np.fromiter((w.startswith(p) for w in words), bool, len(words))
        fit = PREFIX_BASE + (1 - PREFIX_BASE) * len(p) / np.maximum(lengths, len(p))
        best = np.maximum(best, np.where(starts, fit, 0.0))
        if p == prefixes[0] and len(p) >= MIN_TYPO_PREFIX:  # typos are in what was typed, not in expansions
            # A letter missing, wrong or too many: compare with the word's start one shorter, as long, one longer.
            for cut in (len(p) - 1, len(p), len(p) + 1):
                ratio = process.cdist([p], [w[:cut] for w in words], scorer=fuzz.ratio, workers=1)[0]
                best = np.maximum(best, ratio / 100.0 * PREFIX_TYPO)
    return best


def positions(lists: list[list[str]], index: dict[str, int], blank: int) -> np.ndarray:
    """(lists, longest list): each word's position in the vocabulary, `blank` after a list's end."""
    counts = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
    out = np.full((len(lists), max(1, int(counts.max(initial=0)))), blank, dtype=np.intp)
    flat = [word for words in lists for word in words]
    if flat:
        rows = np.repeat(np.arange(len(lists)), counts)
        columns = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts)
        out[rows, columns] = np.fromiter(map(index.__getitem__, flat), dtype=np.intp, count=len(flat))
    return out


@dataclass(frozen=True)
class Scored:
    """Candidates (parallel arrays over `ids`) with their text similarity and final score."""

    ids: np.ndarray
    text: np.ndarray
    score: np.ndarray


class Autocompleter:
    def __init__(self, reader: IndexReader, normalizer: Normalizer, trigram_query: TrigramQuery) -> None:
        self.reader = reader
        self.normalizer = normalizer
        self.trigram_query = trigram_query
        self.postcodes = frozenset(str(p).lower() for p in reader.meta.get("postcodes", []))
        self.available = reader.has_table("name_words")  # indexes written before autocomplete lack it
        # Per name id (index 0 unused): what pre-ranking and scoring need for every scanned
        # name without reading its row. 13 bytes a name (float32 is ~1 m here, plenty for a
        # factor over kilometres): 40 MB for 3 million names.
        facts = reader.name_facts()
        size = max((f[0] for f in facts), default=0) + 1
        self.kind = np.zeros(size, dtype=np.int8)
        self.lat = np.zeros(size, dtype=np.float32)
        self.lon = np.zeros(size, dtype=np.float32)
        self.importance = np.zeros(size, dtype=np.float32)
        if facts:
            ids, kinds, lats, lons, importances = zip(*facts, strict=True)
            at = np.array(ids, dtype=np.intp)
            codes = {kind: code for code, kind in enumerate(KINDS)}
            self.kind[at] = [codes.get(kind, codes["poi"]) for kind in kinds]
            self.lat[at], self.lon[at], self.importance[at] = lats, lons, importances
        self.kind_factor = np.array([1.0, 1.0, POI_FACTOR])
        self._city_words: dict[str, list[str]] = {}

    def complete(self, query: AutocompleteQuery) -> list[GeocodeResult]:
        typed = read_text(query.text, self.normalizer, self.postcodes)
        if not typed.words and not typed.prefixes:
            return []
        ids = self.candidate_ids(typed, query.country, query.focus)
        scored = self.score(typed, self.reader.name_texts(ids), query.focus)
        if not len(scored.text) or scored.text.max() < GOOD_MATCH:
            scored = self.with_trigram_candidates(typed, query, scored)
        return self.results(typed, scored, query.limit)

    # ------------------------------------------------------------ candidates

    def candidate_ids(self, typed: Typed, country: str | None, focus: tuple[float, float] | None) -> list[int]:
        """The names worth scoring: found by their words, the best CANDIDATES of them by a quick
        estimate (how well the looked-up word fits, kind, importance, focus)."""
        ids: list[np.ndarray] = []
        fits: list[np.ndarray] = []  # how well the looked-up word fits the name (1 = exactly)
        saturated = False
        for p in scan_prefixes(typed.prefixes):
            rows = self.reader.names_with_word_prefix(p, country, SCAN_ROWS)
            saturated |= len(rows) == SCAN_ROWS
            if rows:
                found = np.array(rows, dtype=np.intp)  # (name id, length of its word starting with p)
                lengths = found[:, 1].astype(float)
                ids.append(found[:, 0])
                fits.append(PREFIX_BASE + (1 - PREFIX_BASE) * len(p) / np.maximum(lengths, len(p)))
        prefix_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.intp)
        # The longest finished word that is not an abbreviation: the rarest, most likely.
        plain = [forms[0] for forms in typed.forms if len(forms) == 1 and len(forms[0]) >= 2]
        if plain:
            anchor = max(plain, key=len)
            rows = self.reader.names_with_word(anchor, country, SCAN_ROWS)
            anchor_ids = np.array([i for i, _ in rows], dtype=np.intp)
            both = np.intersect1d(anchor_ids, prefix_ids)
            if typed.prefixes and saturated and len(rows) == SCAN_ROWS:
                # Each alone selects more than is read: ask for the names holding both.
                pair = self.reader.names_with_word_and_prefix(anchor, typed.prefixes[0], country, CANDIDATES)
                both = np.union1d(both, np.array([i for i, _ in pair], dtype=np.intp))
            ids += [anchor_ids, both]
            # Holding the finished word and the prefix puts a name ahead of all holding only one.
            fits += [np.ones(len(anchor_ids)), np.full(len(both), 2.0)]
        if not ids:
            return []
        all_ids, all_fits = np.concatenate(ids), np.concatenate(fits)
        order = np.lexsort((-all_fits, all_ids))  # by id, best fit first
        all_ids, all_fits = all_ids[order], all_fits[order]
        first = np.ones(len(all_ids), dtype=bool)
        first[1:] = all_ids[1:] != all_ids[:-1]
        unique_ids, best_fits = all_ids[first], all_fits[first]
        if len(unique_ids) > CANDIDATES:
            rank = best_fits * self.prior(unique_ids, focus)
            unique_ids = unique_ids[np.argsort(-rank, kind="stable")[:CANDIDATES]]
        return [int(i) for i in unique_ids]

    def prior(self, ids: np.ndarray, focus: tuple[float, float] | None) -> np.ndarray:
        """What a name is worth before its text is compared: kind, importance, nearness."""
        importance = 1.0 - IMPORTANCE_WEIGHT * (1.0 - self.importance[ids].astype(float))
        return self.kind_factor[self.kind[ids]] * importance * focus_factors(self.lat[ids], self.lon[ids], focus)

    def with_trigram_candidates(self, typed: Typed, query: AutocompleteQuery, scored: Scored) -> Scored:
        words = [w for w in (*typed.words, *typed.prefixes[:1]) if len(w) >= 3]
        fts = self.trigram_query(words) if words else None
        if fts is None:
            return scored
        seen = set(scored.ids.tolist())
        rows = [row for row, _ in self.reader.search_names(fts, query.country, FTS_CANDIDATES) if row.id not in seen]
        if not rows:
            return scored
        texts = [(r.id, r.key, r.city, r.postcode, " ".join(r.postcodes) or None) for r in rows]
        more = self.score(typed, texts, query.focus)
        return Scored(
            np.concatenate([scored.ids, more.ids]),
            np.concatenate([scored.text, more.text]),
            np.concatenate([scored.score, more.score]),
        )

    # ------------------------------------------------------------ scoring

    def city_words(self, city: str | None) -> list[str]:
        if not city:
            return []
        words = self._city_words.get(city)
        if words is None:
            words = self._city_words[city] = self.normalizer.words(city)[:MAX_NAME_WORDS]
        return words

    def score(
        self,
        typed: Typed,
        texts: list[tuple[int, str, str | None, str | None, str | None]],
        focus: tuple[float, float] | None,
    ) -> Scored:
        """texts: (id, key, city, postcode, postcodes) of each candidate."""
        if not texts:
            empty = np.zeros(0)
            return Scored(np.zeros(0, dtype=np.intp), empty, empty)
        ids = np.array([t[0] for t in texts], dtype=np.intp)
        text = self.text_similarity(typed, [t[1] for t in texts], [t[2] for t in texts])
        score = text * self.prior(ids, focus)
        if typed.postcode is not None:
            score *= np.array([postcode_factor(typed.postcode, t[3], *(t[4] or "").split()) for t in texts])
        return Scored(ids, text, score)

    def text_similarity(self, typed: Typed, keys: list[str], cities: list[str | None]) -> np.ndarray:
        """0..1 per candidate; 0 when no typed word matches a word of the name itself."""
        name_words = [key.split()[:MAX_NAME_WORDS] for key in keys]
        city_words = [self.city_words(city) for city in cities]
        words = list(dict.fromkeys([w for ws in name_words for w in ws] + [w for ws in city_words for w in ws]))
        index = {w: i for i, w in enumerate(words)}
        blank = len(words)  # the padding column: similar to nothing
        typed_words = list(typed.words)
        scores = np.zeros((len(typed_words) + bool(typed.prefixes), blank + 1))
        if typed_words:
            forms = [form for word_forms in typed.forms for form in word_forms]
            starts = np.cumsum([0] + [len(word_forms) for word_forms in typed.forms[:-1]])
            ratios = process.cdist(forms, words, scorer=fuzz.ratio, workers=1) / 100.0
            scores[: len(typed_words), :blank] = np.maximum.reduceat(ratios, starts, axis=0)  # best reading
        if typed.prefixes:
            scores[-1, :blank] = prefix_scores(typed.prefixes, words)
        names = positions(name_words, index, blank)
        per_name_word = scores[:, names]  # (typed words, candidates, name words)
        on_name = per_name_word.max(axis=2)
        explained = np.maximum(on_name, scores[:, positions(city_words, index, blank)].max(axis=2))
        explained[explained < WORD_MATCH] = 0.0
        weights = np.array([len(w) for w in typed_words] + [max(MIN_PREFIX_WEIGHT, len(p)) for p in typed.prefixes[:1]])
        similarity = weights @ explained / weights.sum()
        # How much of the name the text covers: a name with words nobody typed ranks a little lower.
        lengths = np.array([len(w) for w in words] + [0])[names]
        covered = (per_name_word.max(axis=0) >= WORD_MATCH) * lengths
        coverage = covered.sum(axis=1) / np.maximum(lengths.sum(axis=1), 1)
        similarity *= 1.0 - COVERAGE_WEIGHT * (1.0 - coverage)
        similarity[(on_name < WORD_MATCH).all(axis=0)] = 0.0  # only the city matched: not this name
        # Words typed together that the name writes apart, or the reverse ("Sendlingerstr" for
        # "Sendlinger Straße"): the whole text as the start of the name without spaces.
        whole = "".join((*typed_words, *typed.prefixes[:1]))
        if len(whole) >= MIN_WHOLE_CHARS:
            for c, key in enumerate(keys):
                joined = compact(key)
                if joined.startswith(whole) and (typed.prefixes or joined == whole):
                    fit = COMPOUND * (PREFIX_BASE + (1 - PREFIX_BASE) * len(whole) / len(joined))
                    similarity[c] = max(similarity[c], fit)
        return similarity

    # ------------------------------------------------------------ results

    def results(self, typed: Typed, scored: Scored, limit: int) -> list[GeocodeResult]:
        keep = np.flatnonzero(scored.text >= MIN_TEXT)
        if not len(keep):
            return []
        importance = self.importance[scored.ids[keep]]
        order = keep[np.lexsort((-importance, -np.round(scored.score[keep], 6)))]
        best = order[: limit * 2 + NUMBER_STREETS]  # some fall out as duplicates of a better one
        rows = {r.id: r for r in self.reader.names_by_ids([int(i) for i in scored.ids[best]], None)}
        ranked: list[tuple[float, tuple[float, int, str], GeocodeResult]] = []
        streets_with_numbers = 0
        for c in best:
            row = rows.get(int(scored.ids[c]))
            if row is None:
                continue
            score = float(scored.score[c])
            tie = (-row.importance, 0, "")
            if typed.number is None:
                ranked.append((score, tie, name_result(row, score)))
            elif row.kind == "street":
                if streets_with_numbers < NUMBER_STREETS:
                    streets_with_numbers += 1
                    for address in self.addresses(row.id, typed, limit):
                        factor = ADDRESS_EXACT if address.house_key == typed.number else ADDRESS_PREFIX
                        factor *= postcode_factor(typed.postcode, address.postcode)
                        address_tie = (-row.importance, address.house_base, address.house_key)
                        ranked.append((score * factor, address_tie, address_result(address, score * factor)))
                ranked.append((score * STREET_WITH_NUMBER, tie, name_result(row, score * STREET_WITH_NUMBER)))
            else:
                tagged = fold(row.house_number or "").replace(" ", "")
                same = tagged.startswith(typed.number) if typed.number_is_prefix else tagged == typed.number
                factor = 1.0 if same else OTHER_WITH_NUMBER
                ranked.append((score * factor, tie, name_result(row, score * factor)))
        return first_distinct(ranked, limit)

    def addresses(self, street_id: int, typed: Typed, limit: int) -> list[Address]:
        assert typed.number is not None
        if typed.number_is_prefix:
            return self.reader.addresses_with_number_prefix(street_id, typed.number, limit)
        number = parse_house_number(typed.number)
        rows = self.reader.addresses_on([street_id], number.base) if number else []
        return sorted(rows, key=lambda a: (a.house_key != typed.number, a.house_key))[:limit]


def first_distinct(
    ranked: list[tuple[float, tuple[float, int, str], GeocodeResult]], limit: int
) -> list[GeocodeResult]:
    """Best score first (importance, then house number order, breaks ties); the same label once."""
    ranked.sort(key=lambda item: (-round(item[0], 6), item[1]))
    return distinct([result for _, _, result in ranked], limit)
