"""The welcome's example route comes from the loaded map and routes there (issue 32, item 6):
a fixed Helsinki pair answered 400 on any other map."""

from __future__ import annotations

import json
import urllib.request

from common.geo import LatLon
from launcher.__main__ import example_route
from launcher.stack import Stack
from tests.integration.conftest import user_token


def test_the_example_route_lies_on_the_loaded_map_and_routes(full_platform: Stack) -> None:
    token = user_token(full_platform)
    pair = example_route(full_platform, token)
    assert pair is not None
    start = LatLon(*map(float, pair[0].split(",")))
    assert 43.7 < start.lat < 43.8 and 7.3 < start.lon < 7.5, "inside the test platform's map, Monaco"
    url = f"{full_platform.base_url}/v1/route?from={pair[0]}&to={pair[1]}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
        assert answer.status == 200 and json.loads(answer.read())["routes"]
