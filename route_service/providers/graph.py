"""The `graph` routing provider: Dijkstra on our own road graph (`graph_engine`).

It serves what OSRM's contracted graph cannot: per-query costs, i.e. emergency routing
with `emergencyRoutingRadius > 0`, and it is an independent oracle for the OSRM provider.
It routes from one point to another and computes matrices; the registry serves waypoints and
detour costs through its routes, leg by leg. Synchronous and CPU-bound: the caller runs it
in a thread pool. Queries arrive validated (`providers.base`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from itertools import groupby
from pathlib import Path

import numpy as np
import shapely.geometry

from common.errors import DatasetNotReady, NoRouteFound, PointNotRoutable
from common.geo import LatLon
from common.vehicles import VEHICLE_TABLE
from route_service.graph_engine import GraphEngine, PathResult, SnapPoint, Stretch, isochrone
from route_service.graph_engine.closures import closed_pieces, exceeded_dimensions
from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_engine.shared import shared_engine
from route_service.graph_engine.timed import (
    NO_PIECES,
    ClosedAtTime,
    Overrides,
    RuleMet,
    TimedPath,
    TimedPoint,
    keys_of,
    matrix_at,
    overrides,
    route_at,
    rules_on_trace,
    snap_at_state,
)
from route_service.graph_format import GRAPH_FILE
from route_service.maneuvers import with_maneuvers
from route_service.model import (
    EVERY_PROFILE,
    TRUCK_PARAMETERS,
    EmergencySegment,
    IsochroneQuery,
    IsochroneResult,
    Leg,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    Restrictions,
    Route,
    RouteQuery,
    RouteResult,
    RouteTime,
    Snapped,
    Step,
    TimedPointInfo,
    TimeRuleMet,
)
from route_service.providers.base import Plugins
from route_service.time_rules import size_of

GRAPH_DIR = "graph"


class GraphProvider:
    name = "graph"

    def __init__(self, graph_dir: Path, cache_dir: Path | None = None) -> None:
        self.graph_dir = graph_dir
        self.cache_dir = cache_dir  # where the prepared graph is shared (graph_engine.shared)
        self._engine: GraphEngine | None = None
        self._building = threading.Lock()

    @classmethod
    def load(cls, dataset_dir: Path, *, now: bool = True, cache_dir: Path | None = None) -> GraphProvider:
        """The dataset's graph provider; its engine built now, or on first use (`now=False`)."""
        graph_dir = dataset_dir / GRAPH_DIR
        if not (graph_dir / GRAPH_FILE).is_file():
            raise DatasetNotReady(f"the road graph has not been built for this dataset ({GRAPH_DIR}/{GRAPH_FILE})")
        provider = cls(graph_dir, cache_dir)
        if now:
            provider.preload()
        return provider

    @property
    def engine(self) -> GraphEngine:
        """The prepared graph, built once and memory-mapped like OSRM's and Valhalla's files:
        the first process prepares it (~60 MB on Heidelberg, 0.3 s) into a file under
        ROUTE_GRAPH_CACHE_DIR that every process maps (graph_engine.shared)."""
        if self._engine is None:
            with self._building:
                if self._engine is None:
                    self._engine = shared_engine(self.graph_dir, self.cache_dir)
        return self._engine

    def preload(self) -> None:
        self.engine  # noqa: B018 - built on access

    def cut_points(self) -> np.ndarray:
        """[lon, lat] of the points where the loaded map cuts a through road (RoadGraph.edge_points),
        for the isochrones of other providers to say when they reach the map's edge."""
        road = self.engine.road
        ends = road.edge_points
        return np.column_stack([road.a["geom_lon"][ends], road.a["geom_lat"][ends]])

    def info(self) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            description="Dijkstra on the OpenStreetMap road graph; supports emergency routing",
            profiles=EVERY_PROFILE,
            emergency_routing=True,
            restrictions=True,
            time_rules=True,
        )

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix, isochrone=self.isochrone)

    # ------------------------------------------------------------ route

    def route(self, query: RouteQuery) -> RouteResult:
        if query.restrictions.time is not None:
            return self.route_at(query, query.restrictions.time)
        radius = float(query.emergency_radius_m)
        origin = self._snap(query.origin, query.vehicle, "from", radius)
        dest = self._snap(query.destination, query.vehicle, "to", radius)
        closed = closed_pieces(self.engine.road, query.restrictions, query.vehicle)
        path = self.engine.shortest_path(query.vehicle, query.route_type, origin, dest, radius, closed)
        if path is None:
            raise no_route(query.vehicle, query.restrictions, self.engine.road)
        notes = []
        if query.alternatives > 0:
            notes.append(f"the {self.name} provider computes no alternative routes; only the best route is returned")
        return RouteResult(
            routes=[to_route(path, query.steps)],
            origin=to_snapped(origin, self.engine),
            destination=to_snapped(dest, self.engine),
            alternatives_requested=query.alternatives,
            notes=notes,
        )

    def route_at(self, query: RouteQuery, when: RouteTime) -> RouteResult:
        """The route at a time (issue 33): each road's rules by time as they are when the route
        reaches it. For an arrival time, the departure is found by routing back from it: the
        route's own duration, again from the departure that gives (two rounds; a third when the
        rules changed the duration)."""
        departure = when.at
        found = self.timed_path(query, departure)
        for _ in range(3 if when.arrival else 0):
            if found.arrival == when.at:
                break
            departure = departure - (found.arrival - when.at)
            found = self.timed_path(query, departure)
        notes = [f"the {self.name} provider computes no alternative routes; only the best route is returned"] * (
            query.alternatives > 0
        )
        zone = when.at.tzinfo
        return RouteResult(
            routes=[to_route(found.path, query.steps)],
            origin=to_snapped(found.origin, self.engine),
            destination=to_snapped(found.dest, self.engine),
            alternatives_requested=query.alternatives,
            notes=notes,
            departure=found.departure.astimezone(zone),
            arrival=found.arrival.astimezone(zone),
            time_rules=[self.rule_met(m, zone) for m in found.met],
        )

    def rule_met(self, met: RuleMet, zone: tzinfo | None) -> TimeRuleMet:
        return TimeRuleMet(met.way_id, self.engine.piece_name(met.piece), met.rule.tag, met.effect, met.at.astimezone(zone))

    def timed_path(self, query: RouteQuery, departure: datetime) -> TimedPath:
        limit = VEHICLE_TABLE[query.vehicle].snap_radius_m
        closed = closed_pieces(self.engine.road, query.restrictions, query.vehicle)
        ends = (query.origin, query.destination)
        try:
            found = route_at(self.engine, query.vehicle, query.route_type, ends, departure,
                             size_of(query.vehicle, query.restrictions.truck), closed, limit)  # fmt: skip
        except LookupError as exc:
            end = int(exc.args[0])
            raise not_routable(ends[end], query.vehicle, ("from", "to")[end], departure) from exc
        except ClosedAtTime as exc:
            raise closed_at_time(self.engine, query, exc) from exc
        if found is None:
            raise no_route(query.vehicle, query.restrictions, self.engine.road)
        return found

    def next_rule_change(self, at: datetime) -> datetime:
        return self.engine.timed.next_change(at)

    def timed_near(self, points: Sequence[LatLon]) -> bool:
        return self.engine.timed.near(list(points))

    def trace_rules(self, vehicle: str, places: list[tuple[LatLon, datetime]]) -> list[TimeRuleMet]:
        """The rules by time a recorded trace met where it drove, at its own times (POST /v1/match)."""
        return [self.rule_met(m, UTC) for m in rules_on_trace(self.engine, vehicle, places, size_of(vehicle, None))]

    def surface_point(self, vehicle: str, point: LatLon, max_distance_m: float) -> LatLon | None:
        """Where another engine should snap `point`: the surface road it means when its nearest
        road lies below the ground (providers.surface). Only once the graph is open: during a
        map switch's first seconds (the old graph released first) points go on as given."""
        if self._engine is None:
            return None
        meant = self.engine.surface_instead(vehicle, point.lat, point.lon, max_distance_m=max_distance_m)
        return None if meant is None else LatLon(meant.lat, meant.lon)

    def _snap(self, point: LatLon, vehicle: str, parameter: str, radius_m: float = 0.0) -> SnapPoint:
        limit = VEHICLE_TABLE[vehicle].snap_radius_m
        snapped = self.engine.snap(vehicle, point.lat, point.lon, max_distance_m=limit, radius_m=radius_m)
        if snapped is None:
            raise not_routable(point, vehicle, parameter)
        return snapped

    # ------------------------------------------------------------ isochrone

    def isochrone(self, query: IsochroneQuery) -> IsochroneResult:
        road = self.engine.road
        graph = road.vehicles[query.vehicle]
        cost = "fastest" if query.metric == "time" else "shortest"  # the weights a route type has
        origin, timed = self._snap(query.point, query.vehicle, "point"), None
        if query.departure is not None and len(self.engine.timed):
            origin, timed = self.isochrone_at(query, cost)
        reached = isochrone.reach(road, graph, cost, origin, max(query.limits), timed)
        shapes = isochrone.polygons(
            road, self.engine.snapper, query.vehicle, reached, list(query.limits), VEHICLE_TABLE[query.vehicle].snap_radius_m
        )
        areas = [shapely.geometry.mapping(s) for s in shapes]
        limits = list(query.limits)
        return IsochroneResult(to_snapped(origin, self.engine), areas, reached.exhausted_within(limits),
                               reached.edge_within(limits, road.edge_points))  # fmt: skip

    def isochrone_at(self, query: IsochroneQuery, cost: str) -> tuple[SnapPoint, Overrides]:
        """The start and the edge weights at the departure: each timed road as its rules are
        then (the area's later roads too: an area has no single time of reaching), delivery
        zones open (each holds places the area reaches)."""
        assert query.departure is not None
        road = self.engine.road
        state = self.engine.timed.state(query.vehicle, query.departure, size_of(query.vehicle, None))
        limit = VEHICLE_TABLE[query.vehicle].snap_radius_m
        origin = snap_at_state(self.engine, query.vehicle, query.point, state, limit)
        if origin is None:
            raise not_routable(query.point, query.vehicle, "point", query.departure)
        return origin, overrides(road, road.vehicles[query.vehicle], cost, state, NO_PIECES)

    # ------------------------------------------------------------ matrix

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        if query.restrictions.time is not None:
            return self.matrix_at(query, query.restrictions.time.at)
        sources = [self._snap(p, query.vehicle, f"sources[{i}]") for i, p in enumerate(query.sources)]
        dests = [self._snap(p, query.vehicle, f"destinations[{i}]") for i, p in enumerate(query.destinations)]
        durations: list[list[float | None]] = []
        distances: list[list[float | None]] = []
        closed = closed_pieces(self.engine.road, query.restrictions, query.vehicle)
        for source in sources:
            cells = self.engine.one_to_many(query.vehicle, query.route_type, source, dests, closed,
                                            both=both_metrics(query))  # fmt: skip
            durations.append([None if c is None else round(c[0], 1) for c in cells])
            distances.append([None if c is None else round(c[1], 1) for c in cells])
        return MatrixResult(
            durations_s=durations,  # both cost the same search: the formatter leaves one out
            distances_m=distances,
            snapped_sources=[to_snapped(s, self.engine) for s in sources],
            snapped_destinations=[to_snapped(d, self.engine) for d in dests],
            annotations=query.annotations,
        )

    def matrix_at(self, query: MatrixQuery, departure: datetime) -> MatrixResult:
        """The matrix leaving at `departure` (issue 33): rules by time as they are then, each
        destination's delivery zone open for its own cells, and the windows of every point on
        a road with rules by time."""
        limit = VEHICLE_TABLE[query.vehicle].snap_radius_m
        closed = closed_pieces(self.engine.road, query.restrictions, query.vehicle)
        size = size_of(query.vehicle, query.restrictions.truck)
        try:
            found = matrix_at(self.engine, query.vehicle, query.route_type, query.sources, query.destinations,
                              departure, size, closed, limit, query.when_open, both_metrics(query))  # fmt: skip
        except LookupError as exc:
            index = int(exc.args[0])
            side = len(query.sources)
            point, name = (query.sources[index], f"sources[{index}]") if index < side else \
                (query.destinations[index - side], f"destinations[{index - side}]")  # fmt: skip
            raise not_routable(point, query.vehicle, name) from exc
        zone = departure.tzinfo
        return MatrixResult(
            durations_s=[[None if c is None else round(c[0], 1) for c in row] for row in found.cells],
            distances_m=[[None if c is None else round(c[1], 1) for c in row] for row in found.cells],
            snapped_sources=[to_snapped(s, self.engine) for s in found.sources],
            snapped_destinations=[to_snapped(d, self.engine) for d in found.destinations],
            annotations=query.annotations,
            departure=departure,
            timed_points=[self.point_info(p, len(query.sources), query.vehicle, zone) for p in found.points],
        )

    def point_info(self, point: TimedPoint, side: int, vehicle: str, zone: tzinfo | None) -> TimedPointInfo:
        way = self.engine.timed.way(point.piece)
        name = f"sources[{point.index}]" if point.index < side else f"destinations[{point.index - side}]"
        return TimedPointInfo(
            name, way.way_id, self.engine.piece_name(point.piece),
            [rule.tag for rule in way.rules if rule.key in keys_of(vehicle)], point.open_at_departure,
            [(start.astimezone(zone), end.astimezone(zone)) for start, end in point.windows],
        )  # fmt: skip


