"""A service's worker processes (`<SERVICE>_WORKERS` > 1): forked, watched, restarted.

The supervisor forks the workers, which all listen on the service's port (SO_REUSEPORT: the
kernel spreads connections over them), and only watches them. A worker that ends (killed,
crashed) is started again after a back-off (`common.processes.Backoff`) while the others keep
serving; each restart is logged once and counted in memory every worker reads, so each
worker's `/health` and `/metrics` show it. SIGTERM or SIGINT to the supervisor stops every
worker and ends it. No aiohttp here: the caller passes the function that serves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from common.processes import Backoff, SharedCount, describe_exit, stop_with_parent

# Set by the launcher on a service it started again after it ended: how many times so far.
LAUNCHER_RESTARTS_ENV = "LAUNCHER_RESTARTS"
# Waited for instead of handled: no handler can run between a check and a fork.
SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})
# A worker's exit code when its server could not start (its port, its app's start-up). On the
# first start that is a fault to report at once (the launcher shows it), not a crash to retry.
START_FAILED = 3
# Workers finish their requests within 5 s of a SIGTERM (`serve`'s shutdown_timeout).
STOP_TIMEOUT_S = 15.0
# Wakes up at least this often even without a signal, so nothing can leave a worker unwatched.
WATCH_INTERVAL_S = 5.0

log = logging.getLogger("common.supervisor")


@dataclass
class Supervision:
    """What every process of a service knows about its supervision; made before any fork."""

    service: str
    workers: int
    worker_restarts: SharedCount = field(default_factory=SharedCount)

    @property
    def launcher_restarts(self) -> int:
        value = os.environ.get(LAUNCHER_RESTARTS_ENV, "0")
        return int(value) if value.isascii() and value.isdecimal() else 0


_current: Supervision | None = None


def register(service: str, workers: int) -> Supervision:
    """The process's supervision, set once at its start (`common.service.run`)."""
    global _current
    _current = Supervision(service, workers)
    return _current


def supervision_checks(workers: int) -> dict[str, int]:
    """For `/health`: in a service not started by `run` (tests in-process), nothing restarted."""
    current = _current
    return {
        "workers": current.workers if current else workers,
        "workerRestarts": current.worker_restarts.value if current else 0,
        "serviceRestarts": current.launcher_restarts if current else 0,
    }


class SupervisionCollector(Collector):
    """`worker_restarts_total` and `service_restarts_total` in `/metrics`, read at each scrape."""

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        current = _current
        if current is None:
            return
        workers = GaugeMetricFamily("service_workers", "Worker processes serving this port", labels=["service"])
        workers.add_metric([current.service], current.workers)
        yield workers
        restarted = CounterMetricFamily(
            "worker_restarts", "Workers of this service started again by its supervisor", labels=["service"]
        )
        restarted.add_metric([current.service], current.worker_restarts.value)
        yield restarted
        relaunched = CounterMetricFamily(
            "service_restarts", "Times the launcher started this service again", labels=["service"]
        )
        relaunched.add_metric([current.service], current.launcher_restarts)
        yield relaunched


REGISTRY.register(SupervisionCollector())


@dataclass
class WorkerSlot:
    """One of the service's workers, across its restarts."""

    number: int
    pid: int = 0  # 0 while it is not running
    started: float = 0.0
    restart_at: float | None = None  # when its back-off ends, while it waits
    first_run: bool = True
    backoff: Backoff = field(default_factory=Backoff)


def supervise(serve_worker: Callable[[], None], supervision: Supervision) -> int:
    """Runs `supervision.workers` forked processes of `serve_worker` until a signal asks to
    stop (0), or until a worker cannot start at all on its first run (1)."""
    log.info("starting %d workers of %s", supervision.workers, supervision.service)
    # Blocked here and waited for in `watch`, which assumes the supervisor has no other thread:
    # one that does not block SIGTERM would take it and end the supervisor at once (its workers
    # would still stop, by PDEATHSIG). It runs no app, loop or pool; the route service's
    # supervisor, which imports OSRM and numpy, was checked to have one thread.
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    slots = [WorkerSlot(number) for number in range(1, supervision.workers + 1)]
    try:
        for slot in slots:
            fork_worker(slot, serve_worker)
        return watch(slots, serve_worker, supervision)
    finally:
        stop_workers(slots)


