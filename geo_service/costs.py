"""What a geocoder request costs its account in work units (common.admission). Single lookups
are light: the gateway's request rate counts them. A batch pays per line, so a batch of
10 000 lines counts like 10 000 lookups, not like one request (issue 34)."""

from __future__ import annotations

from common.admission import Cost, cost

# A line costs about one lookup in the matcher: p50 1.43 ms, p95 4.86 ms in process
# (bench/RESULTS.md `geocoder`), a unit being about a millisecond of one core.
BATCH_LINE_UNITS = 2.0


# A line answered from the cache or alike another line of the batch: its share of reading,
# the cache's round trip and the answer's JSON.
UNLOOKED_LINE_UNITS = 0.2


def batch_cost(lines: int) -> Cost:
    """Paid before the body is parsed, for every line it can hold (its line breaks: blank lines
    too). A batch is heavy work: it takes one of the account's concurrent slots while it runs."""
    return cost(BATCH_LINE_UNITS * lines, f"{lines} geocoder lines", heavy=True)


def unlooked_units(lines: int, looked_up: int) -> int:
    """What is given back once the batch is answered: the lines paid for that needed no lookup."""
    return int((BATCH_LINE_UNITS - UNLOOKED_LINE_UNITS) * max(0, lines - looked_up))
