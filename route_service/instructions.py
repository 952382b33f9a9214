"""English turn instructions from OSRM maneuvers (the formatter writes them into each step).

OSRM answers maneuver types and modifiers, not sentences (the project's own text
generator is a JavaScript library), so this is a small port of its common cases.
"""

from __future__ import annotations

from collections.abc import Callable

from route_service.model import Maneuver

Builder = Callable[[str, str, str, Maneuver], str]

_COMPASS = ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")


def compass(bearing: float) -> str:
    return _COMPASS[round((bearing % 360) / 45) % 8]


def ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _direction(modifier: str) -> str:
    """`left`, `slight right`, ..., and `straight` (which reads without "turn")."""
    return modifier or "straight"


def _onto(name: str) -> str:
    return f" onto {name}" if name else ""


def _depart(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
    heading = compass(maneuver.bearing_after)
    return f"Head {heading}" + (f" on {name}" if name else "")


def _arrive(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
    side = f", on the {modifier}" if modifier in ("left", "right") else ""
    return f"You have arrived at your destination{side}"


def _turn(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
    if modifier == "uturn":
        return "Make a U-turn" + _onto(name)
    if modifier == "straight":
        return "Go straight" + _onto(name)
    return f"Turn {_direction(modifier)}" + _onto(name)


def _continue(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
    if modifier == "uturn":
        return "Make a U-turn" + _onto(name)
    if kind == "new name" or modifier in ("", "straight"):
        return "Continue" + _onto(name)
    return f"Continue {modifier}" + _onto(name)


def _roundabout(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
    place = "rotary" if kind in ("rotary", "exit rotary") else "roundabout"
    if kind.startswith("exit"):
        return f"Exit the {place}" + _onto(name)
    if maneuver.exit:
        return f"Enter the {place} and take the {ordinal(maneuver.exit)} exit" + _onto(name)
    return f"Enter the {place}" + _onto(name)


def _simple(template: str) -> Builder:
    def build(kind: str, modifier: str, name: str, maneuver: Maneuver) -> str:
        return template.format(modifier=_direction(modifier)) + _onto(name)

    return build


_BUILDERS: dict[str, Builder] = {
    "depart": _depart,
    "arrive": _arrive,
    "turn": _turn,
    "end of road": _simple("At the end of the road, turn {modifier}"),
    "continue": _continue,
    "new name": _continue,
    "notification": _continue,
    "use lane": _continue,
    "merge": _simple("Merge {modifier}"),
    "on ramp": _simple("Take the ramp on the {modifier}"),
    "off ramp": _simple("Take the exit on the {modifier}"),
    "fork": _simple("Keep {modifier} at the fork"),
    "roundabout turn": _simple("At the roundabout, turn {modifier}"),
    "roundabout": _roundabout,
    "rotary": _roundabout,
    "exit roundabout": _roundabout,
    "exit rotary": _roundabout,
}


def instruction(maneuver: Maneuver, name: str) -> str:
    """One sentence for a step, e.g. "Turn left onto Hauptstraße"."""
    modifier = maneuver.modifier or ""
    builder = _BUILDERS.get(maneuver.type, _turn)
    return builder(maneuver.type, modifier, name, maneuver)
