"""Arrival times: legs and service times from the start time, in the start time's offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from common.errors import InvalidParameter
from common.geo import LatLon
from optimize_service.formats import iso
from optimize_service.stops.model import Leg, Stop
from optimize_service.stops.schedule import schedule

STOPS = [Stop(f"S{i}", LatLon(43.7, 7.4), service_time_s=60.0 * i) for i in range(3)]
LEGS = [Leg(1000, 1800.0), Leg(2000, 3600.0)]


@pytest.mark.parametrize("hours", [5.5, -8.0, 0.0])
def test_arrivals_cross_midnight_in_the_start_offset(hours: float) -> None:
    zone = timezone(timedelta(hours=hours))
    start = datetime(2024, 12, 31, 23, 0, tzinfo=zone)
    visits = schedule(STOPS, [0, 1, 2], LEGS, start)
    assert [v.stop_index for v in visits] == [0, 1, 2]
    # S0: no service; 30 min drive; S1: 1 min service; 60 min drive.
    assert [iso(v.arrival) for v in visits] == [
        f"2024-12-31T23:00:00{iso(start)[-6:]}",
        f"2024-12-31T23:30:00{iso(start)[-6:]}",
        f"2025-01-01T00:31:00{iso(start)[-6:]}",
    ]
    assert visits[2].departure - visits[2].arrival == timedelta(minutes=2)
    assert all(v.arrival.utcoffset() == timedelta(hours=hours) for v in visits)
    assert visits[0].leg is None and visits[2].leg == LEGS[1]


def test_offsets_name_the_same_instant() -> None:
    utc = schedule(STOPS, [0, 1, 2], LEGS, datetime(2025, 3, 1, 6, 0, tzinfo=UTC))
    india = schedule(STOPS, [0, 1, 2], LEGS, datetime(2025, 3, 1, 11, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))))
    assert [v.arrival for v in utc] == [v.arrival for v in india]
    assert iso(india[-1].arrival) == "2025-03-01T13:01:00+05:30"


def test_round_trip_return_has_no_service_and_seconds_are_rounded() -> None:
    start = datetime(2025, 3, 1, 8, 0, tzinfo=timezone(timedelta(hours=-8)))
    legs = [Leg(10, 0.6), Leg(20, 1.2), Leg(30, 10.0)]
    visits = schedule(STOPS, [1, 2, 0, 1], legs, start)
    assert visits[-1].stop_index == 1 and visits[-1].departure == visits[-1].arrival
    assert iso(visits[1].arrival) == "2025-03-01T08:01:01-08:00"  # 60 s service + 0.6 s, rounded
    with pytest.raises(ValueError, match="legs"):
        schedule(STOPS, [0, 1], LEGS, start)


@pytest.mark.parametrize(
    ("start", "legs"),
    [
        (datetime(9999, 12, 31, 20, 0, tzinfo=UTC), LEGS),  # the tour ends past the calendar: overflow
        (datetime(9999, 12, 31, 0, 0, tzinfo=UTC), []),  # within it, but no room to round the times
        (datetime(9999, 12, 30, 23, 0, tzinfo=timezone(timedelta(hours=-14))), []),  # its UTC is past it
    ],
)
def test_a_tour_ending_after_year_9999_is_the_start_time_s_400(start: datetime, legs: list[Leg]) -> None:
    order = [0, 1, 2] if legs else [0]
    with pytest.raises(InvalidParameter) as caught:
        schedule(STOPS, order, legs, start)
    assert [v.parameter for v in caught.value.violations] == ["startTime"]
