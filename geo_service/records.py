"""The index's records as the importer makes them: addresses and searchable names.

`build` makes them and `store.write_index` writes them, one table row each; what a query
reads back are the store's own row types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A named object with one of these tags is a POI; its category is the first one's key=value
# (`extract.poi_category`). The geocoder's kinds of places (kinds.py) ask for these categories.
POI_KEYS = ("amenity", "shop", "tourism", "leisure", "office", "historic", "craft", "healthcare", "sport")
POI_VALUES = {
    "railway": {"station", "halt", "tram_stop"},
    "public_transport": {"station"},
    "aeroway": {"aerodrome", "terminal"},
    "natural": {"peak", "beach", "cave_entrance"},
    "building": {"church", "cathedral", "public", "civic", "government", "museum", "school", "university"},
}


@dataclass
class Address:
    """A house number, filled in; `street_id` is its street's position among the names, `id` its
    row in the index (0 until it is written): what the importer writes and the store reads."""

    street: str
    house_number: str
    house_key: str
    house_base: int
    postcode: str | None
    city: str | None
    country: str | None
    lat: float
    lon: float
    interpolated: bool
    street_id: int = -1
    id: int = 0


@dataclass
class Named:
    """A searchable name: a street group, a place or a POI."""

    kind: str  # street | place | poi
    name: str
    key: str
    lat: float
    lon: float
    city: str | None = None
    postcode: str | None = None
    country: str | None = None
    importance: float = 0.0
    category: str | None = None
    street: str | None = None
    house_number: str | None = None
    postcodes: set[str] = field(default_factory=set)
    geometry: list[list[tuple[float, float]]] = field(default_factory=list)  # (lat, lon) of each way


@dataclass
class PostcodePoint:
    """An object that carries addr:postcode, named or not (a parking lot, a bare address area):
    where a postcode is, and the town its objects give it. Postcode areas are their centres."""

    postcode: str
    city: str | None
    country: str | None
    lat: float
    lon: float


@dataclass
class Dataset:
    """Everything one index holds (of one input, or several merged)."""

    addresses: list[Address]
    names: list[Named]
    vocabulary: set[str]
    default_country: str | None
    default_city: str | None
    # (name, language) → the name in that language ("": the local name): see extract.count_translations
    translations: dict[tuple[str, str], str] = field(default_factory=dict)
    postcodes: list[PostcodePoint] = field(default_factory=list)
