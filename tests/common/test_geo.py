"""Map coverage as separate areas (common.geo.coverage_areas), never one box around them all."""

from __future__ import annotations

from common.geo import Bounds, coverage_areas


def test_coverage_areas_join_near_parts_and_keep_far_ones_apart() -> None:
    helsinki_parts = [Bounds(24.90, 60.15, 24.95, 60.20), Bounds(24.96, 60.15, 25.00, 60.20)]  # a river apart
    monaco = Bounds(7.40, 43.72, 7.44, 43.76)
    areas = coverage_areas([monaco, *helsinki_parts])
    assert areas == [Bounds(24.90, 60.15, 25.00, 60.20), monaco]  # largest first
    assert len(coverage_areas(helsinki_parts, gap_m=100)) == 2  # 550 m apart: two areas at a 100 m gap
    assert coverage_areas([]) == []
