"""The roads whose rules depend on the time (route_service.time_rules), as one query sees them.

The graph file lists the pieces of ways with conditional rules (`timed_pieces`) and each such
way's tags (`timed_tags`). At a time, each rule that holds is written over its plain tag and
the graph's one tag policy (`graph_tags.classify`) says again how the vehicle may use the way:
open, closed, or at another speed. The query's weights get those as overrides
(`weights.Weights`), like an avoid area's closures: work in the timed pieces (hundreds on a
city), never in the map.

A piece opened by a `destination` or `delivery` rule may be driven only to reach a place on
it or on the pieces it joins under the same rule (the zone): `zones` finds them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import orjson

from common.geo import LatLon
from common.vehicles import VEHICLE_TABLE
from route_service.graph_engine.path import PathResult, Stretch, emergency_runs
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_format import MODE_YES
from route_service.graph_tags import CLOSED_VALUES, classify
from route_service.time_rules import DESTINATION_VALUES, ConditionalRule, TimeTable, parse_rules, tags_at

if TYPE_CHECKING:
    from route_service.graph_engine import GraphEngine

NO_PIECES = np.empty(0, dtype=np.int64)
Overrides = tuple[np.ndarray, np.ndarray]  # edge positions of a vehicle graph and their weights


@dataclass(frozen=True)
class TimedWay:
    way_id: int
    tags: dict[str, str]
    rules: list[ConditionalRule]


@dataclass(frozen=True)
class PieceAtTime:
    """How a vehicle may use one timed piece at one time."""

    piece: int
    forward: bool  # usable normally (not only in an emergency) along the way
    backward: bool  # and against it
    speed_kmh: float
    applied: list[ConditionalRule]  # the rules that held
    destination_only: bool  # opened by a `destination`/`delivery` rule


@dataclass(frozen=True)
class TimedState:
    """The timed pieces of one vehicle at one time."""

    at: datetime
    pieces: dict[int, PieceAtTime]

    def open(self) -> np.ndarray:
        """The pieces usable in some direction at this time."""
        return np.array(sorted(p for p, s in self.pieces.items() if s.forward or s.backward), dtype=np.int64)


class TimedRoads:
    """One road graph's timed pieces: their ways' rules, read once, evaluated per query."""

    def __init__(self, road: RoadGraph) -> None:
        self.road = road
        self.pieces = np.asarray(road.a.get("timed_pieces", NO_PIECES), dtype=np.int64)
        way_index = np.asarray(road.a.get("timed_way", NO_PIECES), dtype=np.int64)
        self.way_of = dict(zip(self.pieces.tolist(), way_index.tolist(), strict=True))
        self.ways = [timed_way(str(text)) for text in road.a.get("timed_tags", np.empty(0, dtype=str))]
        self.table = TimeTable()
        self._lock = threading.Lock()  # the kept states
        self._table_lock = threading.Lock()  # the table's parsed expressions are built on first use
        self._states: dict[tuple[str, tuple[tuple[str, float], ...], datetime], TimedState] = {}

    def __len__(self) -> int:
        return len(self.pieces)

    def state(self, vehicle: str, at: datetime, size: dict[str, float] | None) -> TimedState:
        """How `vehicle` may use each timed piece at `at`. Rules by time change on the minute:
        the states of the last STATES_KEPT (vehicle, size, minute) are kept (a state took 5.8 ms
        for Heidelberg's 243 timed pieces, bench/RESULTS.md `time_rules`)."""
        minute = at.astimezone(UTC).replace(second=0, microsecond=0)
        key = (vehicle, tuple(sorted((size or {}).items())), minute)
        with self._lock:
            found = self._states.get(key)
        if found is None:
            found = TimedState(at, {p: self.piece_at(vehicle, p, minute, size) for p in self.pieces.tolist()})
            with self._lock:
                self._states[key] = found
                while len(self._states) > STATES_KEPT:
                    self._states.pop(next(iter(self._states)))
        return TimedState(at, found.pieces)

    def piece_at(self, vehicle: str, piece: int, at: datetime, size: dict[str, float] | None) -> PieceAtTime:
        way, where = self.way(piece), self.where(piece)
        rules = [rule for rule in way.rules if rule.key in keys_of(vehicle)]
        with self._table_lock:
            holds = [self.table.holds(rule.condition, at, where, size) for rule in rules]
        tags, applied = tags_at(way.tags, rules, holds)
        modes = classify(tags, vehicle)
        if modes is None:
            return PieceAtTime(piece, False, False, 0.0, applied, False)
        forward, backward = modes.forward == MODE_YES, modes.backward == MODE_YES
        destination_only = (forward or backward) and any(
            rule.value in DESTINATION_VALUES and rule.key != "maxspeed" for rule in applied
        )
        return PieceAtTime(piece, forward, backward, modes.speed_kmh, applied, destination_only)

    def where(self, piece: int) -> tuple[float, float]:
        start = self.road.a["geom_ptr"][piece]
        return float(self.road.a["geom_lat"][start]), float(self.road.a["geom_lon"][start])

    def way(self, piece: int) -> TimedWay:
        return self.ways[self.way_of[piece]]


def keys_of(vehicle: str) -> tuple[str, ...]:
    """The keys whose rules concern a vehicle: its access keys, and `maxspeed` for motor vehicles."""
    row = VEHICLE_TABLE[vehicle]
    return (*row.access_keys, "maxspeed") if row.motorized else row.access_keys


def timed_way(text: str) -> TimedWay:
    tags = orjson.loads(text)
    way_id = int(tags.pop("@id", 0))
    return TimedWay(way_id, tags, parse_rules(tags).rules)


def overrides(road: RoadGraph, graph: VehicleGraph, route_type: str, state: TimedState,
              closed_zones: np.ndarray) -> Overrides:  # fmt: skip
    """(edge positions, weights) of the vehicle graph at the state's time: each timed piece's
    edges closed, or open at its speed in the directions the way allows; `closed_zones`: the
    destination-only pieces this query may not enter."""
    positions, values = [], []
    shut = set(closed_zones.tolist())
    for piece, at_time in state.pieces.items():
        for table, usable in ((graph.piece_fwd, at_time.forward), (graph.piece_bwd, at_time.backward)):
            pos = int(table[piece])
            if pos < 0:
                continue  # the vehicle cannot use the way in this direction at any time
            if not usable or piece in shut:
                weight = np.inf
            elif route_type == "shortest":
                weight = float(graph.length_m[pos])
            else:
                weight = float(graph.length_m[pos]) / max(at_time.speed_kmh, 1.0) * 3.6
            positions.append(pos)
            values.append(weight)
    return np.array(positions, dtype=np.int64), np.array(values, dtype=np.float64)


def zones(road: RoadGraph, pieces: np.ndarray) -> dict[int, int]:
    """Each destination-only piece's zone: pieces joined at a node share one (union-find)."""
    parent = {int(p): int(p) for p in pieces.tolist()}

    def find(p: int) -> int:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    by_node: dict[int, int] = {}
    for p in parent:
        for node in road.endpoints(p):
            other = by_node.setdefault(node, p)
            parent[find(other)] = find(p)
    return {p: find(p) for p in parent}


def shut_zones(road: RoadGraph, state: TimedState, ends: list[int]) -> np.ndarray:
    """The destination-only pieces of every zone but those holding one of the query's ends
    (the pieces the start and destination snapped onto)."""
    only = np.array([p for p, s in state.pieces.items() if s.destination_only], dtype=np.int64)
    if not len(only):
        return NO_PIECES
    zone = zones(road, only)
    kept = {zone[p] for p in ends if p in zone}
    return np.array([p for p, z in zone.items() if z not in kept], dtype=np.int64)


# ---------------------------------------------------------------- a route at a time

STATES_KEPT = 64
MAX_ROUNDS = 4  # re-routes when a road's rule changes between departure and its reaching
MAX_CHANGES = 16  # of a road's rules, looking for its next opening
ZONE_TIE_M = 0.5  # a point this much nearer a zone's street than any other road is inside the zone


@dataclass(frozen=True)
class TimedPath:
    path: PathResult
    origin: SnapPoint
    dest: SnapPoint
    departure: datetime
    arrival: datetime
    met: list[RuleMet]


@dataclass(frozen=True)
class RuleMet:
    piece: int
    way_id: int
    rule: ConditionalRule
    effect: str
    at: datetime


class ClosedAtTime(Exception):
    """An end of the route lies on a road closed to the vehicle when it is reached."""

    def __init__(self, end: int, piece: int, at: datetime, opens: datetime | None) -> None:
        super().__init__(end, piece, at, opens)
        self.end, self.piece, self.at, self.opens = end, piece, at, opens


def route_at(engine: GraphEngine, vehicle: str, route_type: str, ends: tuple[LatLon, LatLon],
             departure: datetime, size: dict[str, float] | None, closed: np.ndarray | None,
             max_distance_m: float) -> TimedPath | None:  # fmt: skip
    """The best route leaving at `departure`, each timed road taken as its rules are when the
    route reaches it; None when no route exists then. Raises LookupError(end) for an end with
    no usable road near, ClosedAtTime for an end on a road closed when it is reached (a
    delivery zone out of its window)."""
    road, timed = engine.road, engine.timed
    if not len(timed):  # a map without rules by time: the route holds at any time
        return plain_route(engine, vehicle, route_type, ends, departure, closed, max_distance_m)
    meant = [snap_any_time(engine, vehicle, end, max_distance_m) for end in ends]
    state = timed.state(vehicle, departure, size)
    for _ in range(MAX_ROUNDS):
        origin = snap_at_state(engine, vehicle, ends[0], state, max_distance_m)
        dest = snap_at_state(engine, vehicle, ends[1], state, max_distance_m)
        if origin is None or dest is None:
            raise LookupError(0 if origin is None else 1)
        shut = shut_zones(road, state, [origin.piece, dest.piece])
        graph = road.vehicles[vehicle]
        path = engine.shortest_path(vehicle, route_type, origin, dest, 0.0, closed,
                                    overrides(road, graph, route_type, state, shut))  # fmt: skip
        if path is None:  # an end on a road closed then is the reason (the destination's time: a guess)
            for index, end in enumerate(meant):
                check_end(timed, vehicle, end, departure, size, index)
            return None
        times = reaching_times(road, path.stretches, departure, state)
        reached = {s.piece: t for s, t in zip(path.stretches, times, strict=True) if s.piece in state.pieces}
        arrival = times[-1] + timedelta(seconds=retimed(path.stretches[-1], state, road).duration_s)
        for end, at in zip(meant, (departure, arrival), strict=True):
            if end is not None and end.piece in state.pieces:
                reached.setdefault(end.piece, at)
        changed = {p: timed.piece_at(vehicle, p, t, size) for p, t in reached.items()}
        changed = {p: s for p, s in changed.items() if differs(s, state.pieces[p])}
        if not changed:
            break
        state = TimedState(state.at, {**state.pieces, **changed})
    assert path is not None and origin is not None and dest is not None  # MAX_ROUNDS >= 1
    for index, (end, at) in enumerate(zip(meant, (departure, arrival), strict=True)):
        check_end(timed, vehicle, end, at, size, index)
    stretches = [retimed(s, state, road) for s in path.stretches]
    path = replace(path, stretches=stretches, duration_s=sum(s.duration_s for s in stretches),
                   emergency=emergency_runs(stretches, path.spans))  # fmt: skip
    times = reaching_times(road, stretches, departure, state)
    met = rules_met(road, timed, vehicle, stretches, times, state)
    return TimedPath(path, origin, dest, departure, departure + timedelta(seconds=path.duration_s), met)


def plain_route(engine: GraphEngine, vehicle: str, route_type: str, ends: tuple[LatLon, LatLon],
                departure: datetime, closed: np.ndarray | None, max_distance_m: float) -> TimedPath | None:
    snapped = [engine.snap(vehicle, end.lat, end.lon, max_distance_m=max_distance_m) for end in ends]
    if snapped[0] is None or snapped[1] is None:
        raise LookupError(0 if snapped[0] is None else 1)
    path = engine.shortest_path(vehicle, route_type, snapped[0], snapped[1], 0.0, closed)
    if path is None:
        return None
    return TimedPath(path, snapped[0], snapped[1], departure, departure + timedelta(seconds=path.duration_s), [])


def snap_at_state(engine: GraphEngine, vehicle: str, point: LatLon, state: TimedState,
                  max_distance_m: float) -> SnapPoint | None:  # fmt: skip
    """Where a point meets the roads open at the state's time. A delivery zone's street only
    when it is nearer than every other road: a point at the junction of a zone's street and a
    through road is on the through road (else the zone would open to traffic passing there)."""
    opened = state.open()
    shut = np.array(sorted(set(state.pieces) - set(opened.tolist())), dtype=np.int64)
    zone = np.array([p for p in opened.tolist() if state.pieces[p].destination_only], dtype=np.int64)
    outside = engine.snap_at(vehicle, point.lat, point.lon, max_distance_m=max_distance_m,
                             opened=np.setdiff1d(opened, zone), closed=np.union1d(shut, zone))  # fmt: skip
    if not len(zone):
        return outside
    inside = engine.snap_at(vehicle, point.lat, point.lon, max_distance_m=max_distance_m, opened=zone, closed=shut)
    if inside is None or (outside is not None and outside.distance_m <= inside.distance_m + ZONE_TIE_M):
        return outside
    return inside


def snap_any_time(engine: GraphEngine, vehicle: str, point: LatLon, max_distance_m: float) -> SnapPoint | None:
    """Where a point lies when every timed road is open: the road it means (a place inside a
    delivery zone means the zone's street, whether open or not)."""
    graph = engine.road.vehicles[vehicle]
    timed = engine.timed.pieces
    usable = timed[(graph.piece_fwd[timed] >= 0) | (graph.piece_bwd[timed] >= 0)] if len(timed) else timed
    return engine.snap_at(vehicle, point.lat, point.lon, max_distance_m=max_distance_m, opened=usable, closed=NO_PIECES)


def check_end(timed: TimedRoads, vehicle: str, end: SnapPoint | None, at: datetime,
              size: dict[str, float] | None, index: int) -> None:  # fmt: skip
    if end is None or end.piece not in timed.way_of:
        return
    state = timed.piece_at(vehicle, end.piece, at, size)
    if state.forward or state.backward:
        return
    raise ClosedAtTime(index, end.piece, at, next_opening(timed, vehicle, end.piece, at, size))


def next_opening(timed: TimedRoads, vehicle: str, piece: int, at: datetime,
                 size: dict[str, float] | None) -> datetime | None:  # fmt: skip
    """When a closed timed piece next opens: the first of its rules' changes (a window opening,
    a ban ending) after which the vehicle may use it; None when none does within a year."""
    way, where = timed.way(piece), timed.where(piece)
    rules = [rule for rule in way.rules if rule.key in keys_of(vehicle)]
    for _ in range(MAX_CHANGES):
        changes = [c for rule in rules if (c := timed.table.next_change(rule.condition, at, where)) is not None]
        if not changes:
            return None
        at = min(changes)
        state = timed.piece_at(vehicle, piece, at, size)
        if state.forward or state.backward:
            return at
    return None


def differs(a: PieceAtTime, b: PieceAtTime) -> bool:
    return (a.forward, a.backward, round(a.speed_kmh, 1)) != (b.forward, b.backward, round(b.speed_kmh, 1))


def retimed(stretch: Stretch, state: TimedState, road: RoadGraph) -> Stretch:
    """A stretch driven as its road's rules are at the state's time: speed and mode."""
    at_time = state.pieces.get(stretch.piece)
    if at_time is None:
        return stretch
    usable = at_time.backward if stretch.end_m < stretch.start_m else at_time.forward
    if not usable:
        return stretch
    share = road.share(stretch.piece, stretch.start_m, stretch.end_m)
    duration = float(road.piece_length[stretch.piece]) * share / max(at_time.speed_kmh, 1.0) * 3.6
    return replace(stretch, duration_s=duration, mode=MODE_YES)


def reaching_times(road: RoadGraph, stretches: list[Stretch], departure: datetime, state: TimedState) -> list[datetime]:
    """When the route reaches the start of each stretch."""
    times, elapsed = [], 0.0
    for stretch in stretches:
        times.append(departure + timedelta(seconds=elapsed))
        elapsed += retimed(stretch, state, road).duration_s
    return times


def rules_met(road: RoadGraph, timed: TimedRoads, vehicle: str, stretches: list[Stretch], times: list[datetime],
              state: TimedState) -> list[RuleMet]:  # fmt: skip
    """The rules that held on the roads driven, and those of timed roads the route passed by
    while closed to it (why it went round): one entry per way and rule."""
    met: dict[tuple[int, str], RuleMet] = {}
    for stretch, at in zip(stretches, times, strict=True):
        at_time = state.pieces.get(stretch.piece)
        if at_time is not None:
            for rule in at_time.applied:
                way = timed.way(stretch.piece)
                met.setdefault((way.way_id, rule.text), RuleMet(stretch.piece, way.way_id, rule, effect(rule, vehicle), at))
    touched = {node: at for stretch, at in zip(stretches, times, strict=True) for node in road.endpoints(stretch.piece)}
    driven = {s.piece for s in stretches}
    for piece, at_time in state.pieces.items():
        if piece in driven or at_time.forward or at_time.backward:
            continue
        nodes = [n for n in road.endpoints(piece) if n in touched]
        if not nodes:
            continue
        way = timed.way(piece)
        for rule in at_time.applied or [r for r in way.rules if r.key in keys_of(vehicle)]:
            held = rule in at_time.applied
            text = f"closed to {vehicle}: the route went round" if held else f"does not hold, so closed to {vehicle}: the route went round"
            met.setdefault((way.way_id, rule.text), RuleMet(piece, way.way_id, rule, text, touched[nodes[0]]))
    return list(met.values())


def effect(rule: ConditionalRule, vehicle: str) -> str:
    if rule.key == "maxspeed":
        return f"speed limit {rule.value} km/h"
    if rule.value in DESTINATION_VALUES:
        return f"open to {vehicle} only to reach a place inside ({rule.value})"
    if rule.value in CLOSED_VALUES:
        return f"closed to {vehicle}"
    return f"open to {vehicle} ({rule.value})"
