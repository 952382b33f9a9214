"""Provider names → each provider's capabilities for one dataset, and which one answers.

Every capability is resolved once, when the registry is made (`resolve`); a request's
provider is chosen once, as the last step of parsing it (`ProviderRegistry.choose`). `osrm`
is the default; without a provider named, what it cannot answer goes to Valhalla first (one
graph for every vehicle), then to the next provider able to: a vehicle or route type OSRM has
not loaded (the import's OSRM_VEHICLES: car and truck fastest by default), more alternatives
than its CH data finds, avoid areas, truck dimensions and isochrones; matrices too
(`valhalla_matrix`). Whatever is asked at a time goes to Valhalla (TIMED_FIRST).
A vehicle the map does not serve at all (the import's ROUTING_VEHICLES) is a 400 naming those
it serves, whichever provider is named. Queries with `emergency_radius_m > 0` need per-query
costs, which only providers whose ProviderInfo says `emergency_routing` have (Valhalla): without
an explicit provider they go to Valhalla (FALLBACK_FIRST); naming a provider that lacks it is a 400 naming emergencyRoutingRadius.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

from common.errors import ApiError, DatasetNotReady, InvalidParameter, ParameterErrors
from common.geo import LatLon
from common.providers import requested_provider
from route_service.dataset import Dataset
from route_service.diagnostics import SnapDiagnostics
from route_service.model import NO_RESTRICTIONS, Restrictions
from route_service.providers.base import Capabilities, Plugins, RouteProvider, TimedRoadsSource
from route_service.providers.diagnosing import diagnosing
from route_service.providers.leg_by_leg import LegByLeg
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.surface import SurfaceSnapper, surface_first
from route_service.providers.valhalla_areas import MapData, RouteStarts

log = logging.getLogger("route_service.registry")
# Answers what the default provider cannot, when it can (see the module's docstring). Chosen by
# measurement (bench/RESULTS.md, "One graph for every vehicle" and "Scale"): Valhalla's routes
# with an avoid area or truck dimensions grow with its route search, not the map. Valhalla's
# truck costing lets a route start or end on a way whose limit the
# truck exceeds; its provider checks the ends (`ValhallaProvider.closed_at_end`).
FALLBACK_FIRST = "valhalla"
# Except where measurement says otherwise: a capability → the provider asked first for it. None
# now: Valhalla's isochrones, started where OSRM's routes start, meet the goal on every map
# (providers.valhalla_areas, `python -m bench isochrone`).
FIRST_FOR: dict[str, str] = {}
# At a time (departureTime, arrivalTime): routes, matrices, tours, detour files and isochrones
# go to Valhalla (its `date_time`, issue 56), so a tour's legs and its matrix agree.
TIMED_FIRST = "valhalla"


def resolve(
    provider: RouteProvider, diagnostics: SnapDiagnostics | None = None, surface: SurfaceSnapper | None = None
) -> Capabilities:
    """A provider's plugins as the service uses them: with `surface`, handed the surface road a
    point means where its nearest road lies below the ground (providers.surface); with
    `diagnostics`, their snapping errors say which point is at fault and why; the waypoints and
    cost it lacks are served leg by leg through its route plugin."""
    plugins = provider.plugins()
    if surface is not None:
        plugins = dataclasses.replace(
            plugins,
            route=surface_first(plugins.route, surface),
            matrix=plugins.matrix and surface_first(plugins.matrix, surface),
            waypoints=plugins.waypoints and surface_first(plugins.waypoints, surface),
            cost=plugins.cost and surface_first(plugins.cost, surface),
            detour=plugins.detour and surface_first(plugins.detour, surface),
        )
    if diagnostics is not None:
        plugins = Plugins(
            route=diagnosing(plugins.route, diagnostics),
            matrix=plugins.matrix and diagnosing(plugins.matrix, diagnostics),
            waypoints=plugins.waypoints and diagnosing(plugins.waypoints, diagnostics),
            cost=plugins.cost and diagnosing(plugins.cost, diagnostics),
            match=plugins.match,
            isochrone=plugins.isochrone,
            detour=plugins.detour,
        )
    legs = LegByLeg(plugins.route)
    return Capabilities(
        info=provider.info(),
        route=plugins.route,
        matrix=plugins.matrix,
        waypoints=plugins.waypoints or legs.waypoints,
        cost=plugins.cost or legs.cost,
        match=plugins.match,
        isochrone=plugins.isochrone,
        detour=plugins.detour,
    )


def serving_only(capabilities: Capabilities, vehicles: Sequence[str]) -> Capabilities:
    """The provider's capabilities with its profiles cut to the vehicles the map serves."""
    info = capabilities.info
    profiles = frozenset(p for p in info.profiles if p[0] in vehicles)
    return dataclasses.replace(capabilities, info=dataclasses.replace(info, profiles=profiles))


