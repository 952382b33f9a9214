"""What an index's words mean, read from the store once, when the index opens (its streets' and
places' other names at their first use): the context the analysis and the scoring read, so
that neither touches the store while a query is answered (only `candidates` does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

from geo_service.kinds import kind_vocabulary
from geo_service.normalize import Normalizer
from geo_service.store import IndexReader

# A typo in a short name ("Tafl" for "Tal") leaves no trigram in common: such names are
# compared with every short query word directly (they are few).
SHORT_NAME = 6
MAX_TRIGRAMS = 48
COMMON_TRIGRAM_SHARE = 0.2  # trigrams in more names than this select too much to help
RARE_TRIGRAMS_PER_WORD = 3
RARE_TRIGRAM_SHARE = 1 / 3
# A short word in this share of the map's names is an article or a common word of names ("de"
# 7.8 %, "am" 1.5 %, "bar" 1.0 %, "der" 0.9 % on the five extracts as one index), not a name of its
# own; "tor" (0.13 %) is: "Brandenburger Tor" is not "Brandenburger Straße" (scoring.COMMON words).
COMMON_WORD_SHARE = 0.004
COMMON_WORD_LETTERS = 4
# The longest other name read as a local one, in words ("Helsingfors domkyrka" has two).
MAX_OTHER_NAME_WORDS = 4
KEYS_A_QUERY = 500  # keys asked of the store at once (SQLite's variables)


def trigrams(word: str) -> set[str]:
    return {word[i : i + 3] for i in range(len(word) - 2)}


def or_query(grams: Sequence[str]) -> str | None:
    return " OR ".join('"' + g.replace('"', '""') + '"' for g in grams) if grams else None


class Lexicon:
    def __init__(self, reader: IndexReader) -> None:
        meta = reader.meta
        self.reader = reader
        self.normalizer = Normalizer(meta.get("vocabulary", []))
        self.postcodes = {str(p).lower(): str(p) for p in meta.get("postcodes", [])}
        self.countries: list[str] = sorted(meta.get("countries", []))
        self.place_keys = sorted({key for name in reader.place_names() if (key := self.normalizer.key(name))})
        self.trigram_counts = reader.trigram_document_counts()
        total = sum(meta.get("counts", {}).get(k, 0) for k in ("streets", "places", "pois")) or 1
        self.common_trigrams = frozenset(t for t, c in self.trigram_counts.items() if c > COMMON_TRIGRAM_SHARE * total)
        self.short_keys = reader.short_keys(SHORT_NAME)
        self.kinds = kind_vocabulary(tuple(sorted(self.normalizer.expansions.items())))
        # words that say no name of their own: a street type's, a place's (a district asked with
        # its town); a kind's word says one unless the candidate is of that kind
        street_words = {w for v in self.normalizer.expansions.values() for w in self.normalizer.words(v)}
        common = {w for w, share in reader.short_word_shares(COMMON_WORD_LETTERS).items() if share >= COMMON_WORD_SHARE}
        places = {w for key in self.place_keys for w in key.split()}
        self.generic_words = frozenset(street_words | places | common)
        self.street_words = frozenset(street_words)
        self.place_key_set = frozenset(self.place_keys)
        self.common_words = sorted(common)
        self._city_keys: dict[str, str] = {}

    def city_key(self, city: str | None) -> str:
        if not city:
            return ""
        key = self._city_keys.get(city)
        if key is None:
            key = self._city_keys[city] = self.normalizer.key(city)
        return key

    @cached_property
    def local_names(self) -> dict[str, str]:
        """A street's or place's other names (name:<lang>, alt_name …) → its local name, as
        normalized keys: "mannerheimvagen" → "mannerheimintie" (the index's translations table);
        only where the local name is a street's or place's of the map and the other name is none
        (a bus stop named in Swedish is not a street). A POI's other names are names of their own
        in the index ("Heidelberg Hbf")."""
        table = {}
        for other, local in (self.reader.translations("street:") | self.reader.translations("place:")).items():
            key, local_key = self.normalizer.key(other), self.normalizer.key(local)
            if key and local_key and key != local_key and len(key.split()) <= MAX_OTHER_NAME_WORDS:
                table[key] = local_key
        named = self.streets_or_places({*table, *table.values()})
        return {key: local for key, local in table.items() if local in named and key not in named}

    def streets_or_places(self, keys: set[str]) -> set[str]:
        """Those of `keys` a street or place of the map is named."""
        ordered, found = sorted(keys), set()
        for at in range(0, len(ordered), KEYS_A_QUERY):
            rows = self.reader.names_with_keys(ordered[at : at + KEYS_A_QUERY], None)
            found |= {row.key for row in rows if row.kind != "poi"}
        return found

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
