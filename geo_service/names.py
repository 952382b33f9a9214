"""A geocoder answer's names in the language asked (issue 35, item 3; issue 34, item 3): the
same rule as a route's streets (route_service.street_names). A name is written as OSM writes
the object in that language (`name:<lang>`) where the map has it, else as its local `name`;
a result found by one of its other names ("Helsingfors domkyrka") answers by its local name
when the language has none. The tables come from the index (extract.count_translations)."""

from __future__ import annotations

from dataclasses import replace

from geo_service.model import GeocodeResult


def name_in(name: str | None, own: dict[str, str], local: dict[str, str]) -> str | None:
    if not name:
        return name
    local_name = local.get(name, name)
    return own.get(name) or own.get(local_name) or local_name


def names_in(results: list[GeocodeResult], own: dict[str, str], local: dict[str, str]) -> list[GeocodeResult]:
    """The results with their own name, street and city in the language (`own`), local names
    (`local`) where it has none."""
    return [result_in(result, own, local) for result in results]


def result_in(result: GeocodeResult, own: dict[str, str], local: dict[str, str]) -> GeocodeResult:
    address = result.address
    street, city = name_in(address.street, own, local), name_in(address.city, own, local)
    return replace(result, name=name_in(result.name, own, local), address=replace(address, street=street, city=city))
