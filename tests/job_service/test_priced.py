"""Jobs priced at submission (issue 55): before storing a job the job service asks its owning
service (here the real ones: the geocoder on Munich, the optimizer over the route service on
Monaco) for the price only, so a job over the tier's cap is 413 and one its budget cannot pay
429 at once, not a 202 that fails at run time; and the paid job's replay is not charged again."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestServer

from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from geo_service.app import create_app as create_geo_app
from job_service.app import create_app
from tests.geo_service.conftest import munich_dir, munich_import  # noqa: F401 - fixtures
from tests.geo_service.test_app import make_config
from tests.job_service.conftest import Client, ClientFactory, Upstream, job_config
from tests.job_service.test_app import finished, submit
from tests.optimize_service.conftest import ServerFactory, monaco_maps, monaco_route, optimize_client  # noqa: F401
from tests.optimize_service.test_app import stops
from tests.optimize_service.test_fleet_app import seeded_instance

PROBLEM = {"Accept": "application/json, application/problem+json"}


async def jobs_over(aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream, **urls: str) -> Client:
    return await aiohttp_client(create_app(job_config(redis_url, upstream.url, **urls)))


async def optimizer_url(aiohttp_client: ClientFactory, route: TestServer, redis_url: str, budgets: str) -> str:
    client = await optimize_client(aiohttp_client, str(route.make_url("")), redis_url, cost_budgets=budgets)
    return str(client.make_url("")).rstrip("/")


def who(subject: str, tier: str) -> dict[str, str]:
    return {INTERNAL_SUBJECT_HEADER: subject, INTERNAL_TIER_HEADER: tier, **PROBLEM}


def truck_fleet(sizes: int, jobs: int) -> dict[str, Any]:
    """`sizes` trucks of as many heights: a road matrix each, on the road graph."""
    fleet = seeded_instance(3, jobs, 0, sizes)
    for index, vehicle in enumerate(fleet["vehicles"]):
        vehicle |= {"kind": "truck", "truck": {"height": 3.0 + index / 10}}
    return fleet


async def test_a_100000_line_standard_batch_job_is_refused_at_submission(
    aiohttp_client: ClientFactory, aiohttp_server: ServerFactory, redis_url: str, upstream: Upstream,
    munich_dir: Any,  # noqa: F811
) -> None:  # fmt: skip
    """The campaign: accepted with 202, then failed at run time on the cost cap."""
    geo = await aiohttp_server(create_geo_app(make_config(munich_dir, redis_url)))
    client = await jobs_over(aiohttp_client, redis_url, upstream, geo_service_url=str(geo.make_url("")).rstrip("/"))
    body = ("address\n" + "Tal 4, München\n" * 100_000).encode()
    status, problem, _ = await submit(client, "/v1/geocoder/batch?async=true", body,
                                      headers={"Content-Type": "text/csv"}, who=who("batch-1", "standard"))  # fmt: skip
    assert status == 413 and problem["type"] == "/problems/general/cost-too-high", problem
    assert "100000 geocoder lines" in problem["detail"] and "at most 60000 per request" in problem["detail"]
    listed = await client.get("/v1/jobs", headers=who("batch-1", "standard"))
    assert (await listed.json())["jobs"] == []  # nothing stored


async def test_a_fleet_job_over_the_tiers_cells_is_refused_at_submission(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream, monaco_route: TestServer,  # noqa: F811
) -> None:  # fmt: skip
    """The campaign: 10 truck sizes, a matrix each on the road graph, had no cell cap as a job."""
    url = await optimizer_url(aiohttp_client, monaco_route, redis_url, "demo=5000/50/10000/1")
    client = await jobs_over(aiohttp_client, redis_url, upstream, optimize_service_url=url)
    status, problem, _ = await submit(client, "/v1/optimize/routes?async=true", truck_fleet(10, 100),
                                      who=who("fleet-1", "demo"))  # fmt: skip
    assert status == 413 and problem["type"] == "/problems/optimize/too-many-stops", problem
    assert " need 10 " in problem["detail"] and "road matrixes" in problem["detail"], problem
    assert "the demo tier's jobs may have 50000 cells" in problem["detail"], problem
    # Within the cells, the trucks' matrices are priced at Valhalla's price: the cap holds.
    status, problem, _ = await submit(client, "/v1/optimize/routes?async=true", truck_fleet(10, 55),
                                      who=who("fleet-1", "demo"))  # fmt: skip
    assert status == 413 and problem["type"] == "/problems/general/cost-too-high", problem
    assert "10 road profile(s)" in problem["detail"] and "at most 5000 per request" in problem["detail"]


async def test_a_job_its_budget_cannot_pay_is_429_at_submission(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream, monaco_route: TestServer,  # noqa: F811
) -> None:  # fmt: skip
    url = await optimizer_url(aiohttp_client, monaco_route, redis_url, "standard=60000/1/1000/2")
    client = await jobs_over(aiohttp_client, redis_url, upstream, optimize_service_url=url)
    status, problem, headers = await submit(client, "/v1/optimize/stops?async=true&timeLimit=2", stops(14),
                                            who=who("poor-1", "standard"))  # fmt: skip
    assert status == 429 and problem["type"] == "/problems/general/cost-limit-exceeded", problem
    assert "the account's budget holds 1000 now" in problem["detail"], problem
    assert int(headers["Retry-After"]) >= 1 and headers["RateLimit-Cost-Limit"] == "1000"
    assert upstream.calls == []


async def test_a_paid_jobs_replay_is_not_charged_again(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream, monaco_route: TestServer,  # noqa: F811
) -> None:  # fmt: skip
    url = await optimizer_url(aiohttp_client, monaco_route, redis_url, "standard=60000/0.01/100000/2")
    client = await jobs_over(aiohttp_client, redis_url, upstream, optimize_service_url=url)
    payer = who("payer-1", "standard")
    status, job, headers = await submit(client, "/v1/optimize/stops?async=true", stops(5), who=payer)
    assert status == 202, job
    price, remaining = int(headers["RateLimit-Cost"]), int(headers["RateLimit-Cost-Remaining"])
    assert remaining == 100_000 - price
    assert (await finished(client, job["id"], who=payer))["status"] == "succeeded"
    # The same request synchronously: charged once more, so the replay was not.
    async with client.session.post(url + "/v1/optimize/stops", data=orjson.dumps(stops(5)),
                                   headers={**payer, "Content-Type": "application/json"}) as answer:  # fmt: skip
        assert answer.status == 200, await answer.text()
        assert int(answer.headers["RateLimit-Cost-Remaining"]) in (remaining - price, remaining - price + 1)
