"""Geocoder benchmark: import times, accuracy per query variant on Munich, and latency.

Ground truth is read from the Munich extract independently of the importer (plain pyosmium:
node positions and way centroids). A seeded sample of addresses is turned into query
variants; a variant is correct when the top result lies within 50 m of the address (street
only: within 500 m of the street's geometry). Negative queries must answer nothing.
Latency: the matcher in-process, and end to end over HTTP against `python -m geo_service`
alone (with its Redis), first with cache misses, then with the same queries cached.

`run()` returns a Markdown section; `python -m bench.geocoder` prints it.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import aiohttp
import numpy as np
import osmium

from common.config import REPO_ROOT
from geo_service.geometry import haversine_m
from geo_service.importer import ImportResult, run_import
from geo_service.index import current_hash, open_index
from geo_service.model import GeocodeQuery, GeocodeResult
from launcher.redis_server import free_port, start_redis, wait_for_port

OSM = REPO_ROOT.parent / "shared" / "osm"
SEED = 20240601
SAMPLE = 400
NEGATIVES = 60
ADDRESS_TOLERANCE_M = 50.0
STREET_TOLERANCE_M = 500.0
GOALS = {
    "exact": 0.98,
    "no postcode": 0.95,
    "lowercase, no punctuation": 0.95,
    "abbreviated street type": 0.95,
    "one typo in the street": 0.90,
    "street only": 0.95,
    "negative": 1.0,
}
ABBREVIATIONS = (("Straße", "Str."), ("straße", "str."), ("Platz", "Pl."), ("platz", "pl."), ("Sankt", "St."))
LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Plain house numbers (12, 12a, 12 a, 12-14); "1. UG" or "UG1" describe floors, not houses.
PLAIN_NUMBER = re.compile(r"^\d{1,4}\s?[a-zA-Z]?(\s?[-/]\s?\d{1,4}[a-zA-Z]?)?$")


@dataclass(frozen=True)
class TrueAddress:
    street: str
    house_number: str
    postcode: str | None
    city: str | None
    lat: float
    lon: float


@dataclass
class Truth:
    addresses: list[TrueAddress]
    # Vertices of the named highways and the address points of each street name.
    street_points: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    variant: str
    text: str
    expected: TrueAddress | None  # None: a negative query
    country: str | None = None


# ---------------------------------------------------------------- ground truth


def read_truth(path: Path) -> Truth:
    found: dict[tuple[str, str], list[TrueAddress]] = defaultdict(list)
    street_points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for obj in osmium.FileProcessor(str(path)).with_locations():
        tags = obj.tags
        if isinstance(obj, osmium.osm.Way) and "highway" in tags and "name" in tags:
            street_points[tags["name"]] += [(n.location.lat, n.location.lon) for n in obj.nodes if n.location.valid()]
        number, street = tags.get("addr:housenumber"), tags.get("addr:street")
        if not number or not street or not PLAIN_NUMBER.match(number):
            continue
        point = object_point(obj)
        if point is not None:
            address = TrueAddress(street, number, tags.get("addr:postcode"), tags.get("addr:city"), *point)
            found[(street, number)].append(address)
            street_points[street].append(point)
    addresses = [group[0] for group in found.values() if unambiguous(group)]
    return Truth(addresses, dict(street_points))


def object_point(obj: object) -> tuple[float, float] | None:
    if isinstance(obj, osmium.osm.Node):
        return (obj.location.lat, obj.location.lon)
    if isinstance(obj, osmium.osm.Way):
        coords = [(n.location.lat, n.location.lon) for n in obj.nodes if n.location.valid()]
        if len(coords) > 2 and coords[0] == coords[-1]:
            coords = coords[:-1]
        if coords:
            return (sum(c[0] for c in coords) / len(coords), sum(c[1] for c in coords) / len(coords))
    return None


def unambiguous(group: list[TrueAddress]) -> bool:
    """The same street and number mapped twice is kept only when both lie within 50 m (node and building)."""
    first = group[0]
    return all(haversine_m(first.lat, first.lon, a.lat, a.lon) <= ADDRESS_TOLERANCE_M for a in group)


# ---------------------------------------------------------------- query variants


def full(a: TrueAddress, street: str | None = None, postcode: bool = True) -> str:
    town = " ".join(p for p in ((a.postcode if postcode else None), a.city) if p)
    return f"{street or a.street} {a.house_number}, {town}".strip(", ")


def lowercase_plain(a: TrueAddress) -> str:
    text = f"{a.street} {a.house_number} {a.postcode or ''} {a.city or ''}".lower()
    return " ".join(re.sub(r"[.,;:'()-]", " ", text).split())


def with_typo(text: str, rng: random.Random) -> str:
    """One substitution, deletion, insertion or transposition, never on the first letter."""
    positions = [i for i, ch in enumerate(text) if ch.isalpha() and i > 0]
    while True:
        i = rng.choice(positions)
        operation = rng.choice(("substitute", "delete", "insert", "transpose"))
        if operation == "substitute":
            typo = text[:i] + rng.choice(LETTERS) + text[i + 1 :]
        elif operation == "delete":
            typo = text[:i] + text[i + 1 :]
        elif operation == "insert":
            typo = text[:i] + rng.choice(LETTERS) + text[i:]
        elif i + 1 < len(text):
            typo = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
        else:
            continue
        if typo.lower() != text.lower():
            return typo


def abbreviated(street: str) -> str | None:
    for word, short in ABBREVIATIONS:
        if word in street:
            return street.replace(word, short, 1)
    return None


def nonsense(rng: random.Random) -> str:
    words = ["".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiouy") for _ in range(3)) for _ in range(2)]
    return f"{words[0]}{rng.choice(('gasse', 'weg', 'xq'))} {rng.randint(1, 99)}, {words[1]}"


FOREIGN = [
    "Mannerheimintie 5, 00100 Helsinki",
    "Avinguda Meritxell 12, AD500 Andorra la Vella",
    "Boulevard des Moulins 12, 98000 Monaco",
    "Aleksanterinkatu 21, Helsinki, Finland",
    "Rua Augusta 100, Lisboa",
]


def make_cases(truth: Truth, sample: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    chosen = rng.sample(truth.addresses, min(sample, len(truth.addresses)))
    cases: list[Case] = []
    for a in chosen:
        cases.append(Case("exact", full(a), a))
        cases.append(Case("no postcode", full(a, postcode=False), a))
        cases.append(Case("lowercase, no punctuation", lowercase_plain(a), a))
        cases.append(Case("one typo in the street", full(a, street=with_typo(a.street, rng)), a))
        if (short := abbreviated(a.street)) is not None:
            cases.append(Case("abbreviated street type", full(a, street=short, postcode=False), a))
        cases.append(Case("street only", f"{a.street}, {a.city or ''}".strip(", "), a))
    for i in range(NEGATIVES):
        if i % 3 == 0:
            cases.append(Case("negative", full(chosen[i]), None, country="FIN"))
        elif i % 3 == 1:
            cases.append(Case("negative", nonsense(rng), None))
        else:
            cases.append(Case("negative", FOREIGN[i % len(FOREIGN)], None))
    return cases


def correct(case: Case, results: list[GeocodeResult], truth: Truth) -> bool:
    if case.expected is None:
        return not results
    if not results:
        return False
    top = results[0]
    if case.variant == "street only":
        points = truth.street_points.get(case.expected.street, [])
        return any(haversine_m(top.lat, top.lon, lat, lon) <= STREET_TOLERANCE_M for lat, lon in points)
    return haversine_m(top.lat, top.lon, case.expected.lat, case.expected.lon) <= ADDRESS_TOLERANCE_M


# ---------------------------------------------------------------- measuring


def percentiles(samples_ms: list[float]) -> tuple[float, float, float]:
    values = np.array(samples_ms)
    return float(np.percentile(values, 50)), float(np.percentile(values, 95)), float(np.percentile(values, 99))


def timed_import(name: str, out: Path) -> ImportResult:
    return run_import([OSM / f"{name}.osm.pbf"], out / name, emit=lambda line: None)


def evaluate(
    cases: list[Case], truth: Truth, geocode: Callable[[GeocodeQuery], list[GeocodeResult]]
) -> tuple[dict[str, list[bool]], list[float], list[Case]]:
    outcomes: dict[str, list[bool]] = defaultdict(list)
    latencies: list[float] = []
    misses: list[Case] = []
    for case in cases:
        started = time.perf_counter()
        results = geocode(GeocodeQuery(case.text, case.country, 5))
        latencies.append((time.perf_counter() - started) * 1000)
        ok = correct(case, results, truth)
        outcomes[case.variant].append(ok)
        if not ok:
            misses.append(case)
    return outcomes, latencies, misses


async def http_latencies(base_url: str, cases: list[Case], concurrency: int = 1) -> list[float]:
    """Latency of each request, `concurrency` clients sending one after another."""
    latencies: list[float] = []
    pending = list(reversed(cases))

    async def client(session: aiohttp.ClientSession) -> None:
        while pending:
            case = pending.pop()
            url = f"{base_url}/v1/geocoder?address={quote(case.text)}&limit=5"
            if case.country:
                url += f"&country={case.country}"
            started = time.perf_counter()
            async with session.get(url) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"{url}: HTTP {response.status}")
            latencies.append((time.perf_counter() - started) * 1000)

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(client(session) for _ in range(concurrency)))
    return latencies


@dataclass
class HttpTimings:
    misses: list[float]
    hits: list[float]
    concurrent_misses: list[float]
    concurrent_seconds: float


def measure_http(index_dir: Path, work: Path, cases: list[Case], threads: int) -> HttpTimings:
    """Cache misses (first pass), hits (second pass), and misses with 8 concurrent clients,
    against the service process alone."""
    redis_port, port = free_port(), free_port()
    redis = start_redis(redis_port, work / f"redis-{threads}", persist=False)
    env = {
        **os.environ,
        "GEO_INDEX_DIR": str(index_dir),
        "GEO_SERVICE_PORT": str(port),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "LOG_LEVEL": "WARNING",
        "GEO_QUERY_THREADS": str(threads),
        "PYTHONPATH": str(REPO_ROOT),
    }
    service = subprocess.Popen([sys.executable, "-m", "geo_service"], cwd=REPO_ROOT, env=env)
    try:
        wait_for_port("127.0.0.1", port, timeout=30)
        base = f"http://127.0.0.1:{port}"
        asyncio.run(http_latencies(base, cases[:20]))  # warm-up: connections, first pages
        # A distinct suffix per pass: different cache keys, same answers.
        fresh = [Case(c.variant, c.text + " ", c.expected, c.country) for c in cases]
        misses = asyncio.run(http_latencies(base, fresh))
        hits = asyncio.run(http_latencies(base, fresh))
        started = time.perf_counter()
        unseen = [Case(c.variant, "  " + c.text, c.expected, c.country) for c in cases]
        concurrent = asyncio.run(http_latencies(base, unseen, concurrency=8))
        return HttpTimings(misses, hits, concurrent, time.perf_counter() - started)
    finally:
        for process in (service, redis):
            process.terminate()
            process.wait(timeout=10)


# ---------------------------------------------------------------- report


def accuracy_table(outcomes: dict[str, list[bool]]) -> list[str]:
    lines = ["| variant | queries | correct | goal | met |", "|---|---:|---:|---:|:---:|"]
    for variant, goal in GOALS.items():
        values = outcomes.get(variant, [])
        share = sum(values) / len(values) if values else 0.0
        lines.append(
            f"| {variant} | {len(values)} | {share:.1%} | {goal:.0%} | {'yes' if share >= goal else '**no**'} |"
        )
    return lines


def latency_row(label: str, samples: list[float]) -> str:
    p50, p95, p99 = percentiles(samples)
    return f"| {label} | {len(samples)} | {p50:.2f} | {p95:.2f} | {p99:.2f} |"


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="bench-geocoder-") as tmp:
        work = Path(tmp)
        imports = {name: timed_import(name, work) for name in ("munich", "heidelberg")}
        truth = read_truth(OSM / "munich.osm.pbf")
        cases = make_cases(truth, SAMPLE, SEED)
        index_dir = work / "munich"
        hash_ = current_hash(index_dir)
        assert hash_ is not None
        loaded = open_index(index_dir, hash_)
        evaluate(cases[:50], truth, loaded.matcher.geocode)  # warm-up
        outcomes, in_process, misses = evaluate(cases, truth, loaded.matcher.geocode)
        loaded.reader.close()
        pooled = measure_http(index_dir, work, cases, threads=2)
        inline = measure_http(index_dir, work, cases, threads=0)
    lines = [
        "## Geocoder",
        "",
        f"Munich extract, {len(truth.addresses)} unambiguous addresses in the ground truth (read with plain pyosmium), "
        f"{SAMPLE} sampled with seed {SEED}; correct = top result within {ADDRESS_TOLERANCE_M:.0f} m of the address "
        f"(street only: within {STREET_TOLERANCE_M:.0f} m of the street's geometry); negative queries (other countries' "
        "addresses, nonsense, `country=FIN`) must answer an empty list. The abbreviated variant covers addresses whose "
        "street has an abbreviable type (Straße, Platz, Sankt).",
        "",
        *accuracy_table(outcomes),
        "",
        "Latency per query in milliseconds (all variants; HTTP: sequential requests to `python -m geo_service` alone, "
        "with Redis):",
        "",
        "| measured | queries | p50 | p95 | p99 |",
        "|---|---:|---:|---:|---:|",
        latency_row("matcher in-process", in_process),
        latency_row("HTTP, cache miss, 2 query threads (default)", pooled.misses),
        latency_row("HTTP, cache miss, queries on the event loop", inline.misses),
        latency_row("HTTP, cached in Redis", pooled.hits),
        latency_row(
            f"HTTP, 8 clients, 2 query threads: {len(cases) / pooled.concurrent_seconds:.0f} req/s",
            pooled.concurrent_misses,
        ),
        latency_row(
            f"HTTP, 8 clients, on the event loop: {len(cases) / inline.concurrent_seconds:.0f} req/s",
            inline.concurrent_misses,
        ),
        "",
        "Import (`python -m geo_service.importer`):",
        "",
        "| extract | seconds | addresses | interpolated | streets | places | POIs | index size |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, result in imports.items():
        c = result.counts
        lines.append(
            f"| {name} | {result.seconds:.1f} | {c['addresses']} | {c['interpolated']} | {c['streets']} | "
            f"{c['places']} | {c['pois']} | {result.bytes / 1e6:.1f} MB |"
        )
    if misses:
        lines += ["", "Some misses (variant: query):", ""]
        lines += [f"- {m.variant}: `{m.text}`" + (f" (country={m.country})" if m.country else "") for m in misses[:12]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
