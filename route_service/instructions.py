"""Turn instructions in the driver's language and units, the same for every engine (issue 35).

Every engine's steps reach the formatter as one kind of maneuver (OSRM's types and modifiers;
Valhalla's are mapped onto them in `providers.valhalla`), and this module writes the sentence
from OSRM's own translation set, `osrm-text-instructions` (its `languages/translations` and
`languages/grammar` files, vendored at install by `gateway.vendor`; 31 languages). The rules of
choosing a sentence are that library's `compile`, `getWayName`, `tokenize` and `grammarize`
(index.js of the pinned version), ported because no Python library renders these files; the
words are never ours. Its own fixtures (the expected sentence of every maneuver in every
language) are the tests' reference (tests/route_service/test_instruction_languages.py).

Spoken distances ("In 500 m, turn left") take the translation's "one in distance" phrase and a
number and unit written in the language's own form by CLDR's data (Babel): "0,3 mi", "1,5 km".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from babel.core import Locale, UnknownLocaleError
from babel.units import format_unit

from common.vocabulary import INSTRUCTION_LANGUAGES as INSTRUCTION_LANGUAGES
from route_service.model import NO_SIGNS, Maneuver, Signs, Wording

VENDOR_DIR = Path(__file__).with_name("vendor") / "osrm-text-instructions"
VERSION = "v5"
TOKEN = re.compile(r"\{(\w+)(?::(\w+))?\}", re.ASCII)
# The compass point of a bearing (`directionFromDegree`): (upper bound, bound included, name).
COMPASS = ((20, True, "north"), (70, False, "northeast"), (110, True, "east"), (160, False, "southeast"),
           (200, True, "south"), (250, False, "southwest"), (290, True, "west"), (340, False, "northwest"),
           (360, True, "north"))  # fmt: skip


class MissingTranslations(RuntimeError):
    """The vendored translation files are not installed (`make install`)."""


@dataclass(frozen=True)
class Book:
    """One language's translation file (its `v5` part) and grammar rules."""

    language: str
    strings: dict[str, Any]
    capitalize: bool
    grammar: dict[str, list[tuple[re.Pattern[str], str, int]]]

    def constant(self, group: str, key: str) -> str | None:
        value = self.strings["constants"][group].get(key)
        return None if value is None else str(value)


@cache
def book(language: str) -> Book:
    """The translations of one language, read once per process."""
    path = VENDOR_DIR / "translations" / f"{language}.json"
    if not path.is_file():
        raise MissingTranslations(f"{path} is missing: run `make install` (gateway/vendor.py vendors it)")
    data = json.loads(path.read_text(encoding="utf-8"))
    return Book(language, data[VERSION], bool(data["meta"].get("capitalizeFirstLetter")), grammar_rules(language))


def grammar_rules(language: str) -> dict[str, list[tuple[re.Pattern[str], str, int]]]:
    """The language's grammar file as compiled rules: (pattern, replacement, count), with the
    file's JavaScript flags ("g": every match, else the first; "i": any case) and `$1` groups."""
    path = VENDOR_DIR / "grammar" / f"{language}.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    flags = data.get("meta", {}).get("regExpFlags", "")
    count = 0 if "g" in flags else 1
    options = re.IGNORECASE if "i" in flags else 0
    return {case: [rule(pattern, replacement, options, count) for pattern, replacement in rules]
            for case, rules in data.get(VERSION, {}).items()}  # fmt: skip


def rule(pattern: str, replacement: str, options: int, count: int) -> tuple[re.Pattern[str], str, int]:
    """A JavaScript replace rule in Python's terms: "$1" → "\\g<1>"."""
    return re.compile(pattern, options), re.sub(r"\$(\d)", r"\\g<\1>", replacement), count


@dataclass(frozen=True)
class StepText:
    """What a sentence is made of: the maneuver, the street and the signs."""

    type: str
    modifier: str | None
    name: str = ""
    mode: str = ""
    exit: int | None = None
    bearing_after: float | None = None
    signs: Signs = NO_SIGNS
    junction_name: str = ""

    @classmethod
    def of(cls, maneuver: Maneuver, name: str, mode: str, signs: Signs) -> StepText:
        return cls(maneuver.type, maneuver.modifier, name, mode, maneuver.exit, maneuver.bearing_after, signs)


