"""CPU time and memory of a platform process and its children (workers, large-call and solver
processes)."""

from __future__ import annotations

from collections.abc import Callable

import psutil


def family_sum(process: int | psutil.Process, measure: Callable[[psutil.Process], float]) -> float:
    """`measure` summed over the process and its living children. psutil finds the children
    from every process's parent; /proc/<pid>/task/*/children, read before, missed some (the
    kernel documents it as unreliable unless the tasks are stopped), so differences came out
    larger than the machine's cores allow."""
    try:
        service = process if isinstance(process, psutil.Process) else psutil.Process(process)
        family = [service, *service.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for member in family:
        try:
            total += measure(member)
        except psutil.Error:
            continue
    return total


def cpu_seconds(process: int | psutil.Process) -> float:
    """User and system CPU of the process and its living children."""
    return family_sum(process, lambda p: sum(p.cpu_times()[:2]))


def resident_mib(process: int | psutil.Process) -> float:
    """Resident memory (MiB) of the process and its living children."""
    return family_sum(process, lambda p: p.memory_info().rss / (1 << 20))
