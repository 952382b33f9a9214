"""CPU time of a platform process and its children (workers, large-call and solver processes)."""

from __future__ import annotations

import psutil


def cpu_seconds(process: int | psutil.Process) -> float:
    """User and system CPU of the process and its living children. psutil finds the children
    from every process's parent; /proc/<pid>/task/*/children, read before, missed some (the
    kernel documents it as unreliable unless the tasks are stopped), so differences came out
    larger than the machine's cores allow."""
    try:
        service = process if isinstance(process, psutil.Process) else psutil.Process(process)
        family = [service, *service.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in family:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total