# ---------------------------------------------------------------- conversion


def both_metrics(query: MatrixQuery) -> bool:
    """Whether the matrix needs the metric its search does not minimise (`annotations`)."""
    searched = "duration" if query.route_type == "fastest" else "distance"
    return any(name != searched for name in query.annotations)


def not_routable(point: LatLon, vehicle: str, parameter: str, at: datetime | None = None) -> PointNotRoutable:
    limit = VEHICLE_TABLE[vehicle].snap_radius_m
    when = f" at {at.isoformat(timespec='minutes')}" if at is not None else ""
    return PointNotRoutable(
        f"no road usable by {vehicle} within {limit:.0f} m of {point.lat:.6f},{point.lon:.6f}{when}", parameter=parameter
    )


def closed_at_time(engine: GraphEngine, query: RouteQuery, closed: ClosedAtTime) -> NoRouteFound:
    """An end on a road closed when the route reaches it: the road, its rules, the next opening."""
    parameter = ("from", "to")[closed.end]
    zone = query.restrictions.time.at.tzinfo if query.restrictions.time else None
    way = engine.timed.way(closed.piece)
    rules = ", ".join(r.tag for r in way.rules if r.key in keys_of(query.vehicle))
    when = "reached" if closed.end else "left"
    opens = (
        f"It next opens at {closed.opens.astimezone(zone).isoformat(timespec='minutes')}"
        if closed.opens is not None
        else "It does not open within a year"
    )
    return NoRouteFound(
        f"the point lies on {engine.piece_name(closed.piece) or 'a road'} (way {way.way_id}), closed to "
        f"{query.vehicle} by its rules by time ({rules}) when {when} at "
        f"{closed.at.astimezone(zone).isoformat(timespec='minutes')}. {opens}",
        parameter=parameter,
    )


