"""Query parameters of the geocoder endpoints → typed queries, every violation collected."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import ApiError, InvalidParameter, MissingAddress, ParameterErrors, UnsupportedMediaType
from common.languages import NO_HEADERS, parse_language
from common.params import Degrees, Whole, parse_latlon_text, read_query
from common.providers import requested_provider
from common.vocabulary import GEOCODER_BATCH_CSV_TYPES, GEOCODER_BATCH_JSON_LINES_TYPES, LANGUAGES
from geo_service.batch import MAX_JOB_LINES, MAX_SYNC_LINES, BatchLine, Form, LineKind
from geo_service.config import MAX_ADDRESS_CHARS
from geo_service.countries import ALPHA3_CODES
from geo_service.model import AutocompleteQuery, GeocodeQuery, ReverseQuery, StructuredAddress
from geo_service.normalize import clean, tidy
from geo_service.parser import parse_house_number
from geo_service.providers import GeocodeProvider, ProviderRegistry

MAX_LIMIT = 50
GEOCODE_LIMIT = Whole("limit", 1, MAX_LIMIT, 5)
# Reverse geocoding answers the one nearest address unless asked for more (as the spec says).
REVERSE_LIMIT = Whole("limit", 1, MAX_LIMIT, 1)
REVERSE_POINT = (Degrees("lat", 90.0), Degrees("lon", 180.0))


@dataclass(frozen=True)
class ProviderRequest[Q]:
    """One operation's typed query and the provider that answers it."""

    provider: GeocodeProvider
    query: Q
    # The answer's names in this language where OSM has them, local otherwise (issue 35, item 3);
    # None: each result as found (the name it was found by).
    language: str | None = None


GeocodeRequest = ProviderRequest[GeocodeQuery]
ReverseRequest = ProviderRequest[ReverseQuery]
AutocompleteRequest = ProviderRequest[AutocompleteQuery]




def parse_names_language(params: Mapping[str, str], headers: Mapping[str, str], errors: ParameterErrors) -> str | None:
    """`language` of the answer's names (common.languages' rule over the platform's LANGUAGES),
    else Accept-Language's first match; None when neither names one: names as found."""
    return parse_language(params, headers, LANGUAGES, errors, default=None)


def parse_provider(params: Mapping[str, str], registry: ProviderRegistry, errors: ParameterErrors) -> GeocodeProvider:
    """The named provider, or the default one (also when the name is refused: the request
    fails with the violation in `errors`, after its other parameters are checked)."""
    provider = registry.get(requested_provider(params.get("provider"), registry.names, errors))
    assert provider is not None  # None names the default, which is registered
    return provider


def parse_address(params: Mapping[str, str], errors: ParameterErrors) -> str:
    """Control characters (NUL included) are ignored; blank or missing → MissingAddress."""
    return required_text(params, "address", "the address to look up", errors, MissingAddress) or ""


def required_text(
    params: Mapping[str, str], name: str, what: str, errors: ParameterErrors, missing: type[ApiError] = InvalidParameter
) -> str | None:
    """A text parameter that must be given, at most MAX_ADDRESS_CHARS long and not blank: tidied
    (control characters and runs of spaces as one space); a missing or blank one is `missing`'s
    problem (an invalid parameter unless said)."""
    raw = params.get(name)
    if raw is None:
        errors.add(name, f"is required: {what}", missing)
        return None
    if len(raw) > MAX_ADDRESS_CHARS:
        errors.add(name, f"must be at most {MAX_ADDRESS_CHARS} characters, got {len(raw)}")
        return None
    text = tidy(raw)
    if not text:
        errors.add(name, "must not be blank", missing)
        return None
    return text


# Structured input: the API's parameter → the field of StructuredAddress.
STRUCTURED_PARAMETERS = {"street": "street", "houseNumber": "house_number", "postalCode": "postcode", "city": "city"}
MAX_POSTCODE_CHARS = 20
_POSTCODE = re.compile(rf"[A-Za-z0-9 -]{{1,{MAX_POSTCODE_CHARS}}}")


def parse_structured(params: Mapping[str, str], errors: ParameterErrors) -> StructuredAddress | None:
    """street / houseNumber / postalCode / city; blank ones count as absent."""
    values: dict[str, str] = {}
    too_long = False
    for name, field in STRUCTURED_PARAMETERS.items():
        raw = params.get(name)
        if raw is None:
            continue
        if len(raw) > MAX_ADDRESS_CHARS:
            errors.add(name, f"must be at most {MAX_ADDRESS_CHARS} characters, got {len(raw)}")
            too_long = True
        elif text := tidy(raw):
            values[field] = text
    if too_long:
        return None
    if not values:
        errors.add("address", "is required: the address to look up, or street, postalCode and/or city", MissingAddress)
        return None
    number = values.get("house_number")
    if number is not None and parse_house_number(number) is None:
        errors.add("houseNumber", f"must be a house number such as 12, 12a or 12-14, got {number[:40]!r}")
    if number is not None and "street" not in values:
        errors.add("houseNumber", "needs street: a house number alone names no place")
    postcode = values.get("postcode")
    if postcode is not None and not _POSTCODE.fullmatch(postcode):
        errors.add(
            "postalCode", f"must be up to {MAX_POSTCODE_CHARS} letters, digits, spaces or hyphens, got {postcode[:40]!r}"
        )
    return StructuredAddress(**values)


def parse_address_or_parts(params: Mapping[str, str], errors: ParameterErrors) -> tuple[str, StructuredAddress | None]:
    """Free text in `address`, or its parts in the structured parameters: one form, not both."""
    parts = [name for name in STRUCTURED_PARAMETERS if name in params]
    if not parts:
        return parse_address(params, errors), None
    if "address" in params:
        errors.add("address", f"give either address or {', '.join(parts)}, not both")
        return "", None
    return "", parse_structured(params, errors)


