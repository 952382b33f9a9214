"""The vehicles, in one typed table: every fact about a vehicle that more than one module needs.

The API's words (`common.vocabulary.VEHICLES`) are this table's names; the access keys its
rules by time are read for, the engines' costing names, the snap radius every provider applies, the detour file's
fallback pace and which vehicle takes truck dimensions are read from its rows, never written
again elsewhere. A new vehicle is one row here (and its profiles in the engines).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Vehicle:
    name: str
    # How far a point may lie from the nearest road the vehicle may use, in every provider.
    snap_radius_m: float
    # The detour file's pace where a leg has no route of its own (m/s; a city's average).
    fallback_speed_ms: float
    # OSM's access keys for it, the most specific first (`hgv` before `motor_vehicle`).
    access_keys: tuple[str, ...]
    # Drives on roads (the car speed classes, motorway one-way rules, emergency closures).
    motorized: bool
    # Valhalla's costing for it.
    valhalla_costing: str
    # Takes the truck dimensions (height, width, length, weight, axle load) and is kept off
    # ways whose limits they exceed.
    takes_dimensions: bool = False


VEHICLE_TABLE: dict[str, Vehicle] = {
    vehicle.name: vehicle
    for vehicle in (
        Vehicle("car", 1000.0, 13.9, ("motorcar", "motor_vehicle", "vehicle", "access"), True, "auto"),
        Vehicle(
            "truck", 1000.0, 12.5, ("hgv", "goods", "motor_vehicle", "vehicle", "access"), True, "truck",
            takes_dimensions=True,
        ),
        Vehicle("bicycle", 500.0, 4.2, ("bicycle", "vehicle", "access"), False, "bicycle"),
        Vehicle("pedestrian", 500.0, 1.4, ("foot", "access"), False, "pedestrian"),
    )
}  # fmt: skip
MOTORIZED = tuple(name for name, vehicle in VEHICLE_TABLE.items() if vehicle.motorized)


# A truck's dimensions as requests name them → (route_service's TruckDimensions field, largest
# accepted, unit): GET /v1/route's parameters, a matrix's `truck` object, a fleet truck's `truck`.
TRUCK_DIMENSIONS = {
    "height": ("height_m", 6.0, "m"),
    "width": ("width_m", 4.0, "m"),
    "length": ("length_m", 30.0, "m"),
    "weight": ("weight_t", 60.0, "t"),
    "axleLoad": ("axle_load_t", 20.0, "t"),
}
