"""POST /v1/optimize/routes: parsing of every field of the body (no HTTP here): malformed,
missing, boundary and hostile values, each named, all at once."""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from common.errors import ApiError, InvalidParameter, MalformedBody, PayloadTooLarge, TooManyStops
from common.geo import LatLon
from gateway.docs import openapi_spec
from optimize_service.fleet.model import (
    MAX_AMOUNT,
    MAX_DIMENSIONS,
    MAX_DISTANCE_M,
    MAX_HORIZON_S,
    MAX_PRIORITY,
    MAX_SKILLS,
    MAX_STOPS,
    MAX_TIME_LIMIT_S,
    MAX_VEHICLES,
    MAX_WINDOWS,
    MIN_TIME_LIMIT_S,
    UNLIMITED_CAPACITY,
    Costs,
    Limits,
    Window,
)
from optimize_service.fleet.parsing import parse_fleet_request
from optimize_service.fleet.solver import pyvrp_fits

NOW = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)
START = "2026-11-23T08:00:00+01:00"  # 07:00 UTC
HERE = {"lat": 43.7394, "lon": 7.4276}


def at(hh_mm: str) -> str:
    return f"2026-11-23T{hh_mm}:00+01:00"


def vehicle(ident: str = "v1", **fields: Any) -> dict[str, Any]:
    return {"id": ident, "start": HERE, "capacity": [10, 5], **fields}


def job(ident: str = "j1", **fields: Any) -> dict[str, Any]:
    return {"id": ident, "location": {"lat": 43.7347, "lon": 7.4217}, "demand": [1, 1], **fields}


def shipment(ident: str = "s1", **fields: Any) -> dict[str, Any]:
    ends = {"pickup": {"location": {"lat": 43.7312, "lon": 7.4198}}, "delivery": {"location": HERE}}
    return {"id": ident, **ends, "amount": [2, 0], **fields}


def body(**fields: Any) -> dict[str, Any]:
    return {"startTime": START, "vehicles": [vehicle()], "jobs": [job()], "shipments": [shipment()], **fields}


def violations(raw: Any) -> dict[str | None, str]:
    with pytest.raises(ApiError) as caught:
        parse_fleet_request(raw, NOW)
    assert caught.value.status == 400
    return {v.parameter: v.message for v in caught.value.violations}


def test_a_full_request_becomes_typed_data() -> None:
    raw = body(
        vehicles=[
            vehicle(
                kind="truck",
                end=HERE,
                shift={"start": at("08:30"), "end": at("17:00")},
                skills=["cold", "lift"],
                breaks=[{"id": "lunch", "timeWindows": [{"start": at("12:00"), "end": at("13:00")}], "duration": 1800}],
                costs={"fixed": 500, "perHour": 3000, "perKm": 100},
            )
        ],
        jobs=[job(serviceTime=300, timeWindows=[{"start": at("10:00"), "end": at("11:00")}], skills=["cold"], priority=100)],
        timeLimit=2.5,
    )
    parsed = parse_fleet_request(raw, NOW)
    v = parsed.vehicles[0]
    assert (v.kind, v.start, v.end, v.capacity) == ("truck", LatLon(43.7394, 7.4276), LatLon(43.7394, 7.4276), (10, 5))
    assert v.shift == Window(1800, 9 * 3600) and v.skills == {"cold", "lift"}
    assert v.breaks[0].id == "lunch" and v.breaks[0].windows == (Window(4 * 3600, 5 * 3600),) and v.breaks[0].duration_s == 1800
    assert v.costs == Costs(500, 3000, 100)
    j = parsed.jobs[0]
    assert (j.place.service_s, j.place.windows, j.demand, j.skills, j.priority) == (300, (Window(7200, 10800),), (1, 1), {"cold"}, 100)
    s = parsed.shipments[0]
    assert s.amount == (2, 0) and s.pickup.windows == (Window(0, MAX_HORIZON_S),)
    assert parsed.start_time == datetime(2026, 11, 23, 7, 0, tzinfo=UTC) and parsed.dimensions == 2
    assert parsed.time_limit_s == 2.5 and parsed.stops == 3 and parsed.kinds == ["truck"]


