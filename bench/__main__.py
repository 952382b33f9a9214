"""`python -m bench [SECTION ...]`: run the benchmark sections, write bench/RESULTS.md.

Each section is a module of this package with `run() -> str` returning Markdown (and, for a
section that checks a rule, `FAILURES`: what broke it, which makes the run exit 1 once
RESULTS.md is written). The
machines are shared and noisy: sections compare against a reference measured in the same
run (ratios) and quote medians and p99, never a single timing. Every section written starts
with its provenance (`provenance`): when, at which commit, by which command with which
BENCH_* settings, and the machine's load at its start and end, so a section kept from an
earlier run still says where it came from.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

# In the order they appear in RESULTS.md.
SECTIONS = (
    "route_engine",
    "route_emergency",
    "surface",
    "route_http",
    "instructions",
    "matrix",
    "dynamic_costs",
    "time_rules",
    "time_tours",
    "night_speeds",
    "match",
    "isochrone",
    "engines",
    "import_choice",
    "geocoder",
    "geocoder_places",
    "geocoder_batch",
    "country_lookup",
    "optimize",
    "optimize_wall",
    "fleet",
    "fleet_balance",
    "fleet_rules",
    "detour",
    "jobs",
    "prices",
    "isolation",
    "soak",
    "scale",
    "map_switch",
)
# Each section in RESULTS.md follows its marker, so running some sections keeps the others.
MARKER = "<!-- section: {} -->"
RESULTS = Path(__file__).with_name("RESULTS.md")
PROVENANCE = "_Run "  # how every section's first line begins


def commit() -> str:
    """The short commit of the working tree, marked when it has uncommitted changes."""
    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=RESULTS.parent)
        return run.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def provenance(name: str, started: datetime, load_start: float, seconds: float, code: str) -> str:
    """`code`: `commit()` when the run began (the working tree may change while it runs)."""
    settings = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("BENCH_"))
    command = f"`{settings + ' ' if settings else ''}python -m bench {name}`"
    return (
        f"{PROVENANCE}{started:%Y-%m-%d %H:%M} UTC · commit {code} · {command} · {seconds / 60:.1f} min · "
        f"{os.cpu_count()} cores, load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end · "
        f"Python {platform.python_version()}, {platform.machine()}._"
    )


def available_sections() -> list[str]:
    here = Path(__file__).parent
    return [name for name in SECTIONS if (here / f"{name}.py").exists()]


def header(sections: list[str], present: list[str]) -> str:
    command = "make bench" if not sys.argv[1:] else f"python -m bench {' '.join(sys.argv[1:])}"
    kept = [name for name in present if name not in sections]
    return (
        "# Benchmark results\n\n"
        f"Last written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}. "
        "Shared, noisy machine: compare ratios measured in the same run, not absolute numbers.\n\n"
        f"Sections run then: {', '.join(sections)}."
        + (f" Kept from an earlier run: {', '.join(kept)}." if kept else "")
        + "\n"
    )


def stamped(section: str, stamp: str) -> str:
    """The section with its provenance after its heading."""
    heading, _, rest = section.strip().partition("\n")
    if not heading.startswith("## "):
        heading, rest = "", section.strip()
    return "\n\n".join(part for part in (heading, stamp, rest.strip()) if part) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("sections", nargs="*", help=f"default: all of {', '.join(available_sections())}")
    args = parser.parse_args()
    sections = args.sections or available_sections()
    written = previous_sections()
    failures: list[str] = []
    for name in sections:
        started, at, load, code = time.perf_counter(), datetime.now(UTC), os.getloadavg()[0], commit()
        print(f"== {name} ...", flush=True)
        module = importlib.import_module(f"bench.{name}")
        written[name] = stamped(module.run(), provenance(name, at, load, time.perf_counter() - started, code))
        failures += [f"{name}: {failure}" for failure in getattr(module, "FAILURES", [])]
        print(f"== {name} done in {time.perf_counter() - started:.0f} s", flush=True)
    order = [name for name in SECTIONS if name in written]
    parts = [header(sections, order)] + [f"{MARKER.format(name)}\n{written[name]}" for name in order]
    RESULTS.write_text("\n".join(parts), encoding="utf-8")
    print(f"wrote {RESULTS}")
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


def previous_sections() -> dict[str, str]:
    """The sections of the current RESULTS.md, by name (none when it has no markers yet)."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    found: dict[str, str] = {}
    for name in SECTIONS:
        start = text.find(MARKER.format(name))
        if start < 0:
            continue
        body_start = start + len(MARKER.format(name)) + 1
        end = text.find("<!-- section: ", body_start)
        found[name] = text[body_start : end if end >= 0 else len(text)].rstrip() + "\n"
    return found


if __name__ == "__main__":
    sys.exit(main())
