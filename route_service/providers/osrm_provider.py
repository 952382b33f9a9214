"""The `osrm` routing provider (the default): the OSRM engine from the osrm-bindings wheel.

One `osrm.OSRM` instance per profile dataset (`<dataset>/osrm/<vehicle>-<type>/map.osrm`),
created on first use or by `preload()`. Calls are synchronous and hold the GIL for their
whole duration (measured; see docs/decisions.md), so the service scales with processes, not
threads, and runs large calls in a child process (`route_service.calls`).

Emergency routing needs per-query edge costs, which a preprocessed OSRM graph cannot
give: its ProviderInfo says so, and the registry routes such queries to Valhalla
(or refuses them) before they get here. Queries arrive validated (`providers.base`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import osrm

from common.errors import DatasetNotReady, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from common.vocabulary import ROUTE_TYPES, VEHICLES
from route_service.model import (
    MAX_ALTERNATIVES,
    NOT_ASKED,
    Cost,
    CostQuery,
    DetourCosts,
    DetourQuery,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    RouteQuery,
    RouteResult,
    Snapped,
    WaypointsQuery,
    WaypointsResult,
)
from route_service.osrm_profiles import profile_name
from route_service.providers.base import Plugins
from route_service.providers.osrm_answers import copy_rows, plain, to_match, to_result, to_route, to_snapped

OSRM_DIR = "osrm"
# Values (cells x annotations) per Table call. The binding answers a tree of JSON values of
# ~63 bytes each, and reading a table out of it copies that table once more (measured, 1000x1000
# durations: +65 MiB for the call, +61 MiB for `table["durations"]`; iterating the rows would
# copy them all a third time, so rows are read by index), so a large matrix is asked in row
# blocks. Not smaller ones: every call repeats ~0.2 s of work for 1000 destinations (Heidelberg:
# 1x1000 0.18 s, 1000x1000 1.3 s). 1000x1000 durations: two calls, peak +64 MiB, not +195.
MAX_TABLE_VALUES = 500_000
MATCH_RADIUS_M = 10.0  # map matching: the GPS error (standard deviation) OSRM assumes per point
# From and to farther apart than this are taken not to lie on one of the small pieces of road cut
# off from the rest (OSRM's components of under 1000 nodes): their direct route is read from the
# via's Table (OsrmProvider.detour); closer ones get a Table of their own.
TINY_COMPONENT_M = 2000.0
_SEGMENT_ERROR = re.compile(r"NoSegment.*coordinate (\d+)")


class OsrmProvider:
    name = "osrm"

    def __init__(self, dataset_dir: Path, profiles: Sequence[str]) -> None:
        """What each profile answers on is read from its files (the import's algorithm chose
        them): routes on MLD where its MLD graph exists, else CH; matrices on CH where it was
        contracted, else MLD."""
        self.dataset_dir = dataset_dir
        self.profiles = tuple(profiles)
        # read once here, not on every request
        self._contracted = frozenset(p for p in self.profiles if self._has(p, "hsgr"))
        self._partitioned = frozenset(p for p in self.profiles if self._has(p, "mldgr"))
        self._engines: dict[tuple[str, str], osrm.OSRM] = {}
        self._lock = threading.Lock()

    def _has(self, profile: str, suffix: str) -> bool:
        return (self.dataset_dir / OSRM_DIR / profile / f"map.osrm.{suffix}").is_file()

    @classmethod
    def load(cls, dataset_dir: Path, manifest: dict[str, Any]) -> OsrmProvider:
        """The provider for an imported dataset; profiles come from its manifest."""
        profiles = [
            p for p in manifest.get("profiles", {}) if (dataset_dir / OSRM_DIR / p / "map.osrm.properties").exists()
        ]
        if not profiles:
            raise DatasetNotReady(f"dataset {dataset_dir.name} has no OSRM profiles")
        return cls(dataset_dir, profiles)

    def preload(self) -> None:
        for profile in self.profiles:
            for algorithm in {self.route_algorithm(profile), self.matrix_algorithm(profile)}:
                self._engine(profile, algorithm)

    def route_algorithm(self, profile: str) -> str:
        """MLD where the profile was partitioned (several alternatives), else CH."""
        return "MLD" if profile in self._partitioned else "CH"

    def matrix_algorithm(self, profile: str) -> str:
        """CH where the profile was contracted (the CH graph file exists), else MLD."""
        return "CH" if profile in self._contracted else "MLD"

    def engines_text(self) -> str:
        """What each profile answers on, for /v1/providers: `car-fastest CH, truck-fastest CH` (MLD+CH: both)."""
        return ", ".join(
            f"{p} {self.route_algorithm(p)}" + ("+CH" if p in self._contracted and p in self._partitioned else "")
            for p in self.profiles
        )

    def most_alternatives(self, profile: str) -> int:
        """CH's search finds one alternative route at most (200 Heidelberg pairs asked for three:
        CH 1.38 routes on average, never more than 2; MLD 1.48, up to 4)."""
        return MAX_ALTERNATIVES if self.route_algorithm(profile) == "MLD" else 1

    def _engine(self, profile: str, algorithm: str | None = None) -> osrm.OSRM:
        """One engine per profile and algorithm (default: the routes'); the files are
        memory-mapped (OSRM's default), so an MLD and a CH engine on the same files share their
        common pages."""
        key = (profile, algorithm or self.route_algorithm(profile))
        engine = self._engines.get(key)
        if engine is None:
            with self._lock:  # two first requests must not both load the same files
                engine = self._engines.get(key)
                if engine is None:
                    path = self.dataset_dir / OSRM_DIR / profile / "map.osrm"
                    engine = osrm.OSRM(storage_config=str(path), algorithm=key[1], use_shared_memory=False)
                    self._engines[key] = engine
        return engine

    def _engine_for(self, vehicle: str, route_type: str) -> osrm.OSRM:
        return self._engine(profile_name(vehicle, route_type))

    def _matrix_engine_for(self, vehicle: str, route_type: str) -> osrm.OSRM:
        profile = profile_name(vehicle, route_type)
        return self._engine(profile, self.matrix_algorithm(profile))

    def info(self) -> ProviderInfo:
        loaded = frozenset((v, t) for v in VEHICLES for t in ROUTE_TYPES if profile_name(v, t) in self.profiles)
        return ProviderInfo(
            name=self.name,
            description=f"OSRM ({self.engines_text()}) on the imported OpenStreetMap data; fast, with alternatives "
            "and turn instructions",
            profiles=loaded,
            alternatives=True,
            one_alternative=frozenset(p for p in loaded if self.most_alternatives(profile_name(*p)) == 1),
        )

    def plugins(self) -> Plugins:
        return Plugins(
            route=self.route,
            matrix=self.matrix,
            waypoints=self.route_waypoints,
            cost=self.cost,
            match=self.match,
            detour=self.detour,
        )

    # ------------------------------------------------------------ route

    def route(self, query: RouteQuery) -> RouteResult:
        engine = self._engine_for(query.vehicle, query.route_type)
        radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
        params = osrm.RouteParameters(
            coordinates=[(query.origin.lon, query.origin.lat), (query.destination.lon, query.destination.lat)],
            steps=query.steps,
            number_of_alternatives=query.alternatives,
            geometries="polyline6",  # one string: far cheaper to take over than GeoJSON
            overview="full",
            radiuses=[radius, radius],
            generate_hints=False,
        )
        response = call(engine.Route, params, ("from", "to"), query.vehicle, radius)
        result = to_result(response, query)
        most = self.most_alternatives(profile_name(query.vehicle, query.route_type))
        if query.alternatives > most:
            result.notes.append(
                f"OSRM's {self.route_algorithm(profile_name(query.vehicle, query.route_type))} data of this map finds "
                f"{most} alternative route(s) at most; without a provider named, such requests go to one that finds more"
            )
        return result

    # ------------------------------------------------------------ matrix

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        """Row blocks of at most MAX_TABLE_VALUES values per Table call, each copied into
        float64 arrays as it comes (see MAX_TABLE_VALUES for the memory this saves)."""
        engine = self._matrix_engine_for(query.vehicle, query.route_type)
        radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
        shape = (len(query.sources), len(query.destinations))
        tables = {a: np.full(shape, np.nan) for a in query.annotations}
        rows_per_call = max(1, MAX_TABLE_VALUES // (shape[1] * max(1, len(tables))))
        destinations = [(p.lon, p.lat) for p in query.destinations]
        snapped_sources: list[Snapped] = []
        snapped_destinations: list[Snapped] = []
        for first in range(0, shape[0], rows_per_call):
            block = [(p.lon, p.lat) for p in query.sources[first : first + rows_per_call]]
            params = osrm.TableParameters(
                coordinates=[*block, *destinations],
                sources=list(range(len(block))),
                destinations=list(range(len(block), len(block) + shape[1])),
                annotations=list(query.annotations),
                radiuses=[radius] * (len(block) + shape[1]),
                generate_hints=False,
            )
            names = [f"sources[{first + i}]" for i in range(len(block))]
            names += [f"destinations[{j}]" for j in range(shape[1])]
            table = call(engine.Table, params, tuple(names), query.vehicle, radius)
            for annotation, values in tables.items():
                copy_rows(table[annotation + "s"], values[first : first + len(block)])
            snapped_sources += [to_snapped(plain(w)) for w in table["sources"]]
            if not snapped_destinations:
                snapped_destinations = [to_snapped(plain(w)) for w in table["destinations"]]
            del table  # the binding's tree of this block (~63 bytes a value) before the next
        return MatrixResult(
            durations_s=tables.get("duration", NOT_ASKED),
            distances_m=tables.get("distance", NOT_ASKED),
            snapped_sources=snapped_sources,
            snapped_destinations=snapped_destinations,
            annotations=query.annotations,
        )

    # ------------------------------------------------------------ lean costs and map matching (detours)

    def cost(self, query: CostQuery) -> Cost:
        """Distance and duration of the route through the points, each a stop where turning
        around is allowed. No geometry, steps or hints: the cheapest Route call (about half the
        time of `route()` with its overview), for callers that need thousands of lengths."""
        engine = self._engine_for(query.vehicle, query.route_type)
        radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
        params = osrm.RouteParameters(
            coordinates=[(p.lon, p.lat) for p in query.points],
            overview="false",
            continue_straight=False,
            radiuses=[radius] * len(query.points),
            generate_hints=False,
        )
        best = call(engine.Route, params, query.names, query.vehicle, radius)["routes"][0]
        return Cost(float(best["distance"]), float(best["duration"]))

    def detour(self, query: DetourQuery) -> DetourCosts | None:
        """A detour line's direct and via costs from one CH Table call: sources [from, via],
        destinations [via, to]; via = from→via + via→to (turning around at via is allowed, as
        in `cost`). Heidelberg, 2000 lines, CPU: 0.53 s, where two `cost()` Route calls on MLD
        took 1.28 s (CH Route calls 1.04, a CH Table per cost() 0.81). None without a CH
        graph for the profile, or when a point does not snap or a leg has no route: the
        caller's `cost()` then says why. How its numbers compare with `cost()`'s:
        bench/RESULTS.md, Detour files, and docs/decisions.md."""
        profile = profile_name(query.vehicle, query.route_type)
        if profile not in self._contracted:
            return None
        engine, radius = self._engine(profile, "CH"), VEHICLE_TABLE[query.vehicle].snap_radius_m
        points = (query.origin, query.via, query.destination)
        table = lean_table(engine, points, [0, 1], [1, 2], radius)
        if table is None:
            return None
        direct, to_via, via_to = table_cost(table, 0, 1), table_cost(table, 0, 0), table_cost(table, 1, 1)
        if haversine_m(query.origin, query.destination) < TINY_COMPONENT_M:
            # OSRM snaps a request's points onto a small piece of road cut off from the rest only
            # when all of them lie on that piece; the via route and this Table snap as one
            # request of 3 points, the direct route as one of 2 (Heidelberg: 2 of 5000 lines
            # differ, 0 m against 1257.8 m where from and to lie on one such piece).
            single = lean_table(engine, (query.origin, query.destination), [0], [1], radius)
            direct = None if single is None else table_cost(single, 0, 0)
        if direct is None or to_via is None or via_to is None:  # a leg with no route
            return None
        return DetourCosts(direct, Cost(to_via.distance_m + via_to.distance_m, to_via.duration_s + via_to.duration_s))

    def match(self, query: MatchQuery) -> MatchResult:
        """OSRM Match: the track's points snapped to the roads most likely driven. No point near a
        road gives an empty result (the caller falls back to straight lines), not an error."""
        engine = self._engine_for(query.vehicle, query.route_type)
        count = len(query.points)
        params = osrm.MatchParameters(
            coordinates=[(p.lon, p.lat) for p in query.points],
            timestamps=list(query.timestamps or []),
            gaps="ignore",  # a pause in the recording is not a break in the journey
            overview="full" if query.detail else "false",
            geometries="polyline6",
            radiuses=[query.gps_accuracy_m or MATCH_RADIUS_M] * count,
            generate_hints=False,
        )
        try:
            response = engine.Match(params)
        except RuntimeError as exc:
            if str(exc).startswith(("NoSegment", "NoMatch")):
                return MatchResult([], [False] * count, [None] * count if query.detail else [])
            raise RuntimeError(f"OSRM match failed: {exc}") from exc
        return to_match(response, count, query.detail)

    # ------------------------------------------------------------ what diagnostics ask (route_service.diagnostics)

    def nearest_road(self, vehicle: str, route_type: str, point: LatLon) -> Snapped | None:
        """The nearest road of the profile, however far; None when the profile has none."""
        params = osrm.NearestParameters(coordinates=[(point.lon, point.lat)], generate_hints=False)
        try:
            response = self._engine_for(vehicle, route_type).Nearest(params)
        except RuntimeError:
            return None
        waypoints = response["waypoints"]
        return to_snapped(plain(waypoints[0])) if len(waypoints) else None

    def reachable(self, vehicle: str, route_type: str, sources: list[LatLon], destinations: list[LatLon]) -> np.ndarray:
        """Whether a route exists from each source to each destination, snapped as routes snap
        (within the vehicle's radius: beyond it OSRM would reach a bigger network than a route).
        On CH where the profile has it: the same answers (1000 detour lines' points against the
        references, Heidelberg and Helsinki), and a point cut off from the network no longer
        makes MLD search the whole map: Helsinki 3.4 -> 0.6 s for those 2000 tables, the
        diagnosis of a failed detour line 5.5 ms of which 5.2 were these tables."""
        coordinates = [(p.lon, p.lat) for p in [*sources, *destinations]]
        params = osrm.TableParameters(
            coordinates=coordinates,
            sources=list(range(len(sources))),
            destinations=list(range(len(sources), len(coordinates))),
            annotations=["duration"],
            radiuses=[VEHICLE_TABLE[vehicle].snap_radius_m] * len(coordinates),
            generate_hints=False,
        )
        durations = np.full((len(sources), len(destinations)), np.nan)
        copy_rows(self._matrix_engine_for(vehicle, route_type).Table(params)["durations"], durations)
        return np.isfinite(durations)

    # ------------------------------------------------------------ one route through many waypoints (stop tours)

    def route_waypoints(self, query: WaypointsQuery) -> WaypointsResult:
        """One Route call through every waypoint in order, with the full geometry and one leg
        per pair. Turning around at a waypoint is allowed (`continue_straight=False`), as in
        the Table durations the order was optimized on."""
        engine = self._engine_for(query.vehicle, query.route_type)
        radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
        params = osrm.RouteParameters(
            coordinates=[(p.lon, p.lat) for p in query.waypoints],
            geometries="polyline6",
            overview="full",
            continue_straight=False,
            radiuses=[radius] * len(query.waypoints),
            generate_hints=False,
        )
        names = [f"waypoints[{i}]" for i in range(len(query.waypoints))]
        response = call(engine.Route, params, names, query.vehicle, radius)
        return WaypointsResult(
            route=to_route(response["routes"][0], with_steps=False),
            snapped=[to_snapped(plain(w)) for w in response["waypoints"]],
        )


# ---------------------------------------------------------------- OSRM errors


def call(method: Any, params: Any, names: Sequence[str], vehicle: str, radius: float) -> Any:
    """Runs an OSRM request; its RuntimeErrors become the typed errors a client can act on."""
    try:
        return method(params)
    except RuntimeError as exc:
        raise translate(str(exc), names, vehicle, radius) from exc


def translate(message: str, names: Sequence[str], vehicle: str, radius: float) -> Exception:
    segment = _SEGMENT_ERROR.search(message)
    if segment:
        index = int(segment.group(1))
        parameter = names[index] if index < len(names) else None
        return PointNotRoutable(f"no road usable by {vehicle} within {radius:.0f} m of this point", parameter=parameter)
    if message.startswith("NoRoute") or message.startswith("NoTable"):
        return NoRouteFound(
            f"no {vehicle} route connects the points (they lie on parts of the road network that are not connected)",
            parameter=names[-1],
        )
    return RuntimeError(f"OSRM failed: {message}")


# ---------------------------------------------------------------- lean tables (detours)


def lean_table(engine: osrm.OSRM, points: Sequence[LatLon], sources: list[int], destinations: list[int],
               radius: float) -> Any | None:  # fmt: skip
    """Durations and distances, or None when a point does not snap (the caller's fallback names it)."""
    params = osrm.TableParameters(
        coordinates=[(p.lon, p.lat) for p in points],
        sources=sources,
        destinations=destinations,
        annotations=["duration", "distance"],
        radiuses=[radius] * len(points),
        generate_hints=False,
    )
    try:
        return engine.Table(params)
    except RuntimeError:
        return None


def table_cost(table: Any, row: int, column: int) -> Cost | None:
    duration, distance = table["durations"][row][column], table["distances"][row][column]
    return None if duration is None or distance is None else Cost(float(distance), float(duration))
