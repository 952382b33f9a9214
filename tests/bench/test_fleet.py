"""The fleet quality bench's arithmetic: the gap compares jobs left out first, then driving."""

from __future__ import annotations

import math
import time

from bench.fleet import NO_PLAN, CpuTime, Scored, best_reference, cell, gap_pct


def scored(unassigned: int, driving_s: int, feasible: bool = True) -> Scored:
    return Scored(unassigned, driving_s, 1.0, feasible)


def test_the_gap_is_in_driving_time_when_as_many_jobs_are_served() -> None:
    assert gap_pct(scored(0, 1010), scored(0, 1000)) == 1.0
    assert gap_pct(scored(0, 990), scored(0, 1000)) == -1.0


def test_serving_fewer_jobs_is_an_infinite_gap_whatever_the_driving() -> None:
    assert gap_pct(scored(1, 500), scored(0, 1000)) == math.inf
    assert gap_pct(scored(0, 2000), scored(1, 1000)) == -math.inf


def test_the_reference_is_the_better_feasible_one() -> None:
    vroom, pyvrp = scored(0, 1000), scored(0, 900, feasible=False)
    assert best_reference({"vroom": vroom, "pyvrp": pyvrp}) is vroom
    assert best_reference({"vroom": vroom, "pyvrp": scored(0, 950)}).driving_s == 950
    assert best_reference({"vroom": scored(2, 800), "pyvrp": scored(0, 950)}).driving_s == 950
    assert cell(scored(0, NO_PLAN, feasible=False)) == "none" and cell(scored(1, 950)) == "950 (1)"


def test_the_cpu_timed_stop_counts_this_process_s_cpu_not_the_clock() -> None:
    stop = CpuTime(0.05)
    assert not stop(0.0)
    time.sleep(0.06)  # no CPU spent
    assert not stop(0.0)
    began = time.process_time()
    while time.process_time() - began < 0.06:
        pass
    assert stop(0.0)
