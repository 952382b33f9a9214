"""The body of POST /v1/optimize/routes → FleetRequest, reporting every violation at once (no
aiohttp here).

Order: a body that is not an object (400), too many vehicles or stops (413, alone), then every
field of every vehicle, job and shipment together (400), then what only the whole fleet can
tell (duplicate ids, skills no vehicle has, a demand no vehicle can carry) in the same answer.
Unknown fields are refused (a misspelt `timeWindow` would silently mean "any time").
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from common.areas import check_points_outside, parse_avoid_area
from common.errors import MalformedBody, ParameterErrors, PayloadTooLarge, TooManyStops
from common.params import parse_point_object, parse_truck_dimensions, parse_whole, short
from common.vehicles import TRUCK_DIMENSIONS, VEHICLE_TABLE
from common.vocabulary import DEFAULT_VEHICLE, VEHICLES
from optimize_service.costs import Allowance
from optimize_service.fleet.fleet_rules import check_duplicate_ids, check_fleet, duplicates, named_points
from optimize_service.fleet.model import (
    MAX_DEPOTS,
    MAX_DIMENSIONS,
    MAX_DISTANCE_M,
    MAX_HORIZON_S,
    MAX_ID_LENGTH,
    MAX_PRIORITY,
    MAX_PRIZE,
    MAX_SERVICE_TIME_S,
    MAX_STOPS,
    MAX_TIME_LIMIT_S,
    MAX_VEHICLES,
    MAX_WINDOWS,
    MIN_TIME_LIMIT_S,
    UNLIMITED_CAPACITY,
    Break,
    Costs,
    Current,
    FleetDepot,
    FleetJob,
    FleetRequest,
    FleetShipment,
    FleetVehicle,
    Limits,
    Place,
    Window,
    breaks_over,
    working_shift,
)
from optimize_service.fleet.values import (
    Context,
    check_keys,
    open_object,
    parse_amount,
    parse_id,
    parse_moment,
    parse_skills,
    parse_window,
    parse_windows,
    whole_horizon,
)
from optimize_service.formats import parse_start_time, parse_time_limit

TOP_FIELDS = {"vehicles", "jobs", "shipments", "startTime", "avoid", "timeLimit", "objective", "depots"}
BALANCES = ("duration",)
VEHICLE_FIELDS = {"id", "kind", "start", "end", "capacity", "shift", "skills", "breaks", "costs", "maxWorkingTime",
                  "maxDistance", "maxStops", "truck", "reloadDepots", "maxTrips", "current"}  # fmt: skip
CURRENT_FIELDS = {"location", "time", "load", "committed"}
JOB_FIELDS = {"id", "location", "serviceTime", "timeWindows", "demand", "skills", "priority", "releaseTime", "group",
              "prize"}  # fmt: skip
SHIPMENT_FIELDS = {"id", "pickup", "delivery", "amount", "skills", "priority", "releaseTime"}
DEPOT_FIELDS = {"id", "location"}
MAX_TRIPS = 100
PLACE_FIELDS = {"location", "serviceTime", "timeWindows"}
BREAK_FIELDS = {"id", "timeWindows", "duration"}
COST_FIELDS = {"fixed", "perHour", "perKm"}
MAX_COST = 10_000_000


def parse_fleet_request(body: Any, now: datetime, allowance: Allowance | None = None) -> FleetRequest:
    """Raises MalformedBody, PayloadTooLarge/TooManyStops (413) or one error naming every bad field.
    `allowance`: the caller's tier's cap of `timeLimit` (its cells are checked on the distinct
    places, `fleet.planner.check_fleet_cells`); None: the API's bounds alone."""
    if not isinstance(body, dict):
        raise MalformedBody("the body must be a JSON object {vehicles, jobs?, shipments?, depots?, startTime?, avoid?, timeLimit?, objective?}")
    check_sizes(body)
    errors = ParameterErrors()
    check_keys(body, TOP_FIELDS, None, errors)
    raw_start = body.get("startTime")
    if raw_start is not None and not isinstance(raw_start, str):
        errors.add("startTime", f"must be an ISO 8601 date-time string with a UTC offset, got {short(raw_start)}")
        raw_start = None
    ctx = Context(errors, parse_start_time(raw_start, now, errors), first_dimensions(body))
    depots = parse_depots(body.get("depots"), ctx)
    vehicles = parse_list(body, "vehicles", ctx, parse_vehicle, required=True)
    jobs = parse_list(body, "jobs", ctx, parse_job, required=False)
    shipments = parse_list(body, "shipments", ctx, parse_shipment, required=False)
    if vehicles is not None and jobs is not None:
        vehicles = resolve_committed(vehicles, jobs, ctx)
    if jobs == [] and shipments == []:
        errors.add("jobs", "at least one job or shipment is required")
    avoid = parse_avoid_area(body["avoid"], "avoid", errors) if body.get("avoid") is not None else None
    time_limit = parse_time_limit(body.get("timeLimit"), False, MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S, errors, allowance)
    balance = parse_objective(body.get("objective"), errors)
    check_duplicate_ids(body, errors)
    check_fleet(vehicles or [], jobs or [], shipments or [], errors)
    if avoid is not None:
        check_points_outside(avoid, named_points(vehicles or [], jobs or [], shipments or []), errors)
    errors.raise_if_any()
    assert vehicles is not None and jobs is not None and shipments is not None
    assert all(item is not None for item in (*vehicles, *jobs, *shipments))
    return FleetRequest(
        tuple(vehicles), tuple(jobs), tuple(shipments), ctx.start_time, ctx.dimensions, avoid, time_limit,
        timed=raw_start is not None, balance=balance, depots=depots,
    )