def instruction(text: StepText, language: str = "en", leg_index: int = -1, leg_count: int = 0,
                waypoint_name: str = "") -> str:  # fmt: skip
    """One sentence for a step, osrm-text-instructions' `compile`: e.g. "Turn left onto Hauptstraße"."""
    words = book(language)
    strings = words.strings
    kind, modifier = text.type, text.modifier or ("" if text.type in ("depart", "arrive") else "straight")
    if kind not in strings:
        kind = "turn"  # the OSRM spec: an unknown type reads as a turn
    choice = chosen_object(words, kind, modifier, text)
    lane_instruction = None
    if kind == "use lane":
        lane_instruction = words.constant("lanes", lane_config(text.signs.lanes))
        if lane_instruction is None:
            choice = strings["use lane"]["no_lanes"]
    elif kind in ("rotary", "roundabout"):
        choice = roundabout_object(choice, text)
    way_name = way_name_of(words, text)
    sentence = sentence_of(choice, text, way_name, waypoint_name)
    destinations = text.signs.destinations.split(": ") if text.signs.destinations else []
    destination_ref = destinations[0].split(",")[0] if destinations else ""
    destination = destinations[1].split(",")[0] if len(destinations) > 1 else ""
    first_destination = f"{destination_ref}: {destination}" if destination and destination_ref else destination_ref or destination
    nth = ordinalize(words, leg_index + 1) if 0 <= leg_index != leg_count - 1 else ""
    tokens: dict[str, str | None] = {
        "way_name": way_name,
        "destination": first_destination,
        "exit": text.signs.exits.split(";")[0],
        "exit_number": ordinalize(words, text.exit or 1),
        "rotary_name": text.signs.rotary_name or None,
        "lane_instruction": lane_instruction,
        "modifier": words.constant("modifier", modifier) if modifier else None,
        "direction": direction(words, text.bearing_after),
        "nth": nth,
        "waypoint_name": waypoint_name or None,
        "junction_name": text.junction_name.split(";")[0],
    }
    return tokenize(words, sentence, tokens)


def chosen_object(words: Book, kind: str, modifier: str, text: StepText) -> Any:
    """The translations' object for the maneuver: the mode's (a ferry), else the modifier's,
    else the type's default (an off ramp on the driving side says no side)."""
    strings = words.strings
    if text.mode in strings["modes"]:
        return strings["modes"][text.mode]
    side = text.signs.driving_side
    omit_side = kind == "off ramp" and bool(side) and side in modifier
    if modifier in strings[kind] and not omit_side:
        return strings[kind][modifier]
    return strings[kind]["default"]


def roundabout_object(choice: Any, text: StepText) -> Any:
    if text.signs.rotary_name and text.exit and "name_exit" in choice:
        return choice["name_exit"]
    if text.signs.rotary_name and "name" in choice:
        return choice["name"]
    if text.exit and "exit" in choice:
        return choice["exit"]
    return choice["default"]


def sentence_of(choice: Any, text: StepText, way_name: str, waypoint_name: str) -> str:
    """Which sentence of the object: exit and destination signs, destination signs, exit
    signs, a junction's name, the road's name, the waypoint's name, else the default."""
    signs = text.signs
    for key, wanted in (
        ("exit_destination", signs.destinations and signs.exits),
        ("destination", signs.destinations),
        ("exit", signs.exits),
        ("junction_name", text.junction_name),
        ("name", way_name),
        ("named", waypoint_name),
    ):
        if wanted and key in choice:
            return str(choice[key])
    return str(choice["default"])


def way_name_of(words: Book, text: StepText) -> str:
    """The road as the sentence names it (`getWayName`): "name (ref)", the ref alone on a
    motorway with a numbered ref or without a name, else the name."""
    ref = text.signs.ref.split(";")[0]
    name = "" if text.name == text.signs.ref else text.name
    name = name.replace(f" ({text.signs.ref})", "")
    motorway = text.signs.motorway
    if name and ref and name != ref and not motorway:
        phrase = words.strings["phrase"].get("name and ref") or book("en").strings["phrase"]["name and ref"]
        return tokenize(words, phrase, {"name": name, "ref": ref})
    if (name and ref and motorway and any(c.isdigit() for c in ref)) or (not name and ref):
        return ref
    return name


def lane_config(lanes: tuple[bool, ...]) -> str:
    """The lanes as runs of valid ("o") and invalid ("x") ones: (False, True, True) → "xo"."""
    config: list[str] = []
    for valid in lanes:
        mark = "o" if valid else "x"
        if not config or config[-1] != mark:
            config.append(mark)
    return "".join(config)


def ordinalize(words: Book, number: int) -> str:
    return words.constant("ordinalize", str(number)) or ""


def direction(words: Book, degree: float | None) -> str:
    if degree is None:
        return ""
    for bound, included, name in COMPASS:
        if degree < bound or (included and degree == bound):
            return words.constant("direction", name) or ""
    return ""


