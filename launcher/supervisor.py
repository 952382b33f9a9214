"""Keeps the platform's processes running under `make up`: one that ends (a service, Redis) is
reported once and started again after a back-off (`common.processes.Backoff`) while the others
keep serving. A service started again is told how many times (`LAUNCHER_RESTARTS`), which its
`/health` and `/metrics` show.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from common.processes import Backoff, describe_exit
from launcher.stack import Stack


@dataclass
class Supervisor:
    stack: Stack
    clock: Callable[[], float] = time.monotonic
    report: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
    backoffs: dict[str, Backoff] = field(default_factory=dict)
    restart_at: dict[str, float] = field(default_factory=dict)  # the processes waiting for theirs

    def check(self) -> None:
        """One round: notices each process that ended, starts those whose back-off is over."""
        for name, process in list(self.stack.processes.items()):
            if name not in self.restart_at and process.poll() is not None:
                self.schedule(name, describe_exit(process.returncode))
        for name, due in list(self.restart_at.items()):
            if due <= self.clock():
                del self.restart_at[name]
                self.restart(name)

    def schedule(self, name: str, how: str) -> None:
        lived = self.clock() - self.stack.started_at.get(name, self.clock())
        delay = self.backoffs.setdefault(name, Backoff()).next_delay(lived)
        self.restart_at[name] = self.clock() + delay
        self.report(
            f"{name} stopped unexpectedly ({how}) after {lived:.1f} s; starting it again in {delay:.1f} s "
            f"(restarts so far: {self.stack.restarts.get(name, 0)}; logs: {self.stack.log_dir})"
        )

    def restart(self, name: str) -> None:
        if self.stack.running(name):
            return  # started along with another (both Redis servers start together)
        try:
            self.stack.restart(name)
        except Exception as exc:  # e.g. Redis not listening within its wait: try again later
            self.schedule(name, f"its start failed: {exc}")
