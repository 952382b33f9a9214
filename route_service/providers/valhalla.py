"""The `valhalla` routing provider: Valhalla in process, on the dataset's tiles (issue 30).

One graph serves every vehicle and route type, and the per-request costs OSRM's precomputed
graphs cannot: truck dimensions (its truck costing's height, width, length, weight and axle
load) and avoid areas (`exclude_polygons`). It routes (with alternatives), answers
isochrones, matches traces (`trace_attributes`) and computes matrices (`valhalla_matrix`); the
registry serves waypoints and detour costs leg by leg through its routes.
Synchronous and CPU-bound like every plugin (the binding releases the interpreter lock while
Valhalla works, measured: a Python loop beside 40 routes in a thread slowed only by the second
core's sharing). Queries arrive validated (`providers.base`).

Where it differs from OSRM: the turn instructions come from Valhalla's maneuvers, mapped onto
OSRM's maneuver types (`valhalla_answers.MANEUVERS`), so the formatter writes one style of sentence; an avoid
area's holes are not passed (Valhalla excludes whole polygons), so a route never enters the
area but may also leave out a hole in it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import shapely
import shapely.geometry
import shapely.ops
import valhalla

from common.errors import ApiError, DatasetNotReady, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service import valhalla_tiles
from route_service.model import (
    EVERY_PROFILE,
    TRUCK_PARAMETERS,
    IsochroneQuery,
    IsochroneResult,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    Restrictions,
    RouteQuery,
    RouteResult,
    RouteTime,
    Snapped,
    TimeRuleMet,
    TruckDimensions,
)
from route_service.providers import valhalla_matrix, valhalla_time
from route_service.providers.base import Plugins
from route_service.providers.surface import surface_instead
from route_service.providers.valhalla_answers import snapped, to_match, to_route
from route_service.providers.valhalla_areas import (
    OSRM_PACE,
    MapData,
    Reached,
    RouteStarts,
    as_geojson,
    contours,
    nested,
    valhalla_limit,
    within_reach,
)
from route_service.providers.valhalla_emergency import emergency_route
from route_service.providers.valhalla_requests import (
    SAME_PLACE_M,
    costing,
    exceeded,
    location,
    middle_of,
)
from route_service.time_rules import size_of
from route_service.timed_index import TIMED_DIR, TimedIndex

# The same measurement for routes: where OSRM answers a vehicle's fastest routes, Valhalla's
# durations of that vehicle (its shortest routes, avoid areas, truck dimensions, traces) are
# divided by the median ratio of all maps as one, so that one vehicle keeps one clock whichever
# engine answers (unscaled, a car's shortest route came out 20 % faster than its fastest one).
# `python -m bench engines` measures the ratio on every map, for car and truck.
OSRM_DURATION_RATIO = 0.80

# Map matching: the GPS error assumed when the trace gives none (m), and how far from a point
# its road is looked for (Valhalla's default search radius is the accuracy's; a city trace's
# points 20-30 m off a road were left unmatched at 20 m).
MATCH_ACCURACY_M = 10.0
MATCH_SEARCH_RADIUS_M = 50.0
MATCH_ATTRIBUTES = [
    "edge.length", "edge.speed", "shape", "confidence_score", "matched.point", "matched.type",
    "matched.edge_index", "matched.distance_from_trace_point", "matched.end_route_discontinuity",
]  # fmt: skip
# Valhalla's error codes (its docs' "api/turn-by-turn/api-reference" status codes).
NO_EDGES_NEAR = {171, 170}  # "No suitable edges near location"
NO_PATH = {442, 443}  # "No path could be found for input"


class ValhallaProvider:
    name = "valhalla"

    def __init__(self, config: dict[str, Any], osrm_vehicles: Iterable[str] = (), data: MapData | None = None,
                 starts: RouteStarts | None = None, timed: TimedIndex | None = None) -> None:  # fmt: skip
        # Valhalla's actor is not thread-safe (two calls at once on one actor segfaulted in
        # actor.locate) and the binding releases the interpreter lock: an actor per thread, made
        # on the thread's first call, all over the one memory-mapped tar (docs/decisions.md).
        self.config = config
        self.actors = threading.local()
        # The vehicles whose routes OSRM answers: their isochrones keep OSRM's pace (OSRM_PACE).
        self.osrm_vehicles = frozenset(osrm_vehicles)
        # The map's roads with rules by time (None: a dataset imported without them or the
        # tiles' time zones, whose rules by time Valhalla could not apply).
        self.timed = timed
        self.data = data or MapData()  # where the map cuts roads: isochrones say when they reach it
        self.starts = starts  # where OSRM's routes start: so do the isochrones of its vehicles

    @classmethod
    def load(cls, dataset_dir: Path, osrm_vehicles: Iterable[str] = (), data: MapData | None = None,
             starts: RouteStarts | None = None) -> ValhallaProvider:  # fmt: skip
        tar = dataset_dir / valhalla_tiles.VALHALLA_DIR / valhalla_tiles.TILES_TAR
        if not tar.is_file():
            raise DatasetNotReady(f"Valhalla's tiles have not been built for this dataset ({tar.name})")
        timed = TimedIndex.load(dataset_dir / valhalla_tiles.VALHALLA_DIR / TIMED_DIR)
        provider = cls(valhalla_tiles.config(dataset_dir), osrm_vehicles, data, starts, timed)
        provider.actor()  # a bad configuration fails the load, not the first request
        return provider

    def actor(self) -> Any:
        """This thread's actor."""
        if not hasattr(self.actors, "actor"):
            self.actors.actor = valhalla.Actor(self.config)
        return self.actors.actor

    def info(self) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            description="Valhalla on one graph for every vehicle; supports avoid areas, truck dimensions and "
            "emergency routing",
            profiles=EVERY_PROFILE,
            emergency_routing=True,
            alternatives=True,
            restrictions=True,
            time_rules=self.timed is not None,
        )

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix, isochrone=self.isochrone, match=self.match)

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        return valhalla_matrix.matrix(self, query)

    # ------------------------------------------------------------ route

    def route(self, query: RouteQuery) -> RouteResult:
        if query.emergency_radius_m > 0:
            return emergency_route(self, query)
        when = query.restrictions.time
        if when is not None and when.arrival:
            return valhalla_time.arrive_by(self.route_once, query, when)
        return self.route_once(query)

    def route_once(self, query: RouteQuery) -> RouteResult:
        try:
            answer = self.call("route", self.route_request(query), query.restrictions)
        except NoRouteFound as exc:
            raise (self.closed_at_time(query) or exc) from exc
        result = self.route_result(query, answer)
        return result if query.restrictions.time is None else self.at_time(query, result, answer["trip"])

    def route_request(self, query: RouteQuery) -> dict[str, Any]:
        request: dict[str, Any] = {
            "locations": [location(query.origin, query.vehicle), location(query.destination, query.vehicle)],
            **costing(query.vehicle, query.route_type, query.restrictions),
            "directions_options": {"units": "kilometers", "narrative": query.steps},
            "shape_format": "polyline6",
        }
        if query.alternatives:
            request["alternates"] = query.alternatives
        when = query.restrictions.time
        if when is not None:
            request["date_time"] = valhalla_time.date_time(when, query.origin, query.destination)
        if query.restrictions.truck is not None:
            closed = [
                where
                for point, parameter in ((query.origin, "from"), (query.destination, "to"))
                for where in self.closed_at_end(point, parameter, query.restrictions.truck)
            ]
            if closed:
                request["exclude_locations"] = closed
        return request

    def route_result(self, query: RouteQuery, answer: dict[str, Any]) -> RouteResult:
        trips = [answer["trip"], *(alternate["trip"] for alternate in answer.get("alternates", []))]
        clock = self.clock(query.vehicle)
        routes = [to_route(trip, query.steps, clock) for trip in trips[: query.alternatives + 1]]
        first = routes[0].geometry
        return RouteResult(
            routes=routes,
            origin=snapped(query.origin, first[0], trips[0], 0),
            destination=snapped(query.destination, first[-1], trips[0], -1),
            alternatives_requested=query.alternatives,
        )

    # ------------------------------------------------------------ rules by time

    def at_time(self, query: RouteQuery, result: RouteResult, trip: dict[str, Any]) -> RouteResult:
        """The route's departure, arrival and the rules by time it met (valhalla_time)."""
        costing_of = costing(query.vehicle, query.route_type, Restrictions(truck=query.restrictions.truck))
        found = valhalla_time.at_time(self.timed, self.engine_call, costing_of, self.clock(query.vehicle), query, result, trip)
        if len(found.routes) <= query.alternatives:  # its time-dependent search finds one route
            found.notes.append(f"the {self.name} provider computes no alternative routes at a time; only the best route is returned")
        return found

    def closed_at_time(self, query: RouteQuery) -> NoRouteFound | None:
        if self.timed is None or query.restrictions.time is None:
            return None
        costing_of = costing(query.vehicle, query.route_type, Restrictions(truck=query.restrictions.truck))
        return valhalla_time.closed_end(self.timed, query, self.engine_call, costing_of)

    def engine_call(self, action: str, request: dict[str, Any]) -> Any:
        return self.call(action, request, Restrictions())

    def timed_near(self, points: Sequence[LatLon]) -> bool:
        return self.timed is not None and self.timed.near(points)

    def next_rule_change(self, at: datetime) -> datetime:
        return self.timed.next_change(at) if self.timed is not None else at + valhalla_time.A_YEAR

    def trace_rules(self, vehicle: str, places: list[tuple[LatLon, datetime]]) -> list[TimeRuleMet]:
        """The rules by time a recorded trace met where it drove, at its own times (POST /v1/match):
        each matched place's way, at the place's time."""
        if self.timed is None or not places or not self.timed.near([p for p, _ in places]):
            return []
        driven = valhalla_time.ways_matched(self.engine_call, places, costing(vehicle, "fastest", Restrictions()))
        return self.timed.met(vehicle, size_of(vehicle, None), driven)

    def closed_at_end(self, point: LatLon, parameter: str, truck: TruckDimensions) -> list[dict[str, float]]:
        """Valhalla's truck costing does not hold a way's limits against the edges a route starts
        or ends on; a truck sent to an address behind a weight-limited bridge must be refused.
        A point whose every nearest road has a limit below the truck's (and not for
        destination traffic only) is refused; at a
        junction of such a road and others, the route is kept off it (`exclude_locations`: a
        point in its middle, which Valhalla snaps to that road)."""
        request = {"locations": [location(point, "truck")], "costing": "truck", "verbose": True}
        found = self.call("locate", request, Restrictions(), parameter=parameter)
        edges = (found[0] or {}).get("edges") or [] if found else []
        if not edges:
            return []  # the route's own call names the point
        nearest = min(float(edge.get("distance", 0.0)) for edge in edges)
        near = [edge for edge in edges if float(edge.get("distance", 0.0)) <= nearest + SAME_PLACE_M]
        closed = [exceeded(edge, truck) for edge in near]
        if all(closed):
            index, limit = closed[0][0]
            name = TRUCK_PARAMETERS[index]
            raise NoRouteFound(
                f"no truck route between the start and the destination is open to a truck of this size and weight: "
                f"{parameter} lies on a road with a {name} limit of {limit:g}",
                parameter=name,
            )
        return [middle_of(edge) for edge, limits in zip(near, closed, strict=True) if limits]

    def clock(self, vehicle: str) -> float:
        """What Valhalla's durations of the vehicle are multiplied by (OSRM_DURATION_RATIO)."""
        return 1.0 / OSRM_DURATION_RATIO if vehicle in self.osrm_vehicles else 1.0

    # ------------------------------------------------------------ isochrone

    def isochrone(self, query: IsochroneQuery) -> IsochroneResult:
        """The areas, started where OSRM's routes start (valhalla_areas.RouteStarts) and at its
        pace where OSRM answers the vehicle's routes, cut to 300 m of the roads reached."""
        osrm = query.vehicle in self.osrm_vehicles
        at = self.starts(query.point, query.vehicle) if osrm and self.starts is not None else query.point
        request = {
            "locations": [location(at, query.vehicle)],
            **costing(query.vehicle, query.route_type, Restrictions()),
            "contours": contours(query.metric, query.limits, OSRM_PACE if osrm else 1.0),
            "polygons": True,
        }
        if query.departure is not None:  # the area's roads as their rules are when reached
            request["date_time"] = valhalla_time.date_time(RouteTime(query.departure), query.point, query.point)
        answer = self.call("isochrone", request, Restrictions(), parameter="point")
        by_limit = sorted(answer["features"], key=lambda feature: feature["properties"]["contour"])
        reached = self.reached(request, query.metric)
        limits = [valhalla_limit(contour) for contour in request["contours"]]  # ascending, as the areas
        areas = nested([
            within_reach(shapely.make_valid(shapely.geometry.shape(feature["geometry"])), reached, limit)
            for feature, limit in zip(by_limit, limits, strict=True)
        ])  # fmt: skip; Valhalla's contours may cross themselves (GEOS then refused the cut in Heidelberg)
        origin = self.snap(query.point, query.vehicle)
        return IsochroneResult(origin, as_geojson(areas), reached.ended_within(limits), self.data.edge_reached(areas))

    def reached(self, request: dict[str, Any], metric: str) -> Reached:
        """The roads the isochrone's search reached (Valhalla's `expansion` of the same request)."""
        expansion = {**request, "action": "isochrone", "skip_opposites": True,
                     "expansion_properties": ["duration" if metric == "time" else "distance", "edge_id", "pred_edge_id"]}  # fmt: skip
        del expansion["polygons"]
        return Reached.of_expansion(self.call("expansion", expansion, Restrictions(), parameter="point"), metric)

    # ------------------------------------------------------------ map matching

    def match(self, query: MatchQuery) -> MatchResult:
        """Valhalla's map matching (`trace_attributes`, map_snap): each point's place on the
        road, matchings split where a point is unmatched or the path breaks. No point near a
        road gives an empty result (the caller falls back to straight lines), not an error."""
        count = len(query.points)
        shape: list[dict[str, float]] = [{"lat": p.lat, "lon": p.lon} for p in query.points]
        for point, seconds in zip(shape, query.timestamps or [], strict=False):
            point["time"] = seconds
        accuracy = query.gps_accuracy_m or MATCH_ACCURACY_M
        request = {
            "shape": shape,
            **costing(query.vehicle, query.route_type, Restrictions()),
            "shape_match": "map_snap",
            "trace_options": {"gps_accuracy": accuracy, "search_radius": max(MATCH_SEARCH_RADIUS_M, 3 * accuracy)},
            "filters": {"attributes": MATCH_ATTRIBUTES, "action": "include"},
        }
        try:
            answer = self.call("trace_attributes", request, Restrictions(), parameter="points")
        except (PointNotRoutable, NoRouteFound, RuntimeError):
            return MatchResult([], [False] * count, [None] * count if query.detail else [])
        return to_match(answer, count, query.detail, self.clock(query.vehicle))

    def surface_point(self, vehicle: str, point: LatLon, max_distance_m: float) -> LatLon | None:
        """The surface road `point` means when its nearest road is a tunnel (providers.surface)."""
        return surface_instead(partial(self.located, vehicle), location(point, vehicle), max_distance_m)

    def located(self, vehicle: str, where: dict[str, Any], verbose: bool) -> list[dict[str, Any]]:
        """The edges of `vehicle`'s roads Valhalla finds at a location; none for a point off
        them (the engine's own call then names it)."""
        request = {"locations": [where], **costing(vehicle, "fastest", Restrictions()), "verbose": verbose}
        try:
            found = self.call("locate", request, Restrictions(), parameter="point")
        except ApiError:
            return []
        return list((found[0] or {}).get("edges") or []) if found else []

    def snap(self, point: LatLon, vehicle: str) -> Snapped:
        request = {"locations": [location(point, vehicle)], **costing(vehicle, "fastest", Restrictions())}
        found = self.call("locate", request, Restrictions(), parameter="point")
        edges = (found[0] or {}).get("edges") or [] if found else []
        if not edges:
            return Snapped(point, 0.0)
        edge = edges[0]
        where = LatLon(float(edge["correlated_lat"]), float(edge["correlated_lon"]))
        names = (edge.get("edge_info") or {}).get("names") or []
        return Snapped(where, round(haversine_m(point, where), 1), names[0] if names else "")

    # ------------------------------------------------------------ the engine

    def call(self, action: str, request: dict[str, Any], restrictions: Restrictions, parameter: str = "to") -> Any:
        """Valhalla's answer, or its error as ours: a point off the roads is PointNotRoutable
        (which point: the registry's diagnostics tell), no path NoRouteFound."""
        try:
            answer = getattr(self.actor(), action)(orjson.dumps(request).decode())
            return orjson.loads(answer)
        except RuntimeError as exc:
            raise as_api_error(exc, request, restrictions, parameter) from exc