def test_defaults() -> None:
    parsed = parse_fleet_request({"vehicles": [{"id": "v", "start": HERE}], "jobs": [{"id": "j", "location": HERE}]}, NOW)
    v, j = parsed.vehicles[0], parsed.jobs[0]
    assert parsed.start_time == NOW and parsed.dimensions == 0 and parsed.avoid is None and parsed.time_limit_s is None
    assert (v.kind, v.end, v.capacity, v.shift, v.skills, v.breaks, v.costs) == (
        "car", None, (), Window(0, MAX_HORIZON_S), frozenset(), (), Costs()
    )
    assert (j.place.service_s, j.place.windows, j.demand, j.priority) == (0, (Window(0, MAX_HORIZON_S),), (), 0)


def test_a_vehicle_without_capacity_carries_any_load() -> None:
    parsed = parse_fleet_request(body(vehicles=[{"id": "v", "start": HERE}]), NOW)
    assert parsed.vehicles[0].capacity == (UNLIMITED_CAPACITY, UNLIMITED_CAPACITY)


def test_windows_are_sorted_merged_and_clipped_at_the_start_time() -> None:
    windows = [
        {"start": at("14:00"), "end": at("15:00")},
        {"start": at("07:00"), "end": at("09:00")},  # opens before startTime: from 0
        {"start": at("08:30"), "end": at("10:00")},  # overlaps the one before
    ]
    parsed = parse_fleet_request(body(jobs=[job(timeWindows=windows)]), NOW)
    assert parsed.jobs[0].place.windows == (Window(0, 7200), Window(6 * 3600, 7 * 3600))


@pytest.mark.parametrize("raw", [[], "text", 5, None, True])
def test_a_body_that_is_not_an_object_is_malformed(raw: Any) -> None:
    with pytest.raises(MalformedBody):
        parse_fleet_request(raw, NOW)


def test_every_bad_field_is_named_at_once() -> None:
    raw = {
        "startTime": "tomorrow",
        "vehicles": [
            {"id": "", "kind": "rocket", "start": {"lat": 91, "lon": 7.4}, "capacity": [1, 1], "skills": "cold"},
            vehicle("v2", capacity=[1, -1], shift={"start": at("10:00"), "end": at("09:00")}),
            vehicle("v3", costs={"perHour": 0, "perKm": 0}, breaks=[{"id": "b", "timeWindows": [], "duration": -1}]),
        ],
        "jobs": [
            job(serviceTime=86_401, priority=101, demand=[1.5, 1], timeWindows=[{"start": at("09:00"), "end": at("08:59")}]),
            {"id": 7, "location": {"lat": "43.7", "lon": 7.4}},
            "not an object",
        ],
        "shipments": [{"id": "s", "pickup": {"location": HERE, "timeWindows": [{"start": "noon"}]}, "amount": [1, 2, 3]}],
        "timeLimit": 0,
        "avoid": {"type": "Point", "coordinates": [7.4, 43.7]},
        "colour": "red",
    }
    found = violations(raw)
    assert set(found) >= {
        "colour",
        "startTime",
        "vehicles[0].id",
        "vehicles[0].kind",
        "vehicles[0].start.lat",
        "vehicles[0].skills",
        "vehicles[1].capacity[1]",
        "vehicles[1].shift",
        "vehicles[2].costs",
        "vehicles[2].breaks[0].timeWindows",
        "vehicles[2].breaks[0].duration",
        "jobs[0].serviceTime",
        "jobs[0].priority",
        "jobs[0].demand[0]",
        "jobs[0].timeWindows[0]",
        "jobs[1].id",
        "jobs[1].location.lat",
        "jobs[2]",
        "shipments[0].pickup.timeWindows[0].start",
        "shipments[0].delivery",
        "shipments[0].amount",
        "timeLimit",
        "avoid",
    }
    assert "closes" in found["vehicles[1].shift"] and "before it opens" in found["vehicles[1].shift"]
    assert "rocket" in found["vehicles[0].kind"] and "car, truck, bicycle, pedestrian" in found["vehicles[0].kind"]
    assert all("; " not in message for message in found.values())


