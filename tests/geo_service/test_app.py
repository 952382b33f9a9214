"""The geocoding service over HTTP: results, every error in both formats, readiness, Redis cache."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestClient

from geo_service.app import create_app
from geo_service.cache import KEY_PREFIX
from geo_service.config import GeoConfig

ClientFactory = Callable[..., Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
INVALID = "/problems/general/invalid-parameter/"
MISSING = "/problems/geocoder/missing-address"


def make_config(index_dir: Path, redis_url: str = UNREACHABLE_REDIS, **overrides: Any) -> GeoConfig:
    return GeoConfig.from_env("geo_service", index_dir_override=index_dir, redis_url=redis_url, **overrides)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, munich_dir: Path, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(munich_dir, redis_server)))


async def get_json(client: Client, url: str, headers: dict[str, str] = LEGACY, status: int = 200) -> Any:
    response = await client.get(url, headers=headers)
    body = await response.json(content_type=None)
    assert response.status == status, body
    return body


async def test_geocode_answers_the_documented_shape(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder?address=" + quote("Marienplatz 8, 80331 München"))
    assert body["provider"] == "osm"
    first = body["results"][0]
    assert first["address"] == {
        "street": "Marienplatz",
        "houseNumber": "8",
        "postalCode": "80331",
        "city": "München",
        "country": "DEU",
    }
    assert first["label"] == "Marienplatz 8, 80331 München"
    assert first["type"] == "address" and first["score"] == 1.0
    assert first["coordinate"] == {"lat": pytest.approx(48.13739, abs=1e-4), "lon": pytest.approx(11.57606, abs=1e-4)}
    assert 1 <= len(body["results"]) <= 5


async def test_limit_and_default_limit(client: Client) -> None:
    assert len((await get_json(client, "/v1/geocoder?address=Marienplatz"))["results"]) == 5
    assert len((await get_json(client, "/v1/geocoder?address=Marienplatz&limit=2"))["results"]) == 2
    many = (await get_json(client, "/v1/geocoder?address=Marienplatz&limit=50"))["results"]
    assert len(many) > 5
    assert [r["score"] for r in many] == sorted((r["score"] for r in many), reverse=True)


async def test_explicit_provider_and_country_case_insensitive(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder?address=Tal%204&provider=OSM&country=deu")
    assert body["results"][0]["address"]["street"] == "Tal"
    assert (await get_json(client, "/v1/geocoder?address=Tal%204&country=FIN"))["results"] == []


@pytest.mark.parametrize(
    ("address", "codes"),
    [
        ("qzxv%20wprtk%2017", ["NO_MATCH"]),
        ("Mannerheimintie%205%2C%20Helsinki", ["PLACE_NOT_FOUND"]),
        ("Marienplatz%208%2C%20Finland", ["COUNTRY_NOT_LOADED"]),
        ("Marienplatz%208&country=FIN", ["COUNTRY_NOT_LOADED"]),
    ],
)
async def test_nothing_found_is_200_with_an_empty_list_and_notes(client: Client, address: str, codes: list[str]) -> None:
    body = await get_json(client, f"/v1/geocoder?address={address}")
    assert body["results"] == [] and body["provider"] == "osm"
    assert [n["code"] for n in body["notes"]] == codes
    assert all(n["message"] for n in body["notes"])


async def test_notes_only_on_empty_answers(client: Client) -> None:
    assert "notes" not in await get_json(client, "/v1/geocoder?address=Marienplatz%208")


@pytest.mark.parametrize(
    "query",
    [
        "street=Marienplatz&houseNumber=8&postalCode=80331&city=M%C3%BCnchen",
        "street=marienplatz&houseNumber=8",
        "street=Marienpl.&houseNumber=8&city=Muenchen",
        "street=Marienplatz&houseNumber=8&postalCode=80331",
    ],
)
async def test_structured_input_finds_the_address(client: Client, query: str) -> None:
    first = (await get_json(client, f"/v1/geocoder?{query}"))["results"][0]
    assert first["type"] == "address" and first["label"] == "Marienplatz 8, 80331 München"


async def test_structured_city_or_postcode_alone(client: Client) -> None:
    city = (await get_json(client, "/v1/geocoder?city=M%C3%BCnchen"))["results"][0]
    assert city["type"] == "place" and city["address"]["city"] == "München"
    postcode = (await get_json(client, "/v1/geocoder?postalCode=80331"))["results"][0]
    assert postcode["address"]["postalCode"] == "80331"


async def test_structured_parts_are_not_guessed(client: Client) -> None:
    """A number given as houseNumber is the house number even where free text would read a postcode."""
    body = await get_json(client, "/v1/geocoder?street=Sendlinger%20Stra%C3%9Fe&houseNumber=12")
    assert (body["results"][0]["address"]["street"], body["results"][0]["address"]["houseNumber"]) == (
        "Sendlinger Straße",
        "12",
    )
    unknown = await get_json(client, "/v1/geocoder?street=Marienplatz&city=Lisboa")
    assert unknown["results"] == [] or unknown["results"][0]["score"] < 0.9


@pytest.mark.parametrize("address", ["Tal%004", "Tal%014%0A", "%00Tal 4%7F"])
async def test_control_characters_are_ignored(client: Client, address: str) -> None:
    body = await get_json(client, f"/v1/geocoder?address={address}")
    assert body["results"][0]["address"]["street"] == "Tal"


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("query", "type_", "code", "parameter"),
    [
        ("", MISSING, "GEOCODER_ERROR_MISSING_ADDRESS", "address"),
        ("address=", MISSING, "GEOCODER_ERROR_MISSING_ADDRESS", "address"),
        ("address=%20%20%09", MISSING, "GEOCODER_ERROR_MISSING_ADDRESS", "address"),
        ("address=%00%01", MISSING, "GEOCODER_ERROR_MISSING_ADDRESS", "address"),
        ("address=Tal&limit=0", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=51", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=-1", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=1.5", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=abc", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&country=XYZ", INVALID, "ERROR_INVALID_PARAMETER", "country"),
        ("address=Tal&country=DE", INVALID, "ERROR_INVALID_PARAMETER", "country"),
        ("address=Tal&provider=nominatim", INVALID, "ERROR_INVALID_PARAMETER", "provider"),
        ("address=" + "x" * 501, INVALID, "ERROR_INVALID_PARAMETER", "address"),
        ("address=Tal&limit=%2B-1", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=--1", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=%C2%B2", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&limit=%E2%91%A0", INVALID, "ERROR_INVALID_PARAMETER", "limit"),
        ("address=Tal&street=Tal", INVALID, "ERROR_INVALID_PARAMETER", "address"),
        ("street=&city=%20", MISSING, "GEOCODER_ERROR_MISSING_ADDRESS", "address"),
        ("houseNumber=4", INVALID, "ERROR_INVALID_PARAMETER", "houseNumber"),
        ("street=Tal&houseNumber=vier", INVALID, "ERROR_INVALID_PARAMETER", "houseNumber"),
        ("street=Tal&houseNumber=4%3B5", INVALID, "ERROR_INVALID_PARAMETER", "houseNumber"),
        ("street=Tal&postalCode=%3Cscript%3E", INVALID, "ERROR_INVALID_PARAMETER", "postalCode"),
        ("street=Tal&postalCode=" + "1" * 21, INVALID, "ERROR_INVALID_PARAMETER", "postalCode"),
        ("street=" + "x" * 501, INVALID, "ERROR_INVALID_PARAMETER", "street"),
        ("city=" + "x" * 501, INVALID, "ERROR_INVALID_PARAMETER", "city"),
        ("address=Tal&language=klingon", INVALID, "ERROR_INVALID_PARAMETER", "language"),
    ],
)
async def test_each_error_in_both_formats(client: Client, query: str, type_: str, code: str, parameter: str) -> None:
    legacy = await get_json(client, f"/v1/geocoder?{query}", LEGACY, status=400)
    assert legacy["status"] == 400
    assert [d["code"] for d in legacy["details"]] == [code]
    assert legacy["details"][0]["message"].startswith(f"{parameter}: ")
    assert legacy["errors"] == [d["message"] for d in legacy["details"]]
    response = await client.get(f"/v1/geocoder?{query}", headers=PROBLEM)
    assert response.status == 400 and response.content_type == "application/problem+json"
    problem = await response.json(content_type=None)
    assert problem["type"] == type_ and problem["status"] == 400 and problem["title"]
    assert problem["detail"].startswith(f"{parameter}: ")
    assert problem["instance"].startswith("/v1/geocoder")


async def test_both_forms_at_once_name_every_structured_parameter(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder?address=Tal&street=Tal&city=M&limit=0", LEGACY, status=400)
    messages = [d["message"] for d in body["details"]]
    assert messages[0].startswith("address: ") and "street" in messages[0] and "city" in messages[0]
    assert messages[1].startswith("limit: ")


async def test_structured_violations_are_reported_together(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder?houseNumber=x&postalCode=%21%21&country=XX", LEGACY, status=400)
    assert [d["message"].split(":")[0] for d in body["details"]] == ["houseNumber", "houseNumber", "postalCode", "country"]


async def test_several_violations_are_reported_together(client: Client) -> None:
    url = "/v1/geocoder?address=%20&limit=0&country=XX&provider=nope"
    legacy = await get_json(client, url, LEGACY, status=400)
    messages = [d["message"].split(":")[0] for d in legacy["details"]]
    assert messages == ["address", "provider", "country", "limit"]
    assert legacy["details"][0]["code"] == "GEOCODER_ERROR_MISSING_ADDRESS"
    assert {d["code"] for d in legacy["details"][1:]} == {"ERROR_INVALID_PARAMETER"}
    problem = await get_json(client, url, PROBLEM, status=400)
    assert problem["detail"].count("; ") == 3


# ------------------------------------------------------------------ reverse and providers


async def test_reverse_geocoding(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder/reverse?lat=48.1373943&lon=11.5760552&limit=3")
    results = body["results"]
    assert len(results) == 3 and body["provider"] == "osm"
    assert results[0]["label"] == "Marienplatz 8, 80331 München" and results[0]["distance"] < 1
    assert [r["distance"] for r in results] == sorted(r["distance"] for r in results)
    far = await get_json(client, "/v1/geocoder/reverse?lat=10&lon=10")
    assert far["results"] == [] and [n["code"] for n in far["notes"]] == ["NO_MATCH"]


async def test_reverse_answers_one_address_unless_asked_for_more(client: Client) -> None:
    body = await get_json(client, "/v1/geocoder/reverse?lat=48.1373943&lon=11.5760552")
    assert len(body["results"]) == 1 and body["results"][0]["distance"] < 1


@pytest.mark.parametrize(
    ("query", "parameters"),
    [
        ("lon=11.5", ["lat"]),
        ("lat=91&lon=11.5", ["lat"]),
        ("lat=48&lon=abc", ["lon"]),
        ("lat=nan&lon=181&limit=0", ["lat", "lon", "limit"]),
    ],
)
async def test_reverse_errors(client: Client, query: str, parameters: list[str]) -> None:
    legacy = await get_json(client, f"/v1/geocoder/reverse?{query}", LEGACY, status=400)
    assert [d["message"].split(":")[0] for d in legacy["details"]] == parameters
    problem = await get_json(client, f"/v1/geocoder/reverse?{query}", PROBLEM, status=400)
    assert problem["type"] == INVALID


async def test_internal_providers(client: Client) -> None:
    body = await get_json(client, "/internal/providers")
    assert body["default"] == "osm"
    (osm,) = body["geocoder"]
    assert osm["name"] == "osm" and osm["ready"] and osm["default"]
    assert set(osm["capabilities"]["operations"]) == {"geocode", "reverse", "autocomplete"}
    assert osm["capabilities"]["countries"] == ["DEU"]
    assert osm["capabilities"]["sources"] == ["munich.osm.pbf"]
    assert osm["capabilities"]["importedAt"].startswith("20")


async def test_health_reports_the_index(client: Client) -> None:
    body = await get_json(client, "/health")
    assert body["status"] == "ok" and body["checks"]["geocoder_index"] == "loaded"
    assert body["checks"]["counts"]["addresses"] > 3000


# ------------------------------------------------------------------ readiness and cache


async def test_without_an_index_health_and_requests_are_503_until_one_is_imported(
    aiohttp_client: ClientFactory, tmp_path: Path, munich_dir: Path
) -> None:
    client = await aiohttp_client(create_app(make_config(tmp_path, reload_check_seconds=0)))
    assert (await client.get("/health")).status == 503
    problem = await get_json(client, "/v1/geocoder?address=Tal%204", PROBLEM, status=503)
    assert problem["type"] == "/problems/geocoder/dataset-not-ready"
    legacy = await get_json(client, "/v1/geocoder/reverse?lat=48.1&lon=11.5", LEGACY, status=503)
    assert legacy["details"][0]["code"] == "GEOCODER_ERROR_DATASET_NOT_READY"
    # An import that finishes while the service runs is picked up without a restart.
    shutil.copytree(munich_dir, tmp_path, dirs_exist_ok=True)
    assert (await client.get("/health")).status == 200
    body = await get_json(client, "/v1/geocoder?address=Tal%204")
    assert body["results"][0]["address"]["street"] == "Tal"


async def test_answers_are_cached_in_redis_per_dataset(client: Client, redis_server: str, munich_dir: Path) -> None:
    redis = aioredis.Redis.from_url(redis_server)
    try:
        before = {k async for k in redis.scan_iter(f"{KEY_PREFIX}*")}
        first = await get_json(client, "/v1/geocoder?address=Weinstra%C3%9Fe%207a")
        keys = {k async for k in redis.scan_iter(f"{KEY_PREFIX}*")} - before
        assert len(keys) == 1
        # Same text in another case and spacing: the same entry, so the stored answer is returned.
        (key,) = keys
        await redis.set(key, b'{"results":[],"provider":"osm","cached":true}')
        again = await get_json(client, "/v1/geocoder?address=WEINSTRASSE%20%207A")
        assert again.get("cached") is True and first["results"]
    finally:
        await redis.aclose()


async def test_redis_down_changes_nothing(aiohttp_client: ClientFactory, munich_dir: Path) -> None:
    client = await aiohttp_client(create_app(make_config(munich_dir, UNREACHABLE_REDIS)))
    for _ in range(2):
        body = await get_json(client, "/v1/geocoder?address=Tal%204")
        assert body["results"][0]["address"]["houseNumber"] == "4"


async def test_names_in_the_language_asked(client: Client) -> None:
    """`language` (issue 35, item 3): the name OSM gives in it, the local one otherwise; the
    answer says the language; Accept-Language without the parameter; cached apart."""
    url = "/v1/geocoder?address=" + quote("Spielzeugmuseum München")
    found = await get_json(client, url)
    english = await get_json(client, url + "&language=en-GB")
    italian = await get_json(client, url, headers={**LEGACY, "Accept-Language": "it-CH, en;q=0.5"})
    assert found["results"][0]["name"] == "Spielzeugmuseum" and "language" not in found
    assert (english["results"][0]["name"], english["language"]) == ("Toy Museum", "en")
    assert (italian["results"][0]["name"], italian["language"]) == ("Spielzeugmuseum", "it")  # no name:it
    back = await get_json(client, "/v1/geocoder?address=" + quote("Toy Museum München") + "&language=de")
    assert back["results"][0]["name"] == "Spielzeugmuseum"
