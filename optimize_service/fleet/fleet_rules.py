"""What only the whole fleet of a POST /v1/optimize/routes body can tell, once its items are
parsed (`parsing`): ids repeated, a job no vehicle can serve (skills, capacity), the rules
only PyVRP's model plans clashing with what it has not, and the body's points by name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from common.errors import ParameterErrors
from common.geo import LatLon
from common.params import short
from optimize_service.fleet.model import FleetJob, FleetShipment, FleetVehicle


def check_duplicate_ids(body: dict[str, Any], errors: ParameterErrors) -> None:
    """Ids repeated, named on the repeat; on the raw items, so a repeat is found even when the
    item it repeats is broken otherwise."""
    for keys, what in ((("vehicles",), "vehicle"), (("jobs", "shipments"), "job or shipment")):
        named = [
            (f"{key}[{i}].id", item["id"])
            for key in keys
            for i, item in enumerate(body[key] if isinstance(body.get(key), list) else [])
            if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]
        for index in duplicates(ident for _, ident in named):
            errors.add(named[index][0], f"{short(named[index][1])} is used by an earlier {what}")


def duplicates(ids: Iterable[str]) -> list[int]:
    """Indexes of the ids an earlier one repeats."""
    seen: set[str] = set()
    repeated = []
    for index, ident in enumerate(ids):
        if ident in seen:
            repeated.append(index)
        seen.add(ident)
    return repeated


def check_fleet(
    vehicles: list[FleetVehicle | None],
    jobs: list[FleetJob | None],
    shipments: list[FleetShipment | None],
    errors: ParameterErrors,
) -> None:
    """On the items that parsed; what needs every vehicle only when all of them did."""
    tasks = [(f"jobs[{i}]", j.id, j.skills, j.demand) for i, j in enumerate(jobs) if j is not None]
    tasks += [(f"shipments[{i}]", s.id, s.skills, s.amount) for i, s in enumerate(shipments) if s is not None]
    fleet = [v for v in vehicles if v is not None]
    if fleet and len(fleet) == len(vehicles):
        for where, _, skills, demand in tasks:
            check_servable(where, skills, demand, fleet, errors)
    check_pyvrp_rules(vehicles, jobs, shipments, errors)


def check_servable(
    where: str, skills: frozenset[str], demand: tuple[int, ...], vehicles: list[FleetVehicle], errors: ParameterErrors
) -> None:
    skilled = [v for v in vehicles if skills <= v.skills]
    fitting = [v for v in vehicles if fits(demand, v.capacity)]
    field = "amount" if where.startswith("shipments") else "demand"
    if not skilled:
        errors.add(f"{where}.skills", f"no vehicle has all of the skills {sorted(skills)}")
    if not fitting:
        errors.add(f"{where}.{field}", f"{list(demand)} is more than any vehicle's capacity")
    if skilled and fitting and not any(fits(demand, v.capacity) for v in skilled):
        errors.add(where, f"no vehicle with the skills {sorted(skills)} has the capacity for {list(demand)}")


PYVRP_RULES = "reloads, job release times, groups and prizes"


def check_pyvrp_rules(
    vehicles: list[FleetVehicle | None], jobs: list[FleetJob | None], shipments: list[FleetShipment | None],
    errors: ParameterErrors,
) -> None:  # fmt: skip
    """Reloads, job release times, groups and prizes are planned by PyVRP's model alone (VROOM has
    none of them): with jobs of one time window and vehicles without breaks, skills,
    maxDistance or maxStops (`fleet.solver.pyvrp_fits`); each clash named. A job released after
    every shift ends is refused (by the vehicles that parsed)."""
    fleet = [v for v in vehicles if v is not None]
    rich = any(j is not None and j.planned_by_pyvrp for j in jobs) or any(v.reload_depots for v in fleet)
    for i, job in enumerate(jobs):
        if job is not None and job.release_s > 0 and fleet and all(job.release_s > v.shift.end_s for v in fleet):
            errors.add(f"jobs[{i}].releaseTime", "is after every vehicle's shift ends")
    if not rich:
        return
    clash = f"cannot be planned with {PYVRP_RULES} (only PyVRP's model has those, and it has not this)"
    if any(s is not None for s in shipments):
        errors.add("shipments", clash)
    for i, job in enumerate(jobs):
        if job is not None and len(job.place.windows) > 1:
            errors.add(f"jobs[{i}].timeWindows", f"more than one {clash}")
        if job is not None and job.skills:
            errors.add(f"jobs[{i}].skills", clash)
    for i, vehicle in enumerate(vehicles):
        if vehicle is None:
            continue
        for name, used in (("breaks", vehicle.breaks), ("skills", vehicle.skills), ("maxDistance", vehicle.limits.distance_m),
                           ("maxStops", vehicle.limits.stops)):  # fmt: skip
            if used:
                errors.add(f"vehicles[{i}].{name}", clash)


def fits(demand: tuple[int, ...], capacity: tuple[int, ...]) -> bool:
    return all(d <= c for d, c in zip(demand, capacity, strict=True))


def named_points(
    vehicles: list[FleetVehicle | None], jobs: list[FleetJob | None], shipments: list[FleetShipment | None]
) -> list[tuple[str, LatLon]]:
    points = [(f"vehicles[{i}].start", v.start) for i, v in enumerate(vehicles) if v is not None]
    points += [(f"vehicles[{i}].end", v.end) for i, v in enumerate(vehicles) if v is not None and v.end is not None]
    points += [(f"jobs[{i}].location", j.place.location) for i, j in enumerate(jobs) if j is not None]
    for i, s in enumerate(shipments):
        if s is None:
            continue
        points += [(f"shipments[{i}].pickup.location", s.pickup.location)]
        points += [(f"shipments[{i}].delivery.location", s.delivery.location)]
    return points