def test_the_error_is_a_400_with_one_violation_per_field() -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_fleet_request(body(jobs=[job(priority=-1), job("j2", serviceTime="5")]), NOW)
    assert [v.parameter for v in caught.value.violations] == ["jobs[0].priority", "jobs[1].serviceTime"]
    assert all(v.code == "ERROR_INVALID_PARAMETER" for v in caught.value.violations)


def test_required_parts() -> None:
    assert set(violations({"jobs": [job()]})) == {"vehicles"}
    assert set(violations({"vehicles": [], "jobs": [job()]})) == {"vehicles"}
    assert set(violations({"vehicles": [vehicle()]})) == {"jobs"}
    assert set(violations({"vehicles": [vehicle()], "jobs": {}})) == {"jobs"}
    assert set(violations({"vehicles": [vehicle()], "jobs": [], "shipments": []})) == {"jobs"}
    assert set(violations({"vehicles": [{"id": "v"}], "jobs": [{"id": "j"}]})) == {"vehicles[0].start", "jobs[0].location"}
    shipments = [{"id": "s", "delivery": {"location": HERE}}]
    assert set(violations({"vehicles": [{"id": "v", "start": HERE}], "shipments": shipments})) == {"shipments[0].pickup"}


def test_windows_closing_before_the_start_time_or_past_the_horizon() -> None:
    late = (datetime(2026, 11, 23, 7, 0, tzinfo=UTC) + timedelta(seconds=MAX_HORIZON_S + 1)).isoformat()
    edge = (datetime(2026, 11, 23, 7, 0, tzinfo=UTC) + timedelta(seconds=MAX_HORIZON_S)).isoformat()
    found = violations(body(jobs=[
        job("a", timeWindows=[{"start": at("06:00"), "end": at("07:59")}]),
        job("b", timeWindows=[{"end": late}]),
        job("c", timeWindows=[{"start": "2026-11-23T09:00:00", "end": at("10:00")}]),  # no offset
        job("d", timeWindows=[{"start": at("09:00"), "end": at("10:00"), "step": 5}]),
    ]))  # fmt: skip
    assert "closes before startTime" in found["jobs[0].timeWindows[0].end"]
    assert "within 31 days" in found["jobs[1].timeWindows[0].end"]
    assert "UTC offset" in found["jobs[2].timeWindows[0].start"]
    assert "not a known field" in found["jobs[3].timeWindows[0].step"]
    # The boundaries themselves are accepted: a window closing at startTime, one ending at the horizon.
    parsed = parse_fleet_request(body(jobs=[job("a", timeWindows=[{"end": at("08:00")}]), job("b", timeWindows=[{"end": edge}])]), NOW)
    assert parsed.jobs[0].place.windows == (Window(0, 0),) and parsed.jobs[1].place.windows == (Window(0, MAX_HORIZON_S),)


def test_too_many_windows_and_empty_windows() -> None:
    many = [{"start": at("09:00"), "end": at("09:01")}] * 11
    found = violations(body(jobs=[job("a", timeWindows=many), job("b", timeWindows=[]), job("c", timeWindows=["x"])]))
    assert set(found) == {"jobs[0].timeWindows", "jobs[1].timeWindows", "jobs[2].timeWindows[0]"}


def test_duplicate_ids_are_named_on_the_repeat() -> None:
    found = violations(body(
        vehicles=[vehicle("v"), vehicle("v"), vehicle("w", breaks=[{"id": "b", "timeWindows": [{}], "duration": 60}] * 2)],
        jobs=[job("x"), job("y")],
        shipments=[shipment("x")],
    ))  # fmt: skip
    assert set(found) == {"vehicles[1].id", "vehicles[2].breaks[1].id", "shipments[0].id"}
    assert "'x' is used by an earlier job or shipment" in found["shipments[0].id"]