def parse_objective(value: Any, errors: ParameterErrors) -> str | None:
    """`{"balance": "duration"}`: the longest route as short as the plan's cost allows (issue 36,
    item 4); without it, the cheapest plan."""
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.add("objective", f'must be an object {{"balance": {" | ".join(repr(b) for b in BALANCES)}}}')
        return None
    check_keys(value, {"balance"}, "objective", errors)
    balance = value.get("balance")
    if balance is not None and balance not in BALANCES:
        errors.add("objective.balance", f"must be one of {', '.join(BALANCES)}, got {short(balance)}")
        return None
    return balance if isinstance(balance, str) else None


def check_sizes(body: dict[str, Any]) -> None:
    vehicles, jobs, shipments = (body.get(k) for k in ("vehicles", "jobs", "shipments"))
    if isinstance(vehicles, list) and len(vehicles) > MAX_VEHICLES:
        raise PayloadTooLarge(f"{len(vehicles)} vehicles sent, at most {MAX_VEHICLES} are allowed", parameter="vehicles")
    stops = (len(jobs) if isinstance(jobs, list) else 0) + 2 * (len(shipments) if isinstance(shipments, list) else 0)
    if stops > MAX_STOPS:
        raise TooManyStops(
            f"{stops} stops sent (a job is one, a shipment two), at most {MAX_STOPS} are allowed", parameter="jobs"
        )


def first_dimensions(body: dict[str, Any]) -> int:
    """The length of the first capacity, demand or amount list sent (0 when none is)."""
    for key, field in (("vehicles", "capacity"), ("jobs", "demand"), ("shipments", "amount")):
        items = body.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get(field), list):
                return min(len(item[field]), MAX_DIMENSIONS)
    return 0


def parse_list(body: dict[str, Any], key: str, ctx: Context, parse: Any, *, required: bool) -> list[Any] | None:
    """The parsed items, None where an item is broken (so indexes stay the request's), or
    None for a missing or broken list."""
    value = body.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        ctx.errors.add(key, "is required: a non-empty array" if required else "must be an array")
        return None
    return [parse(item, f"{key}[{i}]", ctx) for i, item in enumerate(value)]


# ---------------------------------------------------------------- vehicles


