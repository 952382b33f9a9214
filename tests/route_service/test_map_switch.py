"""A new map goes into service without a restart and without a failed request (issue 30, item 6):
the route service follows `current.json`, opens the new dataset while the old one answers,
lets the requests in flight end on the old one. Maps: Monaco alone, then Monaco and Andorra as one."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.datasets import CURRENT, STAGED, Progress, read_current, switch_staged, write_current
from route_service.app import create_app
from route_service.calls import LargeCalls
from route_service.config import RouteConfig
from route_service.importing.importer import import_maps
from route_service.state import STATE_KEY, RouteState

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
MONACO_ROUTE = "/v1/route?from=43.7384,7.4246&to=43.7311,7.4197&steps=false"
MONACO_ISOCHRONE = "/v1/isochrone?point=43.7384,7.4246&time=120"
ANDORRA_ROUTE = "/v1/route?from=42.5078,1.5211&to=42.5096,1.5380&steps=false"
NO_REDIS = "redis://127.0.0.1:9/0"  # nothing listens: every request is computed, none cached
AFTER_SWITCH = 20  # requests each loader sends on the new map before it stops


@pytest.fixture(scope="module")
def two_maps(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> tuple[Path, str, str]:
    """A maps directory holding Monaco (current) and Monaco with Andorra; their hashes."""
    maps = tmp_path_factory.mktemp("switch") / "maps"
    quiet = Progress(emit=lambda _line: None)
    monaco = import_maps([shared_osm / "monaco.osm.pbf"], maps, profiles=["car-fastest"], progress=quiet)
    both = import_maps([shared_osm / f"{m}.osm.pbf" for m in ("monaco", "andorra")], maps,
                       profiles=["car-fastest"], progress=quiet, stage=True)  # fmt: skip
    assert read_current(maps) == monaco.hash, "staged, not current"
    return maps, monaco.hash, both.hash


def config(maps: Path, **overrides: Any) -> RouteConfig:
    """The route service on `maps`."""
    values: dict[str, Any] = {"map_dir": maps, "redis_url": NO_REDIS, "port": 0, "reload_check_seconds": 0.1}
    return RouteConfig.from_env("route_service", **{**values, **overrides})


async def served(client: Client, digest: str, switches: int = 0, checks: int = 600) -> dict[str, Any]:
    """/health once the service serves `digest` and has ended `switches` map switches (checked
    every 0.05 s, at most `checks` times)."""
    for _ in range(checks):
        health = await (await client.get("/health")).json()
        if health["checks"].get("dataset") == digest and health["checks"]["mapSwitches"] >= switches:
            return dict(health)
        await asyncio.sleep(0.05)
    pytest.fail(f"the service never served {digest}: {health}")


async def load(client: Client, path: str, switched: asyncio.Event) -> list[tuple[bool, int]]:
    """Requests one after the other until AFTER_SWITCH of them were sent after the switch; each
    (sent after the switch, status)."""
    answers: list[tuple[bool, int]] = []
    while sum(after for after, _ in answers) < AFTER_SWITCH:
        after = switched.is_set()
        response = await client.get(path)
        await response.read()
        answers.append((after, response.status))
    return answers


async def test_a_new_map_goes_into_service_under_load_without_a_failed_request(
    aiohttp_client: ClientFactory, two_maps: tuple[Path, str, str]
) -> None:
    maps, monaco, both = two_maps
    write_current(maps, monaco)
    client = await aiohttp_client(create_app(config(maps)))
    state: RouteState = client.app[STATE_KEY]
    await served(client, monaco)
    assert (await client.get(ANDORRA_ROUTE)).status == 400  # not on this map
    assert (await client.get(MONACO_ISOCHRONE)).status == 200  # Valhalla opened, in the large-call child too

    switched = asyncio.Event()
    loaders = [asyncio.create_task(load(client, path, switched)) for path in (MONACO_ROUTE, MONACO_ISOCHRONE) * 2]
    await asyncio.sleep(0.2)  # under way on the old map
    in_flight = state.registry  # as a request still running on the old map holds it
    assert switch_staged([maps]) == {maps: both}
    await served(client, both)
    switched.set()  # the new map answers from here on
    assert in_flight is not None and in_flight is not state.registry
    del in_flight  # the request ends ...
    health = await served(client, both, switches=1)  # ... and so does the switch
    answers = [answer for task in loaders for answer in await task]

    assert [status for _, status in answers if status != 200] == []
    assert sum(after for after, _ in answers) >= 4 * AFTER_SWITCH
    assert (await client.get(ANDORRA_ROUTE)).status == 200  # the new map answers
    assert health["checks"]["mapSwitches"] == 1


async def test_a_dataset_that_cannot_open_leaves_the_old_one_in_service(
    aiohttp_client: ClientFactory, two_maps: tuple[Path, str, str], tmp_path: Path
) -> None:
    maps, monaco, _ = two_maps
    write_current(maps, monaco)
    client = await aiohttp_client(create_app(config(maps, preload=False)))
    await served(client, monaco)
    write_current(maps, "0123456789abcdef")  # named, but never imported
    try:
        for _ in range(5):  # several checks pass: each finds it missing and keeps Monaco
            await asyncio.sleep(0.1)
            assert (await client.get(MONACO_ROUTE)).status == 200
        health = await (await client.get("/health")).json()
        assert health["checks"]["dataset"] == monaco and health["checks"]["mapSwitches"] == 0
    finally:
        write_current(maps, monaco)


async def test_a_switch_whose_child_fails_to_start_keeps_the_old_map_and_leaves_no_child(
    aiohttp_client: ClientFactory, two_maps: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new map's large-call child starts, then fails to open its engines: the old map and
    its child stay in service, the new child is stopped, the dataset is not retried."""
    maps, monaco, both = two_maps
    write_current(maps, monaco)
    client = await aiohttp_client(create_app(config(maps, preload=False)))
    await served(client, monaco)
    children = {child.pid for child in multiprocessing.active_children()}
    tried: list[LargeCalls] = []
    start = LargeCalls.start

    async def failing(self: LargeCalls) -> None:
        await start(self)  # the child runs …
        tried.append(self)
        raise RuntimeError("the child could not open the new map's engines")  # … and fails

    monkeypatch.setattr(LargeCalls, "start", failing)
    write_current(maps, both)
    try:
        for _ in range(600):  # checked every 0.05 s until the switch was tried
            if tried:
                break
            await asyncio.sleep(0.05)
        assert len(tried) == 1, "the switch was tried once"
        for _ in range(5):  # several checks pass: none retries it
            await asyncio.sleep(0.1)
            assert (await client.get(MONACO_ROUTE)).status == 200
        health = await (await client.get("/health")).json()
        assert health["checks"]["dataset"] == monaco and health["checks"]["mapSwitches"] == 0
        assert len(tried) == 1
        assert {child.pid for child in multiprocessing.active_children()} == children, "the failed child is gone"
    finally:
        write_current(maps, monaco)


def test_staged_datasets_become_current_together(tmp_path: Path) -> None:
    """The launcher's import stages each service's dataset, then switches them all at once."""
    routing, geocoding, untouched = tmp_path / "maps", tmp_path / "geo", tmp_path / "other"
    for root, digest in ((routing, "aaaa"), (geocoding, "bbbb"), (untouched, "cccc")):
        root.mkdir()
        write_current(root, "old0")
        write_current(root, digest, STAGED) if root is not untouched else None
    assert switch_staged([routing, geocoding]) == {routing: "aaaa", geocoding: "bbbb"}
    assert (read_current(routing), read_current(geocoding), read_current(untouched)) == ("aaaa", "bbbb", "old0")
    assert not (routing / STAGED).exists() and (routing / CURRENT).is_file()
    assert switch_staged([routing]) == {}  # nothing staged: nothing changes
