"""Kinds of places in the user's language (issue 34, item 2): "Apotheke", "pharmacie",
"ravintola" → the OSM tag of the POIs they name.

The words are iD's preset names and search terms (`@openstreetmap/id-tagging-schema`, the
tagging schema the OSM editors share, vendored at install by gateway/vendor.py) in the
platform's languages (common.vocabulary.LANGUAGES). Only presets of one tag the importer keeps as a
POI's category count (records.POI_KEYS and POI_VALUES). A preset's name wins over another
preset's search term: "bar" is the name of amenity=bar and only a search term of
amenity=restaurant in English, so "bar" asks for bars. A word that names several kinds (German
"Bank": a bank and a bench) asks for all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson

from geo_service.normalize import Normalizer
from geo_service.records import POI_KEYS, POI_VALUES

log = logging.getLogger("geo_service")
SCHEMA_DIR = Path(__file__).with_name("vendor") / "id-tagging-schema"
# The longest kind read, in words: the vocabulary's longest name or term, at most this many
# ("Magasin de matériel hi-fi", five; "place of worship", three).
MAX_KIND_WORDS = 8
# Search terms of fewer letters are mostly abbreviations ("AM", "EV") that read as other words.
MIN_TERM_LETTERS = 4


@dataclass(frozen=True)
class PresetWords:
    """One language's words for one category: the preset's name and its search terms."""

    category: str
    language: str
    name: str
    terms: tuple[str, ...]


def kept_category(tags: dict[str, str]) -> str | None:
    """The preset's category when the importer keeps POIs of it, else None."""
    if len(tags) != 1:
        return None
    ((key, value),) = tags.items()
    if value == "*" or not (key in POI_KEYS or value in POI_VALUES.get(key, ())):
        return None
    return f"{key}={value}"


@lru_cache(maxsize=2)
def preset_words(folder: Path = SCHEMA_DIR) -> tuple[PresetWords, ...]:
    """Every language's names and terms of the kept presets; () without the vendored schema."""
    try:
        presets = orjson.loads((folder / "presets.json").read_bytes())
    except OSError:
        log.warning("no kinds of places: %s is missing (make install vendors it)", folder)
        return ()
    categories = {
        preset_id: category
        for preset_id, preset in presets.items()
        if preset.get("searchable", True) and (category := kept_category(preset.get("tags", {})))
    }
    found: list[PresetWords] = []
    for file in sorted((folder / "translations").glob("*.json")):
        ((code, language),) = orjson.loads(file.read_bytes()).items()
        for preset_id, words in language.get("presets", {}).get("presets", {}).items():
            if (category := categories.get(preset_id)) and words.get("name"):
                terms = words.get("terms", ())
                terms = terms.split(",") if isinstance(terms, str) else terms
                found.append(PresetWords(category, code, str(words["name"]), tuple(str(t) for t in terms)))
    # The tag's value is English too ("pharmacy", "place_of_worship"): iD's English name for
    # amenity=pharmacy is "Pharmacy Counter", and users type "pharmacy".
    values = {category: category.partition("=")[2].replace("_", " ") for category in categories.values()}
    found += [PresetWords(category, "en", "", (value,)) for category, value in values.items()]
    return tuple(found)


class KindVocabulary:
    """Normalized words → the categories they name, in the matcher's normalization."""

    def __init__(self, presets: Iterable[PresetWords], key: Callable[[str], str]) -> None:
        names: dict[str, set[str]] = {}
        terms: dict[str, set[str]] = {}
        for preset in presets:
            if preset.name:
                names.setdefault(key(preset.name), set()).add(preset.category)
            for term in preset.terms:
                if len(term.strip()) >= MIN_TERM_LETTERS:
                    terms.setdefault(key(term), set()).add(preset.category)
        self.kinds = {word: frozenset(c) for word, c in terms.items() if word and word not in names}
        self.kinds |= {word: frozenset(c) for word, c in names.items() if word}
        self.preset_names = frozenset(word for word in names if word)
        self.longest = min(MAX_KIND_WORDS, max((len(word.split()) for word in self.kinds), default=0))

    @property
    def available(self) -> bool:
        return bool(self.kinds)

    def find(self, words: Sequence[str]) -> KindWords | None:
        """The query's longest run of words that names a kind, and the other words."""
        for size in range(min(self.longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                kind = " ".join(words[start : start + size])
                if categories := self.kinds.get(kind):
                    rest = " ".join([*words[:start], *words[start + size :]])
                    return KindWords(kind, categories, rest, kind in self.preset_names)
        return None


@dataclass(frozen=True)
class KindWords:
    """A query read as a kind of place: its kind words, the categories they name, and the
    other words (the place to look in, or empty)."""

    kind: str
    categories: frozenset[str]
    rest: str
    preset_name: bool = True  # a preset's name ("Apotheke"), not only a search term ("KappAhl")


@lru_cache(maxsize=8)
def kind_vocabulary(expansions: tuple[tuple[str, str], ...]) -> KindVocabulary:
    """One vocabulary per normalization (the abbreviations an index's words chose), built once per
    process: 26 000 words take about a second to normalize."""
    normalizer = Normalizer()
    normalizer.expansions = dict(expansions)
    return KindVocabulary(preset_words(), normalizer.key)
