"""What a geocoder request costs its account in work units (common.admission). Single lookups
are light: the gateway's request rate counts them. A batch pays per line, so a batch of
10 000 lines counts like 10 000 lookups, not like one request (issue 34)."""

from __future__ import annotations

from common.admission import Cost, cost

# A line costs about one lookup in the matcher: p50 1.43 ms, p95 4.86 ms in process
# (bench/RESULTS.md `geocoder`), a unit being about a millisecond of one core.
BATCH_LINE_UNITS = 2.0


def batch_cost(lines: int) -> Cost:
    """A batch is heavy work: it takes one of the account's concurrent slots while it runs."""
    return cost(BATCH_LINE_UNITS * lines, f"{lines} geocoder lines", heavy=True)