def error_code(exc: RuntimeError) -> int | None:
    """Valhalla's error code, from its message: the binding raises the text alone
    ("No suitable edges near location"), without the code."""
    text = str(exc)
    if "No suitable edges" in text:
        return 171
    if "No path could be found" in text or "unconnected regions" in text:
        return 442
    return None


def as_api_error(exc: RuntimeError, request: dict[str, Any], restrictions: Restrictions, parameter: str) -> Exception:
    code = error_code(exc)
    vehicle = next(name for name, row in VEHICLE_TABLE.items() if row.valhalla_costing == request["costing"])
    if code in NO_EDGES_NEAR:
        return PointNotRoutable(
            f"no road usable by {vehicle} within {VEHICLE_TABLE[vehicle].snap_radius_m:.0f} m of the point",
            parameter=parameter,
        )
    if code in NO_PATH:
        limits = Restrictions(avoid=restrictions.avoid, truck=restrictions.truck)  # never the time: ignored here
        if limits.parameter is not None:
            what = "avoids the area" if restrictions.avoid is not None else "is open to a truck of this size and weight"
            return NoRouteFound(
                f"no {vehicle} route between the start and the destination {what}", parameter=limits.parameter
            )
        return NoRouteFound(
            f"no {vehicle} route connects the start and the destination "
            "(they lie on parts of the road network that are not connected)",
            parameter="to",
        )
    return exc
