"""Tag policy of the road graph: how OSM tags make a way usable by each vehicle, and at what speed.

`classify` gives each vehicle's access mode per direction of a way (`graph_format.MODE_*`):
usable normally, only by an emergency vehicle (a legal closure or against a one-way street),
or never; `barrier_passers` says who passes a barrier node. Physical limits (maxweight,
walls) are never relaxed for an emergency vehicle, legal ones are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from common.vehicles import VEHICLE_TABLE
from common.vocabulary import VEHICLES
from route_service.graph_format import MODE_EMERGENCY_ACCESS, MODE_EMERGENCY_ONEWAY, MODE_NO, MODE_YES

# km/h by highway class; a class missing here is not part of that vehicle's network.
# Car speeds follow OSRM's car.lua so durations are comparable with the OSRM provider.
CAR_SPEEDS: dict[str, float] = {
    "motorway": 90, "motorway_link": 45, "trunk": 85, "trunk_link": 40,
    "primary": 65, "primary_link": 30, "secondary": 55, "secondary_link": 25,
    "tertiary": 40, "tertiary_link": 20, "unclassified": 25, "residential": 25,
    "living_street": 10, "service": 15, "road": 20,
}  # fmt: skip
BICYCLE_SPEEDS: dict[str, float] = {
    "cycleway": 18, "primary": 15, "primary_link": 15, "secondary": 15, "secondary_link": 15,
    "tertiary": 15, "tertiary_link": 15, "unclassified": 15, "residential": 15, "living_street": 12,
    "service": 14, "road": 14, "track": 12, "path": 12, "bridleway": 8,
    # pushing the bicycle where cycling is not allowed but walking is
    "footway": 5, "pedestrian": 5, "corridor": 4, "platform": 4,
}  # fmt: skip
PEDESTRIAN_SPEEDS: dict[str, float] = {
    **{k: 5.0 for k in ("footway", "path", "pedestrian", "living_street", "residential", "service", "track",
                        "unclassified", "tertiary", "tertiary_link", "secondary", "secondary_link", "primary",
                        "primary_link", "trunk", "trunk_link", "road", "cycleway", "bridleway", "corridor",
                        "platform", "access_ramp")},
    "steps": 2.0,
}  # fmt: skip
# Ways a motor vehicle can physically drive but that are closed to general motor traffic.
MOTOR_EMERGENCY_HIGHWAYS: dict[str, float] = {"pedestrian": 10, "busway": 30, "bus_guideway": 30}

ALLOWED_VALUES = frozenset(
    {"yes", "designated", "permissive", "destination", "delivery", "customers", "official", "motorcar",
     "motor_vehicle", "vehicle", "hgv", "residents", "permit", "discouraged", "use_sidepath", "dismount"}
)  # fmt: skip
# Legal closures an emergency vehicle may ignore (physical limits like maxweight are never relaxed).
CLOSED_VALUES = frozenset(
    {"no", "private", "psv", "bus", "taxi", "minibus", "share_taxi", "emergency", "emergency_vehicle",
     "agricultural", "forestry", "restricted", "foot", "bicycle", "military"}
)  # fmt: skip
# Dual carriageways are never driven against their direction, even with blue lights.
NO_WRONG_WAY_HIGHWAYS = frozenset({"motorway", "motorway_link", "trunk", "trunk_link"})
# Barriers a vehicle cannot pass (OSRM-like); anything else (gates, lift gates) is passable.
PASSABLE_BY_CAR = frozenset(
    {"cattle_grid", "border_control", "toll_booth", "sally_port", "gate", "lift_gate", "no", "entrance",
     "height_restrictor", "arch", "swing_gate", "yes", "kerb"}
)  # fmt: skip
BLOCKS_BICYCLE = frozenset({"fence", "wall", "stile", "turnstile", "full-height_turnstile", "ditch", "hedge",
                            "retaining_wall", "city_wall", "log"})  # fmt: skip
BLOCKS_PEDESTRIAN = frozenset({"fence", "wall", "ditch", "hedge", "retaining_wall", "city_wall"})

_NUMBER = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*(mph|km/h|kmh|t)?\s*$")


@dataclass
class DirectionModes:
    """Access mode and speed of one vehicle on one way, per direction."""

    forward: int
    backward: int
    speed_kmh: float


def parse_number(value: str | None, *, default_unit: str = "km/h") -> float | None:
    """A numeric tag like `50`, `30 mph`, `7.5 t`, `7,5`; None when unparsable."""
    if not value:
        return None
    match = _NUMBER.match(value.split(";")[0])
    if not match:
        return None
    number = float(match.group(1).replace(",", "."))
    return number * 1.609344 if (match.group(2) or default_unit) == "mph" else number


def parse_maxspeed(value: str | None) -> float | None:
    if value is None:
        return None
    named = {"de:urban": 50.0, "de:rural": 100.0, "de:living_street": 7.0, "walk": 7.0, "de:zone30": 30.0}
    return named.get(value.strip().lower()) or parse_number(value)


def oneway_of(tags: Mapping[str, str], vehicle: str) -> int:
    """1: forward only, -1: backward only, 0: both ways (for this vehicle)."""
    if vehicle == "pedestrian":
        value = tags.get("oneway:foot", "no")
    elif vehicle == "bicycle" and (
        tags.get("oneway:bicycle") == "no" or tags.get("cycleway", "").startswith("opposite")
    ):
        return 0
    else:
        value = tags.get("oneway", "")
        if not value and (tags.get("junction") in ("roundabout", "circular") or tags.get("highway") == "motorway"):
            value = "yes"
    return {"yes": 1, "1": 1, "true": 1, "-1": -1, "reverse": -1}.get(value, 0)


def access_value(tags: Mapping[str, str], vehicle: str) -> str | None:
    for key in VEHICLE_TABLE[vehicle].access_keys:
        value = tags.get(key)
        if value:
            return value.split(";")[0].strip()
    return None


def base_speed(tags: Mapping[str, str], vehicle: str) -> tuple[float | None, bool]:
    """(speed km/h, emergency-only class) for the highway class; None when not drivable at all."""
    highway = tags.get("highway", "")
    row = VEHICLE_TABLE[vehicle]
    if row.motorized:
        if highway in CAR_SPEEDS:
            speed = parse_maxspeed(tags.get("maxspeed"))
            # OSRM drives at 80 % of the posted limit
            kmh = speed * 0.8 if speed else CAR_SPEEDS[highway]
            return (min(kmh, row.max_kmh) if row.max_kmh else kmh), False
        if highway in MOTOR_EMERGENCY_HIGHWAYS:
            return MOTOR_EMERGENCY_HIGHWAYS[highway], True
        return None, False
    table = BICYCLE_SPEEDS if vehicle == "bicycle" else PEDESTRIAN_SPEEDS
    return table.get(highway), False


def classify(tags: Mapping[str, str], vehicle: str) -> DirectionModes | None:
    """How `vehicle` may use a way with these tags; None when it cannot use it at all."""
    speed, closed_class = base_speed(tags, vehicle)
    if speed is None or tags.get("area") == "yes":
        return None
    access = access_value(tags, vehicle)
    if access in ALLOWED_VALUES:
        closed = False
    elif access in CLOSED_VALUES or closed_class or tags.get("service") == "emergency_access":
        closed = True
    else:
        closed = False
    relaxable = tags.get("emergency") != "no"
    if closed and not relaxable:
        return None
    normal = MODE_EMERGENCY_ACCESS if closed else MODE_YES
    oneway = oneway_of(tags, vehicle)
    if oneway == 0:
        return DirectionModes(normal, normal, speed)
    if tags.get("oneway") == "reversible":
        return None
    against = MODE_NO
    if relaxable and tags.get("highway") not in NO_WRONG_WAY_HIGHWAYS:
        against = MODE_EMERGENCY_ACCESS if closed else MODE_EMERGENCY_ONEWAY
    forward, backward = (normal, against) if oneway == 1 else (against, normal)
    return DirectionModes(forward, backward, speed)


def barrier_passers(tags: Mapping[str, str]) -> frozenset[str]:
    """Vehicles that can pass a barrier node with these tags."""
    barrier = tags.get("barrier", "")
    passers = set(VEHICLES)
    if barrier not in PASSABLE_BY_CAR or tags.get("motor_vehicle") == "no" or tags.get("access") == "no":
        passers -= {"car", "truck"}
    if barrier in BLOCKS_BICYCLE:
        passers.discard("bicycle")
    if barrier in BLOCKS_PEDESTRIAN:
        passers.discard("pedestrian")
    return frozenset(passers)


# ---------------------------------------------------------------- physical and legal limits (trucks)

# The limits a truck is checked against per request (graph_engine.closures), in this order;
# each the smallest of its tags (`maxheight` and `maxheight:physical` …).
LIMIT_TAGS: tuple[tuple[str, ...], ...] = (
    ("maxheight", "maxheight:physical"),
    ("maxwidth", "maxwidth:physical"),
    ("maxlength",),
    ("maxweight", "maxweight:hgv"),
    ("maxaxleload",),
)
NO_LIMIT_VALUES = frozenset({"none", "default", "unsigned", "no_sign", "no_indications", "below_default", "unknown"})
_FEET_INCHES = re.compile(r"""^\s*(\d+(?:\.\d+)?)\s*(?:'|ft|feet)\s*(?:(\d+(?:\.\d+)?)\s*(?:"|in|inch|inches)?)?\s*$""")
_QUANTITY = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*([a-z.]*)\s*$")
_METRES = {"": 1.0, "m": 1.0, "meter": 1.0, "meters": 1.0, "metre": 1.0, "metres": 1.0, "cm": 0.01, "mm": 0.001}
_TONNES = {"": 1.0, "t": 1.0, "to": 1.0, "ton": 1.0, "tons": 1.0, "tonne": 1.0, "tonnes": 1.0, "kg": 0.001,
           "lbs": 0.00045359237, "lb": 0.00045359237, "st": 0.90718474, "cwt": 0.0508}  # fmt: skip


def parse_length_m(value: str | None) -> float | None:
    """`3.5`, `3.5 m`, `3,5`, `12'6"`, `12 ft`; None for no limit or an unreadable value."""
    text = _limit_text(value)
    if text is None:
        return None
    feet = _FEET_INCHES.match(text)
    if feet:
        return round(float(feet.group(1)) * 0.3048 + float(feet.group(2) or 0) * 0.0254, 3)
    return _quantity(text, _METRES)


def parse_weight_t(value: str | None) -> float | None:
    """`7.5`, `7.5 t`, `7500 kg`, `20 st` (short tons), `5000 lbs`; None for none or unreadable."""
    text = _limit_text(value)
    return None if text is None else _quantity(text, _TONNES)


def _limit_text(value: str | None) -> str | None:
    """The first value without a conditional suffix (`7.5 @ (22:00-06:00)`), lower case."""
    if not value:
        return None
    text = value.split(";")[0].split("@")[0].strip().lower()
    return None if not text or text in NO_LIMIT_VALUES else text


def _quantity(text: str, units: Mapping[str, float]) -> float | None:
    match = _QUANTITY.match(text)
    if not match or match.group(2).rstrip(".") not in units:
        return None
    number = float(match.group(1).replace(",", ".")) * units[match.group(2).rstrip(".")]
    return round(number, 3) if number > 0 else None


# A way below the ground: snapping prefers a surface road near a point to it (graph_engine.snap).
UNDERGROUND_TUNNELS = frozenset({"yes", "culvert"})


def is_underground(tags: Mapping[str, str]) -> bool:
    """A tunnel, a negative layer or `location=underground` (a building passage is at ground
    level and stays a surface road)."""
    return (
        tags.get("tunnel") in UNDERGROUND_TUNNELS
        or tags.get("location") == "underground"
        or bool(re.fullmatch(r"\s*-\s*[1-9][0-9]*\s*", tags.get("layer", "")))
    )


def way_limits(tags: Mapping[str, str]) -> tuple[float, ...] | None:
    """(height m, width m, length m, weight t, axle load t) of a way, inf where none; None when
    the way has no limit at all (most ways)."""
    parsers = (parse_length_m, parse_length_m, parse_length_m, parse_weight_t, parse_weight_t)
    limits = []
    for keys, parse in zip(LIMIT_TAGS, parsers, strict=True):
        values = [v for key in keys if (v := parse(tags.get(key))) is not None]
        limits.append(min(values) if values else math.inf)
    return tuple(limits) if any(math.isfinite(v) for v in limits) else None