def parse_country(params: Mapping[str, str], errors: ParameterErrors) -> str | None:
    raw = params.get("country")
    if raw is None or not raw.strip():
        return None
    code = raw.strip().upper()
    if code not in ALPHA3_CODES:
        errors.add("country", f"must be an ISO 3166-1 alpha-3 code such as DEU, got {raw[:40]!r}")
        return None
    return code


def geocode_request(params: Mapping[str, str], registry: ProviderRegistry,
                    headers: Mapping[str, str] = NO_HEADERS) -> GeocodeRequest:
    errors = ParameterErrors()
    address, structured = parse_address_or_parts(params, errors)
    provider = parse_provider(params, registry, errors)
    country = parse_country(params, errors)
    limit = GEOCODE_LIMIT.read(params, errors)
    language = parse_names_language(params, headers, errors)
    errors.raise_if_any()
    return GeocodeRequest(provider, GeocodeQuery(address, country, limit, structured), language)


def reverse_request(params: Mapping[str, str], registry: ProviderRegistry,
                    headers: Mapping[str, str] = NO_HEADERS) -> ReverseRequest:
    errors = ParameterErrors()
    lat, lon = read_query(params, REVERSE_POINT, errors)
    provider = parse_provider(params, registry, errors)
    limit = REVERSE_LIMIT.read(params, errors)
    language = parse_names_language(params, headers, errors)
    errors.raise_if_any()
    return ReverseRequest(provider, ReverseQuery(lat, lon, limit), language)


# ---------------------------------------------------------------- autocomplete

AUTOCOMPLETE_LIMIT = Whole("limit", 1, 20, 5)  # a list of suggestions under a text field, not a result page


def parse_text(params: Mapping[str, str], errors: ParameterErrors) -> str:
    """The text typed so far, spaces collapsed, but a trailing space kept: it says the last word
    is finished. Missing or blank is an invalid `text`, not MissingAddress: that problem names the
    geocoder's `address` parameter, and a client acting on its code would look at the wrong field."""
    text = required_text(params, "text", "the text typed so far", errors)
    if text is None:
        return ""
    return text + " " if clean(params["text"])[-1].isspace() else text


def parse_focus(params: Mapping[str, str], errors: ParameterErrors) -> tuple[float, float] | None:
    """`<lat>,<lon>` in decimal degrees, as the route endpoint reads its points; blank is absent."""
    raw = params.get("focus")
    if raw is None or not raw.strip():
        return None
    parsed = parse_latlon_text(raw.strip())
    if isinstance(parsed, str):
        errors.add("focus", f"{parsed}, got {raw[:40]!r}")
        return None
    return (parsed.lat, parsed.lon)


def autocomplete_request(params: Mapping[str, str], registry: ProviderRegistry,
                         headers: Mapping[str, str] = NO_HEADERS) -> AutocompleteRequest:
    errors = ParameterErrors()
    text = parse_text(params, errors)
    provider = parse_provider(params, registry, errors)
    country = parse_country(params, errors)
    limit = AUTOCOMPLETE_LIMIT.read(params, errors)
    focus = parse_focus(params, errors)
    language = parse_names_language(params, headers, errors)
    errors.raise_if_any()
    return AutocompleteRequest(provider, AutocompleteQuery(text, country, limit, focus), language)


# ---------------------------------------------------------------- batches

# Each batch line answers its best result unless asked for more; at most a few: a batch is
# a list of addresses to place, not a search result page per line.
BATCH_LIMIT = Whole("limit", 1, 5, 1)
BATCH_TYPES = {
    **dict.fromkeys(GEOCODER_BATCH_CSV_TYPES, Form.CSV),
    **dict.fromkeys(GEOCODER_BATCH_JSON_LINES_TYPES, Form.JSON_LINES),
}
UTF8 = ("utf-8", "utf8")


@dataclass(frozen=True)
class BatchRequest:
    """A batch's form and the parameters every line gets (`provider`, `country`, `limit`)."""

    form: Form
    defaults: dict[str, str]
    max_lines: int
    registry: ProviderRegistry

    def line_request(self, line: BatchLine) -> GeocodeRequest | ReverseRequest:
        """The line as the geocoder request its parameters make; raises its violations."""
        params = {**self.defaults, **line.params}
        if line.kind is LineKind.REVERSE:
            params.pop("country", None)  # a reverse lookup has no country filter
            return reverse_request(params, self.registry)
        return geocode_request(params, self.registry)


def batch_request(params: Mapping[str, str], content_type: str, charset: str | None,
                  registry: ProviderRegistry, in_job: bool) -> BatchRequest:  # fmt: skip
    """The batch's query parameters and Content-Type; every violation at once (415 first)."""
    form = BATCH_TYPES.get(content_type)
    if form is None or (charset is not None and charset.lower() not in UTF8):
        raise UnsupportedMediaType(
            f"send the batch as text/csv or application/x-ndjson (charset utf-8 if any), got {content_type[:80]!r}",
            parameter="Content-Type",
        )
    errors = ParameterErrors()
    provider = parse_provider(params, registry, errors)
    country = parse_country(params, errors)
    limit = BATCH_LIMIT.read(params, errors)
    errors.raise_if_any()
    defaults = {"provider": provider.name, "limit": str(limit)}
    if country is not None:
        defaults["country"] = country
    return BatchRequest(form, defaults, MAX_JOB_LINES if in_job else MAX_SYNC_LINES, registry)
