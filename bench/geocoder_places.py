"""Places, kinds and postcodes, and names that are not on the map (issue 34, item 5).

Every case is drawn by rule from the OSM extracts read with plain pyosmium (not the importer),
seeded, on each extract's own index and on all five as one index:
- POI name: a named POI node whose name no other named object of the extract carries, asked
  alone; correct when the top result lies within 100 m of the node.
- place name: a place node (city ... locality) with a name of its own, asked alone; within 200 m.
- other name: an alt_name, old_name, official_name, short_name, loc_name or name:<lang> of
  such a POI or place that no other object carries; within 100 m.
- part of a name: the longest word (≥ 6 letters) of such a POI's name of several words that no
  other name of the extract holds as a word, split at any non-letter as the geocoder splits
  ("Tuomiokirkko"; "Johannes" is no part of one name beside "Johannes-Hoops-Weg"), asked alone;
  within 100 m.
- kind in a city: the preset name (en, de, fr, fi, iD's tagging schema) of each kind with at
  least 3 POIs in one of the index's three busiest cities, then the city; correct when the top
  result is a POI of that kind in that city.
- postcode and city: each addr:postcode with the addr:city most addresses give it; correct
  when the top result is that postcode's area (matchLevel postcode, the postcode kept).
- not on the map: names of POIs and places of the other extracts that no object of the asked
  map carries as any name (casefolded), asked alone; correct when the answer is empty, or, for a
  name that is a kind's preset name alone ("Geldautomat"), a POI of that kind. On the merged
  map, each extract's names are asked of the other four merged ("all but one"), since every
  shared name is on the map of all five.

Goals (the issue's): ≥ 95 % top-1 on the positive kinds; ≤ 2 % false positives. In process
(`Matcher.geocode`), like the address benchmark's cross-check. `python -m bench.geocoder_places`
prints the section.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import osmium

from common.config import REPO_ROOT
from common.datasets import read_current
from common.geo import LatLon, haversine_m
from common.vocabulary import LANGUAGES
from geo_service.importing.extract import MIN_VARIANT_LETTERS, PLACE_TYPES, VARIANT_KEYS, poi_category
from geo_service.importing.importer import run_import
from geo_service.index import LoadedIndex, open_index
from geo_service.kinds import preset_words
from geo_service.model import GeocodeAnswer, GeocodeQuery, GeocodeResult, match_level

OSM = REPO_ROOT.parent / "shared" / "osm"
CITIES = ("heidelberg", "munich", "helsinki", "monaco", "andorra")
SEED = 20261128
PER_KIND = int(os.environ.get("BENCH_PLACES_PER_KIND", "100"))
NOT_ON_MAP = int(os.environ.get("BENCH_PLACES_NOT_ON_MAP", "200"))
MIN_LETTERS = 4  # shorter names are abbreviations more than names
KIND_LANGUAGES = ("en", "de", "fr", "fi")
POI_TOLERANCE_M = 100.0
PLACE_TOLERANCE_M = 200.0
TOP1_GOAL = 0.95
FALSE_POSITIVE_GOAL = 0.02
VARIANTS = (*VARIANT_KEYS, *(f"name:{language}" for language in LANGUAGES))

POI_NAME, PLACE_NAME, OTHER_NAME, PART, KIND, POSTCODE, NOT_ON_THE_MAP = (
    "POI name", "place name", "other name", "part of a name", "kind in a city", "postcode and city",
    "not on the map")  # fmt: skip
POSITIVE_KINDS = (POI_NAME, PLACE_NAME, OTHER_NAME, PART, KIND, POSTCODE)
PART_LETTERS = 6
# A name's words as the geocoder splits them: "Johannes-Hoops-Weg" holds "Johannes" (bench rule
# corrected on 2026-11-29: with spaces only, such a word passed for one name's alone).
WORD_SEPARATORS = re.compile(r"[^\w]+")


@dataclass(frozen=True)
class Case:
    kind: str
    text: str
    check: Callable[[GeocodeAnswer], bool]


@dataclass
class Extract:
    """What one extract names, read with plain pyosmium."""

    every_name: set[str]  # casefolded, any name tag of any object
    pois: list[tuple[str, LatLon]]
    places: list[tuple[str, LatLon]]
    variants: list[tuple[str, LatLon]]
    postcodes: dict[str, Counter[str]]
    parts: list[tuple[str, LatLon]] = field(default_factory=list)


def read_extract(path: Path) -> Extract:
    names: Counter[str] = Counter()
    pois: list[tuple[str, LatLon]] = []
    places: list[tuple[str, LatLon]] = []
    variants: list[tuple[str, LatLon]] = []
    postcodes: dict[str, Counter[str]] = defaultdict(Counter)
    for obj in osmium.FileProcessor(str(path)):
        tags = obj.tags
        if (postcode := tags.get("addr:postcode")) and (city := tags.get("addr:city")):
            postcodes[postcode.strip()][city.strip()] += 1
        own = {v.casefold() for k, v in tags if k == "name" or k in VARIANTS}
        names.update(own)
        name = tags.get("name")
        if not name or not isinstance(obj, osmium.osm.Node):
            continue
        point = LatLon(obj.location.lat, obj.location.lon)
        is_place = tags.get("place") in PLACE_TYPES
        if not is_place and not poi_category(tags):
            continue
        (places if is_place else pois).append((name, point))
        for key in VARIANTS:
            for value in (tags.get(key) or "").split(";"):
                if value.strip() and value.strip() != name and sum(c.isalpha() for c in value) >= MIN_VARIANT_LETTERS:
                    variants.append((value.strip(), point))
    # A POI's name or a variant: no other object carries it. A place's: no other place (streets
    # and stops are named after places, and a place still answers its name first).
    once = {n for n, count in names.items() if count == 1}
    place_names = Counter(n.casefold() for n, _ in places)
    usable = [(n, p) for n, p in places if place_names[n.casefold()] == 1]
    # A part: the longest word of a POI's name of several words that no other name of the
    # extract holds as a word ("Tuomiokirkko" of "Helsingin tuomiokirkko").
    words = Counter(w for name in names for w in set(WORD_SEPARATORS.split(name)))
    parts = []
    for name, point in own_name(pois, once):
        mine = [w for w in name.split() if w.isalpha() and len(w) >= PART_LETTERS and words[w.casefold()] == 1]
        if len(name.split()) > 1 and mine:
            parts.append((max(mine, key=len), point))
    return Extract(set(names), own_name(pois, once), own_name(usable, set(place_names)), own_name(variants, once),
                   {code: cities for code, cities in postcodes.items() if ";" not in code and "," not in code},
                   parts)  # fmt: skip


def own_name(items: list[tuple[str, LatLon]], allowed: set[str]) -> list[tuple[str, LatLon]]:
    return [(n, p) for n, p in items if n.casefold() in allowed and sum(c.isalpha() for c in n) >= MIN_LETTERS]


def near(point: LatLon, metres: float) -> Callable[[GeocodeAnswer], bool]:
    return lambda a: bool(a.results) and haversine_m(point, LatLon(a.results[0].lat, a.results[0].lon)) <= metres


def the_place(name: str, point: LatLon) -> Callable[[GeocodeAnswer], bool]:
    """Near the node, or the place of that name (a town's answer is its centre, which may lie
    kilometres from its node; the name is the only place's of that name in its extract)."""
    def check(a: GeocodeAnswer) -> bool:
        top = a.results[0] if a.results else None
        return near(point, PLACE_TOLERANCE_M)(a) or (top is not None and top.type == "place" and
                                                     (top.name or top.address.city or "").casefold() == name.casefold())  # fmt: skip
    return check


def postcode_area(postcode: str) -> Callable[[GeocodeAnswer], bool]:
    def check(a: GeocodeAnswer) -> bool:
        return bool(a.results) and match_level(a.results[0]) == "postcode" and a.results[0].address.postcode == postcode
    return check


def of_kind(categories: frozenset[str], city: str) -> Callable[[GeocodeAnswer], bool]:
    def check(a: GeocodeAnswer) -> bool:
        top: GeocodeResult | None = a.results[0] if a.results else None
        return top is not None and top.category in categories and top.address.city == city
    return check


def draw(*where: str) -> random.Random:
    """A draw of its own per map and kind of case: adding a kind leaves the others' cases as they were."""
    return random.Random(f"{SEED}-{'-'.join(where)}")


def sample(items: list[tuple[str, LatLon]], count: int, rng: random.Random) -> list[tuple[str, LatLon]]:
    return rng.sample(items, min(count, len(items)))


def name_cases(extract: Extract, city: str) -> list[Case]:
    return [
        *(Case(POI_NAME, n, near(p, POI_TOLERANCE_M)) for n, p in sample(extract.pois, PER_KIND, draw(city, POI_NAME))),
        *(Case(PLACE_NAME, n, the_place(n, p)) for n, p in sample(extract.places, PER_KIND, draw(city, PLACE_NAME))),
        *(Case(OTHER_NAME, n, near(p, POI_TOLERANCE_M)) for n, p in sample(extract.variants, PER_KIND, draw(city, OTHER_NAME))),
        *(Case(PART, n, near(p, POI_TOLERANCE_M)) for n, p in sample(extract.parts, PER_KIND, draw(city, PART))),
    ]


def postcode_cases(extract: Extract, rng: random.Random) -> list[Case]:
    pairs = sorted((code, cities.most_common(1)[0][0]) for code, cities in extract.postcodes.items())
    return [Case(POSTCODE, f"{code} {city}", postcode_area(code)) for code, city in rng.sample(pairs, min(PER_KIND, len(pairs)))]


def kind_cases(index: LoadedIndex, rng: random.Random) -> list[Case]:
    """Each kind with ≥ 3 POIs in one of the index's three busiest cities, by its preset names."""
    connection = index.reader.connection()
    cities = [c for (c,) in connection.execute(
        "SELECT city FROM names WHERE kind = 'poi' AND city IS NOT NULL GROUP BY city ORDER BY count(*) DESC LIMIT 3")]  # fmt: skip
    presets = [w for w in preset_words() if w.name and w.language in KIND_LANGUAGES]
    cases = []
    for city in cities:
        counts = Counter(c for (c,) in connection.execute("SELECT category FROM names WHERE kind = 'poi' AND city = ?", (city,)))
        for category in sorted(c for c, n in counts.items() if n >= 3):
            for word in sorted({w.name for w in presets if w.category == category}):
                found = index.matcher.lexicon.kinds.find(index.matcher.lexicon.normalizer.words(word))
                if found is not None:
                    cases.append(Case(KIND, f"{word} {city}", of_kind(frozenset(found.categories), city)))
    return rng.sample(cases, min(PER_KIND, len(cases)))


def absent_cases(asked: Extract, others: list[Extract], rng: random.Random, count: int, index: LoadedIndex) -> list[Case]:
    names = sorted({n for other in others for n, _ in [*other.pois, *other.places]
                    if n.casefold() not in asked.every_name})  # fmt: skip
    return [Case(NOT_ON_THE_MAP, n, unanswered_unless_a_kind(n, index)) for n in rng.sample(names, min(count, len(names)))]


def unanswered_unless_a_kind(name: str, index: LoadedIndex) -> Callable[[GeocodeAnswer], bool]:
    """No answer; or, when the name is a kind's preset name alone ("Geldautomat", "Policia"),
    a POI of that kind: the words say what they mean, and the map has it (rule added
    2026-11-29: before, such an answer counted as a false positive)."""
    found = index.matcher.lexicon.kinds.find(index.matcher.lexicon.normalizer.words(name))
    kind = found.categories if found is not None and found.preset_name and not found.rest else frozenset()

    def check(a: GeocodeAnswer) -> bool:
        return not a.results or (a.results[0].type == "poi" and a.results[0].category in kind)
    return check


def merged(extracts: list[Extract]) -> Extract:
    return Extract(set().union(*(e.every_name for e in extracts)), [], [], [], {})


def build_index(names: tuple[str, ...], root: Path) -> LoadedIndex:
    out = root / "-".join(names)
    run_import([OSM / f"{name}.osm.pbf" for name in names], out, emit=lambda _line: None)
    hash_ = read_current(out)
    assert hash_ is not None
    return open_index(out, hash_)


def judged(index: LoadedIndex, cases: list[Case]) -> tuple[dict[str, list[bool]], list[str], list[float]]:
    outcomes: dict[str, list[bool]] = defaultdict(list)
    misses, times = [], []
    for case in cases:
        started = time.perf_counter()
        answer = index.matcher.geocode(GeocodeQuery(text=case.text, limit=1))
        times.append((time.perf_counter() - started) * 1000)
        ok = case.check(answer)
        outcomes[case.kind].append(ok)
        if not ok:
            top = answer.results[0] if answer.results else None
            misses.append(f"{case.kind}: {case.text!r} → {'nothing' if top is None else repr(top.name or top.address.street or top.address.city)}")
    return outcomes, misses, times


def cell(values: list[bool], goal: float, higher: bool = True) -> str:
    if not values:
        return "-"
    # from the counts: 1 - 0.98 is 0.020000000000000018, above a goal of 0.02
    shown = (sum(values) if higher else len(values) - sum(values)) / len(values)
    met = shown >= goal if higher else shown <= goal
    return f"{100 * shown:.1f}% ({len(values)}) {'✓' if met else '✗'}"


def run() -> str:
    extracts = {city: read_extract(OSM / f"{city}.osm.pbf") for city in CITIES}
    columns: dict[str, dict[str, list[bool]]] = {}
    misses: dict[str, list[str]] = {}
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        every_case: list[Case] = []
        for city in CITIES:
            index = build_index((city,), root)
            others = [e for c, e in extracts.items() if c != city]
            cases = [*name_cases(extracts[city], city), *kind_cases(index, draw(city, KIND)),
                     *postcode_cases(extracts[city], draw(city, POSTCODE))]  # fmt: skip
            every_case += [c for c in cases if c.kind != KIND]
            absent = absent_cases(extracts[city], others, draw(city, NOT_ON_THE_MAP), NOT_ON_MAP, index)
            outcomes, missed, took = judged(index, [*cases, *absent])
            columns[city], misses[city] = outcomes, missed
            times += took
            index.reader.close()
        whole = build_index(CITIES, root)
        # a name another extract carries too is no longer one object's: asked only when still unique
        counted = Counter(name for e in extracts.values() for name in e.every_name)
        counted_words = Counter(w for e in extracts.values() for name in e.every_name for w in set(WORD_SEPARATORS.split(name)))
        kept = [c for c in every_case if c.kind == POSTCODE or (counted_words if c.kind == PART else counted)[c.text.casefold()] == 1]
        outcomes, missed, _ = judged(whole, kept + kind_cases(whole, draw("all", KIND)))
        whole.reader.close()
        for city in CITIES:  # each extract's names asked of the other four merged
            rest = tuple(c for c in CITIES if c != city)
            index = build_index(rest, root)
            absent = absent_cases(merged([extracts[c] for c in rest]), [extracts[city]], draw("all", city), NOT_ON_MAP // len(CITIES),
                                  index)
            more, more_missed, _ = judged(index, absent)
            outcomes[NOT_ON_THE_MAP] += more[NOT_ON_THE_MAP]
            missed += more_missed
            index.reader.close()
        columns["all"], misses["all"] = outcomes, missed
    return report(columns, misses, times)


def report(columns: dict[str, dict[str, list[bool]]], misses: dict[str, list[str]], times: list[float]) -> str:
    names = list(columns)
    lines = [
        "## Geocoder: places, kinds, postcodes and names not on the map (issue 34, item 5)",
        "",
        f"Command: `python -m bench geocoder_places` (BENCH_PLACES_PER_KIND={PER_KIND}, "
        f"BENCH_PLACES_NOT_ON_MAP={NOT_ON_MAP}, seed {SEED}). Cases drawn by rule from each extract read with "
        "pyosmium (see bench/geocoder_places.py), asked in process (`Matcher.geocode`, limit 1) of each extract's "
        "own index and of all five as one; names not on the map: other extracts' POI and place names no object "
        "of the asked map carries (on the merged map: each extract's, asked of the other four merged). "
        f"Goals: ≥ {100 * TOP1_GOAL:.0f} % top-1, ≤ {100 * FALSE_POSITIVE_GOAL:.0f} % false positives. "
        "Two case rules were corrected on 2026-11-29, after the run of 9fa57e7 missed goals: a part of a name is "
        "unique among words split at any non-letter, as the geocoder splits them (\"Johannes\" beside "
        "\"Johannes-Hoops-Weg\" is no one name's part); a name not on the map that is a kind's preset name alone "
        "(\"Geldautomat\") is answered right by a POI of that kind. The code's changes of that day are in "
        "docs/decisions.md.",
        "",
        "| cases | goal | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for kind in POSITIVE_KINDS:
        lines.append(f"| {kind} | ≥ 95 % top-1 | " + " | ".join(cell(columns[n].get(kind, []), TOP1_GOAL) for n in names) + " |")
    # the goal is per city ("at least 100 queries per city … ≥ 95 % top-1"); the rows above hold each kind to it
    every = {n: [ok for kind in POSITIVE_KINDS for ok in columns[n].get(kind, [])] for n in names}
    lines.append("| every case above | ≥ 95 % top-1 | " + " | ".join(cell(every[n], TOP1_GOAL) for n in names) + " |")
    lines.append("| not on the map: answered (false positive) | ≤ 2 % | " + " | ".join(
        cell(columns[n].get(NOT_ON_THE_MAP, []), FALSE_POSITIVE_GOAL, higher=False) for n in names) + " |")  # fmt: skip
    ordered = sorted(times)
    p50, p99 = ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    lines += ["", f"In-process time per query on the single-extract indexes: p50 {p50:.2f} ms, p99 {p99:.2f} ms.", ""]
    lines.append("Misses, up to 6 per map:")
    lines.append("")
    for name in names:
        shown = misses[name][:: max(1, len(misses[name]) // 6)][:6]
        lines += [f"- {name}: " + "; ".join(shown)] if shown else [f"- {name}: none"]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
