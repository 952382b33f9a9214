"""Turn instructions in the driver's language (issue 35): what writing the sentences in another
language costs, against English.

- In process, on every shared extract and on all five as one map: seeded car routes (OSRM,
  steps), their steps' sentences and voice sentences written (`formatter.route_body`) in English
  and in each language of the extracts and their neighbours; and English as the platform wrote
  it before issue 35 (the previous instructions module, read from git at the commit before the
  change), the reference the issue's goal names ("≤ 10 % more than English today").
- Through the gateway (real processes, bench.optimize's city stack, Heidelberg): GET /v1/route
  with steps, a different pair for every request (each a cache miss), the languages interleaved
  request by request so the machine's noise falls on all alike; median and p99.

Goal: instructions in any language cost ≤ 10 % more than English today.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson

from bench.maps import BenchMap, every_map
from bench.optimize import city_stack
from common.config import REPO_ROOT
from route_service.formatter import route_body
from route_service.instructions import StepText, instruction, voice_instruction
from route_service.model import RouteQuery, RouteResult, Wording

ROUTES = int(os.environ.get("BENCH_INSTRUCTION_ROUTES", "60"))
REQUESTS = int(os.environ.get("BENCH_INSTRUCTION_REQUESTS", "150"))  # per language, through the gateway
LANGUAGES = ("en", "de", "fr", "fi", "sv", "pt-PT", "es", "ca", "it", "nl", "pl", "da", "no")
GATEWAY_LANGUAGES = ("en", "de", "fi", "fr", "pt-PT")
BEFORE = "e4589e5~1"  # the commit before the sentences came from the translations
GOAL = 1.10


def english_before() -> types.ModuleType:
    """The instructions module as it was before issue 35 (its own English templates)."""
    source = subprocess.run(["git", "show", f"{BEFORE}:route_service/instructions.py"], capture_output=True,
                            text=True, check=True, cwd=REPO_ROOT).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("instructions_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, "instructions_before.py", "exec"), module.__dict__)  # noqa: S102 - our own file at a commit
    return module


def routes_of(bench: BenchMap) -> list[RouteResult]:
    points = bench.road_points(2 * ROUTES, 35)
    provider = bench.registry.providers["osrm"]
    return [provider.route(RouteQuery(a, b)) for a, b in zip(points[::2], points[1::2], strict=True)]


def per_route(results: list[RouteResult], write: Callable[[list[RouteResult]], None]) -> float:
    """Microseconds per route to write them all: the median of 5 passes after a warm one."""
    passes = []
    for _ in range(6):
        started = time.perf_counter()
        write(results)
        passes.append((time.perf_counter() - started) / len(results) * 1e6)
    return statistics.median(passes[1:])


def sentences(results: list[RouteResult], *, language: str) -> None:
    """Every step's sentence and voice sentence, as the formatter writes them."""
    wording = Wording(language)
    for result in results:
        for index, leg in enumerate(result.routes[0].legs):
            before = 0.0
            for step in leg.steps:
                assert step.maneuver is not None
                text = StepText.of(step.maneuver, step.name, step.mode, step.signs)
                voice_instruction(instruction(text, language, index, 1), before, wording)
                before = step.distance_m


def in_process_rows() -> list[str]:
    before = english_before()
    rows = []
    for bench in every_map():
        results = routes_of(bench)
        steps = sum(len(leg.steps) for r in results for leg in r.routes[0].legs)

        def old(batch: list[RouteResult]) -> None:  # the sentence per step as it was written before
            for result in batch:
                for leg in result.routes[0].legs:
                    for step in leg.steps:
                        before.instruction(step.maneuver, step.name)

        def bodies(batch: list[RouteResult]) -> None:
            for result in batch:
                route_body(result, RouteQuery(result.origin.location, result.destination.location), "osrm", "x")

        sentences_before = per_route(results, old)
        body_en = per_route(results, bodies)
        now = {language: per_route(results, partial(sentences, language=language)) for language in LANGUAGES}
        slowest = max(now, key=lambda k: now[k])
        body_before = body_en - now["en"] + sentences_before
        rows.append(f"| {bench.name} | {len(results)} | {steps / len(results):.1f} | {sentences_before:.0f} | "
                    f"{now['en']:.0f} | {statistics.median(now.values()):.0f} | {slowest} {now[slowest]:.0f} | "
                    f"{body_en:.0f} | {body_before:.0f} | {(body_before - sentences_before + now[slowest]) / body_before:.2f}x |")  # fmt: skip
    return rows


