"""Street names in the answer's language (issue 35, item 3): a step's name as OSM writes it in
that language (`name:<lang>`) where the map has one, the local name otherwise. The table is
the dataset's `street_names.json` (route_service.importing.street_names); a dataset imported
before it existed translates nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from route_service.model import Leg, Route, RouteResult

FILE_NAME = "street_names.json"
# The translation set's codes whose OSM name key differs ("no": Norwegian, OSM's name:nb).
OSM_KEYS = {"no": ("nb", "no")}


@dataclass(frozen=True, eq=False)
class StreetNames:
    by_language: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> StreetNames:
        file = path / FILE_NAME
        if not file.is_file():
            return cls()
        return cls(json.loads(file.read_text(encoding="utf-8")))

    def table(self, language: str) -> dict[str, str]:
        """The names of one answer language ("sv", "pt-PT" → pt, "no" → nb), empty for none."""
        primary = language.split("-")[0].lower()
        for key in OSM_KEYS.get(primary, (primary,)):
            if key in self.by_language:
                return self.by_language[key]
        return {}

    def translated(self, result: RouteResult, language: str) -> RouteResult:
        """The result with its steps' and summaries' street names in the language."""
        names = self.table(language)
        if not names:
            return result
        return replace(result, routes=[route_in(route, names) for route in result.routes])


@lru_cache(maxsize=4)  # the dataset in service, and the one before a switch
def of_dataset(path: Path) -> StreetNames:
    return StreetNames.read(path)


def route_in(route: Route, names: dict[str, str]) -> Route:
    return replace(route, legs=[leg_in(leg, names) for leg in route.legs])


def leg_in(leg: Leg, names: dict[str, str]) -> Leg:
    steps = [replace(step, name=names.get(step.name, step.name)) for step in leg.steps]
    summary = ", ".join(names.get(part, part) for part in leg.summary.split(", ")) if leg.summary else leg.summary
    return replace(leg, steps=steps, summary=summary)