def test_dimension_counts_must_agree() -> None:
    found = violations(body(vehicles=[vehicle(capacity=[10])], jobs=[job(demand=[1, 1, 1])], shipments=[shipment(amount=[])]))
    assert set(found) == {"jobs[0].demand", "shipments[0].amount"}
    assert "1 whole numbers" in found["jobs[0].demand"]


def test_the_first_amount_sent_sets_the_dimensions_even_on_a_job() -> None:
    parsed = parse_fleet_request({"vehicles": [{"id": "v", "start": HERE}], "jobs": [job(demand=[3])]}, NOW)
    assert parsed.dimensions == 1 and parsed.vehicles[0].capacity == (UNLIMITED_CAPACITY,)


def test_a_demand_above_every_capacity_and_skills_no_vehicle_has() -> None:
    found = violations(body(
        vehicles=[vehicle("small", capacity=[2, 2], skills=["cold"]), vehicle("big", capacity=[20, 20])],
        jobs=[job("heavy", demand=[21, 0]), job("frozen", skills=["frozen"]), job("cold-heavy", skills=["cold"], demand=[5, 0])],
        shipments=[shipment("wide", amount=[0, 21])],
    ))  # fmt: skip
    assert set(found) == {"jobs[0].demand", "jobs[1].skills", "jobs[2]", "shipments[0].amount"}
    assert "more than any vehicle's capacity" in found["jobs[0].demand"]
    assert "no vehicle has all of the skills ['frozen']" in found["jobs[1].skills"]
    assert "no vehicle with the skills ['cold'] has the capacity" in found["jobs[2]"]


def test_amount_boundaries() -> None:
    parse_fleet_request(body(vehicles=[vehicle(capacity=[MAX_AMOUNT, 0])], jobs=[job(demand=[MAX_AMOUNT, 0])], shipments=[]), NOW)
    found = violations(body(vehicles=[vehicle(capacity=[MAX_AMOUNT + 1, 0])], jobs=[job(demand=[0, 0])], shipments=[]))
    assert set(found) == {"vehicles[0].capacity[0]"}


@pytest.mark.parametrize("value", [math.nan, math.inf, True, "1", [1], {"a": 1}, 1.5, -1, 2**63])
def test_whole_numbers_refuse_everything_else(value: Any) -> None:
    found = violations(body(jobs=[job(serviceTime=value)]))
    assert set(found) == {"jobs[0].serviceTime"}


def test_service_time_and_priority_boundaries() -> None:
    parsed = parse_fleet_request(body(jobs=[job(serviceTime=86_400, priority=100), job("j2", serviceTime=0, priority=0)]), NOW)
    assert parsed.jobs[0].place.service_s == 86_400 and parsed.jobs[0].priority == 100
    assert parsed.jobs[1].place.service_s == 0 and parsed.jobs[1].priority == 0


def test_hostile_strings_are_cut_short_in_messages() -> None:
    found = violations(body(vehicles=[vehicle(kind="x" * 10_000, id="y" * 101)], jobs=[job(skills=["z" * 5000])]))
    assert set(found) == {"vehicles[0].kind", "vehicles[0].id", "jobs[0].skills"}
    assert all(len(message) < 400 for message in found.values())
    # An unknown field with a huge name is named, but short.
    found = violations(body(**{"k" * 5000: 1}))
    assert all(len(str(name)) <= 120 for name in found)


def test_a_message_never_holds_the_separator() -> None:
    found = violations(body(jobs=[job("a; b", skills=["a; b"])]))
    assert all("; " not in message for message in found.values())


def test_time_limit_boundaries() -> None:
    assert parse_fleet_request(body(timeLimit=0.1), NOW).time_limit_s == 0.1
    assert parse_fleet_request(body(timeLimit=30), NOW).time_limit_s == 30.0
    for bad in (0.09, 30.01, "2", True):
        assert set(violations(body(timeLimit=bad))) == {"timeLimit"}


