"""Free-text query → words, house number and postcode, in whatever order they were typed.

"Hauptstraße 12, 69117 Heidelberg", "hauptstr 12 heidelberg" and "69117 Heidelberg
Hauptstrasse 12" all parse to words [hauptstrasse, heidelberg], house number 12 and (for
two of them) postcode 69117. Which numbers are postcodes is decided by the index's known
postcodes first and by shape (5+ digits) second; the first remaining number is the house number.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from geo_service.model import StructuredAddress
from geo_service.normalize import Normalizer, fold

_COARSE_SPLIT = re.compile(r"[\s,;]+")
_HOUSE_NUMBER = re.compile(r"^(\d{1,4})(?:\s*([a-z]))?(?:\s*([-/])\s*(\d{1,4}[a-z]?))?$")
_POSTCODE_SHAPE = re.compile(r"^(?:\d{5,6}|[a-z]{1,2}-?\d{3,5})$")
_SINGLE_LETTER = re.compile(r"^[a-z]$")
# Letters glued to a number ("Hauptstraße12") are split so the number is seen.
MAX_NUMBER_READINGS = 3
_GLUED_NUMBER = re.compile(r"(?<=[a-z]{3})(?=\d)")


@dataclass(frozen=True)
class HouseNumber:
    """A house number as typed: text is its key ("12a", "12-14", "12/1"), base its leading number."""

    text: str
    base: int

    @property
    def has_suffix(self) -> bool:
        return self.text != str(self.base)


@dataclass(frozen=True)
class ParsedQuery:
    words: tuple[str, ...]
    house_number: HouseNumber | None
    postcode: str | None
    # Other readings of a text with several numbers, each with another number as the house number.
    alternatives: tuple[ParsedQuery, ...] = ()


def parse_house_number(text: str) -> HouseNumber | None:
    """'12', '12a', '12 a', '12A', '12-14', '12/1' → HouseNumber; anything else → None."""
    match = _HOUSE_NUMBER.match(fold(text).strip())
    if not match:
        return None
    number, letter, separator, second = match.groups()
    key = str(int(number)) + (letter or "")
    if separator:
        key += separator + second
    return HouseNumber(key, int(number))


def house_numbers_of_tag(value: str) -> list[HouseNumber]:
    """OSM addr:housenumber values may list several numbers: '12;14', '3,5'."""
    numbers = (parse_house_number(part) for part in re.split(r"[;,]", value))
    return [n for n in numbers if n is not None]


def _continues_house_number(previous: str, token: str) -> bool:
    """'12' + 'a' → '12a'; '12' + '-' → '12-'; '12-' + '14' → '12-14'."""
    if previous.isdigit() and _SINGLE_LETTER.match(token):
        return True
    if token in {"-", "/"} and previous[:1].isdigit():
        return True
    return previous[-1:] in {"-", "/"} and token[:1].isdigit()


def _coarse_tokens(text: str) -> list[str]:
    folded = _GLUED_NUMBER.sub(" ", fold(text))
    tokens = [t for t in _COARSE_SPLIT.split(folded) if t]
    merged: list[str] = []
    for token in tokens:
        # "12 a" is house number 12a; "12 - 14" is the range 12-14.
        if merged and _continues_house_number(merged[-1], token):
            merged[-1] += token
        else:
            merged.append(token)
    return merged


def parse_query(text: str, normalizer: Normalizer, known_postcodes: Collection[str] = ()) -> ParsedQuery:
    """The first number that can be a house number is the house number; any later one is kept
    as an alternative reading ("Avenue du 3 Septembre 126": 3 first, then 126)."""
    tokens = _known_postcodes_joined(_coarse_tokens(text), known_postcodes)
    postcode_at = _postcode_position(tokens, known_postcodes)
    numbers = [
        i
        for i, token in enumerate(tokens)
        if i != postcode_at and not token.endswith(".") and parse_house_number(token) is not None
    ]  # "17." is an ordinal, part of a name
    if not numbers and postcode_at is not None and _weak_postcode(tokens[postcode_at]):
        numbers, postcode_at = [postcode_at], None
    readings = [_reading(tokens, normalizer, postcode_at, at) for at in numbers[:MAX_NUMBER_READINGS]]
    if not readings:
        return _reading(tokens, normalizer, postcode_at, None)
    return ParsedQuery(readings[0].words, readings[0].house_number, readings[0].postcode, tuple(readings[1:]))


def _known_postcodes_joined(tokens: list[str], known_postcodes: Collection[str]) -> list[str]:
    """A known postcode written in two parts is one token: "0ad 200" (Andorra, as mapped),
    "sw1a 1aa", "1012 ab"."""
    joined: list[str] = []
    for token in tokens:
        if joined and f"{joined[-1]} {token}" in known_postcodes:
            joined[-1] = f"{joined[-1]} {token}"
        else:
            joined.append(token)
    return joined


def _weak_postcode(token: str) -> bool:
    """A known postcode that does not look like one ("100", mapped in Andorra): the house number
    when the text has no other."""
    return not _POSTCODE_SHAPE.match(token) and parse_house_number(token) is not None


def _postcode_position(tokens: list[str], known_postcodes: Collection[str]) -> int | None:
    for i, token in enumerate(tokens):
        bare = token.strip(".")
        if (bare in known_postcodes or _POSTCODE_SHAPE.match(bare)) and any(c.isdigit() for c in bare):
            return i
    return None


def _reading(tokens: list[str], normalizer: Normalizer, postcode_at: int | None, number_at: int | None) -> ParsedQuery:
    rest = [t for i, t in enumerate(tokens) if i not in (postcode_at, number_at)]
    words = tuple(w for w in normalizer.words(" ".join(rest)) if w)
    number = parse_house_number(tokens[number_at].strip(".")) if number_at is not None else None
    postcode = tokens[postcode_at].strip(".") if postcode_at is not None else None
    return ParsedQuery(words, number, postcode)


def parse_structured(address: StructuredAddress, normalizer: Normalizer) -> ParsedQuery:
    """The parts say what they are: no guessing which number is the postcode. The street's
    words come first and the city's last, as in free text, so the same matching applies."""
    words = normalizer.words(address.street or "") + normalizer.words(address.city or "")
    number = parse_house_number(address.house_number) if address.house_number else None
    postcode = "".join(fold(address.postcode).split()) if address.postcode else None
    return ParsedQuery(tuple(w for w in words if w), number, postcode or None)
