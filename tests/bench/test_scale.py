"""The scale benchmark's pure helpers (bench/scale.py)."""

from __future__ import annotations

import math
import os

import pytest

from bench.scale import (
    extrapolate,
    human_bytes,
    human_seconds,
    linear_fit,
    linearity,
    percentile,
    tree_memory,
    verdict,
)


def test_percentile_interpolates_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 99) == pytest.approx(4.96)
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_import_time_is_judged_by_issue_16s_ratio_and_then_by_what_each_copy_costs() -> None:
    # issue 16's rule (the time ratio against the factor ratio) first, and beside it the
    # per-copy rule added after that one missed, saying so
    judged = linearity({1: 23.3, 10: 277.6, 30: 891.4})
    assert "30x/1x 38.3 (**misses** ≤ 30: issue 16's linear)" in judged
    assert "growth 1.09 (meets ≤ 1.1, a rule added after the first missed)" in judged
    assert "growth 1.35 (**misses**" in linearity({1: 10.0, 10: 100.0, 30: 370.0})
    # two factors: the time ratio against the factor ratio
    assert "10x/1x 8.0 (meets ≤ 10" in linearity({1: 3.0, 10: 24.0})
    assert "10x/1x 12.0 (**misses** ≤ 10" in linearity({1: 3.0, 10: 36.0})


def test_linear_fit_and_extrapolation() -> None:
    assert linear_fit(1, 34, 10, 321) == pytest.approx((31.888, 2.111), abs=1e-3)
    # the line through the smallest and largest factors; a middle one does not bend it
    assert extrapolate({1: 10.0, 10: 100.0}, 1600) == pytest.approx(16000.0)
    assert extrapolate({1: 10.0, 5: 999.0, 10: 100.0}, 20) == pytest.approx(200.0)
    assert extrapolate({1: 5.0, 10: 5.0}, 12000) == pytest.approx(5.0)


def test_verdicts_and_units() -> None:
    assert verdict(1.5, 1.5) == "meets"
    assert verdict(1.51, 1.5) == "**misses**"
    assert human_bytes(2.0e9) == "2.0 GB"
    assert human_bytes(363e6) == "363.0 MB"
    assert human_bytes(512) == "1 kB"
    assert human_seconds(34.04) == "34.0 s"
    assert human_seconds(321) == "5 min"
    assert human_seconds(54000) == "15.0 h"


def test_tree_memory_of_this_process() -> None:
    count, rss, pss = tree_memory(os.getpid())
    assert count >= 1
    assert rss > 1e6 and pss > 0