def test_start_time_like_optimize_stops() -> None:
    assert set(violations(body(startTime="2026-11-23T08:00:00"))) == {"startTime"}  # no offset
    assert set(violations(body(startTime=1_700_000_000))) == {"startTime"}
    parsed = parse_fleet_request(body(startTime="2026-11-23T08:00:00Z"), NOW)
    assert parsed.start_time.utcoffset() == timedelta(0)


def test_avoid_area_and_points_inside_it() -> None:
    square = {"type": "Polygon", "coordinates": [[[7.42, 43.73], [7.43, 43.73], [7.43, 43.74], [7.42, 43.74], [7.42, 43.73]]]}
    found = violations(body(avoid=square))
    # The pickup (7.4198 east) lies just outside the square.
    assert set(found) == {"vehicles[0].start", "jobs[0].location", "shipments[0].delivery.location"}
    elsewhere = copy.deepcopy(square)
    elsewhere["coordinates"] = [[[7.40, 43.70], [7.41, 43.70], [7.41, 43.71], [7.40, 43.71], [7.40, 43.70]]]
    assert parse_fleet_request(body(avoid=elsewhere), NOW).avoid is not None


def test_limits_are_413_before_anything_else() -> None:
    with pytest.raises(PayloadTooLarge) as caught:
        parse_fleet_request({"vehicles": [{}] * (MAX_VEHICLES + 1), "jobs": "broken"}, NOW)
    assert caught.value.status == 413 and caught.value.violations[0].parameter == "vehicles"
    with pytest.raises(TooManyStops) as stops:
        parse_fleet_request({"vehicles": [vehicle()], "jobs": [{}] * 101, "shipments": [{}] * 200}, NOW)
    assert stops.value.status == 413 and "501 stops" in str(stops.value)
    # Exactly at the limits: parsed (and the broken items then reported as 400s).
    found = violations({"vehicles": [{}] * MAX_VEHICLES, "jobs": [{}] * (MAX_STOPS - 200), "shipments": [{}] * 100})
    for name in ("vehicles[49].id", f"jobs[{MAX_STOPS - 201}].id", "shipments[99].id"):
        assert name in found


def test_the_published_limits_are_the_codes() -> None:
    spec = openapi_spec()
    schemas = spec["components"]["schemas"]
    request = schemas["FleetRequest"]["properties"]
    assert request["vehicles"]["maxItems"] == MAX_VEHICLES
    assert (request["timeLimit"]["minimum"], request["timeLimit"]["maximum"]) == (MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S)
    amount = schemas["FleetAmount"]
    assert amount["maxItems"] == MAX_DIMENSIONS and amount["items"]["maximum"] == MAX_AMOUNT
    assert schemas["FleetSkills"]["maxItems"] == MAX_SKILLS
    assert schemas["FleetJob"]["properties"]["priority"]["maximum"] == MAX_PRIORITY
    assert schemas["FleetJob"]["properties"]["timeWindows"]["maxItems"] == MAX_WINDOWS
    assert schemas["FleetVehicle"]["properties"]["breaks"]["maxItems"] == MAX_WINDOWS
    limits = schemas["FleetVehicle"]["properties"]
    assert (limits["maxStops"]["maximum"], limits["maxDistance"]["maximum"]) == (MAX_STOPS, MAX_DISTANCE_M)
    assert limits["maxWorkingTime"]["maximum"] == MAX_HORIZON_S
    description = spec["paths"]["/v1/optimize/routes"]["post"]["description"]
    assert f"at most {MAX_STOPS} stops" in description and f"1 to {MAX_VEHICLES} vehicles" in description
    assert f"within {MAX_HORIZON_S // 86_400} days" in description