def watch(slots: list[WorkerSlot], serve_worker: Callable[[], None], supervision: Supervision) -> int:
    while True:
        received = signal.sigtimedwait(SIGNALS, seconds_to_next_restart(slots))
        if received is not None and asks_to_stop(received.si_signo):
            log.info(
                "%s received: stopping the workers of %s", signal.Signals(received.si_signo).name, supervision.service
            )
            return 0
        for slot, code in ended_workers(slots):
            if slot.first_run and code == START_FAILED:
                log.error("worker %d of %s could not start (see above); stopping", slot.number, supervision.service)
                return 1
            schedule_restart(slot, code, supervision)
        now = time.monotonic()
        for slot in slots:
            if slot.restart_at is not None and slot.restart_at <= now:
                supervision.worker_restarts.increment()
                slot.first_run = False
                fork_worker(slot, serve_worker)


def asks_to_stop(signo: int) -> bool:
    """Only SIGTERM and SIGINT stop the workers. A wait interrupted by a debugger or profiler
    attaching (ptrace) returns a siginfo whose number is no signal at all (seen: 47567936, when
    py-spy attached): that once ended the supervisor with a ValueError and the service with it."""
    return signo in STOP_SIGNALS


def seconds_to_next_restart(slots: list[WorkerSlot]) -> float:
    waits = [slot.restart_at - time.monotonic() for slot in slots if slot.restart_at is not None]
    return max(0.0, min([WATCH_INTERVAL_S, *waits]))


def ended_workers(slots: list[WorkerSlot]) -> Iterator[tuple[WorkerSlot, int]]:
    """Each worker that ended since the last look, with its exit code (negative: a signal)."""
    by_pid = {slot.pid: slot for slot in slots if slot.pid}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        slot = by_pid.get(pid)
        if slot is not None:
            slot.pid = 0
            yield slot, os.waitstatus_to_exitcode(status)


def schedule_restart(slot: WorkerSlot, code: int, supervision: Supervision) -> None:
    """The one log line of a restart: which worker, how it ended, when it starts again."""
    lived = time.monotonic() - slot.started
    delay = slot.backoff.next_delay(lived)
    slot.restart_at = time.monotonic() + delay
    log.error(
        "worker %d of %s ended (%s) after %.1f s; starting it again in %.1f s (%d restarts before)",
        slot.number,
        supervision.service,
        describe_exit(code),
        lived,
        delay,
        supervision.worker_restarts.value,
        extra={"fields": {"worker": slot.number, "exit": describe_exit(code)}},
    )


def fork_worker(slot: WorkerSlot, serve_worker: Callable[[], None]) -> None:
    supervisor_pid = os.getpid()
    pid = os.fork()
    if pid:
        slot.pid, slot.started, slot.restart_at = pid, time.monotonic(), None
        return
    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # the mask survives the fork
        stop_with_parent()
        if os.getppid() == supervisor_pid:  # else it died before the line above took effect
            serve_worker()
    except BaseException:
        log.exception("worker %d failed", slot.number)
        code = START_FAILED  # the server returns only when asked to stop; raising is its start
    finally:
        os._exit(code)


def stop_workers(slots: list[WorkerSlot]) -> None:
    """SIGTERM to every running worker, SIGKILL to those still there after STOP_TIMEOUT_S."""
    running = [slot.pid for slot in slots if slot.pid]
    for pid in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while running and time.monotonic() < deadline:
        running = [pid for pid in running if not reaped(pid)]
        time.sleep(0.05)
    for pid in running:
        log.error("worker pid %d did not stop within %.0f s; killing it", pid, STOP_TIMEOUT_S)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True
