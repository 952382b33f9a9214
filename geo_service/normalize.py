"""Text normalization shared by the importer (index keys) and the matcher (queries).

Both sides go through the same functions, so a key only has to be *consistent*, not pretty:
case and accents are folded, German umlaut spellings (ä = ae) are unified, punctuation
becomes token boundaries, and street-type abbreviations of the languages we meet in OSM are
expanded to their full word. Ambiguous abbreviations ("av." is avenida, avinguda or avenue)
are resolved against the words the index actually contains, so the data picks the language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable

# Letters that NFKD does not decompose into a base letter plus a mark.
_SPECIAL_LETTERS = str.maketrans(
    {"ß": "ss", "ẞ": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "\u0131": "i"}
)
# Quotes and apostrophes of every kind: \u2018 \u2019 \u201c \u201d \u201e, acute accent \u00b4.
_SEPARATORS = re.compile("[\\s,;:()\\[\\]{}\"'`\u00b4\u2018\u2019\u201c\u201d\u201e\u00ab\u00bb/\\\\|+*!?#&<>=_~-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# ä/ö/ü and their ASCII spellings ae/oe/ue become the same key ("Muenchen" = "München").
_DIGRAPHS = re.compile(r"(?<=[a-z])(ae|oe|ue)")

# Abbreviation (without its dot) → the full words it may stand for, most likely first.
# Covers German, French, Italian, Spanish, Catalan, Portuguese, Finnish/Swedish and English.
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "str": ("strasse",),
    "strasse": ("strasse",),
    "pl": ("platz", "place", "placa", "plaza", "piazza", "plass"),
    "av": ("avenue", "avinguda", "avenida"),
    "ave": ("avenue", "avenida"),
    "avda": ("avinguda", "avenida"),
    "avgda": ("avinguda",),
    "bd": ("boulevard",),
    "bld": ("boulevard",),
    "bvd": ("boulevard",),
    "blvd": ("boulevard",),
    "c": ("carrer", "calle"),
    "cl": ("calle", "carrer"),
    "cr": ("carrer",),
    "r": ("rua", "rue"),
    "rte": ("route",),
    "ch": ("chemin",),
    "imp": ("impasse",),
    "all": ("allee",),
    "sq": ("square",),
    "st": ("sankt", "saint", "street", "santa"),
    "ste": ("sainte",),
    "sta": ("santa",),
    "sto": ("santo",),
    "pca": ("praca",),
    "pc": ("praca",),
    "tv": ("travessa", "travessera"),
    "trav": ("travessa", "travessera"),
    "estr": ("estrada",),
    "rd": ("road",),
    "ln": ("lane",),
    "dr": ("doktor", "drive"),
    "prof": ("professor",),
    "v": ("via", "viale"),
    "vle": ("viale",),
    "p": ("piazza", "placa", "praca"),
    "pza": ("piazza", "plaza"),
    "lgo": ("largo",),
    "k": ("katu",),
    "t": ("tie",),
    "g": ("gatan",),
}
# Abbreviations that may be written without their dot; single letters need the dot.
_DOTLESS_OK = frozenset(k for k in ABBREVIATIONS if len(k) > 1 and k not in {"all", "st", "dr", "ch"}) | {"st", "dr"}
# Italian abbreviations with the dot inside ("P.za Navona", "C.so Buenos Aires") and the
# Spanish "C/ Mayor": rewritten to the plain abbreviation before tokenizing.
_INNER_DOT = re.compile(r"\b(p\.z?za|v\.le|c\.so|l\.go|c/)(?=\s|$|\w)")
_INNER_DOT_AS = {"p.za": "pza. ", "p.zza": "pza. ", "v.le": "vle. ", "c.so": "corso ", "l.go": "lgo. ", "c/": "c. "}

# Endings of compound street names: German "Hauptstr." / "Hauptstr", Finnish "Aleksanterink.".
_COMPOUND_ENDINGS: tuple[tuple[str, str, bool], ...] = (
    ("str", "strasse", False),
    ("pl", "platz", True),
    ("k", "katu", True),
    ("t", "tie", True),
    ("g", "gatan", True),
    ("v", "vagen", True),
)


def clean(text: str) -> str:
    """Control characters (NUL included) become spaces: they never carry meaning in an address."""
    return _CONTROL.sub(" ", text)


def tidy(text: str) -> str:
    """Cleaned, with runs of spaces as one and none at the ends: how every address, structured
    field and typed prefix is read, once (geo_service.parsing), and what cache keys fold."""
    return " ".join(clean(text).split())


def fold(text: str) -> str:
    """Lowercase without accents: 'Straße' → 'strasse', 'Mäkelänkatu' → 'makelankatu'."""
    lowered = clean(text).lower().translate(_SPECIAL_LETTERS)
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def raw_tokens(folded: str) -> list[str]:
    """Tokens split on punctuation; a trailing dot is kept, it marks an abbreviation."""
    tokens: list[str] = []
    for part in _SEPARATORS.split(folded):
        for piece in re.split(r"(?<=\.)(?=[^.])", part):  # "str.12" → "str.", "12"
            if piece.strip("."):
                tokens.append(piece)
    return tokens


def unify_digraphs(word: str) -> str:
    return _DIGRAPHS.sub(lambda m: m.group(1)[0], word)


class Normalizer:
    """Expands abbreviations, choosing among their meanings by the index's vocabulary."""

    def __init__(self, vocabulary: Collection[str] = ()) -> None:
        self.vocabulary = frozenset(vocabulary)
        self.expansions = {abbr: self._choose(words) for abbr, words in ABBREVIATIONS.items()}

    def _choose(self, words: tuple[str, ...]) -> str:
        return next((w for w in words if w in self.vocabulary), words[0])

    def expand(self, token: str) -> str:
        dotted = token.endswith(".")
        word = token.strip(".")
        if word.isdigit() or not word:
            return word
        if (dotted or word in _DOTLESS_OK) and word in self.expansions:
            return self.expansions[word]
        for ending, full, needs_dot in _COMPOUND_ENDINGS:
            if len(word) > len(ending) + 2 and word.endswith(ending) and (dotted or not needs_dot):
                return word[: -len(ending)] + full
        return word.replace(".", "")

    def words(self, text: str) -> list[str]:
        """The normalized words of a text, in order."""
        folded = _INNER_DOT.sub(lambda m: _INNER_DOT_AS[m.group(1)], fold(text))
        return [unify_digraphs(self.expand(t)) for t in raw_tokens(folded)]

    def key(self, text: str) -> str:
        """The matching key of a name: its normalized words joined by single spaces."""
        return " ".join(self.words(text))


def vocabulary_of(names: Iterable[str]) -> set[str]:
    """Every folded word of the given names: what the abbreviations are resolved against."""
    words: set[str] = set()
    for name in names:
        words.update(t.strip(".") for t in raw_tokens(fold(name)))
    return words


def compact(key: str) -> str:
    """A key without spaces: 'haupt strasse' and 'hauptstrasse' compare equal."""
    return key.replace(" ", "")
