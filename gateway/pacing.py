"""Refusals paced per client: a client that keeps coming back after 401s or 429s gets its next
refusals late (no I/O here but the wait).

A refusal is cheap, but not free: a client that ignores `Retry-After` and asks again at once,
on a few connections in a loop, is answered as fast as the gateway can refuse. Measured
(bench/isolation.py, 2026-11-26, Munich, 2 cores): four looping connections got 760 gzip-bomb
401s a second, or 490 early 429s a second for 368 KB traces, and took most of the machine —
another account's /health p99 went from 6 to 20-42 ms. Each client (its account when the
request named one, else its address) has `free` refusals, refilled at `per_second`; past
them each refusal is held `delay_seconds` before it is sent (a sleep: no CPU is spent
holding it). A client looping on c connections then gets about c refusals a second, and the
per-client connection cap (GATEWAY_MAX_CONNECTIONS_PER_CLIENT) bounds c. A client that waits
as `Retry-After` says is never held: it does not refuse itself `free` times in a row.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field

# The refusals paced: the token's and the limits'. Other 4xx are mistakes, not loops, unless the
# request had a large body: refusing a client that keeps sending 164 KB batches with a wrong
# header cost the machine their bytes, ~75 a second (issue 55, bench isolation's header phase).
PACED_STATUSES = frozenset({401, 429})
# Clients remembered per gateway process; the longest unseen is forgotten first.
MAX_REMEMBERED_CLIENTS = 10_000


@dataclass(frozen=True)
class PacingRule:
    """`free` refusals in a burst, refilled at `per_second`; past them each refusal waits
    `delay_seconds`. `free` 0: no pacing."""

    free: int = 20
    per_second: float = 10.0
    delay_seconds: float = 1.0

    @property
    def off(self) -> bool:
        return self.free <= 0


def parse_pacing_rule(text: str) -> PacingRule:
    """GATEWAY_REFUSAL_PACING: `free/per_second/delay_seconds` (`20/10/1`); `0` turns it off."""
    parts = [part.strip() for part in text.split("/")]
    try:
        if parts == ["0"]:
            return PacingRule(free=0)
        free, per_second, delay = int(parts[0]), float(parts[1]), float(parts[2])
    except (ValueError, IndexError) as exc:
        raise SystemExit(f"configuration error: GATEWAY_REFUSAL_PACING {text!r} is not free/per_second/delay") from exc
    if len(parts) != 3 or free < 0 or per_second <= 0 or not 0 <= delay <= 10:
        raise SystemExit(f"configuration error: GATEWAY_REFUSAL_PACING {text!r}: free ≥ 0, rate > 0, delay 0-10 s")
    return PacingRule(free, per_second, delay)


@dataclass
class RefusalPacer:
    rule: PacingRule = field(default_factory=PacingRule)
    # client -> (refusals left, when counted), least recently refused first
    _left: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)
    held: int = 0  # refusals held so far (tests, metrics)

    def delay_for(self, client: str, now: float) -> float:
        """Count one refusal of `client` at `now`: the seconds its answer waits."""
        if self.rule.off:
            return 0.0
        left, then = self._left.pop(client, (float(self.rule.free), now))
        left = min(float(self.rule.free), left + (now - then) * self.rule.per_second)
        self._left[client] = (max(0.0, left - 1.0), now)
        if len(self._left) > MAX_REMEMBERED_CLIENTS:
            self._left.popitem(last=False)
        return 0.0 if left >= 1.0 else self.rule.delay_seconds

    async def pace(self, client: str, status: int, large_body: bool = False) -> None:
        """Hold a refusal (`status` in PACED_STATUSES, or any 4xx to a large body) of a client
        past its free ones."""
        if status not in PACED_STATUSES and not (large_body and 400 <= status < 500):
            return
        delay = self.delay_for(client, time.monotonic())
        if delay > 0:
            self.held += 1
            await asyncio.sleep(delay)