def tokenize(words: Book, sentence: str, tokens: dict[str, str | None]) -> str:
    """Fill a sentence's {token} and {token:grammar} places; an unknown token stays as it is.
    A token at the very start is capitalized where the language capitalizes sentences."""
    started_with_token = False
    parts = []
    for literal, token, case, whole in pieces(sentence):
        parts.append(literal)
        if not token:
            continue
        value = tokens.get(token)
        if value is None:
            parts.append(whole)
            continue
        value = grammarize(words, value, case)
        if not literal and len(parts) == 1 and words.capitalize:
            started_with_token = True
            value = capitalized(words.language, value)
        parts.append(value)
    output = "".join(parts).replace("  ", " ")
    if not started_with_token and words.capitalize:
        return capitalized(words.language, output)
    return output


@lru_cache(maxsize=8192)
def pieces(sentence: str) -> tuple[tuple[str, str, str | None, str], ...]:
    """A sentence as (text before, token, grammar case, the place as written) pieces, parsed
    once per sentence (a regex substitution per place was half of a sentence's time)."""
    found, at = [], 0
    for match in TOKEN.finditer(sentence):
        found.append((sentence[at : match.start()], match.group(1), match.group(2), match.group(0)))
        at = match.end()
    found.append((sentence[at:], "", None, ""))
    return tuple(found)


def grammarize(words: Book, name: str, case: str | None) -> str:
    rules = words.grammar.get(case or "")
    if not rules:
        return name
    return grammar_applied(words.language, name, case or "")


@lru_cache(maxsize=16384)
def grammar_applied(language: str, name: str, case: str) -> str:
    """A name in a grammatical case, by the language's rules (French has 90 for articles: each
    street name is run through them once)."""
    text = f" {name} "
    rules = book(language).grammar[case]
    for pattern, replacement, count in rules:
        text = pattern.sub(replacement, text, count=count)
    return text.strip()


def capitalized(language: str, text: str) -> str:
    if not text:
        return text
    first = "İ" if language == "tr" and text[0] == "i" else text[0].upper()  # JS toLocaleUpperCase('tr')
    return first + text[1:]


# ---------------------------------------------------------------- spoken distances


def voice_instruction(sentence: str, before_m: float, wording: Wording) -> str:
    """The sentence as a navigation app speaks it ahead of the maneuver: "In 300 m, Turn left
    onto …" (the translation's "one in distance" phrase); a start is spoken as it is."""
    if before_m <= 0:
        return sentence
    words = book(wording.language)
    phrase = words.strings["phrase"]["one in distance"]
    return tokenize(words, phrase, {"distance": spoken_distance(before_m, wording), "instruction_one": sentence})


FEET_PER_METRE = 3.28084
METRES_PER_MILE = 1609.344


def spoken_distance(metres: float, wording: Wording) -> str:
    """A distance rounded as drivers hear it, in the language's number format: under 100 m to
    10 m, under 1 km to 50 m, under 10 km to 0.1 km; imperial: under 0.1 mi in feet (to 50 ft),
    under 10 mi to 0.1 mi."""
    if wording.units == "imperial":
        miles = metres / METRES_PER_MILE
        if miles < 0.1:
            return written_distance(max(50, round(metres * FEET_PER_METRE / 50) * 50), "length-foot", wording.language)
        return written_distance(round(miles, 1) if miles < 10 else round(miles), "length-mile", wording.language)
    if metres < 1000:
        step = 10 if metres < 100 else 50
        rounded = max(step, round(metres / step) * step)
        if rounded < 1000:
            return written_distance(rounded, "length-meter", wording.language)
    kilometres = metres / 1000
    return written_distance(round(kilometres, 1) if kilometres < 10 else round(kilometres), "length-kilometer", wording.language)


@lru_cache(maxsize=8192)
def written_distance(value: float, unit: str, language: str) -> str:
    """CLDR's short form of a rounded distance (Babel; 40 µs a call, so each is written once)."""
    return format_unit(value, unit, length="short", locale=babel_locale(language))


# Translation codes whose CLDR locale is named otherwise.
BABEL_NAMES = {"no": "nb", "pt-BR": "pt_BR", "pt-PT": "pt_PT", "es-ES": "es_ES", "zh-Hans": "zh_Hans"}


@cache
def babel_locale(language: str) -> Locale:
    try:
        return Locale.parse(BABEL_NAMES.get(language, language))
    except (UnknownLocaleError, ValueError):
        return Locale.parse("en")
