"""The interface every geocoding backend implements, and the registry the `provider` parameter picks from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from common.providers import provider_name
from geo_service.model import AutocompleteQuery, GeocodeAnswer, GeocodeQuery, GeocodeResult, ReverseQuery


@runtime_checkable
class GeocodeProvider(Protocol):
    name: str

    def capabilities(self) -> dict[str, Any]:
        """What the provider can do: operations, countries, result types, dataset."""
        ...

    def ready(self) -> bool:
        """Whether it can answer now (its data is loaded)."""
        ...

    def cache_token(self) -> str | None:
        """Changes whenever the answers may change (the dataset hash); None: do not cache."""
        ...

    async def geocode(self, query: GeocodeQuery) -> GeocodeAnswer: ...

    async def reverse(self, query: ReverseQuery) -> GeocodeAnswer: ...

    async def answer_many(self, queries: Sequence[GeocodeQuery | ReverseQuery]) -> tuple[list[GeocodeAnswer], float]:
        """The answers to many lookups, in their order (a batch's lines): cheaper than one call
        each; and the CPU seconds they took (what the batch is charged in the end)."""
        ...

    async def autocomplete(self, query: AutocompleteQuery) -> list[GeocodeResult]:
        """Suggestions for a text being typed: its last word is a prefix."""
        ...

    def translations(self, language: str) -> dict[str, str]:
        """Names in "<kind>:<language>" (geo_service.names), by name."""
        ...

    def close(self) -> None: ...


class ProviderRegistry:
    def __init__(self, providers: list[GeocodeProvider], default: str) -> None:
        self.providers = {p.name: p for p in providers}
        if default not in self.providers:
            raise ValueError(f"default provider {default!r} is not registered")
        self.default = default

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.providers))

    def get(self, name: str | None) -> GeocodeProvider | None:
        return self.providers.get(self.default if name is None else provider_name(name))

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"name": p.name, "default": p.name == self.default, "ready": p.ready(), "capabilities": p.capabilities()}
            for p in self.providers.values()
        ]

    def close(self) -> None:
        for provider in self.providers.values():
            provider.close()