def parse_vehicle(item: Any, where: str, ctx: Context) -> FleetVehicle | None:
    before = open_object(item, where, VEHICLE_FIELDS, "must be an object {id, kind?, start, end?, capacity?, shift?, skills?, breaks?, costs?, maxWorkingTime?, maxDistance?, maxStops?, truck?, reloadDepots?, maxTrips?, current?}", ctx.errors)
    if before is None:
        return None
    ident = parse_id(item.get("id"), f"{where}.id", ctx.errors)
    kind = parse_kind(item.get("kind"), f"{where}.kind", ctx.errors)
    start = parse_point_object(item.get("start"), f"{where}.start", ctx.errors)
    end = parse_point_object(item["end"], f"{where}.end", ctx.errors) if item.get("end") is not None else None
    capacity = parse_amount(item.get("capacity"), f"{where}.capacity", ctx, default=UNLIMITED_CAPACITY)
    shift = parse_window(item.get("shift"), f"{where}.shift", ctx) if item.get("shift") is not None else whole_horizon()
    skills = parse_skills(item.get("skills"), f"{where}.skills", ctx.errors)
    breaks = parse_breaks(item.get("breaks"), f"{where}.breaks", ctx)
    costs = parse_costs(item.get("costs"), f"{where}.costs", ctx.errors)
    limits = parse_limits(item, where, ctx.errors)
    truck = parse_truck(item.get("truck"), kind, f"{where}.truck", ctx.errors)
    reloads, max_trips = parse_reloads(item, where, ctx)
    current = parse_current(item.get("current"), f"{where}.current", ctx)
    if current is not None and reloads:
        ctx.errors.add(f"{where}.current", "cannot be planned with reloadDepots: what is on board serves the rest of the trip")
    if current is not None and any(a > c for a, c in zip(current.load, capacity, strict=True)):
        ctx.errors.add(f"{where}.current.load", f"{list(current.load)} is more than the capacity {list(capacity)}")
    if len(ctx.errors.violations) > before or start is None or shift is None:
        return None
    shift = working_shift(shift, limits.working_s)
    if current is not None:  # the rest of the day: its breaks are still to take (they must fit after now)
        shift = Window(min(shift.end_s, max(shift.start_s, current.time_s)), shift.end_s)
    check_breaks_fit(breaks, shift, f"{where}.breaks", ctx.errors)
    taken = tuple(b for _, b in breaks)
    return FleetVehicle(ident, kind, start, end, capacity, shift, skills, taken, costs, limits, truck, reloads, max_trips,
                        current)  # fmt: skip


def parse_current(value: Any, where: str, ctx: Context) -> Current | None:
    """`{location, time?, load?, committed?}` of a vehicle under way (issue 36, item 6): time
    defaults to startTime, load to nothing on board; the committed job ids are resolved once the
    jobs are read (`resolve_committed`)."""
    if value is None:
        return None
    before = open_object(value, where, CURRENT_FIELDS, "must be an object {location, time?, load?, committed?}", ctx.errors)
    if before is None:
        return None
    location = parse_point_object(value.get("location"), f"{where}.location", ctx.errors)
    time_s = parse_moment(value.get("time"), f"{where}.time", ctx, default=0)
    load = parse_amount(value.get("load"), f"{where}.load", ctx, default=0)
    committed = value.get("committed", [])
    if not isinstance(committed, list) or len(committed) > MAX_STOPS:
        ctx.errors.add(f"{where}.committed", f"must be an array of at most {MAX_STOPS} job ids, in the order they are served")
    if len(ctx.errors.violations) > before or location is None or time_s is None:
        return None
    ctx.committed[where] = committed
    return Current(location, max(0, time_s), load)


