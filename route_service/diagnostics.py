"""Why a point cannot be routed, as the client is told it (no aiohttp here).

A "not routable" or "no route" error names the point at fault (`from`, `to`, `waypoints[3]`,
`sources[7]`: the caller renames them further, e.g. to `stops[3]`) and says what is wrong with
it: how far the nearest road usable by the vehicle is, that the point lies outside the loaded
map (with the map's bounds), that with latitude and longitude exchanged it would lie on a road,
or that it snapped onto a piece of road cut off from the rest of the network. Every point at
fault is reported at once, not only the first one the engine met.

It runs only when a request has already failed, so it may ask the engine again: one nearest-road
lookup per point (tens of microseconds each) and, for "no route", two small tables between the
request's points and a few reference points of the map's main network.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from common.errors import ApiError, NoRouteFound, PointNotRoutable, Violation
from common.geo import Bounds, LatLon
from common.vehicles import VEHICLE_TABLE
from route_service.model import ProviderInfo, Snapped

NamedPoint = tuple[str, LatLon]
# Reference points of a map's main network: of the road nodes the import drew at random
# (Dataset.sample_points: spread as the roads are, at least 4 on each group of touching 1°
# blocks with roads), the largest group that can all reach one another, at most MAX_REFERENCES
# of them. A point that reaches none of them, or that none reaches, is cut off from the main
# network.
MAX_REFERENCES = 8
# A map of several areas that no road joins (extracts of several countries loaded together)
# has a main network per area: the largest such group among the samples of each area, when at
# least MIN_AREA_SAMPLES samples lie on it (a fenced site that one sample fell on is not an
# area). On all five shared extracts merged, the 64 samples put 5 on central Helsinki, whose
# points were otherwise all "cut off" from Heidelberg's network (2026-11-26; 1 when drawn from
# the whole map without a least share per area, importing/map_facts.LEAST_PER_AREA).
MIN_AREA_SAMPLES = 2
# A track point farther than this (or 3 GPS accuracies) from every usable road is off the roads:
# Valhalla's search radius for a trace point (providers.valhalla.MATCH_SEARCH_RADIUS_M).
MATCH_REACH_M = 50.0
MAX_UNMATCHED_DIAGNOSED = 1000


class RoadNetwork(Protocol):
    """What the diagnosis asks the routing engine."""

    def nearest_road(self, vehicle: str, route_type: str, point: LatLon) -> Snapped | None:
        """The nearest point of a road the vehicle may use, however far (None: no such road)."""
        ...

    def reachable(self, vehicle: str, route_type: str, sources: list[LatLon], destinations: list[LatLon]) -> np.ndarray:
        """Whether a route exists from each source to each destination (a boolean matrix)."""
        ...

    def info(self) -> ProviderInfo:
        """Which vehicles and route types it has loaded (the others it cannot diagnose)."""
        ...


def distance_text(metres: float) -> str:
    return f"{metres:.0f} m" if metres < 10_000 else f"{metres / 1000:.0f} km"


class SnapDiagnostics:
    def __init__(self, roads: RoadNetwork, areas: Sequence[Bounds], samples: Sequence[LatLon] = ()) -> None:
        self.roads = roads
        self.coverage = list(areas)  # the separate areas the map's roads cover (Dataset.areas)
        self.samples = list(samples)
        self._areas: dict[tuple[str, str], list[list[LatLon]]] = {}
        self._lock = threading.Lock()

    def explain(self, error: ApiError, points: Sequence[NamedPoint], vehicle: str, route_type: str) -> ApiError:
        """The error with a violation per point at fault; the error itself when none is found,
        or when the engine has not loaded the vehicle (OSRM_VEHICLES: Valhalla answered it)."""
        if not self.roads.info().serves(vehicle, route_type):
            return error
        if isinstance(error, PointNotRoutable):
            violations = self.unroutable(points, vehicle, route_type)
            if violations:
                return PointNotRoutable(violations=violations)
        if isinstance(error, PointNotRoutable | NoRouteFound):
            # A provider that snaps only onto its main network finds no road where there is
            # one, on a piece cut off: that is what the client is told.
            violations = self.cut_off(points, vehicle, route_type)
            if violations:
                return NoRouteFound(violations=violations)
        return error

    # ------------------------------------------------------------ too far from a road

    def unroutable(self, points: Sequence[NamedPoint], vehicle: str, route_type: str) -> list[Violation]:
        radius = VEHICLE_TABLE[vehicle].snap_radius_m
        found = []
        for name, point in points:
            nearest = self.roads.nearest_road(vehicle, route_type, point)
            if nearest is None or nearest.distance_m > radius:
                message = self.unroutable_message(point, nearest, vehicle, route_type)
                found.append(Violation(name, message, PointNotRoutable.code, PointNotRoutable.type))
        return found

    def unroutable_message(self, point: LatLon, nearest: Snapped | None, vehicle: str, route_type: str) -> str:
        radius = VEHICLE_TABLE[vehicle].snap_radius_m
        nearest_text = (
            f"the loaded map has no road usable by {vehicle}"
            if nearest is None
            else f"the nearest is {distance_text(nearest.distance_m)} away"
        )
        sentences = [
            f"no road usable by {vehicle} within {radius:.0f} m of {point.lat:.6f},{point.lon:.6f} ({nearest_text})"
        ]
        outside = self.outside_message(point, radius)
        if outside:
            sentences.append(outside)
        swapped = self.swapped_hint(point, vehicle, route_type)
        if swapped:
            sentences.append(swapped)
        # Sentences, never "; ": that separates one violation from the next in `detail`.
        return ". ".join(sentences)

    def area_of(self, point: LatLon, margin_m: float = 0.0) -> Bounds | None:
        return next((area for area in self.coverage if area.contains(point, margin_m=margin_m)), None)

    def outside_message(self, point: LatLon, margin_m: float) -> str | None:
        """Where the map's roads are, for a point outside every area (None inside one): the
        nearest area, and how many there are (never one box around areas far apart)."""
        if not self.coverage or self.area_of(point, margin_m) is not None:
            return None
        nearest = min(self.coverage, key=lambda area: area.distance_m(point))
        away = distance_text(nearest.distance_m(point))
        if len(self.coverage) == 1:
            return f"The point lies outside the loaded map, which covers {nearest.describe()} ({away} away)"
        return (
            f"The point lies outside the loaded map's {len(self.coverage)} areas. The nearest, {away} away, "
            f"covers {nearest.describe()} (GET /v1/providers lists them all)"
        )

    def swapped_hint(self, point: LatLon, vehicle: str, route_type: str) -> str | None:
        """A hint when latitude and longitude exchanged lands on a road."""
        if abs(point.lon) > 90 or abs(point.lat - point.lon) < 1e-9:
            return None
        exchanged = LatLon(point.lon, point.lat)
        if self.outside_message(exchanged, VEHICLE_TABLE[vehicle].snap_radius_m):
            return None
        nearest = self.roads.nearest_road(vehicle, route_type, exchanged)
        if nearest is None or nearest.distance_m > VEHICLE_TABLE[vehicle].snap_radius_m:
            return None
        return (
            f"With latitude and longitude exchanged ({exchanged.lat:.6f},{exchanged.lon:.6f}) it lies "
            f"{distance_text(nearest.distance_m)} from a road: were they given in the wrong order?"
        )

    # ------------------------------------------------------------ track points left unmatched

    def unmatched(self, points: Sequence[LatLon], matched: Sequence[bool], vehicle: str, route_type: str,
                  accuracy_m: float) -> dict[int, str]:  # fmt: skip
        """Why each unmatched point of a track was left out, for the first MAX_UNMATCHED_DIAGNOSED
        of them (a nearest-road lookup each, tens of microseconds)."""
        if not self.roads.info().serves(vehicle, route_type):
            return {}
        left_out = [i for i, ok in enumerate(matched) if not ok][:MAX_UNMATCHED_DIAGNOSED]
        return {i: self.unmatched_reason(points[i], vehicle, route_type, accuracy_m) for i in left_out}

    def unmatched_reason(self, point: LatLon, vehicle: str, route_type: str, accuracy_m: float) -> str:
        reach = max(MATCH_REACH_M, 3 * accuracy_m)
        nearest = self.roads.nearest_road(vehicle, route_type, point)
        if nearest is None or nearest.distance_m > reach:
            far = "the map has none" if nearest is None else f"the nearest is {distance_text(nearest.distance_m)} away"
            sentences = [f"no road usable by {vehicle} within {reach:.0f} m ({far})"]
            outside = self.outside_message(point, reach)
            return ". ".join([*sentences, outside] if outside else sentences)
        return (
            f"{nearest.name or 'a road'} usable by {vehicle} lies {distance_text(nearest.distance_m)} away, but the "
            "track here joins no road before and after it (a jump, a long gap in time, or turns the roads do not allow)"
        )

    # ------------------------------------------------------------ on a piece of road cut off

    def cut_off(self, points: Sequence[NamedPoint], vehicle: str, route_type: str) -> list[Violation]:
        """Points on a piece of road that the main network of no area both leaves to and
        reaches; else, when the points lie in different areas, each point outside the first
        one's area."""
        areas = self.areas(vehicle, route_type)
        references = [p for area in areas for p in area]
        if not references or not points:
            return []
        located = [point for _, point in points]
        leaving = self.roads.reachable(vehicle, route_type, located, references)
        reaching = self.roads.reachable(vehicle, route_type, references, located)
        leaves, reached = leaving.any(axis=1), reaching.any(axis=0)
        found = []
        for (name, point), out, into in zip(points, leaves, reached, strict=True):
            if out and into:
                continue
            nearest = self.roads.nearest_road(vehicle, route_type, point)
            where = f"{nearest.name or 'a road'} {distance_text(nearest.distance_m)} away" if nearest else "a road"
            if not out and not into:
                how = "no route leaves it or reaches it"
            elif out:
                how = "routes leave it but none reaches it (one-way roads or turn restrictions)"
            else:
                how = "routes reach it but none leaves it (one-way roads or turn restrictions)"
            message = f"this point snaps onto {where}, on a piece of road cut off from the rest of the {vehicle} network: {how}"
            found.append(Violation(name, message, NoRouteFound.code, NoRouteFound.type))
        return found or self.other_areas(points, areas, leaving, vehicle)

    def other_areas(
        self, points: Sequence[NamedPoint], areas: list[list[LatLon]], leaving: np.ndarray, vehicle: str
    ) -> list[Violation]:
        """Each point whose areas (those whose main network it reaches) are not the first point's."""
        if len(areas) < 2:
            return []
        ends = np.cumsum([len(area) for area in areas])[:-1]
        reached = [{i for i, part in enumerate(np.split(row, ends)) if part.any()} for row in leaving]
        if not reached[0]:
            return []
        first, first_point = points[0]
        return [
            Violation(name, self.areas_apart_message(first, first_point, point, vehicle), NoRouteFound.code, NoRouteFound.type)
            for (name, point), its_areas in zip(points, reached, strict=True)
            if not reached[0] & its_areas
        ]

    def areas_apart_message(self, first: str, first_point: LatLon, point: LatLon, vehicle: str) -> str:
        """Says that the two points lie in separate areas, and names both areas where known."""
        message = f"this point lies in another area of the map than {first}, and no {vehicle} road joins the two"
        margin = VEHICLE_TABLE[vehicle].snap_radius_m
        here, there = self.area_of(point, margin), self.area_of(first_point, margin)
        if here is None or there is None or here == there:
            return message
        return f"{message}: it lies in the area covering {here.describe()}, {first} in the one covering {there.describe()}"

    def references(self, vehicle: str, route_type: str) -> list[LatLon]:
        """Points of the map's largest main network for one profile, found once (one table
        among the samples)."""
        areas = self.areas(vehicle, route_type)
        return areas[0] if areas else []

    def areas(self, vehicle: str, route_type: str) -> list[list[LatLon]]:
        """Reference points of each area's main network (the first: the map's largest)."""
        key = (vehicle, route_type)
        with self._lock:
            if key not in self._areas:
                self._areas[key] = self.find_areas(vehicle, route_type)
            return self._areas[key]

    def find_areas(self, vehicle: str, route_type: str) -> list[list[LatLon]]:
        """Per group of samples joined by roads in any direction, its largest group that can all
        reach one another; largest first, the map's largest area even below MIN_AREA_SAMPLES."""
        snapped = {s.location for p in self.samples if (s := self.roads.nearest_road(vehicle, route_type, p))}
        candidates = sorted(snapped, key=lambda p: (p.lat, p.lon))
        if not candidates:
            return []
        linked = self.roads.reachable(vehicle, route_type, candidates, candidates)
        _, strong = connected_components(csr_array(linked), directed=True, connection="strong")
        _, weak = connected_components(csr_array(linked), directed=True, connection="weak")
        sizes = np.bincount(strong)
        mains: dict[int, int] = {}
        for label in np.argsort(-sizes, kind="stable"):
            area = weak[np.flatnonzero(strong == label)[0]]
            mains.setdefault(int(area), int(label))
        groups = [[p for p, lab in zip(candidates, strong, strict=True) if lab == label] for label in mains.values()]
        groups.sort(key=len, reverse=True)
        return [group[:MAX_REFERENCES] for i, group in enumerate(groups) if i == 0 or len(group) >= MIN_AREA_SAMPLES]
