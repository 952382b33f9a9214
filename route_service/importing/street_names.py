"""Street names in other languages (issue 35, item 3): for each language of the platform, the
name a street carries in it (`name:<lang>`) beside its local `name`, read from the map's OSM
ways once at import and written as `street_names.json` (read by route_service.street_names).

Where one local name has several translations (two "Kirchstraße" in different villages), the
one most ways carry wins: a translation table, not per way, because the engines answer a step's
name, not its way.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import osmium

from common.languages import most_carried, names_in_languages

FILE_NAME = "street_names.json"


class StreetNameReader(osmium.SimpleHandler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[tuple[tuple[str, str], str]] = Counter()  # ((language, name), other) → ways

    def way(self, way: Any) -> None:
        tags = way.tags
        name = tags.get("name")
        if not name or "highway" not in tags:
            return
        for language, other in names_in_languages(tags, name).items():
            self.seen[((language, name), other)] += 1


def write_street_names(pbf: Path, out: Path) -> dict[str, int]:
    """Read the streets' names by language and write the table; answers how many names a language has."""
    reader = StreetNameReader()
    reader.apply_file(str(pbf))
    table: dict[str, dict[str, str]] = {}
    for (language, name), other in sorted(most_carried(reader.seen).items()):
        table.setdefault(language, {})[name] = other
    out.write_text(json.dumps(table, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    return {language: len(names) for language, names in table.items()}