def resolve_committed(vehicles: list[FleetVehicle | None], jobs: list[FleetJob | None], ctx: Context) -> list[FleetVehicle | None]:
    """Each vehicle's committed job ids as job indexes. A job committed twice, unknown, one the
    vehicle lacks the skills for, or steps that need more than the load on board are named."""
    index = {job.id: j for j, job in enumerate(jobs) if job is not None}
    taken: dict[int, str] = {}
    resolved = list(vehicles)
    for v, vehicle in enumerate(vehicles):
        ids, where = ctx.committed.get(f"vehicles[{v}].current", []), f"vehicles[{v}].current.committed"
        if vehicle is None or vehicle.current is None:
            continue
        found = []
        for k, ident in enumerate(ids):
            job = index.get(ident) if isinstance(ident, str) else None
            if job is None:
                ctx.errors.add(f"{where}[{k}]", f"must be the id of one of the request's jobs, got {short(ident)}")
            elif job in taken:
                ctx.errors.add(f"{where}[{k}]", f"{ident!r} is committed already by {taken[job]}")
            else:
                taken[job] = vehicle.id
                found.append(job)
                if not jobs[job].skills <= vehicle.skills:  # type: ignore[union-attr]
                    ctx.errors.add(f"{where}[{k}]", f"{ident!r} needs skills the vehicle has not")
        need = [sum(column) for column in zip([0] * ctx.dimensions, *(jobs[j].demand for j in found), strict=True)]  # type: ignore[union-attr]
        if any(n > a for n, a in zip(need, vehicle.current.load, strict=True)):
            ctx.errors.add(f"vehicles[{v}].current.load", f"the committed jobs deliver {need}, more than the load on board {list(vehicle.current.load)}")
        resolved[v] = replace(vehicle, current=replace(vehicle.current, committed=tuple(found)))
    return resolved


def parse_reloads(item: dict[str, Any], where: str, ctx: Context) -> tuple[tuple[int, ...], int | None]:
    """`reloadDepots` (ids of the request's depots) and `maxTrips` (issue 36, item 1)."""
    value = item.get("reloadDepots")
    found: list[int] = []
    if value is not None and (not isinstance(value, list) or not value or len(value) > MAX_DEPOTS):
        ctx.errors.add(f"{where}.reloadDepots", f"must be an array of 1 to {MAX_DEPOTS} ids of the request's depots")
    elif value is not None:
        for i, ident in enumerate(value):
            if not isinstance(ident, str) or ident not in ctx.depot_ids:
                ctx.errors.add(f"{where}.reloadDepots[{i}]", f"must be the id of one of the request's depots, got {short(ident)}")
            elif ctx.depot_ids[ident] not in found:
                found.append(ctx.depot_ids[ident])
    trips = parse_whole(item.get("maxTrips"), f"{where}.maxTrips", 1, MAX_TRIPS, ctx.errors, default=None, required=False)
    if trips is not None and value is None:
        ctx.errors.add(f"{where}.maxTrips", "needs reloadDepots: where the vehicle reloads between its trips")
    return tuple(found), trips


def parse_depots(value: Any, ctx: Context) -> tuple[FleetDepot, ...]:
    """The named depots vehicles may reload at (issue 36, item 1); their ids in `ctx.depot_ids`."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_DEPOTS:
        ctx.errors.add("depots", f"must be an array of at most {MAX_DEPOTS} depots {{id, location}}")
        return ()
    depots: list[FleetDepot] = []
    for i, item in enumerate(value):
        where = f"depots[{i}]"
        before = open_object(item, where, DEPOT_FIELDS, "must be an object {id, location}", ctx.errors)
        if before is None:
            continue
        ident = parse_id(item.get("id"), f"{where}.id", ctx.errors)
        location = parse_point_object(item.get("location"), f"{where}.location", ctx.errors)
        if ident in ctx.depot_ids:
            ctx.errors.add(f"{where}.id", f"{short(ident)} is used by an earlier depot")
        elif len(ctx.errors.violations) == before and location is not None:
            ctx.depot_ids[ident] = len(depots)
            depots.append(FleetDepot(ident, location))
    return tuple(depots)


def parse_truck(value: Any, kind: str, where: str, errors: ParameterErrors) -> tuple[tuple[str, float], ...]:
    """A truck's `{height?, width?, length?, weight?, axleLoad?}` (m and t, as GET /v1/route's),
    only for a kind that takes dimensions; by name."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not VEHICLE_TABLE[kind].takes_dimensions:
        errors.add(where, f"must be an object {{{', '.join(f'{n}?' for n in TRUCK_DIMENSIONS)}}}, for kind truck only")
        return ()
    check_keys(value, set(TRUCK_DIMENSIONS), where, errors)
    return tuple(sorted((parse_truck_dimensions(value, kind, errors, f"{where}.", text=False) or {}).items()))