def get(url: str, token: str) -> float:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310 - loopback
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
        body = orjson.loads(answer.read())
    wall = time.perf_counter() - started
    assert answer.status == 200 and body["routes"][0]["legs"][0]["steps"], body
    return wall


def gateway_rows() -> list[str]:
    bench = next(b for b in every_map() if b.name == "heidelberg")
    needed = REQUESTS * len(GATEWAY_LANGUAGES) + 20
    points = bench.road_points(2 * needed, 36)
    pairs = list(zip(points[::2], points[1::2], strict=True))
    walls: dict[str, list[float]] = {language: [] for language in GATEWAY_LANGUAGES}
    with tempfile.TemporaryDirectory() as data, city_stack("heidelberg", Path(data)) as client:
        base = client.stack.base_url + "/v1/route?from={a.lat},{a.lon}&to={b.lat},{b.lon}&language={language}"
        for a, b in pairs[:20]:  # warm every language's translations and the engine
            for language in GATEWAY_LANGUAGES:
                get(base.format(a=a, b=b, language=language), client.token)
        for index in range(REQUESTS):
            for offset, language in enumerate(GATEWAY_LANGUAGES):
                a, b = pairs[20 + index * len(GATEWAY_LANGUAGES) + offset]
                walls[language].append(get(base.format(a=a, b=b, language=language), client.token))
    english = statistics.median(walls["en"])
    rows = []
    for language, values in walls.items():
        values.sort()
        median, p99 = statistics.median(values), values[min(len(values) - 1, int(0.99 * len(values)))]
        ok = "✓" if median <= GOAL * english else "✗"
        rows.append(f"| {language} | {median * 1e3:.2f} | {p99 * 1e3:.2f} | {median / english:.2f}x | {ok} |")
    return rows


def run() -> str:
    return "\n".join(
        [
            "## Turn instructions in the driver's language (issue 35)",
            "",
            f"Command: `python -m bench instructions` (BENCH_INSTRUCTION_ROUTES={ROUTES}, "
            f"BENCH_INSTRUCTION_REQUESTS={REQUESTS}).",
            "",
            f"In process: {ROUTES} seeded car routes (OSRM, steps) per map; microseconds per route, median of 5 "
            "passes. *Sentences*: every step's `instruction` and `voiceInstruction`; *before*: the English "
            f"sentence as written before issue 35 (its own templates, `route_service/instructions.py` at {BEFORE}; "
            "no voice sentence then). *Body*: the whole answer (`formatter.route_body`: geometry, steps, the "
            "rest) in English; *body before*: that less today's English sentences plus the old ones. Last column: "
            "the body in the slowest language against the body before.",
            "",
            "| map | routes | steps a route | sentences before, µs | sentences en, µs | sentences, median of "
            f"{len(LANGUAGES)} languages, µs | slowest language, µs | body en, µs | body before, µs | slowest body / before |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *in_process_rows(),
            "",
            f"Through the gateway (Heidelberg): GET /v1/route with steps, {REQUESTS} requests per language, each a "
            "different seeded pair (a cache miss), languages interleaved; wall time per request.",
            "",
            "| language | median ms | p99 ms | median / en | ≤ 1.10 x en |",
            "|---|---|---|---|---|",
            *gateway_rows(),
        ]
    )


if __name__ == "__main__":
    sys.exit(print(run()))
