"""What a geocoder request costs its account in work units (common.admission). Single lookups
are light: the gateway's request rate counts them. A batch pays per line, so a batch of
10 000 lines counts like 10 000 lookups, not like one request (issue 34)."""

from __future__ import annotations

from common.admission import Cost, cost, cpu_of_units, units_of_cpu

# A line costs up to 8 ms of the service's CPU (`python -m bench prices`, 2026-12-02: addresses
# of the index 1-2.2 ms a line, mistyped in an unknown town 4.0 on the five maps as one, 7.4 on
# Andorra; issue 55's campaign: 3 000 distinct lines 24-28 CPU-s), a unit being about a
# millisecond of one core. A line the answer cache holds costs 0.05-0.06 ms: priced before the
# work, it pays as any line.
BATCH_LINE_UNITS = 8.0


# Every line's share beyond its lookup: reading it, the cache's round trip, its answer's JSON.
LINE_OVERHEAD_UNITS = 0.2


def batch_cost(lines: int) -> Cost:
    """Paid before the body is parsed, for every line it can hold (its line breaks: blank lines
    too). A batch is heavy work: it takes one of the account's concurrent slots while it runs."""
    return cost(BATCH_LINE_UNITS * lines, f"{lines} geocoder lines", heavy=True)


def batch_settled(lines: int, lookups_s: float) -> int:
    """What a batch costs in the end: its lookups' measured CPU (a unit a millisecond), and every
    line's overhead. Lines answered from the cache cost their overhead only; lines dearer than
    the price (names found nowhere: ~20 ms each, measured 2026-12-02) cost what they took."""
    return units_of_cpu(lookups_s + cpu_of_units(LINE_OVERHEAD_UNITS * lines))