def to_snapped(point: SnapPoint, engine: GraphEngine) -> Snapped:
    return Snapped(LatLon(point.lat, point.lon), round(point.distance_m, 1), engine.piece_name(point.piece))


def to_route(path: PathResult, with_steps: bool = True) -> Route:
    """The route, its steps one per street with maneuvers read from the line (route_service.maneuvers)."""
    geometry = np.round(np.asarray(path.geometry, dtype=np.float64).reshape(-1, 2), 7)
    leg = Leg(
        distance_m=round(path.distance_m, 1),
        duration_s=round(path.duration_s, 1),
        summary=", ".join(dict.fromkeys(s.name for s in path.stretches if s.name))[:200],
        steps=with_maneuvers(steps(path.stretches, path.spans), geometry) if with_steps else [],
    )
    return Route(
        distance_m=round(path.distance_m, 1),
        duration_s=round(path.duration_s, 1),
        geometry=geometry,
        legs=[leg],
        emergency_segments=[
            EmergencySegment(start, end, round(metres, 1), reason) for start, end, metres, reason in path.emergency
        ],
    )


def steps(stretches: list[Stretch], spans: list[tuple[int, int]]) -> list[Step]:
    """One step per street: consecutive stretches with the same name are merged."""
    streets = groupby(zip(stretches, spans, strict=True), key=lambda piece: piece[0].name)
    return [street(name, list(pieces)) for name, pieces in streets]


