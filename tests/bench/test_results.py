"""bench/RESULTS.md: every section says where its figures came from (issue 31)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from bench.__main__ import PROVENANCE, previous_sections, provenance, stamped

STAMP = re.compile(r"^_Run \d{4}-\d\d-\d\d \d\d:\d\d UTC · commit [0-9a-f]{7,}.* · `.*python -m bench \w+`")


def test_every_section_starts_with_its_provenance() -> None:
    sections = previous_sections()
    assert sections, "bench/RESULTS.md has no sections"
    for name, text in sections.items():
        lines = [line for line in text.splitlines() if line.strip()]
        first = lines[1] if lines[0].startswith("## ") else lines[0]
        assert STAMP.match(first), f"{name}: {first[:120]}"


def test_a_stamp_names_the_settings_commit_and_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_SCALE_FACTORS", "1,10,30")
    stamp = provenance("scale", datetime(2026, 11, 27, 5, 40, tzinfo=UTC), 1.25, 90, "abc1234")
    assert STAMP.match(stamp) and stamp.startswith(PROVENANCE)
    assert "`BENCH_SCALE_FACTORS=1,10,30 python -m bench scale`" in stamp and "1.5 min" in stamp
    assert "load average 1.25 at the start" in stamp and "commit abc1234 ·" in stamp


def test_the_stamp_follows_the_heading() -> None:
    assert stamped("## Scale\n\nBody.\n", "_Run x_") == "## Scale\n\n_Run x_\n\nBody.\n"
    assert stamped("Body.\n", "_Run x_") == "_Run x_\n\nBody.\n"
