"""Query parameters of the geocoder endpoints → typed queries, every violation collected."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import MissingAddress, ParameterErrors
from common.params import parse_int
from geo_service.config import MAX_ADDRESS_CHARS
from geo_service.countries import ALPHA3_CODES
from geo_service.model import GeocodeQuery, ReverseQuery
from geo_service.normalize import clean
from geo_service.providers import GeocodeProvider, ProviderRegistry

DEFAULT_LIMIT = 5
MAX_LIMIT = 50


@dataclass(frozen=True)
class GeocodeRequest:
    provider: GeocodeProvider
    query: GeocodeQuery


@dataclass(frozen=True)
class ReverseRequest:
    provider: GeocodeProvider
    query: ReverseQuery


def parse_provider(params: Mapping[str, str], registry: ProviderRegistry, errors: ParameterErrors) -> GeocodeProvider:
    provider = registry.get(params.get("provider"))
    if provider is None:
        raw = params.get("provider", "")
        errors.add("provider", f"unknown provider {raw[:40]!r} (known: {', '.join(registry.names)})")
        provider = registry.get(None)
    assert provider is not None
    return provider


def parse_address(params: Mapping[str, str], errors: ParameterErrors) -> str:
    """Control characters (NUL included) are ignored; blank or missing → MissingAddress."""
    raw = params.get("address")
    if raw is None:
        errors.add("address", "is required: the address to look up", MissingAddress)
        return ""
    if len(raw) > MAX_ADDRESS_CHARS:
        errors.add("address", f"must be at most {MAX_ADDRESS_CHARS} characters, got {len(raw)}")
        return ""
    text = " ".join(clean(raw).split())
    if not text:
        errors.add("address", "must not be blank", MissingAddress)
    return text


def parse_country(params: Mapping[str, str], errors: ParameterErrors) -> str | None:
    raw = params.get("country")
    if raw is None or not raw.strip():
        return None
    code = raw.strip().upper()
    if code not in ALPHA3_CODES:
        errors.add("country", f"must be an ISO 3166-1 alpha-3 code such as DEU, got {raw[:40]!r}")
        return None
    return code


def parse_coordinate(params: Mapping[str, str], name: str, bound: float, errors: ParameterErrors) -> float:
    raw = params.get(name)
    if raw is None or not raw.strip():
        errors.add(name, "is required, in decimal degrees")
        return 0.0
    try:
        value = float(raw.strip())
    except ValueError:
        errors.add(name, f"must be a decimal number, got {raw[:40]!r}")
        return 0.0
    if not math.isfinite(value) or not -bound <= value <= bound:
        errors.add(name, f"must be between {-bound:g} and {bound:g}, got {raw[:40]!r}")
        return 0.0
    return value


def parse_limit(params: Mapping[str, str], errors: ParameterErrors) -> int:
    return parse_int(params, "limit", errors, default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)


def geocode_request(params: Mapping[str, str], registry: ProviderRegistry) -> GeocodeRequest:
    errors = ParameterErrors()
    address = parse_address(params, errors)
    provider = parse_provider(params, registry, errors)
    country = parse_country(params, errors)
    limit = parse_limit(params, errors)
    errors.raise_if_any()
    return GeocodeRequest(provider, GeocodeQuery(address, country, limit))


def reverse_request(params: Mapping[str, str], registry: ProviderRegistry) -> ReverseRequest:
    errors = ParameterErrors()
    lat = parse_coordinate(params, "lat", 90.0, errors)
    lon = parse_coordinate(params, "lon", 180.0, errors)
    provider = parse_provider(params, registry, errors)
    limit = parse_limit(params, errors)
    errors.raise_if_any()
    return ReverseRequest(provider, ReverseQuery(lat, lon, limit))
