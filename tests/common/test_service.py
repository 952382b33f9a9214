"""The shared app base: what every service gets from `base_app`."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.config import BaseConfig
from common.service import base_app, dump_json

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
LOADED: web.AppKey[list[list[int]]] = web.AppKey("loaded", list)


async def test_data_loaded_at_startup_is_frozen_out_of_gc(aiohttp_client: ClientFactory) -> None:
    gc.unfreeze()
    app = base_app(BaseConfig(service="test"), with_redis=False)

    async def load(app: web.Application) -> AsyncIterator[None]:
        app[LOADED] = [[i] for i in range(50_000)]  # 50 001 tracked containers
        yield

    app.cleanup_ctx.append(load)
    client = await aiohttp_client(app)
    assert gc.get_freeze_count() > 50_000
    await client.close()
    assert gc.get_freeze_count() == 0  # released again at shutdown


def test_numpy_arrays_serialize_as_json_arrays() -> None:
    assert (
        dump_json({"coordinates": np.array([[8.5, 49.25], [8.75, 49.5]])})
        == b'{"coordinates":[[8.5,49.25],[8.75,49.5]]}'
    )
