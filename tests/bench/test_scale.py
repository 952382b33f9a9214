"""The scale benchmark's pure helpers (bench/scale.py)."""

from __future__ import annotations

import math
import os

import pytest

from bench.scale import extrapolate, human_bytes, human_seconds, linear_fit, percentile, tree_memory, verdict


def test_percentile_interpolates_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 99) == pytest.approx(4.96)
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


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
