"""Which language an answer is written in: the request's `language` (a BCP 47 tag) or else its
`Accept-Language` header, matched against what a service can write (issue 35).

The rule, the same for every service: a tag matches a supported one exactly (case-insensitive),
else by its primary language ("de-AT" → "de"; "pt" → the first "pt-…" supported), else through
a few aliases of the same language ("nb" and "nn" → "no"). An explicit `language` that matches
nothing is the caller's mistake (a 400 naming the supported ones); an `Accept-Language` list is
a preference, so each of its tags is tried by weight and English answers when none matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

from common.errors import ParameterErrors
from common.vocabulary import LANGUAGES

DEFAULT_LANGUAGE = "en"
# Tags that name the same written language as one a translation set files under another code.
ALIASES = {"nb": "no", "nn": "no", "zh": "zh-hans", "zh-cn": "zh-hans", "zh-sg": "zh-hans"}
MAX_TAG_LENGTH = 35  # BCP 47 tags in use are far shorter; longer is not a language


def match_language(tag: str, supported: Sequence[str]) -> str | None:
    """The supported code a BCP 47 tag means, or None."""
    wanted = tag.strip().lower().replace("_", "-")
    if not wanted or len(wanted) > MAX_TAG_LENGTH:
        return None
    by_lower = {code.lower(): code for code in supported}
    primary = wanted.split("-")[0]
    for candidate in (wanted, ALIASES.get(wanted), primary, ALIASES.get(primary)):
        if candidate and candidate in by_lower:
            return by_lower[candidate]
    # "pt" with only "pt-BR"/"pt-PT" written: the first regional form supported
    return next((code for lower, code in by_lower.items() if lower.split("-")[0] == primary), None)


def accepted_languages(header: str) -> list[str]:
    """An Accept-Language header's tags, most wanted first (q=0 and "*" left out)."""
    weighted = []
    for position, part in enumerate(header.split(",")):
        tag, _, parameters = part.partition(";")
        weight = 1.0
        name, _, value = parameters.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                weight = float(value)
            except ValueError:
                weight = 0.0
        if tag.strip() and tag.strip() != "*" and weight > 0:
            weighted.append((-weight, position, tag.strip()))
    return [tag for _, _, tag in sorted(weighted)]


# Request headers where a caller passes none (a parser called from code, not a request).
NO_HEADERS: Mapping[str, str] = {}


@overload
def parse_language(params: Mapping[str, str], headers: Mapping[str, str], supported: Sequence[str],
                   errors: ParameterErrors, name: str = ..., default: str = ...) -> str: ...  # fmt: skip
@overload
def parse_language(params: Mapping[str, str], headers: Mapping[str, str], supported: Sequence[str],
                   errors: ParameterErrors, name: str = ..., *, default: None) -> str | None: ...  # fmt: skip
def parse_language(params: Mapping[str, str], headers: Mapping[str, str], supported: Sequence[str],
                   errors: ParameterErrors, name: str = "language",
                   default: str | None = DEFAULT_LANGUAGE) -> str | None:  # fmt: skip
    """The language to answer in: `params[name]`, else Accept-Language's first match, else
    `default` (English; None where the answer then keeps what it found, the geocoder's names)."""
    asked = params.get(name)
    if asked is not None:
        found = match_language(str(asked), supported)
        if found is None:
            errors.add(name, f"unsupported language {str(asked)[:MAX_TAG_LENGTH]!r}; supported: {', '.join(supported)}")
            return default
        return found
    for tag in accepted_languages(headers.get("Accept-Language", "")):
        found = match_language(tag, supported)
        if found is not None:
            return found
    return default


def names_in_languages(tags: Mapping[str, str], name: str) -> dict[str, str]:
    """An OSM object's names in the platform's languages (`name:<lang>`) that differ from its
    local `name` (the route importer's street names, the geocoder's translations)."""
    found = {language: tags.get(f"name:{language}") for language in LANGUAGES}
    return {language: other for language, other in found.items() if other and other != name}


def most_carried[K](counts: Mapping[tuple[K, str], int]) -> dict[K, str]:
    """For each key, the name most objects carry ((key, name) → how many); a tie goes to the
    name last in alphabetical order, so that a table is the same whatever order objects came in.
    A translation table, not per object: two "Kirchstraße" of two villages give one answer."""
    best: dict[K, tuple[int, str]] = {}
    for (key, name), count in counts.items():
        if key not in best or (count, name) > best[key]:
            best[key] = (count, name)
    return {key: name for key, (_, name) in best.items()}