def test_breaks_are_ordered_and_must_fit_the_shift() -> None:
    def brk(ident: str, opens: str, closes: str, duration: int) -> dict[str, Any]:
        return {"id": ident, "timeWindows": [{"start": at(opens), "end": at(closes)}], "duration": duration}

    shift = {"start": at("08:00"), "end": at("12:00")}
    parsed = parse_fleet_request(
        body(vehicles=[vehicle(shift=shift, breaks=[brk("late", "11:00", "11:30", 600), brk("early", "09:00", "09:30", 600)])]),
        NOW,
    )
    assert [b.id for b in parsed.vehicles[0].breaks] == ["early", "late"]  # VROOM takes them in order
    found = violations(body(vehicles=[
        vehicle("a", shift={"start": at("09:00")}, breaks=[brk("before", "08:00", "08:30", 60)]),  # closed by then
        vehicle("d", shift=shift, breaks=[brk("after", "13:00", "14:00", 60)]),  # opens after the shift
        vehicle("b", shift=shift, breaks=[brk("long", "11:00", "11:30", 7200)]),  # ends after it
        vehicle("c", shift=shift, breaks=[brk("one", "09:00", "09:10", 3600), brk("two", "09:30", "09:40", 60)]),
    ]))  # fmt: skip
    assert set(found) == {"vehicles[0].breaks[0]", "vehicles[1].breaks", "vehicles[2].breaks", "vehicles[3].breaks[1]"}
    assert "after the breaks before it" in found["vehicles[3].breaks[1]"]
    assert "do not fit within the shift" in found["vehicles[1].breaks"]


def test_vehicle_limits_are_typed_and_the_working_time_ends_the_shift() -> None:
    """maxWorkingTime, maxDistance and maxStops (issue 36, item 3): a route leaves at its
    shift's start, so its working time ends the shift; distance and stops limits leave PyVRP's
    model (its distances are costs) to VROOM."""
    shift = {"start": at("09:00"), "end": at("17:00")}
    limited = vehicle(shift=shift, maxWorkingTime=4 * 3600, maxDistance=80_000, maxStops=12)
    parsed = parse_fleet_request(body(vehicles=[limited], shipments=[]), NOW)
    (van,) = parsed.vehicles
    assert van.limits == Limits(4 * 3600, 80_000, 12)
    assert (van.shift.start_s, van.shift.end_s) == (3600, 5 * 3600)  # 09:00 to 13:00, after 08:00
    longer = parse_fleet_request(body(vehicles=[vehicle(shift=shift, maxWorkingTime=20 * 3600)], shipments=[]), NOW)
    assert longer.vehicles[0].shift.end_s == 9 * 3600  # the shift's own end comes first
    assert pyvrp_fits(parse_fleet_request(body(vehicles=[vehicle(maxWorkingTime=3600)], shipments=[]), NOW))
    for limit in ({"maxDistance": 80_000}, {"maxStops": 12}):
        assert not pyvrp_fits(parse_fleet_request(body(vehicles=[{**vehicle(), **limit}], shipments=[]), NOW))


def test_bad_vehicle_limits_are_named_at_once() -> None:
    bad = vehicle(maxWorkingTime=0, maxDistance=MAX_DISTANCE_M + 1, maxStops=1.5)
    found = violations(body(vehicles=[bad, vehicle("v2", maxStops="3")]))
    assert set(found) == {"vehicles[0].maxWorkingTime", "vehicles[0].maxDistance", "vehicles[0].maxStops",
                          "vehicles[1].maxStops"}  # fmt: skip
    assert "whole number from 1" in found["vehicles[0].maxWorkingTime"]


def test_the_objective_is_a_balance_of_duration_or_nothing() -> None:
    assert parse_fleet_request(body(objective={"balance": "duration"}), NOW).balance == "duration"
    assert parse_fleet_request(body(), NOW).balance is None
    found = violations(body(objective={"balance": "fairness", "minimise": "cost"}))
    assert set(found) == {"objective.balance", "objective.minimise"} and "duration" in found["objective.balance"]
    assert set(violations(body(objective="duration"))) == {"objective"}