def street(name: str, stretches: list[tuple[Stretch, tuple[int, int]]]) -> Step:
    """Consecutive stretches of one street as one step, from the first's start to the last's end."""
    distance = sum(stretch.distance_m for stretch, _ in stretches)
    duration = sum(stretch.duration_s for stretch, _ in stretches)
    span = (stretches[0][1][0], stretches[-1][1][1])
    return Step(name, round(distance, 1), round(duration, 1), span)


def no_route(vehicle: str, restrictions: Restrictions, road: RoadGraph) -> NoRouteFound:
    """What a failed search says: the restriction that leaves no way, when the request has one."""
    if restrictions.avoid is not None:
        return NoRouteFound(
            f"no {vehicle} route between the start and the destination avoids the area", parameter="avoid"
        )
    if restrictions.truck is not None:
        exceeded = [TRUCK_PARAMETERS[i] for i in exceeded_dimensions(road, restrictions.truck)]
        named = ", ".join(exceeded) if exceeded else "size and weight"
        return NoRouteFound(
            f"no truck route between the start and the destination is open to a truck of this size and weight "
            f"({named} above the limits of some roads)",
            parameter=exceeded[0] if exceeded else restrictions.parameter,
        )
    return NoRouteFound(
        f"no {vehicle} route connects the start and the destination "
        "(they lie on parts of the road network that are not connected)",
        parameter="to",
    )
