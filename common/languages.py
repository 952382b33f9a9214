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

from common.errors import ParameterErrors

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


def parse_language(params: Mapping[str, str], headers: Mapping[str, str], supported: Sequence[str],
                   errors: ParameterErrors, name: str = "language") -> str:  # fmt: skip
    """The language to answer in: `params[name]`, else Accept-Language, else English."""
    asked = params.get(name)
    if asked is not None:
        found = match_language(str(asked), supported)
        if found is None:
            errors.add(name, f"unsupported language {str(asked)[:MAX_TAG_LENGTH]!r}; supported: {', '.join(supported)}")
            return DEFAULT_LANGUAGE
        return found
    for tag in accepted_languages(headers.get("Accept-Language", "")):
        found = match_language(tag, supported)
        if found is not None:
            return found
    return DEFAULT_LANGUAGE
