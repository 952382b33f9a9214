"""A geocoder answer's names in the language asked (issue 35, item 3; issue 34, item 3): the
same rule as a route's streets (route_service.street_names). A name is written as OSM writes
the object in that language (`name:<lang>`) where the map has it, else as its local `name`;
a result found by one of its other names ("Helsingfors domkyrka") answers by its local name
when the language has none. The tables come from the index (extract.count_translations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from geo_service.model import GeocodeResult

Tables = Callable[[str], dict[str, str]]  # "<kind>:<language>" → name → name in it ("<kind>:": local)


def name_in(name: str | None, kind: str, language: str, tables: Tables) -> str | None:
    """A street's ("street"), town's ("place") or POI's ("poi") name in the language."""
    if not name:
        return name
    own, local = tables(f"{kind}:{language}"), tables(f"{kind}:")
    local_name = local.get(name, name)
    return own.get(name) or own.get(local_name) or local_name


def names_in(results: list[GeocodeResult], language: str, tables: Tables) -> list[GeocodeResult]:
    """The results with their own name, street and city in the language, local names where it
    has none."""
    return [result_in(result, language, tables) for result in results]


def result_in(result: GeocodeResult, language: str, tables: Tables) -> GeocodeResult:
    address = result.address
    street = name_in(address.street, "street", language, tables)
    city = name_in(address.city, "place", language, tables)
    name = name_in(result.name, "place" if result.type == "place" else "poi", language, tables)
    return replace(result, name=name, address=replace(address, street=street, city=city))
