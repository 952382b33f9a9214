"""POST /v1/detour/file over HTTP on the Heidelberg dataset imported for the session."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from bench.processes import cpu_seconds
from common.geo import EARTH_RADIUS_M, LatLon
from route_service import detour_handlers
from route_service.app import create_app
from route_service.calls import LargeCalls
from route_service.config import RouteConfig
from route_service.detour import csvfile
from route_service.importing.importer import ImportResult
from route_service.model import RouteQuery
from route_service.providers.osrm_provider import OsrmProvider
from route_service.state import STATE_KEY

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"
ORIGIN, DESTINATION = LatLon(49.4105, 8.7050), LatLon(49.4170, 8.6950)  # Heidelberg old town → Bergheim
FAR_VIA = LatLon(49.3800, 8.6600)  # Rohrbach, kilometres off the way
NO_ROAD = LatLon(49.0, 8.69)  # far outside the extract
OK_LINE = f"ok,{ORIGIN.lat},{ORIGIN.lon},{DESTINATION.lat},{DESTINATION.lon},{FAR_VIA.lat},{FAR_VIA.lon}"


def make_config(map_dir: Path, redis_url: str) -> RouteConfig:
    return RouteConfig.from_env("route_service", map_dir=map_dir, redis_url=redis_url, port=0, preload=False)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(heidelberg_maps.path.parent, redis_server)))


async def post(client: Client, body: bytes | str, *, filename: str | None = "trips.csv", query: str = "",
               content_type: str | None = "text/csv", headers: dict[str, str] | None = None) -> Any:  # fmt: skip
    sent = dict(headers or {})
    if content_type is not None:
        sent["Content-Type"] = content_type
    if filename is not None:
        sent["Content-Disposition"] = f'attachment; filename="{filename}"'
    data = body.encode() if isinstance(body, str) else body
    return await client.post(f"/v1/detour/file{query}", data=data, headers=sent)


async def ok_json(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = await response.json()
    assert response.status == 200, body
    return body


async def assert_error(client: Client, status: int, code: str, problem_type: str, **kwargs: Any) -> str:
    """The same request in both error formats; returns the problem detail's `detail`."""
    legacy = await post(client, headers={**kwargs.pop("headers", {}), **LEGACY}, **kwargs)
    body = await legacy.json()
    assert legacy.status == status and legacy.content_type == "application/json", body
    assert body["status"] == status and body["details"][0]["code"] == code and body["errors"]
    problem = await post(client, headers=PROBLEM, **kwargs)
    body = await problem.json()
    assert problem.status == status and problem.content_type == "application/problem+json"
    assert body["type"] == problem_type and body["instance"].startswith("/v1/detour/file")
    detail: str = body["detail"]
    return detail