class ProviderRegistry:
    def __init__(
        self,
        providers: Mapping[str, RouteProvider],
        default_name: str,
        diagnostics: SnapDiagnostics | None = None,
        vehicles: Sequence[str] | None = None,
    ) -> None:
        if default_name not in providers:
            raise ValueError(f"default provider {default_name!r} is not among {sorted(providers)}")
        self.sources = dict(providers)  # the providers themselves (`preload`)
        # Valhalla knows which roads are tunnels (providers.surface).
        valhalla = providers.get("valhalla")
        surface = valhalla if isinstance(valhalla, SurfaceSnapper) else None
        self.providers = {name: resolve(provider, diagnostics, surface) for name, provider in providers.items()}
        if vehicles is not None:  # each provider lists only what the map serves (/v1/providers)
            self.providers = {name: serving_only(c, vehicles) for name, c in self.providers.items()}
        self.diagnostics = diagnostics
        # Valhalla answers what is asked at a time (its `date_time`, issue 56).
        timed = sorted(providers.values(), key=lambda p: p.name != FALLBACK_FIRST)
        self.timed_roads = next((p for p in timed if isinstance(p, TimedRoadsSource) and p.info().time_rules), None)
        self.default_name = default_name
        # The vehicles the map serves (the import's ROUTING_VEHICLES); None: whatever a provider has.
        self.vehicles = tuple(vehicles) if vehicles is not None else None
        # Answers emergency routing when no provider is named: the first that can.
        self.emergency = next((c for c in self._ordered(FALLBACK_FIRST) if c.info.emergency_routing), None)

    def moot_time(self, name: str | None, restrictions: Restrictions, points: Sequence[LatLon | None]) -> Restrictions:
        """`restrictions` without their time when no rule by time can change the answer: no
        provider named, and no road with rules by time near the points (a map, or a part of
        one, without any). The default provider then answers, as fast as without a time."""
        if name is not None or restrictions.time is None or self.timed_roads is None:
            return restrictions
        known = [p for p in points if p is not None]
        if not known or self.timed_roads.timed_near(known):
            return restrictions
        return dataclasses.replace(restrictions, time=None)

    @property
    def names(self) -> list[str]:
        return list(self.providers)

    def choose(
        self,
        name: str | None,
        vehicle: str,
        route_type: str,
        errors: ParameterErrors,
        *,
        emergency: bool = False,
        restrictions: Restrictions = NO_RESTRICTIONS,
        needs: str | None = None,
        serving: str = "route",
        alternatives: int = 0,
    ) -> Capabilities:
        """The provider that answers a request, the last step of parsing it: the provider's
        violations join the request's own in `errors`, and all are raised together. What only
        an otherwise valid request can be told comes after: no provider for emergency routing
        or restrictions (503), or none of the vehicle and route type in this dataset.
        `restrictions` are the request's per-request costs (avoid areas, truck dimensions);
        `needs` a capability the provider must have (`isochrone`): without a name, the first
        provider that has it answers. Without a name, a vehicle or route type the chosen provider
        has not loaded (ROUTING_VEHICLES) goes to one that has, Valhalla first, with the
        capability the request uses (`serving`: route, matrix, match …); so do more
        `alternatives` than the chosen one finds (OSRM's CH data: one)."""
        named = name is not None
        restricted_by = restrictions.parameter  # the parameter that asks for them, for messages
        first = self._first(needs or serving, timed=restrictions.time is not None)
        if self.vehicles is not None and vehicle not in self.vehicles:
            errors.add(
                "vehicle",
                f"{vehicle} routing is not loaded: this map serves {', '.join(self.vehicles)} "
                "(the import's ROUTING_VEHICLES)",
            )
        name = requested_provider(name, self.names, errors)
        if name is None and needs is not None:
            capable = next((c for c in self._ordered(first) if getattr(c, needs) is not None), None)
            name = capable.name if capable is not None else None
        if name is not None:
            chosen: Capabilities | None = self._named(name, emergency, errors)
            unmet = chosen.info.unmet(restrictions) if chosen is not None else None
            if unmet is not None:
                capable = next((c for c in self._ordered(first)
                                if c.info.unmet(restrictions) is None and getattr(c, serving) is not None), None)  # fmt: skip
                hint = f"omit provider or use provider={capable.name}" if capable else "no loaded provider supports it"
                errors.add(unmet, f"the {name} provider does not support {unmet}: {hint}")
        elif restricted_by:
            chosen = self._serving(vehicle, route_type, serving, first, restrictions, emergency, alternatives)
            if chosen is None:  # none serves all of it: the first that restricts says what is missing
                order = self._ordered(first)
                chosen = next((c for c in order if c.info.unmet(restrictions) is None and self._helps(c, emergency)), None)
        else:
            chosen = self._unnamed(emergency)
        errors.raise_if_any()
        if chosen is None:
            wanted = restricted_by or "emergency routing"
            raise DatasetNotReady(f"{wanted} is unavailable: Valhalla's tiles of this map are not loaded")
        short = alternatives > chosen.info.most_alternatives(vehicle, route_type)
        if not named and (short or not chosen.info.serves(vehicle, route_type)):
            chosen = self._serving(vehicle, route_type, serving, first, restrictions, emergency, alternatives) or chosen
        if not chosen.info.serves(vehicle, route_type):
            loaded = ", ".join(f"{v}/{t}" for v, t in sorted(chosen.info.profiles)) or "none"
            others = [c.name for c in self.providers.values() if c.info.serves(vehicle, route_type)]
            hint = f"; provider={others[0]} serves it" if others else ""
            raise InvalidParameter(
                f"{vehicle}/{route_type} routing is not available in the loaded map data of the {chosen.name} "
                f"provider (it serves {loaded}: the import's ROUTING_VEHICLES){hint}",
                parameter="vehicle",
            )
        return chosen

    def _named(self, name: str, emergency: bool, errors: ParameterErrors) -> Capabilities | None:
        chosen = self.providers[name]  # requested_provider has refused unknown names
        if emergency and not chosen.info.emergency_routing:
            capable = self.emergency
            hint = f"omit provider or use provider={capable.name}" if capable else "no loaded provider supports it"
            errors.add("emergencyRoutingRadius", f"the {name} provider does not support emergency routing: {hint}")
        return chosen

    def _serving(
        self,
        vehicle: str,
        route_type: str,
        capability: str,
        first: str,
        restrictions: Restrictions,
        emergency: bool,
        alternatives: int = 0,
    ) -> Capabilities | None:
        """The provider that answers what its chosen one cannot: `first` (`_first`), then any
        other, each with the capability and what the request asks of it, alternatives included."""
        return next(
            (
                c
                for c in self._ordered(first)
                if c.info.serves(vehicle, route_type)
                and getattr(c, capability) is not None
                and c.info.unmet(restrictions) is None
                and self._helps(c, emergency)
                and alternatives <= c.info.most_alternatives(vehicle, route_type)
            ),
            None,
        )

    @staticmethod
    def _first(capability: str, timed: bool = False) -> str:
        """The provider asked first, without a name, for what the default cannot answer."""
        if timed:
            return TIMED_FIRST
        return FIRST_FOR.get(capability, FALLBACK_FIRST)

    def _ordered(self, first: str) -> list[Capabilities]:
        return sorted(self.providers.values(), key=lambda c: c.name != first)

    @staticmethod
    def _helps(capabilities: Capabilities, emergency: bool) -> bool:
        return not emergency or capabilities.info.emergency_routing

    def _unnamed(self, emergency: bool) -> Capabilities | None:
        return self.emergency if emergency else self.providers[self.default_name]

    @classmethod
    def load(cls, dataset: Dataset, *, preload: bool = True) -> ProviderRegistry:
        """`osrm` (required) and `valhalla` (when its module and data exist) for one dataset."""
        osrm = OsrmProvider.load(dataset.path, dataset.manifest)
        if preload:
            osrm.preload()
        providers: dict[str, RouteProvider] = {osrm.name: osrm}
        diagnostics = SnapDiagnostics(osrm, dataset.areas, dataset.sample_points)
        starts = route_starts(osrm, diagnostics)
        valhalla = load_valhalla_provider(dataset, starts)
        if valhalla is not None:
            providers[valhalla.name] = valhalla
        if isinstance(valhalla, SurfaceSnapper):
            starts.route = surface_first(starts.route, valhalla)
        return cls(providers, osrm.name, diagnostics, dataset.vehicles)

    def preload(self) -> None:
        """Opens what each provider opens on first use (OSRM's engines)."""
        for provider in self.sources.values():
            preload = getattr(provider, "preload", None)
            if preload is not None:
                preload()


