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

import math
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import orjson
from scipy.spatial import cKDTree

from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service.graph_engine.matrix import Cell, TimedWeights
from route_service.graph_engine.path import PathResult, Stretch, emergency_runs
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph, to_xyz
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_format import MODE_YES
from route_service.graph_tags import CLOSED_VALUES, classify
from route_service.time_rules import DESTINATION_VALUES, Condition, ConditionalRule, TimeTable, parse_rules, tags_at

if TYPE_CHECKING:
    from route_service.graph_engine import GraphEngine

NO_PIECES = np.empty(0, dtype=np.int64)
# Routes between points rarely leave their box by more than this: a request with no timed road
# that near is answered without rules by time (by the default provider, ProviderRegistry.moot_time).
NEAR_MARGIN_M = 5000.0
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


T = TypeVar("T")
# What one memo keeps: the snaps of a few thousand stops and the weights of their zones.
FACTS_KEPT = 4096


class Memo:
    """Values found once and shared by the queries of every thread, the oldest forgotten past
    FACTS_KEPT. A state's memo (`TimedState.facts`) holds what follows from its pieces alone
    (its open pieces, zones, weights, where points snap): a tour's legs leave at a hundred
    minutes that map to a few states (`TimedRoads.state`), and each leg found them again
    (cProfile of a 100-leg Heidelberg tour at 08:00: snaps, zones and weights were 0.32 of its
    0.79 s). A state's memo lives with the state, so at most STATES_KEPT of them do."""

    def __init__(self) -> None:
        self._found: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def memo(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            if key in self._found:
                return self._found[key]
        made = make()
        with self._lock:
            while len(self._found) >= FACTS_KEPT:
                self._found.pop(next(iter(self._found)))
            self._found[key] = made
        return made


@dataclass(frozen=True)
class TimedState:
    """The timed pieces of one vehicle at one time; `facts` are shared by the states of the same pieces."""

    at: datetime
    pieces: dict[int, PieceAtTime]
    facts: Memo = field(default_factory=Memo, compare=False, repr=False)

    def open(self) -> np.ndarray:
        """The pieces usable in some direction at this time."""
        return self.facts.memo("open", lambda: np.array(
            sorted(p for p, s in self.pieces.items() if s.forward or s.backward), dtype=np.int64))  # fmt: skip


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
        self._slots, self._piece_slots = condition_slots(self)
        # built once per map, not per query: the pieces' first points (`near`) and centres (`centres`)
        start = self.road.a["geom_ptr"][self.pieces]
        self.start_lat, self.start_lon = self.road.a["geom_lat"][start], self.road.a["geom_lon"][start]
        self._centres: cKDTree | None = None
        self._by_holds: dict[tuple[str, tuple[tuple[str, float], ...], tuple[bool, ...]], TimedState] = {}
        self.any_time = Memo()  # where points lie with every timed road open (`snap_any_time`)

    def __len__(self) -> int:
        return len(self.pieces)

    def near(self, points: list[LatLon]) -> bool:
        """Whether a timed piece lies in the points' box widened by NEAR_MARGIN_M (or a
        quarter of its diagonal, if more): where routes between them run."""
        if not len(self.pieces):
            return False
        lats, lons = [p.lat for p in points], [p.lon for p in points]
        south, north, west, east = min(lats), max(lats), min(lons), max(lons)
        diagonal = haversine_m(LatLon(south, west), LatLon(north, east))
        margin = max(NEAR_MARGIN_M, diagonal / 4) / 111_320.0  # degrees of latitude
        widen = margin / max(0.05, math.cos(math.radians((south + north) / 2)))
        lat, lon = self.start_lat, self.start_lon
        inside = (lat >= south - margin) & (lat <= north + margin) & (lon >= west - widen) & (lon <= east + widen)
        return bool(inside.any())

    def centres(self) -> cKDTree:
        """A tree of the timed pieces' centres, built on first use (map matching's `rules_on_trace`)."""
        if self._centres is None:
            self._centres = cKDTree(self.road.piece_center[self.pieces])
        return self._centres

    def state(self, vehicle: str, at: datetime, size: dict[str, float] | None) -> TimedState:
        """How `vehicle` may use each timed piece at `at`. Rules by time change on the minute:
        the states of the last STATES_KEPT (vehicle, size, minute) are kept. A minute not kept
        evaluates each distinct condition once (`_slots`) and reuses the state of the same
        outcomes: a tour's legs leave at a hundred minutes, and their rules change a few times
        (a state took 5.8 ms for Heidelberg's 243 timed pieces, bench/RESULTS.md `time_rules`)."""
        minute = at.astimezone(UTC).replace(second=0, microsecond=0)
        sized = tuple(sorted((size or {}).items()))
        key = (vehicle, sized, minute)
        with self._lock:
            found = self._states.get(key)
        if found is None:
            holds = self.slot_holds(minute, size)
            with self._lock:
                found = self._by_holds.get((vehicle, sized, holds))
            if found is None:
                found = TimedState(at, {p: self.piece_with(vehicle, p, holds) for p in self.pieces.tolist()})
            with self._lock:
                self._states[key] = self._by_holds[(vehicle, sized, holds)] = found
                forget_oldest(self._states)
                forget_oldest(self._by_holds)
        return TimedState(at, found.pieces, found.facts)

    def next_change(self, at: datetime) -> datetime:
        """When any rule by time on the map next starts or stops to hold after `at` (for any
        vehicle); a year on when none does. Until then every route is the same at any minute,
        but for its times (`route_service.split_tours`)."""
        horizon = at + timedelta(days=366)
        with self._table_lock:
            changes = [self.table.next_change(condition, at, where) for condition, where in self._slots]
        return min([c for c in changes if c is not None and c < horizon], default=horizon)

    def slot_holds(self, at: datetime, size: dict[str, float] | None) -> tuple[bool, ...]:
        """Whether each distinct condition holds at `at` for a vehicle of `size`."""
        with self._table_lock:
            return tuple(self.table.holds(condition, at, where, size) for condition, where in self._slots)

    def piece_at(self, vehicle: str, piece: int, at: datetime, size: dict[str, float] | None) -> PieceAtTime:
        with self._table_lock:
            holds = {
                slot: self.table.holds(self._slots[slot][0], at, self._slots[slot][1], size)
                for slot, rule in zip(self._piece_slots[piece], self.way(piece).rules, strict=True)
                if rule.key in keys_of(vehicle)
            }
        return self.piece_with(vehicle, piece, holds)

    def piece_with(self, vehicle: str, piece: int, holds: Sequence[bool] | Mapping[int, bool]) -> PieceAtTime:
        """The piece's use when its rules' conditions hold as `holds` says (by slot)."""
        way, keys = self.way(piece), keys_of(vehicle)
        rules = [(rule, holds[slot]) for slot, rule in zip(self._piece_slots[piece], way.rules, strict=True) if rule.key in keys]
        tags, applied = tags_at(way.tags, [rule for rule, _ in rules], [held for _, held in rules])
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


def forget_oldest(kept: dict[Any, TimedState]) -> None:
    while len(kept) > STATES_KEPT:
        kept.pop(next(iter(kept)))


def keys_of(vehicle: str) -> tuple[str, ...]:
    """The keys whose rules concern a vehicle: its access keys, and `maxspeed` for motor vehicles."""
    row = VEHICLE_TABLE[vehicle]
    return (*row.access_keys, "maxspeed") if row.motorized else row.access_keys


def condition_slots(roads: TimedRoads) -> tuple[list[tuple[Condition, tuple[float, float]]], dict[int, list[int]]]:
    """The distinct (condition, place) pairs of the timed pieces' rules, and each piece's slot
    per rule of its way. Places are those the time table tells apart (to 0.01°: a time zone
    and a holiday calendar), so a slot's outcome is every such piece's."""
    slots: list[tuple[Condition, tuple[float, float]]] = []
    slot_of: dict[tuple[Condition, float, float], int] = {}
    piece_slots: dict[int, list[int]] = {}
    for piece in roads.pieces.tolist():
        where = roads.where(piece)
        place = (round(where[0], 2), round(where[1], 2))
        own = []
        for rule in roads.way(piece).rules:
            key = (rule.condition, *place)
            if key not in slot_of:
                slot_of[key] = len(slots)
                slots.append((rule.condition, where))
            own.append(slot_of[key])
        piece_slots[piece] = own
    return slots, piece_slots


def timed_way(text: str) -> TimedWay:
    tags = orjson.loads(text)
    way_id = int(tags.pop("@id", 0))
    return TimedWay(way_id, tags, parse_rules(tags).rules)


def overrides(road: RoadGraph, graph: VehicleGraph, route_type: str, state: TimedState,
              closed_zones: np.ndarray) -> Overrides:  # fmt: skip
    """(edge positions, weights) of the vehicle graph at the state's time: each timed piece's
    edges closed, or open at its speed in the directions the way allows; `closed_zones`: the
    destination-only pieces this query may not enter. Found once per state (read-only arrays)."""
    key = ("weights", id(graph), route_type, np.asarray(closed_zones, dtype=np.int64).tobytes())
    return state.facts.memo(key, lambda: state_overrides(graph, route_type, state, closed_zones))


def state_overrides(graph: VehicleGraph, route_type: str, state: TimedState, closed_zones: np.ndarray) -> Overrides:
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
    found = np.array(positions, dtype=np.int64), np.array(values, dtype=np.float64)
    for array in found:
        array.setflags(write=False)
    return found


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
    zone = state_zones(road, state)
    kept = {zone[p] for p in ends if p in zone}
    return np.array([p for p, z in zone.items() if z not in kept], dtype=np.int64)


def state_zones(road: RoadGraph, state: TimedState) -> dict[int, int]:
    """Each destination-only piece's zone at the state's time (found once per state: never written)."""

    def find() -> dict[int, int]:
        only = np.array([p for p, s in state.pieces.items() if s.destination_only], dtype=np.int64)
        return zones(road, only) if len(only) else {}

    return state.facts.memo("zones", find)


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
    through road is on the through road (else the zone would open to traffic passing there).
    Found once per point and state (a leg's end is the next leg's start, a matrix's points a
    tour's stops)."""
    key = ("snap", vehicle, point.lat, point.lon, max_distance_m)
    return state.facts.memo(key, lambda: snap_open(engine, vehicle, point, state, max_distance_m))


def snap_open(engine: GraphEngine, vehicle: str, point: LatLon, state: TimedState,
              max_distance_m: float) -> SnapPoint | None:  # fmt: skip
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
    key = (vehicle, point.lat, point.lon, max_distance_m)
    return engine.timed.any_time.memo(key, lambda: snap_with_timed_open(engine, vehicle, point, max_distance_m))


def snap_with_timed_open(engine: GraphEngine, vehicle: str, point: LatLon, max_distance_m: float) -> SnapPoint | None:
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


# ---------------------------------------------------------------- a matrix at a time

WINDOW_DAYS = 8  # a point's opening windows are listed this far after the departure
MAX_WINDOW_CHANGES = 64  # of a road's rules within those days (a daily window: 16 changes)
Window = tuple[datetime, datetime]


@dataclass(frozen=True)
class TimedPoint:
    """A matrix point on a road whose rules depend on the time."""

    index: int  # among the sources, then the destinations
    piece: int
    open_at_departure: bool
    windows: list[Window]  # when the vehicle may reach it, within WINDOW_DAYS


@dataclass(frozen=True)
class TimedMatrix:
    cells: list[list[Cell | None]]
    sources: list[SnapPoint]
    destinations: list[SnapPoint]
    points: list[TimedPoint]


def matrix_at(engine: GraphEngine, vehicle: str, route_type: str, sources: list[LatLon], dests: list[LatLon],
              departure: datetime, size: dict[str, float] | None, closed: np.ndarray | None,
              max_distance_m: float, when_open: bool, both: bool = True) -> TimedMatrix:  # fmt: skip
    """Every source to every destination leaving at `departure`, each timed road as its rules
    are then (a matrix has no single time of reaching: the route at a time re-checks each road).
    A destination on a road closed at the departure has no cells, or with `when_open` the cells
    of its next opening (an optimizer then visits it in its windows). A destination inside a
    delivery zone opens that zone only for its own cells. Raises LookupError(point index) for a
    point with no usable road near at any time."""
    timed = engine.timed
    places = {(p.lat, p.lon): p for p in [*sources, *dests]}  # an all-to-all matrix names each point twice
    where = {key: snap_any_time(engine, vehicle, p, max_distance_m) for key, p in places.items()}
    meant = [where[(p.lat, p.lon)] for p in [*sources, *dests]]
    for index, snapped in enumerate(meant):
        if snapped is None:
            raise LookupError(index)
    points = [timed_point(timed, vehicle, i, s.piece, departure, size) for i, s in enumerate(meant)
              if s is not None and s.piece in timed.way_of]  # fmt: skip
    evaluated_at = {p.index: evaluation_time(p, departure, when_open) for p in points}
    groups: dict[tuple[datetime, int], list[int]] = {}
    for j in range(len(dests)):
        at = evaluated_at.get(len(sources) + j, departure)
        if at is not None:
            groups.setdefault((at, zone_of(engine, vehicle, meant[len(sources) + j], at, size)), []).append(j)
    cells: list[list[Cell | None]] = [[None] * len(dests) for _ in sources]
    for (at, _), members in groups.items():
        state = timed.state(vehicle, at, size)
        targets = [snap_at_state(engine, vehicle, dests[j], state, max_distance_m) for j in members]
        for i, source in enumerate(sources):
            origin = snap_at_state(engine, vehicle, source, state, max_distance_m)
            if origin is None:
                continue
            reached = [(j, t) for j, t in zip(members, targets, strict=True) if t is not None]
            row_weights = zone_weights(engine.road, vehicle, route_type, state, [origin.piece, *(t.piece for _, t in reached)])
            row = engine.one_to_many(vehicle, route_type, origin, [t for _, t in reached], closed, row_weights, both)
            for (j, _), cell in zip(reached, row, strict=True):
                cells[i][j] = cell
    return TimedMatrix(cells, [s for s in meant[: len(sources)] if s is not None],
                       [s for s in meant[len(sources):] if s is not None], points)  # fmt: skip


def zone_weights(road: RoadGraph, vehicle: str, route_type: str, state: TimedState, ends: list[int]) -> TimedWeights:
    """A matrix row's timed weights: the state's, with the delivery zones its row and column
    open. Most rows share them (building them took a fifth of a row's time on Heidelberg), so
    they are kept in the state's memo by the zones kept open."""
    zone = state_zones(road, state)
    kept = frozenset(zone[p] for p in ends if p in zone)

    def build() -> TimedWeights:
        shut = np.array([p for p, z in zone.items() if z not in kept], dtype=np.int64)
        return matrix_overrides(road, vehicle, route_type, state, shut)

    return state.facts.memo(("matrix weights", vehicle, route_type, kept), build)


def timed_point(timed: TimedRoads, vehicle: str, index: int, piece: int, departure: datetime,
                size: dict[str, float] | None) -> TimedPoint:  # fmt: skip
    now = timed.piece_at(vehicle, piece, departure, size)
    windows = open_windows(timed, vehicle, piece, departure, departure + timedelta(days=WINDOW_DAYS), size)
    return TimedPoint(index, piece, now.forward or now.backward, windows)


def evaluation_time(point: TimedPoint, departure: datetime, when_open: bool) -> datetime | None:
    """When a point's cells are computed: at the departure when its road is open then, else at
    its next opening (`when_open`), else never (None: no cells)."""
    if point.open_at_departure:
        return departure
    return point.windows[0][0] if when_open and point.windows else None


def zone_of(engine: GraphEngine, vehicle: str, point: SnapPoint | None, at: datetime,
            size: dict[str, float] | None) -> int:  # fmt: skip
    """The delivery zone a point's road belongs to at a time (-1: none)."""
    if point is None or point.piece not in engine.timed.way_of:
        return -1
    state = engine.timed.state(vehicle, at, size)
    if not state.pieces[point.piece].destination_only:
        return -1
    only = np.array([p for p, s in state.pieces.items() if s.destination_only], dtype=np.int64)
    return zones(engine.road, only)[point.piece]


def open_windows(timed: TimedRoads, vehicle: str, piece: int, start: datetime, end: datetime,
                 size: dict[str, float] | None) -> list[Window]:  # fmt: skip
    """When the vehicle may use a timed piece between `start` and `end`: its rules' changes in
    order, each evaluated (a window's bounds are rule changes, like `next_opening`)."""
    way, where = timed.way(piece), timed.where(piece)
    rules = [rule for rule in way.rules if rule.key in keys_of(vehicle)]
    state = timed.piece_at(vehicle, piece, start, size)
    opened = start if state.forward or state.backward else None
    windows: list[Window] = []
    at = start
    for _ in range(MAX_WINDOW_CHANGES):
        changes = [c for rule in rules if (c := timed.table.next_change(rule.condition, at, where)) is not None]
        if not changes or min(changes) >= end:
            break
        at = min(changes)
        state = timed.piece_at(vehicle, piece, at, size)
        usable = state.forward or state.backward
        if usable and opened is None:
            opened = at
        elif not usable and opened is not None:
            windows.append((opened, at))
            opened = None
    if opened is not None:
        windows.append((opened, end))
    return windows


def matrix_overrides(road: RoadGraph, vehicle: str, route_type: str, state: TimedState,
                     shut: np.ndarray) -> TimedWeights:  # fmt: skip
    graph = road.vehicles[vehicle]
    searched = overrides(road, graph, route_type, state, shut)
    durations = searched if route_type == "fastest" else overrides(road, graph, "fastest", state, shut)
    return TimedWeights(searched, durations)


# ---------------------------------------------------------------- a recorded trace

TRACE_ON_ROAD_M = 5.0  # a matched place this near a timed road was on it


def rules_on_trace(engine: GraphEngine, vehicle: str, places: list[tuple[LatLon, datetime]],
                   size: dict[str, float] | None) -> list[RuleMet]:  # fmt: skip
    """The rules by time a driven trace met (each way and rule once, when first met): those that
    held where it drove, and those of timed roads it drove while they were closed to it. Only
    places near a timed road are looked at (one nearest-centre query for all of them)."""
    timed = engine.timed
    if not len(timed) or not places:
        return []
    road = engine.road
    centers = timed.centres()
    reach = float(road.piece_radius[timed.pieces].max()) + TRACE_ON_ROAD_M
    xyz = to_xyz(np.array([p.lat for p, _ in places]), np.array([p.lon for p, _ in places]))
    near, _ = centers.query(xyz, distance_upper_bound=reach)
    met: dict[tuple[int, str], RuleMet] = {}
    for (place, at), distance in zip(places, near, strict=True):
        if not np.isfinite(distance):
            continue
        snapped = engine.snap_at(vehicle, place.lat, place.lon, max_distance_m=TRACE_ON_ROAD_M,
                                 opened=timed.pieces, closed=NO_PIECES)  # fmt: skip
        if snapped is None or snapped.piece not in timed.way_of:
            continue
        way, state = timed.way(snapped.piece), timed.piece_at(vehicle, snapped.piece, at, size)
        usable = state.forward or state.backward
        for rule in state.applied or ([] if usable else [r for r in way.rules if r.key in keys_of(vehicle)]):
            text = effect(rule, vehicle) if usable else f"closed to {vehicle}: driven while closed"
            met.setdefault((way.way_id, rule.text), RuleMet(snapped.piece, way.way_id, rule, text, at))
    return list(met.values())
