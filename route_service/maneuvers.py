"""Maneuvers for a route that has streets but no turn data (the graph provider's), so its steps
get the same sentences as OSRM's and Valhalla's (issue 35: one style of instruction whatever
the engine).

A step starts where the street's name changes. Its maneuver is read from the route's line: the
bearing of the last piece before the step and of the first piece in it, and the turn between
them named by OSRM's own angle classes (osrm-backend guidance `getTurnDirection`: straight
within 20° of straight on, slight to 40°, a turn to 120°, sharp beyond, a U-turn at 180°). A
first step departs, a turn of at most 20° onto a new name is "new name", and a last step of
length zero arrives. Roundabouts, ramps and lanes need the junction's shape, which the graph
does not keep: they read as turns.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from route_service.model import Maneuver, Step

# (largest deviation from straight on in degrees, modifier) in OSRM's classes.
TURN_CLASSES = ((20.0, "straight"), (40.0, "slight"), (120.0, ""), (179.0, "sharp"))


def with_maneuvers(steps: list[Step], geometry: np.ndarray) -> list[Step]:
    """The steps with a maneuver each, and an arrival step at the route's end."""
    if not steps or len(geometry) < 2:
        return steps
    out = []
    for index, step in enumerate(steps):
        start, stop = step.geometry_index
        after = bearing_from(geometry, start, +1, max(stop, start + 1))
        location = (float(geometry[start][0]), float(geometry[start][1]))
        if index == 0:
            maneuver = Maneuver("depart", location, 0, after)
        else:
            before = bearing_from(geometry, start, -1, min(steps[index - 1].geometry_index[0], start - 1))
            modifier = turn_modifier(before, after)
            kind = "new name" if modifier == "straight" else "turn"
            maneuver = Maneuver(kind, location, before, after, modifier)
        out.append(replace(step, maneuver=maneuver, mode=step.mode or "driving"))
    last = len(geometry) - 1
    arrival = Maneuver("arrive", (float(geometry[last][0]), float(geometry[last][1])), bearing_from(geometry, last, -1), 0)
    out.append(Step(steps[-1].name, 0.0, 0.0, (last, last), out[-1].mode, arrival))
    return out


# How far from the junction a bearing is read: a street's line bends into a junction over its
# last metres (Heidelberg's Sandgasse → Plöck, a left turn, has a last piece of 2 m pointing
# 20° off). Against OSRM's modifiers on the same street changes of 30 seeded routes a map, the
# side (left, right, straight) agreed most at 10 m on four of the five extracts: 88 / 89 / 89 /
# 85 / 86 % (Heidelberg, Munich, Helsinki, Monaco, Andorra), against 85-89 / 82-89 % at 5 and
# 15 m and 72-87 % at 20-50 m (docs/decisions.md).
BEARING_REACH_M = 10.0
METRES_PER_DEGREE = 111_195.0


def bearing_from(geometry: np.ndarray, index: int, direction: int, bound: int | None = None) -> int:
    """The compass bearing (0-359) of the route at a point, driven forwards: from it to the
    point BEARING_REACH_M further on (direction +1), or from the point that far back to it (-1);
    never beyond the point `bound` (the street's other end)."""
    here = geometry[index]
    scale = math.cos(math.radians(float(here[1])))
    last = (len(geometry) - 1 if direction > 0 else 0) if bound is None else bound
    other, reached = index, 0.0
    while other != last and 0 <= other + direction < len(geometry) and reached < BEARING_REACH_M:
        a, b = geometry[other], geometry[other + direction]
        reached += math.hypot((float(b[0]) - float(a[0])) * scale, float(b[1]) - float(a[1])) * METRES_PER_DEGREE
        other += direction
    if reached == 0.0:
        return 0
    a, b = (here, geometry[other]) if direction > 0 else (geometry[other], here)
    east = (float(b[0]) - float(a[0])) * scale
    north = float(b[1]) - float(a[1])
    return round(math.degrees(math.atan2(east, north))) % 360


def turn_modifier(before: int, after: int) -> str:
    """OSRM's modifier for a turn from one bearing to another."""
    deviation = (after - before + 540) % 360 - 180  # -180..180, right turns positive
    side = "right" if deviation > 0 else "left"
    for largest, strength in TURN_CLASSES:
        if abs(deviation) <= largest:
            if strength == "straight":
                return "straight"
            return f"{strength} {side}".strip()
    return "uturn"
