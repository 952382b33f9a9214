"""GET /v1/geocoder/autocomplete over HTTP: the answer, every parameter error in both formats, the cache."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
import redis.asyncio as aioredis

from geo_service.app import create_app
from geo_service.cache import KEY_PREFIX
from geo_service.store import INDEX_FILE
from tests.geo_service.test_app import INVALID, LEGACY, PROBLEM, Client, ClientFactory, get_json, make_config

URL = "/v1/geocoder/autocomplete"


@pytest.fixture
async def client(aiohttp_client: ClientFactory, munich_dir: Path, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(munich_dir, redis_server)))


async def test_suggestions_in_the_geocoder_shape(client: Client) -> None:
    body = await get_json(client, f"{URL}?text=Marienpl")
    assert body["provider"] == "osm" and 1 <= len(body["results"]) <= 5
    first = body["results"][0]
    assert first["address"]["street"] == "Marienplatz" and first["type"] == "street"
    assert first["label"] == "Marienplatz, 80331 München" and 0 < first["score"] <= 1
    assert set(first["coordinate"]) == {"lat", "lon"}
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)


async def test_every_parameter_at_once(client: Client) -> None:
    url = f"{URL}?text={quote('Marienplatz 8')}&country=deu&limit=3&focus=48.137,11.575&provider=OSM"
    body = await get_json(client, url)
    assert len(body["results"]) <= 3
    assert body["results"][0]["label"] == "Marienplatz 8, 80331 München"
    assert (await get_json(client, f"{URL}?text=Marienpl&country=FIN"))["results"] == []
    assert (await get_json(client, f"{URL}?text=Ma&limit=20"))["results"]


async def test_nothing_found_is_200_with_an_empty_list(client: Client) -> None:
    assert await get_json(client, f"{URL}?text=qzxv%20wprtk") == {"results": [], "provider": "osm"}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("", "text"),
        ("text=", "text"),
        ("text=%20%20%09", "text"),
        ("text=%00%01", "text"),
        ("text=" + "x" * 501, "text"),
        ("text=Tal&focus=48.1", "focus"),
        ("text=Tal&focus=48.1,11.5,3", "focus"),
        ("text=Tal&focus=a,b", "focus"),
        ("text=Tal&focus=91,0", "focus"),
        ("text=Tal&focus=0,181", "focus"),
        ("text=Tal&focus=nan,0", "focus"),
        ("text=Tal&focus=0,-inf", "focus"),
        ("text=Tal&limit=0", "limit"),
        ("text=Tal&limit=21", "limit"),
        ("text=Tal&limit=%2B-1", "limit"),
        ("text=Tal&limit=%E2%91%A0", "limit"),  # ①: a digit to str.isdigit(), not to int()
        ("text=Tal&limit=2.5", "limit"),
        ("text=Tal&country=DE", "country"),
        ("text=Tal&provider=nominatim", "provider"),
    ],
)
async def test_each_error_in_both_formats(client: Client, query: str, parameter: str) -> None:
    legacy = await get_json(client, f"{URL}?{query}", LEGACY, status=400)
    assert legacy["status"] == 400
    assert [d["code"] for d in legacy["details"]] == ["ERROR_INVALID_PARAMETER"]
    assert legacy["details"][0]["message"].startswith(f"{parameter}: ")
    assert legacy["errors"] == [d["message"] for d in legacy["details"]]
    response = await client.get(f"{URL}?{query}", headers=PROBLEM)
    assert response.status == 400 and response.content_type == "application/problem+json"
    problem = await response.json()
    assert problem["type"] == INVALID and problem["status"] == 400 and problem["title"]
    assert problem["detail"].startswith(f"{parameter}: ")
    assert problem["instance"].startswith(URL)
    # Without an Accept header the problem format is the default.
    default = await client.get(f"{URL}?{query}")
    assert default.status == 400 and default.content_type == "application/problem+json"


async def test_several_violations_are_reported_together(client: Client) -> None:
    url = f"{URL}?text=%20&limit=21&country=XX&focus=91,0&provider=nope"
    legacy = await get_json(client, url, LEGACY, status=400)
    assert [d["message"].split(":")[0] for d in legacy["details"]] == ["text", "provider", "country", "limit", "focus"]
    assert {d["code"] for d in legacy["details"]} == {"ERROR_INVALID_PARAMETER"}
    problem = await get_json(client, url, PROBLEM, status=400)
    assert problem["type"] == INVALID and problem["detail"].count("; ") == 4


async def test_a_trailing_space_is_its_own_cache_entry(client: Client, redis_server: str) -> None:
    redis = aioredis.Redis.from_url(redis_server)
    try:
        before = {k async for k in redis.scan_iter(f"{KEY_PREFIX}*")}
        await get_json(client, f"{URL}?text=Rosenstr")
        await get_json(client, f"{URL}?text=ROSENSTR")  # case does not change the answer: same entry
        await get_json(client, f"{URL}?text=Rosenstr%20")  # a finished word does
        await get_json(client, f"{URL}?text=Rosenstr&focus=48.1350,11.5750")
        await get_json(client, f"{URL}?text=Rosenstr&focus=48.13501,11.57501")  # ~1 m away: same entry
        for _ in range(50):  # entries are written behind the answer
            keys = {k async for k in redis.scan_iter(f"{KEY_PREFIX}*")} - before
            if len(keys) >= 3:
                break
            await asyncio.sleep(0.02)
        assert len(keys) == 3
    finally:
        await redis.aclose()


@pytest.fixture
def index_without_name_words(munich_dir: Path, tmp_path: Path) -> Path:
    """The Munich index as an importer before autocomplete wrote it."""
    shutil.copytree(munich_dir, tmp_path, dirs_exist_ok=True)
    (index_file,) = tmp_path.glob(f"*/{INDEX_FILE}")
    connection = sqlite3.connect(index_file)
    connection.execute("DROP TABLE name_words")
    connection.commit()
    connection.close()
    return tmp_path


async def test_an_index_written_before_autocomplete_answers_503(
    aiohttp_client: ClientFactory, index_without_name_words: Path
) -> None:
    client = await aiohttp_client(create_app(make_config(index_without_name_words)))
    problem = await get_json(client, f"{URL}?text=Tal", PROBLEM, status=503)
    assert problem["type"] == "/problems/geocoder/dataset-not-ready" and "python -m geo_service.importing" in problem["detail"]
    (osm,) = (await get_json(client, "/internal/providers"))["geocoder"]
    assert set(osm["capabilities"]["operations"]) == {"geocode", "reverse"}
    assert (await get_json(client, "/v1/geocoder?address=Tal%204"))["results"]  # the rest still answers