def route_starts(osrm: OsrmProvider, diagnostics: SnapDiagnostics, surface: SurfaceSnapper | None = None) -> RouteStarts:
    """Where OSRM's routes from a point start (valhalla_areas.RouteStarts): as /v1/route snaps,
    the surface road first, but a failed try is not diagnosed: 11 ms a try against 0.2 ms on 30x
    Heidelberg, where a point's nearest main networks may all lie in other copies (the
    isochrone's p50 was 1.76x 1x's, bench scale 2026-12-03)."""
    route = osrm.plugins().route
    return RouteStarts(
        route if surface is None else surface_first(route, surface),
        lambda vehicle: [area[0] for area in diagnostics.areas(vehicle, "fastest")],
    )


def load_valhalla_provider(dataset: Dataset, starts: RouteStarts | None = None) -> RouteProvider | None:
    from route_service.providers.valhalla import ValhallaProvider

    osrm_vehicles = {str(profile).split("-", 1)[0] for profile in dataset.manifest.get("profiles", {})}
    cuts = dataset.cut_points  # where the map cuts a road (None: a dataset from before it was recorded)
    data = MapData(None if cuts is None else lambda: cuts)
    return loaded(lambda: ValhallaProvider.load(dataset.path, osrm_vehicles, data, starts), "valhalla")


def loaded(load: Callable[[], RouteProvider], name: str) -> RouteProvider | None:
    try:
        return load()
    except ApiError as exc:  # DatasetNotReady: the dataset was imported without its data
        log.warning("%s provider not loaded: %s", name, exc)
        return None
