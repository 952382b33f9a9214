"""What a geocoding provider receives and answers: plain typed values, no HTTP."""

from __future__ import annotations

from dataclasses import dataclass

RESULT_TYPES = ("address", "street", "place", "poi")
# How much of the query a result matched (issue 34, item 4), finest first: the house number
# (tagged, or estimated along an addr:interpolation way), only the street, the postcode's
# area, a place (a suburb, a square), a POI, a city, town or village.
MATCH_LEVELS = ("houseNumber", "interpolated", "street", "postcode", "place", "poi", "city")
CITY_CATEGORIES = frozenset({"place=city", "place=town", "place=village", "place=municipality"})


@dataclass(frozen=True)
class StructuredAddress:
    """The parts of an address given one by one (street=, houseNumber=, postalCode=, city=)."""

    street: str | None = None
    house_number: str | None = None
    postcode: str | None = None
    city: str | None = None

    def as_text(self) -> str:
        """One line, for cache keys and notes."""
        return ", ".join(p for p in (self.street, self.house_number, self.postcode, self.city) if p)


@dataclass(frozen=True)
class GeocodeQuery:
    text: str  # free text; empty when `structured` is given
    country: str | None = None  # ISO 3166-1 alpha-3, upper case
    limit: int = 5
    structured: StructuredAddress | None = None


@dataclass(frozen=True)
class ReverseQuery:
    lat: float
    lon: float
    limit: int = 5


@dataclass(frozen=True)
class ResultAddress:
    street: str | None = None
    house_number: str | None = None
    postcode: str | None = None
    city: str | None = None
    country: str | None = None


@dataclass(frozen=True)
class GeocodeResult:
    lat: float
    lon: float
    address: ResultAddress
    type: str  # one of RESULT_TYPES
    score: float  # 0..1, higher is better
    name: str | None = None  # the place's or POI's own name
    category: str | None = None  # OSM key=value of a place or POI
    distance_m: float | None = None  # reverse geocoding: from the asked point
    interpolated: bool = False


def match_level(result: GeocodeResult) -> str:
    """The result's MATCH_LEVELS entry, read from its type and category."""
    if result.type == "address":
        return "interpolated" if result.interpolated else "houseNumber"
    if result.type == "place":
        if result.category == "postcode":
            return "postcode"
        return "city" if result.category in CITY_CATEGORIES else "place"
    return result.type  # street, poi


@dataclass(frozen=True)
class Note:
    """Why an answer is empty (or may be partial), for people and programs: a stable code and a sentence."""

    code: str
    message: str


@dataclass(frozen=True)
class GeocodeAnswer:
    results: list[GeocodeResult]
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class AutocompleteQuery:
    """Text being typed: its last word is a prefix unless the text ends in a space or comma."""

    text: str
    country: str | None = None  # ISO 3166-1 alpha-3, upper case
    limit: int = 5
    focus: tuple[float, float] | None = None  # (lat, lon): nearer suggestions first
