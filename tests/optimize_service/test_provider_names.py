"""The route service's provider names: looked up once, again only for a name missing from them."""

from __future__ import annotations

import asyncio

from common.errors import ServiceUnavailable
from optimize_service.routing import PROVIDERS_RECHECK_S, ProviderNames


class RouteService:
    """Answers the provider names it holds now, counting the lookups; down when `names` is None."""

    def __init__(self, *names: str) -> None:
        self.names: frozenset[str] | None = frozenset(names)
        self.lookups = 0
        self.now = 0.0

    async def fetch(self) -> frozenset[str]:
        self.lookups += 1
        await asyncio.sleep(0)
        if self.names is None:
            raise ServiceUnavailable("the route service is unavailable")
        return self.names

    def providers(self) -> ProviderNames:
        return ProviderNames(self.fetch, clock=lambda: self.now)


async def test_a_known_name_is_looked_up_once() -> None:
    service = RouteService("osrm", "valhalla")
    providers = service.providers()
    for _ in range(5):
        assert await providers.to_check("osrm") == {"osrm", "valhalla"}
    assert service.lookups == 1


async def test_requests_arriving_together_share_one_lookup() -> None:
    service = RouteService("osrm")
    providers = service.providers()
    answers = await asyncio.gather(*(providers.to_check("osrm") for _ in range(10)))
    assert answers == [{"osrm"}] * 10 and service.lookups == 1


async def test_an_unknown_name_looks_again_at_most_every_recheck_period() -> None:
    service = RouteService("osrm")
    providers = service.providers()
    assert await providers.to_check("nowhere") == {"osrm"}
    assert await providers.to_check("nowhere") == {"osrm"}
    assert service.lookups == 1
    service.names = frozenset({"osrm", "valhalla"})  # the route service restarted with more data
    service.now += PROVIDERS_RECHECK_S
    assert await providers.to_check("valhalla") == {"osrm", "valhalla"}
    assert service.lookups == 2


async def test_without_an_answer_the_route_service_checks_the_name_itself() -> None:
    service = RouteService("osrm")
    service.names = None
    providers = service.providers()
    assert await providers.to_check("osrm") is None
    assert await providers.to_check("osrm") is None  # not asked again before the recheck period
    assert service.lookups == 1
    service.names = frozenset({"osrm"})
    service.now += PROVIDERS_RECHECK_S
    assert await providers.to_check("osrm") == {"osrm"}
