"""Every parameter of every geocoder operation with malformed, boundary and hostile values:
a 200 or a 4xx in our formats, never a 5xx."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient

from geo_service.app import create_app
from tests.geo_service.test_app import make_config

ClientFactory = Callable[..., Awaitable[TestClient[Any, Any]]]

HOSTILE = (
    "", " ", "\x00", "a" * 600, "1e308,0", "nan,nan", "inf", "-0", "+-1", "²", "①", "0x10", "9" * 30,
    "'; DROP TABLE names;--", '"', "\ufffe", "..", ",", ",,,,", "ß" * 200, "😀", "\u202e", "1-", "-1", "12/", "/",
    "a,b", "91,0", "60.17,24.94", "60.17,24.94,1", "Tal 1" + " 2" * 100,
)  # fmt: skip
OPERATIONS = {
    "/v1/geocoder": ({"address": "Tal 4"}, ("address", "street", "houseNumber", "postalCode", "city", "country", "limit", "provider")),
    "/v1/geocoder/reverse": ({"lat": "48.137", "lon": "11.576"}, ("lat", "lon", "limit", "provider")),
    "/v1/geocoder/autocomplete": ({"text": "Marienpl"}, ("text", "focus", "country", "limit", "provider")),
}  # fmt: skip


@pytest.mark.parametrize("path", sorted(OPERATIONS))
async def test_no_value_of_any_parameter_causes_a_server_error(
    aiohttp_client: ClientFactory, munich_dir: Path, path: str
) -> None:
    client = await aiohttp_client(create_app(make_config(munich_dir)))
    base, names = OPERATIONS[path]
    for name in names:
        for value in HOSTILE:
            for query in ({**base, name: value}, {name: value}):
                url = path + "?" + "&".join(f"{k}={quote(v)}" for k, v in query.items())
                response = await client.get(url, headers={"Accept": "application/json"})
                body = await response.json(content_type=None)
                assert response.status in (200, 400), (url, response.status, body)
                assert ("results" in body) if response.status == 200 else body["details"], url
