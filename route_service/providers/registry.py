"""Provider names → RouteProvider instances for one dataset, and which one answers a query.

`osrm` is the default. Queries with `emergency_radius_m > 0` need per-query costs, which
only providers whose ProviderInfo says `emergency_routing` have (the `graph` provider):
without an explicit provider they go there; naming a provider that lacks it is a 400
naming emergencyRoutingRadius.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from common.errors import ApiError, DatasetNotReady, InvalidParameter, ParameterErrors
from route_service.dataset import Dataset
from route_service.model import ProviderInfo, RouteProvider
from route_service.providers.osrm_provider import OsrmProvider

log = logging.getLogger("route_service.registry")


class ProviderRegistry:
    def __init__(self, providers: Mapping[str, RouteProvider], default_name: str) -> None:
        if default_name not in providers:
            raise ValueError(f"default provider {default_name!r} is not among {sorted(providers)}")
        self.providers = dict(providers)
        self.default_name = default_name

    @property
    def names(self) -> list[str]:
        return list(self.providers)

    def get(self, name: str | None = None) -> RouteProvider:
        """The named provider (the default for None); unknown names are a 400 naming `provider`."""
        if name is None:
            return self.providers[self.default_name]
        provider = self.providers.get(name)
        if provider is None:
            raise InvalidParameter(
                f"unknown provider {name[:40]!r} (known: {', '.join(self.names)})", parameter="provider"
            )
        return provider

    def infos(self) -> list[ProviderInfo]:
        return [provider.info() for provider in self.providers.values()]

    def emergency_name(self) -> str | None:
        return next((p.name for p in self.providers.values() if p.info().emergency_routing), None)

    def check(self, name: str | None, emergency_radius_m: int, errors: ParameterErrors) -> None:
        """Adds the violations of a provider choice to `errors` (so they join the others)."""
        if name is not None and name not in self.providers:
            errors.add("provider", f"unknown provider {name[:40]!r} (known: {', '.join(self.names)})")
        elif name is not None and emergency_radius_m > 0 and not self.providers[name].info().emergency_routing:
            capable = self.emergency_name()
            hint = f"omit provider or use provider={capable}" if capable else "no loaded provider supports it"
            errors.add("emergencyRoutingRadius", f"the {name} provider does not support emergency routing: {hint}")

    def choose(self, name: str | None, emergency_radius_m: int) -> RouteProvider:
        """The provider that answers: the named one, else the default, else (for emergency
        routing) the first provider that supports it."""
        errors = ParameterErrors()
        self.check(name, emergency_radius_m, errors)
        errors.raise_if_any()
        if name is None and emergency_radius_m > 0:
            capable = self.emergency_name()
            if capable is None:
                raise DatasetNotReady("emergency routing is unavailable: the road graph of this map is not loaded")
            return self.providers[capable]
        return self.get(name)

    @classmethod
    def load(cls, dataset: Dataset, *, preload: bool = True) -> ProviderRegistry:
        """`osrm` (required) and `graph` (when its module and data exist) for one dataset."""
        osrm = OsrmProvider.load(dataset.path, dataset.manifest)
        if preload:
            osrm.preload()
        providers: dict[str, RouteProvider] = {osrm.name: osrm}
        graph = load_graph_provider(dataset)
        if graph is not None:
            providers[graph.name] = graph
        return cls(providers, osrm.name)


def load_graph_provider(dataset: Dataset) -> RouteProvider | None:
    try:
        from route_service.providers.graph import GraphProvider
    except ImportError as exc:
        log.warning("graph provider unavailable: %s", exc)
        return None
    try:
        provider: RouteProvider = GraphProvider.load(dataset.path)
    except ApiError as exc:  # DatasetNotReady: the dataset was imported without the graph
        log.warning("graph provider not loaded: %s", exc)
        return None
    return provider
