"""The route service as the optimizer sees it: its client and the provider names it knows.

What each product asks of it is the product's: a stop order's matrix and tour
(`stops.routing`), a fleet's matrices and routes (`fleet.planner`). No aiohttp server code
here; the HTTP client is `common.client.ServiceClient`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable

from common.client import ServiceClient
from common.errors import ApiError

# A name missing from the list looks it up again at most this often (a provider added since).
PROVIDERS_RECHECK_S = 5.0


class ProviderNames:
    """The route service's provider names, so that an unknown one is refused (400) with the
    request's other violations, before any routing. Looked up on first need, and again only
    when a request names one missing from the list, at most every PROVIDERS_RECHECK_S: a known
    name never costs a call, a provider added since is found at once, and one the route service
    dropped since is refused by the route service itself when the matrix names it."""

    def __init__(
        self, fetch: Callable[[], Awaitable[frozenset[str]]], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._names: frozenset[str] | None = None
        self._asked_at = -math.inf
        self._lock = asyncio.Lock()  # requests arriving together share one lookup

    async def to_check(self, name: str) -> frozenset[str] | None:
        """The names to check `name` against; None when the route service cannot say (it then
        checks the name itself)."""
        if self._names is not None and name in self._names:
            return self._names
        async with self._lock:
            missing = self._names is None or name not in self._names
            if missing and self._clock() - self._asked_at >= PROVIDERS_RECHECK_S:
                self._asked_at = self._clock()
                # On failure the last list stands; without one the matrix call reports what is wrong.
                with contextlib.suppress(ApiError, KeyError, TypeError):
                    self._names = await self._fetch()
        return self._names


class RouteClient:
    def __init__(self, client: ServiceClient) -> None:
        self.client = client
        self.providers = ProviderNames(self.fetch_provider_names)

    async def fetch_provider_names(self) -> frozenset[str]:
        body = await self.client.get_json("/internal/providers")
        return frozenset(str(item["name"]) for item in body["providers"])