def on_route_point(provider: OsrmProvider, origin: LatLon, destination: LatLon) -> LatLon:
    geometry = provider.route(RouteQuery(origin, destination, steps=False)).routes[0].geometry
    lon, lat = geometry[len(geometry) // 2]
    return LatLon(lat, lon)


def route_geometry(provider: OsrmProvider, *stops: LatLon) -> list[tuple[float, float]]:
    coords: list[tuple[float, float]] = []
    for origin, destination in itertools.pairwise(stops):
        coords.extend(provider.route(RouteQuery(origin, destination, steps=False)).routes[0].geometry)
    return coords


def track_csv(geometry: list[tuple[float, float]], spacing_m: float = 12.0, noise_m: float = 3.0) -> str:
    """Points every `spacing_m` along the geometry with seeded noise, one second apart."""
    lon, lat = np.radians(np.array(geometry)).T
    step = EARTH_RADIUS_M * np.hypot(np.diff(lat), np.diff(lon) * np.cos(lat[:-1]))
    along = np.concatenate([[0.0], np.cumsum(step)])
    at = np.arange(0, along[-1], spacing_m)
    noise = np.random.default_rng(7).uniform(-noise_m, noise_m, (len(at), 2)) / 111_000
    lats = np.degrees(np.interp(at, along, lat)) + noise[:, 0]
    lons = np.degrees(np.interp(at, along, lon)) + noise[:, 1] / math.cos(math.radians(49.4))
    return "lat,lon,time\n" + "".join(f"{lats[i]:.7f},{lons[i]:.7f},{1_700_000_000 + i}\n" for i in range(len(at)))


# ---------------------------------------------------------------- detour cases


async def test_via_on_the_route_costs_nothing_and_far_off_costs_much(client: Client, osrm_hd: OsrmProvider) -> None:
    on = on_route_point(osrm_hd, ORIGIN, DESTINATION)
    text = f"{HEADER}\non,{ORIGIN.lat},{ORIGIN.lon},{DESTINATION.lat},{DESTINATION.lon},{on.lat},{on.lon}\n{OK_LINE}\n"
    body = await ok_json(await post(client, text))
    assert (body["kind"], body["filename"], body["provider"], body["vehicle"], body["type"]) == (
        "detours",
        "trips.csv",
        "osrm",
        "car",
        "fastest",
    )
    near, far = body["results"]
    assert (near["line"], near["id"], far["line"], far["id"]) == (2, "on", 3, "ok")
    # The direct route is the one GET /v1/route gives.
    route = (await (await client.get(f"/v1/route?from={ORIGIN.lat},{ORIGIN.lon}&to={DESTINATION.lat},{DESTINATION.lon}")).json())["routes"][0]  # fmt: skip
    assert near["direct"] == {"distance": route["distance"], "duration": route["duration"]}
    assert abs(near["extraDistance"]) < 30 and abs(near["extraDuration"]) < 10 and abs(near["extraPercent"]) < 1.5
    assert far["extraDistance"] > 3000 and far["extraPercent"] > 100 and far["extraDuration"] > 300
    assert far["viaRoute"]["distance"] == pytest.approx(far["direct"]["distance"] + far["extraDistance"], abs=0.2)
    summary = body["summary"]
    assert (summary["linesRead"], summary["answered"], summary["failed"]) == (2, 2, 0) and body["errors"] == []
    assert summary["extraDistance"] == pytest.approx(near["extraDistance"] + far["extraDistance"], abs=0.2)
    assert "OpenStreetMap" in body["attribution"]


def random_lines(count: int, seed: int) -> str:
    """`count` detour lines of seeded random points in Heidelberg's dense centre (a few fail)."""
    rng = np.random.default_rng(seed)
    lats, lons = rng.uniform(49.37, 49.43, (count, 3)), rng.uniform(8.62, 8.75, (count, 3))
    rows = (f"c{i}," + ",".join(f"{lats[i, k]:.6f},{lons[i, k]:.6f}" for k in range(3)) for i in range(count))
    return HEADER + "\n" + "\n".join(rows) + "\n"


async def test_a_file_answered_in_the_large_call_process_equals_the_workers(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line goes to the child, a job at a time (issue 29: never beside the worker's loop)."""
    jobs: list[int] = []
    in_child = LargeCalls.detour_cases

    async def counted(self: LargeCalls, *args: Any) -> Any:
        jobs.append(len(args[3]))  # provider, vehicle, type, the lines, the departure
        return await in_child(self, *args)

    monkeypatch.setattr(LargeCalls, "detour_cases", counted)
    monkeypatch.setattr(detour_handlers, "CHILD_CHUNKS", 1)
    text = random_lines(700, seed=1)
    from_child = await ok_json(await post(client, text))
    assert jobs == [detour_handlers.DETOUR_CHUNK] * 7
    monkeypatch.setattr(client.app[STATE_KEY].calls, "large", None)  # ROUTE_LARGE_PROCESSES=0
    alone = await ok_json(await post(client, text))
    assert len(jobs) == 7 and from_child == alone
    assert alone["summary"]["answered"] > 650 and [r["line"] for r in alone["results"]] == sorted(
        r["line"] for r in alone["results"]
    )


async def test_a_failing_large_call_process_leaves_the_file_to_the_worker(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: LargeCalls, *args: Any) -> Any:
        raise RuntimeError("the child died")

    text = random_lines(300, seed=2)
    expected = await ok_json(await post(client, text))
    monkeypatch.setattr(LargeCalls, "detour_cases", broken)
    assert await ok_json(await post(client, text)) == expected


async def test_the_largest_file_is_answered(client: Client) -> None:
    """20 000 lines, the documented maximum: every line answered or failed with its error. The
    goal (≤ 15 s) is measured by bench/detour.py; this bound only catches a return to the
    69-80 s the issue reported. In CPU seconds of this process and its children (the service's
    large-call process), not wall time: a loaded machine stretched the wall time to 58 s once,
    and CPU seconds too, from 43 s to 47-48 s beside other test runs (2026-11-27): the bound
    leaves room for that and still fails a return to the issue's figures."""
    before = cpu_seconds(os.getpid())
    body = await ok_json(await post(client, random_lines(csvfile.MAX_DETOUR_LINES, seed=3)))
    used = cpu_seconds(os.getpid()) - before
    summary = body["summary"]
    assert summary["linesRead"] == csvfile.MAX_DETOUR_LINES == summary["answered"] + summary["failed"]
    assert len(body["results"]) == summary["answered"] > 19_800 and len(body["errors"]) == summary["failed"]
    assert used < 60, used


async def test_bad_lines_get_their_own_errors_and_the_rest_is_answered(client: Client) -> None:
    lines = [
        HEADER,
        OK_LINE,  # 2
        f"far,{NO_ROAD.lat},{NO_ROAD.lon},{DESTINATION.lat},{DESTINATION.lon},{FAR_VIA.lat},{FAR_VIA.lon}",  # 3
        f"via,{ORIGIN.lat},{ORIGIN.lon},{DESTINATION.lat},{DESTINATION.lon},{NO_ROAD.lat},{NO_ROAD.lon}",  # 4
        "short,1,2,3",  # 5
        "",  # 6: blank, not a data line
        "nan,abc,8.7,49.4,8.7,49.4,8.7",  # 7
        "range,49.4,8.7,95,8.7,49.4,8.7",  # 8
        OK_LINE,  # 9
    ]
    body = await ok_json(await post(client, "\n".join(lines) + "\n"))
    assert [r["line"] for r in body["results"]] == [2, 9]
    assert [(e["line"], e["code"]) for e in body["errors"]] == [
        (3, "ROUTE_ERROR_POINT_NOT_ROUTABLE"),
        (4, "ROUTE_ERROR_POINT_NOT_ROUTABLE"),
        (5, "DETOUR_ERROR_INVALID_LINE"),
        (7, "DETOUR_ERROR_INVALID_LINE"),
        (8, "DETOUR_ERROR_INVALID_LINE"),
    ]
    messages = {e["line"]: e["message"] for e in body["errors"]}
    assert messages[3].startswith("from: ") and messages[4].startswith("via: ")
    assert "from_lat: not a number" in messages[7] and "to_lat: must be between -90 and 90" in messages[8]
    assert (body["summary"]["linesRead"], body["summary"]["answered"], body["summary"]["failed"]) == (7, 2, 5)


async def test_bom_crlf_semicolons_quotes_and_blank_lines_give_the_same_answer(client: Client) -> None:
    plain = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n"))
    fields = OK_LINE.split(",")
    fields[0] = '"o;k ""1"""'
    fields[1] = fields[1].replace(".", ",")  # a decimal comma, as spreadsheets write with semicolons
    text = "\ufeff\r\n" + HEADER.replace(",", ";") + "\r\n\r\n" + ";".join(fields) + "\r\n;;;;;;\r\n"
    other = await ok_json(await post(client, text.encode(), content_type="text/plain; charset=UTF-8"))
    assert other["results"][0]["id"] == 'o;k "1"' and other["results"][0]["line"] == 4
    for key in ("direct", "viaRoute", "extraDistance", "extraDuration", "extraPercent"):
        assert other["results"][0][key] == plain["results"][0][key]
    assert other["summary"]["linesRead"] == 1


async def test_vehicle_and_type_are_used(client: Client) -> None:
    car = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n"))
    foot = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n", query="?vehicle=pedestrian&type=shortest"))
    assert (foot["vehicle"], foot["type"]) == ("pedestrian", "shortest")
    assert foot["results"][0]["direct"]["duration"] > 2 * car["results"][0]["direct"]["duration"]


async def test_a_provider_without_a_detour_plugin_answers_through_its_routes(client: Client) -> None:
    osrm = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n"))
    valhalla = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n", query="?provider=valhalla"))
    assert valhalla["provider"] == "valhalla" and valhalla["summary"]["answered"] == 1
    # Two independent engines on the same roads agree roughly.
    ratio = valhalla["results"][0]["viaRoute"]["distance"] / osrm["results"][0]["viaRoute"]["distance"]
    assert 0.8 < ratio < 1.25


# ---------------------------------------------------------------- tracks


async def test_track_along_roads_is_a_small_detour_and_a_loop_a_large_one(
    client: Client, osrm_hd: OsrmProvider
) -> None:
    straight = await ok_json(
        await post(client, track_csv(route_geometry(osrm_hd, ORIGIN, DESTINATION)), filename="t.txt")
    )
    assert straight["kind"] == "track" and straight["filename"] == "t.txt" and straight["errors"] == []
    (result,) = straight["results"]
    # OSRM Match does not place the last ~100 m of this route (with any radius up to 20 m), so a
    # few points at the end count as straight lines: reported, and small.
    assert result["matched"] is True and result["method"] in ("map-matched", "partly-map-matched")
    assert result["straightLineDistance"] < 0.1 * result["driven"]["distance"]
    assert abs(result["extraPercent"]) < 5 and abs(result["extraDistance"]) < 150
    assert result["pointsUsed"] == straight["summary"]["linesRead"]
    assert result["matchedPoints"] > 0.9 * result["pointsUsed"]
    assert result["firstLine"] == 2 and result["lastLine"] == straight["summary"]["linesRead"] + 1
    assert result["elapsed"] == straight["summary"]["linesRead"] - 1

    loop = await ok_json(await post(client, track_csv(route_geometry(osrm_hd, ORIGIN, FAR_VIA, DESTINATION))))
    (looped,) = loop["results"]
    assert looped["matched"] is True and looped["extraPercent"] > 100 and looped["extraDistance"] > 3000
    assert looped["best"]["distance"] == pytest.approx(result["best"]["distance"], rel=0.05)


async def test_bad_track_points_are_skipped_with_their_errors(client: Client, osrm_hd: OsrmProvider) -> None:
    lines = track_csv(route_geometry(osrm_hd, ORIGIN, DESTINATION)).splitlines()
    first_time = int(lines[1].split(",")[2])
    lines.insert(1, f"{NO_ROAD.lat},{NO_ROAD.lon},{first_time - 1}")  # line 2: unroutable start
    lines.insert(5, "49.41,abc,1700000003")  # line 6: not a number
    lines.insert(9, "49.41,8.70,1600000000")  # line 10: back in time
    body = await ok_json(await post(client, "\n".join(lines) + "\n"))
    assert [(e["line"], e["code"]) for e in body["errors"]] == [
        (2, "ROUTE_ERROR_POINT_NOT_ROUTABLE"),
        (6, "DETOUR_ERROR_INVALID_LINE"),
        (10, "DETOUR_ERROR_INVALID_LINE"),
    ]
    (result,) = body["results"]
    summary = body["summary"]
    assert summary["failed"] == 3 and summary["answered"] == result["pointsUsed"] == summary["linesRead"] - 3
    assert result["firstLine"] == 3 and result["matched"] is True and abs(result["extraPercent"]) < 5


async def test_track_of_one_usable_point_is_answered_with_a_track_error(client: Client) -> None:
    body = await ok_json(await post(client, "lat,lon\n49.41,8.70\n49.41,x\n"))
    assert body["results"] == []
    assert [(e["line"], e["code"]) for e in body["errors"]] == [
        (None, "DETOUR_ERROR_TRACK_TOO_SHORT"),
        (3, "DETOUR_ERROR_INVALID_LINE"),
    ]
    assert (body["summary"]["linesRead"], body["summary"]["answered"], body["summary"]["failed"]) == (2, 0, 2)


async def test_a_body_larger_than_the_apps_json_limit_is_read(client: Client) -> None:
    """client_max_size stays 1 MiB for the JSON endpoints; the detour reads its own limit."""
    points = "".join(f"{49.41 + (i % 3) * 1e-6:.7f},8.7000000\n" for i in range(70_000))  # ~1.3 MB, one spot
    body = await ok_json(await post(client, "lat,lon\n" + points + "49.4200000,8.7000000\n"))
    assert len(points) > 1 << 20 and body["summary"]["answered"] == 70_001


# ---------------------------------------------------------------- file names


INVALID_NAMES = [
    "../etc/passwd.csv",
    "a/b.csv",
    "a\\b.csv",
    ".hidden.csv",
    "trips.exe",
    "trips.csv\x00.txt",
    "",
    "x" * 256 + ".csv",
    "tr\u0430ps.csv",  # Cyrillic small a (U+0430)
    "trips\uff0ecsv",  # fullwidth full stop
    "trips.csv\n",
]


@pytest.mark.parametrize("name", INVALID_NAMES)
async def test_invalid_name_in_the_query_in_both_formats(client: Client, name: str) -> None:
    detail = await assert_error(
        client, 400, "DETOUR_ERROR_INVALID_FILENAME", "/problems/detour/invalid-filename",
        body=f"{HEADER}\n{OK_LINE}\n", filename=None, query=f"?filename={quote(name, safe='')}",
    )  # fmt: skip
    assert detail.startswith("filename: ")


@pytest.mark.parametrize("name", INVALID_NAMES)
async def test_invalid_name_in_content_disposition_in_both_formats(client: Client, name: str) -> None:
    header = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    await assert_error(
        client, 400, "DETOUR_ERROR_INVALID_FILENAME", "/problems/detour/invalid-filename",
        body=f"{HEADER}\n{OK_LINE}\n", filename=None, headers={"Content-Disposition": header},
    )  # fmt: skip


async def test_missing_name(client: Client) -> None:
    detail = await assert_error(
        client, 400, "DETOUR_ERROR_INVALID_FILENAME", "/problems/detour/invalid-filename",
        body=f"{HEADER}\n{OK_LINE}\n", filename=None,
    )  # fmt: skip
    assert "is required" in detail


@pytest.mark.parametrize(
    ("headers", "query", "expected"),
    [
        ({}, "?filename=trips.CSV", "trips.CSV"),
        ({"Content-Disposition": "attachment; filename*=UTF-8''trips%2D2.txt"}, "", "trips-2.txt"),
        ({"Content-Disposition": 'attachment; filename="header.csv"'}, "?filename=query.csv", "header.csv"),
    ],
)
async def test_valid_names_are_echoed(client: Client, headers: dict[str, str], query: str, expected: str) -> None:
    body = await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n", filename=None, headers=headers, query=query))
    assert body["filename"] == expected


# ---------------------------------------------------------------- whole-request errors


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "text/html", None, "text/csv; charset=latin-1", "multipart/form-data; boundary=x"],
)
async def test_unsupported_content_type_is_415(client: Client, content_type: str | None) -> None:
    detail = await assert_error(
        client, 415, "ERROR_UNSUPPORTED_MEDIA_TYPE", "/problems/general/unsupported-media-type",
        body=f"{HEADER}\n{OK_LINE}\n", content_type=content_type,
    )  # fmt: skip
    assert detail.startswith("Content-Type: ")


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain; charset=utf-8", "TEXT/CSV;charset=UTF8"])
async def test_accepted_content_types(client: Client, content_type: str) -> None:
    await ok_json(await post(client, f"{HEADER}\n{OK_LINE}\n", content_type=content_type))


async def test_too_many_bytes_is_413_with_its_code(client: Client) -> None:
    big = (f"{HEADER}\n" + f"{OK_LINE}\n" * (csvfile.MAX_BYTES // len(OK_LINE) + 10)).encode()
    assert len(big) > csvfile.MAX_BYTES
    detail = await assert_error(client, 413, "DETOUR_ERROR_FILE_TOO_LARGE", "/problems/detour/file-too-large", body=big)
    assert str(csvfile.MAX_BYTES) in detail


async def test_too_many_bytes_without_content_length_is_413(client: Client) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield f"{HEADER}\n".encode()
        for _ in range(csvfile.MAX_BYTES // (1 << 16) + 2):
            yield b"#" * (1 << 16)

    response = await client.post(
        "/v1/detour/file?filename=t.csv", data=chunks(), headers={"Content-Type": "text/csv", **LEGACY}
    )
    assert response.status == 413 and (await response.json())["details"][0]["code"] == "DETOUR_ERROR_FILE_TOO_LARGE"


@pytest.mark.parametrize(
    ("header", "line", "limit"),
    [(HEADER, OK_LINE, csvfile.MAX_DETOUR_LINES), ("lat,lon", "49.41,8.70", csvfile.MAX_TRACK_POINTS)],
)
async def test_too_many_lines_is_413_with_its_code(client: Client, header: str, line: str, limit: int) -> None:
    body = header + "\n" + f"{line}\n" * (limit + 1)
    assert len(body) < csvfile.MAX_BYTES
    detail = await assert_error(
        client, 413, "DETOUR_ERROR_FILE_TOO_LARGE", "/problems/detour/file-too-large", body=body
    )
    assert f"more than {limit} data lines" in detail


@pytest.mark.parametrize(
    ("body", "code", "problem_type"),
    [
        (b"", "DETOUR_ERROR_EMPTY_FILE", "/problems/detour/empty-file"),
        (b"\n\r\n", "DETOUR_ERROR_EMPTY_FILE", "/problems/detour/empty-file"),
        (f"{HEADER}\n".encode(), "DETOUR_ERROR_EMPTY_FILE", "/problems/detour/empty-file"),
        (b"lat,lng\n49.4,8.7\n", "DETOUR_ERROR_INVALID_HEADER", "/problems/detour/invalid-header"),
        (f"{OK_LINE}\n".encode(), "DETOUR_ERROR_INVALID_HEADER", "/problems/detour/invalid-header"),
        (
            f"{HEADER}\nb\xe4r,1,2,3,4,5,6\n".encode("latin-1"),
            "DETOUR_ERROR_INVALID_ENCODING",
            "/problems/detour/invalid-encoding",
        ),
        (
            f"{HEADER}\n{OK_LINE}\n".encode("utf-16"),
            "DETOUR_ERROR_INVALID_ENCODING",
            "/problems/detour/invalid-encoding",
        ),
    ],
)
async def test_whole_file_errors(client: Client, body: bytes, code: str, problem_type: str) -> None:
    await assert_error(client, 400, code, problem_type, body=body)


async def test_bad_parameters_are_one_400_naming_each(client: Client) -> None:
    detail = await assert_error(
        client, 400, "ERROR_INVALID_PARAMETER", "/problems/general/invalid-parameter/",
        body=f"{HEADER}\n{OK_LINE}\n", query="?vehicle=plane&type=scenic&provider=nope",
    )  # fmt: skip
    assert [part.split(":")[0] for part in detail.split("; ")] == ["vehicle", "type", "provider"]


async def test_the_file_name_is_checked_first(client: Client) -> None:
    response = await post(client, b"", filename="../x.csv", content_type="application/json", headers=LEGACY)
    assert response.status == 400
    assert (await response.json())["details"][0]["code"] == "DETOUR_ERROR_INVALID_FILENAME"
