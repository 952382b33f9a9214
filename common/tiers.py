"""The account tiers, and the per-tier limits that are not the gateway's request rate.

The tiers are the auth service's (a token's `tier` claim); the gateway forwards the caller's
tier to services in `X-Internal-Tier`. The gateway's request rates per tier are its
`RATE_LIMITS` (gateway/config.py: a rate and a burst each); the numbers per tier are here.
"""

from __future__ import annotations

from dataclasses import dataclass

TIERS = ("demo", "standard", "unlimited")

# Cells (sources x destinations) one POST /v1/matrix may ask (ROUTE_MATRIX_CELLS, the route service).
DEFAULT_MATRIX_CELLS = "demo=1000,standard=10000,unlimited=1000000"
# Jobs (queued + running) one account may have at once (JOB_LIMITS, read by the job service).
DEFAULT_JOB_LIMITS = "demo=1,standard=3,unlimited=10"
# Most seconds of search one optimization may ask (`timeLimit` of /v1/optimize/stops and
# /v1/optimize/routes; OPTIMIZE_TIME_LIMITS, the optimize service). One `timeLimit=30` held the
# large lane for 30 s and took another account's 300-stop request from 2.9 s to 30.8 s (issue
# 29): a tier waits at most its own cap behind one request. A default above the cap is cut to it.
DEFAULT_OPTIMIZE_SECONDS = "demo=2,standard=10,unlimited=30"
# Job results one account may read at once (GET /v1/jobs/{id} of a succeeded job, or its
# /result; JOB_RESULT_READS, the job service): each read streams up to tens of MB, so its
# reads are capped like its heavy requests; beyond it 429 JOB_ERROR_TOO_MANY_RESULT_READS.
DEFAULT_JOB_RESULT_READS = "demo=1,standard=2,unlimited=4"
# MiB of the job store one account may fill with its jobs' requests and results, compressed as
# they are kept (JOB_STORE_QUOTAS, the job service); beyond it 429 JOB_ERROR_QUOTA_EXCEEDED.
# The store's share of the 256 MB state Redis is ~179 MB: ~209 large detour results of one
# account filled it and refused every account's jobs (issue 29); now one standard account
# holds at most a sixth of it.
DEFAULT_JOB_STORE_MIB = "demo=8,standard=32,unlimited=128"


@dataclass(frozen=True)
class TierLimits:
    """One number per tier. A tier not listed, or no tier at all, gets the smallest (fail
    closed: a new tier is given its limit on purpose)."""

    values: dict[str, int]

    def for_tier(self, tier: str | None) -> tuple[int, str]:
        """The limit and the tier it applies to."""
        if tier in self.values:
            return self.values[tier], tier
        smallest = min(self.values, key=self.values.__getitem__)
        return self.values[smallest], smallest


def parse_tier_limits(variable: str, text: str) -> TierLimits:
    """`tier=number,...`, each at least 1; a malformed item stops the process at start."""
    values: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            tier, count = item.split("=", 1)
            values[tier.strip()] = max(1, int(count))
        except ValueError as exc:
            raise SystemExit(f"configuration error: {variable} item {item!r} is not tier=number") from exc
    if not values:
        raise SystemExit(f"configuration error: {variable} names no tier")
    return TierLimits(values)
