"""Provider names → each provider's capabilities for one dataset, and which one answers.

Every capability is resolved once, when the registry is made (`resolve`); a request's
provider is chosen once, as the last step of parsing it (`ProviderRegistry.choose`). `osrm`
is the default; without a provider named, a vehicle or route type it has not loaded (the
import's OSRM_VEHICLES: car and truck by default) goes to Valhalla, or, for what Valhalla does
not compute here (matrices), to the next provider serving it. A vehicle the map does not serve
at all (the import's ROUTING_VEHICLES) is a 400 naming those it serves, whichever provider is
named. Queries with `emergency_radius_m > 0` need per-query costs, which only
providers whose ProviderInfo says `emergency_routing` have (the `graph` provider): without
an explicit provider they go there; naming a provider that lacks it is a 400 naming
emergencyRoutingRadius.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

from common.errors import ApiError, DatasetNotReady, InvalidParameter, ParameterErrors
from common.providers import requested_provider
from route_service.dataset import Dataset
from route_service.diagnostics import SnapDiagnostics
from route_service.providers.base import Capabilities, Plugins, RouteProvider
from route_service.providers.diagnosing import diagnosing
from route_service.providers.leg_by_leg import LegByLeg
from route_service.providers.osrm_provider import OsrmProvider

log = logging.getLogger("route_service.registry")
# Answers a vehicle or route type the default provider has not loaded, when it can.
FALLBACK_FIRST = "valhalla"


def resolve(provider: RouteProvider, diagnostics: SnapDiagnostics | None = None) -> Capabilities:
    """A provider's plugins as the service uses them: with `diagnostics`, their snapping errors
    say which point is at fault and why; the waypoints and cost it lacks are served leg by leg
    through its route plugin."""
    plugins = provider.plugins()
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
        self.providers = {name: resolve(provider, diagnostics) for name, provider in providers.items()}
        if vehicles is not None:  # each provider lists only what the map serves (/v1/providers)
            self.providers = {name: serving_only(c, vehicles) for name, c in self.providers.items()}
        self.diagnostics = diagnostics
        self.default_name = default_name
        # The vehicles the map serves (the import's ROUTING_VEHICLES); None: whatever a provider has.
        self.vehicles = tuple(vehicles) if vehicles is not None else None
        # Answer emergency routing / per-request restrictions when no provider is named: the first that can.
        self.emergency = next((c for c in self.providers.values() if c.info.emergency_routing), None)
        self.restricting = next((c for c in self.providers.values() if c.info.restrictions), None)

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
        restricted_by: str | None = None,
        needs: str | None = None,
        serving: str = "route",
        alternatives: int = 0,
    ) -> Capabilities:
        """The provider that answers a request, the last step of parsing it: the provider's
        violations join the request's own in `errors`, and all are raised together. What only
        an otherwise valid request can be told comes after: no provider for emergency routing
        or restrictions (503), or none of the vehicle and route type in this dataset.
        `restricted_by` names the parameter that asks for per-request costs (`avoid` …);
        `needs` a capability the provider must have (`isochrone`): without a name, the first
        provider that has it answers. Without a name, a vehicle or route type the chosen provider
        has not loaded (ROUTING_VEHICLES) goes to one that has, Valhalla first, with the
        capability the request uses (`serving`: route, matrix, match …); so do more
        `alternatives` than the chosen one finds (OSRM's CH data: one)."""
        named = name is not None
        if self.vehicles is not None and vehicle not in self.vehicles:
            errors.add(
                "vehicle",
                f"{vehicle} routing is not loaded: this map serves {', '.join(self.vehicles)} "
                "(the import's ROUTING_VEHICLES)",
            )
        name = requested_provider(name, self.names, errors)
        if name is None and needs is not None:
            capable = next((c for c in self.providers.values() if getattr(c, needs) is not None), None)
            name = capable.name if capable is not None else None
        if name is not None:
            chosen: Capabilities | None = self._named(name, emergency, errors)
            if restricted_by and chosen is not None and not chosen.info.restrictions:
                capable = self.restricting
                hint = f"omit provider or use provider={capable.name}" if capable else "no loaded provider supports it"
                errors.add(restricted_by, f"the {name} provider does not support {restricted_by}: {hint}")
        elif restricted_by:
            chosen = self.restricting
            if chosen is not None and emergency and not chosen.info.emergency_routing:
                chosen = None
        else:
            chosen = self._unnamed(emergency)
        errors.raise_if_any()
        if chosen is None:
            wanted = restricted_by or "emergency routing"
            raise DatasetNotReady(f"{wanted} is unavailable: the road graph of this map is not loaded")
        short = alternatives > chosen.info.most_alternatives(vehicle, route_type)
        if not named and (short or not chosen.info.serves(vehicle, route_type)):
            chosen = self._serving(vehicle, route_type, serving, restricted_by, emergency, alternatives) or chosen
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
        restricted_by: str | None,
        emergency: bool,
        alternatives: int = 0,
    ) -> Capabilities | None:
        """The provider that answers what its chosen one cannot: Valhalla (one graph for every
        vehicle) first, then any other, each with the capability and what the request asks of
        it, alternatives included."""
        order = sorted(self.providers.values(), key=lambda c: c.name != FALLBACK_FIRST)
        return next(
            (
                c
                for c in order
                if c.info.serves(vehicle, route_type)
                and getattr(c, capability) is not None
                and (not restricted_by or c.info.restrictions)
                and (not emergency or c.info.emergency_routing)
                and alternatives <= c.info.most_alternatives(vehicle, route_type)
            ),
            None,
        )

    def _unnamed(self, emergency: bool) -> Capabilities | None:
        return self.emergency if emergency else self.providers[self.default_name]

    @classmethod
    def load(cls, dataset: Dataset, *, preload: bool = True, graph_now: bool = True) -> ProviderRegistry:
        """`osrm` (required), `graph` and `valhalla` (each when its module and data exist) for one
        dataset. `graph_now=False` leaves the graph's engine to its first use or `preload`."""
        osrm = OsrmProvider.load(dataset.path, dataset.manifest)
        if preload:
            osrm.preload()
        providers: dict[str, RouteProvider] = {osrm.name: osrm}
        for optional in (load_graph_provider(dataset, now=graph_now), load_valhalla_provider(dataset)):
            if optional is not None:
                providers[optional.name] = optional
        diagnostics = SnapDiagnostics(osrm, dataset.bounds, dataset.sample_points)
        return cls(providers, osrm.name, diagnostics, dataset.vehicles)

    def preload(self) -> None:
        """Opens what each provider opens on first use (OSRM's engines, the graph's arrays)."""
        for provider in self.sources.values():
            preload = getattr(provider, "preload", None)
            if preload is not None:
                preload()


def load_graph_provider(dataset: Dataset, *, now: bool = True) -> RouteProvider | None:
    try:
        from route_service.providers.graph import GraphProvider
    except ImportError as exc:
        log.warning("graph provider unavailable: %s", exc)
        return None
    return loaded(lambda: GraphProvider.load(dataset.path, now=now), "graph")


def load_valhalla_provider(dataset: Dataset) -> RouteProvider | None:
    from route_service.providers.valhalla import ValhallaProvider

    osrm_vehicles = {str(profile).split("-", 1)[0] for profile in dataset.manifest.get("profiles", {})}
    return loaded(lambda: ValhallaProvider.load(dataset.path, osrm_vehicles), "valhalla")


def loaded(load: Callable[[], RouteProvider], name: str) -> RouteProvider | None:
    try:
        return load()
    except ApiError as exc:  # DatasetNotReady: the dataset was imported without its data
        log.warning("%s provider not loaded: %s", name, exc)
        return None