def parse_limits(item: dict[str, Any], where: str, errors: ParameterErrors) -> Limits:
    """maxWorkingTime (s), maxDistance (m) and maxStops of one route (issue 36, item 3)."""
    working = parse_whole(item.get("maxWorkingTime"), f"{where}.maxWorkingTime", 1, MAX_HORIZON_S, errors, default=None,
                        required=False)  # fmt: skip
    distance = parse_whole(item.get("maxDistance"), f"{where}.maxDistance", 1, MAX_DISTANCE_M, errors, default=None,
                         required=False)  # fmt: skip
    stops = parse_whole(item.get("maxStops"), f"{where}.maxStops", 1, MAX_STOPS, errors, default=None, required=False)
    return Limits(working, distance, stops)


def parse_kind(value: Any, where: str, errors: ParameterErrors) -> str:
    if value is None:
        return DEFAULT_VEHICLE
    if not isinstance(value, str) or value not in VEHICLES:
        errors.add(where, f"must be one of {', '.join(VEHICLES)}, got {short(value)}")
        return DEFAULT_VEHICLE
    return value


def parse_breaks(value: Any, where: str, ctx: Context) -> list[tuple[int, Break]]:
    """(index in the request, break), in the order they can be taken (by their first window)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_WINDOWS:
        ctx.errors.add(where, f"must be an array of at most {MAX_WINDOWS} breaks {{id, timeWindows, duration}}")
        return []
    found = [(i, parse_break(item, f"{where}[{i}]", ctx)) for i, item in enumerate(value)]
    breaks = [(i, b) for i, b in found if b is not None]
    for index in duplicates(b.id for _, b in breaks):
        i, repeat = breaks[index]
        ctx.errors.add(f"{where}[{i}].id", f"{repeat.id!r} is used by an earlier break of this vehicle")
    return sorted(breaks, key=lambda pair: pair[1].windows[0].start_s)


def check_breaks_fit(breaks: list[tuple[int, Break]], shift: Window, where: str, errors: ParameterErrors) -> None:
    """Each break, taken as early as it can after the ones before it, fits its windows and the
    shift (VROOM refuses the whole problem otherwise)."""
    clock, refused = breaks_over([b for _, b in breaks], shift.start_s)
    if refused is not None:
        errors.add(f"{where}[{breaks[refused][0]}]", "cannot begin within its time windows during the shift, after the breaks before it")
    elif clock > shift.end_s:
        errors.add(where, "the breaks do not fit within the shift")


def parse_break(item: Any, where: str, ctx: Context) -> Break | None:
    before = open_object(item, where, BREAK_FIELDS, "must be an object {id, timeWindows, duration}", ctx.errors)
    if before is None:
        return None
    ident = parse_id(item.get("id"), f"{where}.id", ctx.errors)
    windows = parse_windows(item.get("timeWindows"), f"{where}.timeWindows", ctx, required=True)
    duration = parse_whole(item.get("duration"), f"{where}.duration", 0, MAX_SERVICE_TIME_S, ctx.errors, default=None)
    if len(ctx.errors.violations) > before or duration is None:
        return None
    return Break(ident, windows, duration)


def parse_costs(value: Any, where: str, errors: ParameterErrors) -> Costs:
    if value is None:
        return Costs()
    if not isinstance(value, dict):
        errors.add(where, "must be an object {fixed?, perHour?, perKm?}")
        return Costs()
    check_keys(value, COST_FIELDS, where, errors)
    default = Costs()
    fixed = parse_whole(value.get("fixed"), f"{where}.fixed", 0, MAX_COST, errors, default=default.fixed)
    per_hour = parse_whole(value.get("perHour"), f"{where}.perHour", 0, MAX_COST, errors, default=default.per_hour)
    per_km = parse_whole(value.get("perKm"), f"{where}.perKm", 0, MAX_COST, errors, default=default.per_km)
    if per_hour == 0 and per_km == 0:
        errors.add(where, "perHour and perKm cannot both be 0: the route would cost nothing to drive")
    return Costs(fixed or 0, per_hour or 0, per_km or 0)


# ---------------------------------------------------------------- jobs and shipments


def parse_job(item: Any, where: str, ctx: Context) -> FleetJob | None:
    before = open_object(item, where, JOB_FIELDS, "must be an object {id, location, serviceTime?, timeWindows?, demand?, skills?, priority?, releaseTime?, group?, prize?}", ctx.errors)
    if before is None:
        return None
    ident = parse_id(item.get("id"), f"{where}.id", ctx.errors)
    place = parse_place(item, where, ctx)
    demand = parse_amount(item.get("demand"), f"{where}.demand", ctx, default=0)
    skills = parse_skills(item.get("skills"), f"{where}.skills", ctx.errors)
    priority = parse_whole(item.get("priority"), f"{where}.priority", 0, MAX_PRIORITY, ctx.errors, default=0)
    release = parse_moment(item.get("releaseTime"), f"{where}.releaseTime", ctx, default=0)
    group = item.get("group")
    if group is not None and (not isinstance(group, str) or not group.strip() or len(group) > MAX_ID_LENGTH):
        ctx.errors.add(f"{where}.group", f"must be a non-blank string of at most {MAX_ID_LENGTH} characters, got {short(group)}")
    prize = parse_whole(item.get("prize"), f"{where}.prize", 0, MAX_PRIZE, ctx.errors, default=None, required=False)
    if len(ctx.errors.violations) > before or place is None:
        return None
    return FleetJob(ident, place, demand, skills, priority or 0, max(0, release or 0), group, prize)


def parse_shipment(item: Any, where: str, ctx: Context) -> FleetShipment | None:
    before = open_object(item, where, SHIPMENT_FIELDS, "must be an object {id, pickup, delivery, amount?, skills?, priority?, releaseTime?}", ctx.errors)
    if before is None:
        return None
    ident = parse_id(item.get("id"), f"{where}.id", ctx.errors)
    ends = [parse_shipment_end(item.get(key), f"{where}.{key}", ctx) for key in ("pickup", "delivery")]
    amount = parse_amount(item.get("amount"), f"{where}.amount", ctx, default=0)
    skills = parse_skills(item.get("skills"), f"{where}.skills", ctx.errors)
    priority = parse_whole(item.get("priority"), f"{where}.priority", 0, MAX_PRIORITY, ctx.errors, default=0)
    release = parse_moment(item.get("releaseTime"), f"{where}.releaseTime", ctx, default=0)
    pickup, delivery = ends
    if len(ctx.errors.violations) > before or pickup is None or delivery is None or release is None:
        return None
    pickup = released(pickup, release, f"{where}.releaseTime", ctx.errors)
    return FleetShipment(ident, pickup, delivery, amount, skills, priority or 0)


def released(pickup: Place, release_s: int, where: str, errors: ParameterErrors) -> Place:
    """A shipment's pickup never before its release time (issue 36, item 2): its windows narrowed."""
    windows = tuple(Window(max(w.start_s, release_s), w.end_s) for w in pickup.windows if w.end_s >= release_s)
    if not windows:
        errors.add(where, "is after every time window of the pickup ends")
        return pickup
    return replace(pickup, windows=windows)


def parse_shipment_end(item: Any, where: str, ctx: Context) -> Place | None:
    if open_object(item, where, PLACE_FIELDS, "is required: an object {location, serviceTime?, timeWindows?}", ctx.errors) is None:
        return None
    return parse_place(item, where, ctx)


def parse_place(item: dict[str, Any], where: str, ctx: Context) -> Place | None:
    location = parse_point_object(item.get("location"), f"{where}.location", ctx.errors)
    service = parse_whole(item.get("serviceTime"), f"{where}.serviceTime", 0, MAX_SERVICE_TIME_S, ctx.errors, default=0)
    windows = parse_windows(item.get("timeWindows"), f"{where}.timeWindows", ctx, required=False)
    if location is None or service is None:
        return None
    return Place(location, service, windows)
