"""Geocoder batches (issue 34, item 1): POST /v1/geocoder/batch answers one entry per data line
of a CSV file or JSON lines, in the input's order, each the line's geocoder answer or its own
error; whole-batch errors only for what no line can fix; a batch pays per line."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from common.admission import INTERNAL_JOB_HEADER
from common.errors import ApiError, BatchEmpty, BatchInvalidHeader, BatchTooLarge, MalformedBody
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from geo_service import state as geo_state
from geo_service.app import create_app
from geo_service.batch import (
    MAX_HEADER_BYTES,
    MAX_SYNC_LINES,
    Form,
    LineKind,
    decode,
    header_checked,
    header_columns,
    parse_batch,
)
from geo_service.costs import BATCH_LINE_UNITS
from geo_service.state import BATCH_CHUNK, STATE_KEY
from tests.geo_service.test_app import LEGACY, PROBLEM, Client, ClientFactory, make_config

CSV = {"Content-Type": "text/csv"}
JSON_LINES = {"Content-Type": "application/x-ndjson"}


# ---------------------------------------------------------------- reading the batch


def test_csv_lines_keep_their_file_line_numbers_ids_and_kinds() -> None:
    text = (
        "\ufeffID;Address;lat;lon\n"
        "a1;Marienplatz 8, München;;\n"
        "\n"
        'a2;"Tal 4;\nMünchen";;\n'  # a quoted field over two lines: numbered by its first
        "a3;;48.137;11.575\n"
        "a4;Tal 4;48.1;11.5\n"
        "a5;too;many;fields;here\n"
    )
    parsed = parse_batch(decode(text.encode()), Form.CSV, 100)
    assert [(line.line, line.id, line.kind) for line in parsed.lines] == [
        (2, "a1", LineKind.GEOCODE), (4, "a2", LineKind.GEOCODE), (6, "a3", LineKind.REVERSE)]  # fmt: skip
    assert parsed.lines[0].params == {"address": "Marienplatz 8, München"}
    assert parsed.lines[2].params == {"lat": "48.137", "lon": "11.575"}
    assert [(e.line, e.id) for e in parsed.errors] == [(7, "a4"), (8, None)]
    assert "not both" in parsed.errors[0].message and "expected 4 fields" in parsed.errors[1].message
    assert parsed.lines_read == 5


def test_structured_columns_are_named_as_the_geocoder_s_parameters_in_any_case() -> None:
    parsed = parse_batch("street,house_number,Postal Code,CITY,country\nTal,4,80331,München,deu\n", Form.CSV, 10)
    assert parsed.lines[0].params == {"street": "Tal", "houseNumber": "4", "postalCode": "80331",
                                      "city": "München", "country": "deu"}  # fmt: skip


def test_json_lines_read_each_object_and_name_each_bad_line() -> None:
    text = "\n".join([
        '{"id": 1, "address": "Tal 4, München"}',
        "",
        '{"lat": 48.137, "lon": 11.575}',
        "[1, 2]",
        '{"address": "x", "colour": "red"}',
        '{"address": true}',
        "{not json",
    ])  # fmt: skip
    parsed = parse_batch(text, Form.JSON_LINES, 10)
    assert [(line.line, line.id, line.kind) for line in parsed.lines] == [(1, "1", LineKind.GEOCODE), (3, None, LineKind.REVERSE)]
    assert parsed.lines[1].params == {"lat": "48.137", "lon": "11.575"}
    assert [e.line for e in parsed.errors] == [4, 5, 6, 7]
    assert "colour" in parsed.errors[1].message and "must be a string or a number" in parsed.errors[2].message
    assert parsed.errors[0].message == "expected a JSON object, got an array"  # JSON's words, never "list"


@pytest.mark.parametrize(
    ("text", "form", "error", "words"),
    [
        ("", Form.CSV, BatchEmpty, "empty"),
        ("address\n\n", Form.CSV, BatchEmpty, "no data lines"),
        ("\n\n", Form.JSON_LINES, BatchEmpty, "no data lines"),
        ("adress,city\nTal 4,München\n", Form.CSV, BatchInvalidHeader, "unknown columns 'adress'"),
        ("address,Address\nx,y\n", Form.CSV, BatchInvalidHeader, "repeated columns address"),
        ("id\n7\n", Form.CSV, BatchInvalidHeader, "no address or coordinate column"),
        ("address\n" + "Tal 4\n" * 4, Form.CSV, BatchTooLarge, "more than 3 lines"),
        ('address\n"never closed\n' + "x" * 200_000, Form.CSV, MalformedBody, "closing quote"),
    ],
)  # fmt: skip
def test_a_batch_no_line_can_fix_is_refused_whole(text: str, form: Form, error: type[ApiError], words: str) -> None:
    with pytest.raises(error) as caught:
        parse_batch(text, form, 3)
    assert words in caught.value.detail


def test_a_batch_over_the_synchronous_size_is_sent_to_a_job() -> None:
    with pytest.raises(BatchTooLarge) as caught:
        parse_batch("address\n" + "Tal 4\n" * (MAX_SYNC_LINES + 1), Form.CSV, MAX_SYNC_LINES)
    assert "?async=true" in caught.value.detail


# ---------------------------------------------------------------- bounded before it is paid (issue 55)


def test_a_header_wider_than_the_api_s_columns_is_refused_by_its_width() -> None:
    """A 25 000-column header was 6.6 CPU-s of a check counting each column against all others."""
    with pytest.raises(BatchInvalidHeader) as caught:
        header_columns(["address"] * 100_000)
    assert "100000 columns, more than the 9 the API knows" in caught.value.detail


def test_a_csv_header_is_checked_from_the_body_s_start() -> None:
    assert not header_checked(b"\xef\xbb\xbfid,addr")  # not whole yet: read on
    assert header_checked(b"\xef\xbb\xbf\n id , Address \nTal 4")
    for start, words in [(b"id,adress\n", "unknown columns 'adress'"), (b"\n" * (MAX_HEADER_BYTES + 1), "first 4096 bytes")]:
        with pytest.raises(BatchInvalidHeader) as caught:
            header_checked(start)
        assert words in caught.value.detail


def test_a_large_body_is_read_line_by_line_never_split_whole() -> None:
    """A 16 MiB batch held ~350 MB before its 413: the whole text split into lines to find the header."""
    text = "address\n" + "Tal 4\n" * 500_000  # 3.5 MB, 50 times the lines a batch may have
    tracemalloc.start()
    try:
        with pytest.raises(BatchTooLarge):
            parse_batch(text, Form.CSV, MAX_SYNC_LINES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024 * 1024  # split whole: ~40 MB


def test_bytes_that_are_not_utf8_name_their_line() -> None:
    with pytest.raises(MalformedBody) as caught:
        decode(b"address\nTal 4\nStra\xdfe\n")
    assert "line 3" in caught.value.detail


# ---------------------------------------------------------------- over HTTP


@pytest.fixture
async def client(aiohttp_client: ClientFactory, munich_dir: Path, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(munich_dir, redis_server)))


async def post(client: Client, body: str, headers: dict[str, str], query: str = "", status: int = 200) -> Any:
    response = await client.post("/v1/geocoder/batch" + query, data=body.encode(), headers={**LEGACY, **headers})
    answer = await response.json(content_type=None)
    assert response.status == status, answer
    return answer


async def test_every_line_gets_one_entry_in_the_input_s_order(client: Client) -> None:
    text = (
        "id,address,lat,lon\n"
        "m8,\"Marienplatz 8, 80331 München\",,\n"
        "blank,,,\n"
        "back,,48.13739,11.57606\n"
        "short,row\n"
        "far,,95,11.5\n"
        "tal,Tal 4 München,,\n"
    )
    body = await post(client, text, CSV)
    assert body["summary"] == {"linesRead": 6, "answered": 3, "failed": 3}
    entries = body["results"]
    assert [(e["line"], e["id"]) for e in entries] == [(2, "m8"), (3, "blank"), (4, "back"), (5, None), (6, "far"), (7, "tal")]
    assert "expected 4 fields" in entries[3]["error"]["message"]
    entries = [entries[i] for i in (0, 1, 2, 4, 5)]
    assert entries[0]["kind"] == "geocode" and len(entries[0]["results"]) == 1  # a batch line's best, by default
    assert entries[0]["results"][0]["label"] == "Marienplatz 8, 80331 München"
    assert entries[1]["error"]["code"] == "GEOCODER_ERROR_MISSING_ADDRESS"
    assert entries[2]["kind"] == "reverse" and entries[2]["results"][0]["address"]["street"] == "Marienplatz"
    assert entries[3]["error"]["violations"][0]["parameter"] == "lat"
    assert entries[4]["results"][0]["address"]["street"] == "Tal"
    assert body["provider"] == "osm" and "OpenStreetMap" in body["attribution"]


async def test_json_lines_answer_like_the_same_csv(client: Client) -> None:
    csv_body = await post(client, "id,address\n1,Tal 4 München\n2,Marienplatz 8 München\n", CSV)
    lines = [{"id": 1, "address": "Tal 4 München"}, {"id": "2", "address": "Marienplatz 8 München"}]
    json_body = await post(client, "\n".join(orjson.dumps(line).decode() for line in lines), JSON_LINES)
    assert [(e["line"], e["id"], e["results"]) for e in json_body["results"]] == [
        (e["line"] - 1, e["id"], e["results"]) for e in csv_body["results"]]  # fmt: skip (the CSV has a header line)


async def test_the_batch_s_limit_and_country_apply_to_every_line_and_a_line_s_country_wins(client: Client) -> None:
    text = "address,country\nMarienplatz,\nMarienplatz,DEU\n"
    body = await post(client, text, CSV, "?limit=3&country=FIN")
    assert body["results"][0]["results"] == []  # the batch's country: not Finland's
    assert len(body["results"][1]["results"]) == 3


@pytest.mark.parametrize("headers", [LEGACY, PROBLEM])
async def test_whole_batch_errors_in_both_formats(client: Client, headers: dict[str, str]) -> None:
    cases = [
        ({"Content-Type": "application/json"}, "address\nx\n", "", 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
        (CSV, "address\nx\n", "?limit=9&provider=nope", 400, "ERROR_INVALID_PARAMETER"),
        (CSV, "street,adress\nx,y\n", "", 400, "GEOCODER_ERROR_INVALID_BATCH_HEADER"),
        (CSV, "address\n", "", 400, "GEOCODER_ERROR_EMPTY_BATCH"),
        (CSV, "address\n" + "x\n" * (MAX_SYNC_LINES + 1), "", 413, "GEOCODER_ERROR_BATCH_TOO_LARGE"),
    ]
    for sent, text, query, status, code in cases:
        response = await client.post("/v1/geocoder/batch" + query, data=text.encode(), headers={**headers, **sent})
        body = await response.json(content_type=None)
        assert response.status == status, body
        if headers is LEGACY:
            assert code in {d["code"] for d in body["details"]}
            if query:
                assert len(body["details"]) == 2  # every violation at once: limit and provider
        else:
            assert body["status"] == status and body["detail"]


async def test_a_batch_pays_per_line_and_a_job_may_be_larger(client: Client) -> None:
    caller = {INTERNAL_SUBJECT_HEADER: "acct-batch", INTERNAL_TIER_HEADER: "demo"}
    small = await client.post("/v1/geocoder/batch", data=b"address\nTal 4\nTal 5\n", headers={**LEGACY, **CSV, **caller})
    assert small.status == 200 and int(small.headers["RateLimit-Cost"]) >= 1  # settled to the work: see below
    # demo: 5000 units per request at most, so one line more than 5000 / BATCH_LINE_UNITS is too dear at once
    over = int(5000 // BATCH_LINE_UNITS) + 1
    dear = await client.post("/v1/geocoder/batch", data=("address\n" + "Tal 4\n" * over).encode(),
                             headers={**LEGACY, **CSV, **caller})  # fmt: skip
    assert dear.status == 413 and f"{over} geocoder lines" in str(await dear.json())
    job = {INTERNAL_SUBJECT_HEADER: "acct-batch", INTERNAL_TIER_HEADER: "unlimited", INTERNAL_JOB_HEADER: "1"}
    large = await client.post("/v1/geocoder/batch", data=("address\n" + "Tal 4\n" * (MAX_SYNC_LINES + 5)).encode(),
                              headers={**LEGACY, **CSV, **job})  # fmt: skip
    body = await large.json()
    assert large.status == 200 and body["summary"]["answered"] == MAX_SYNC_LINES + 5


async def test_a_batch_is_priced_from_its_line_breaks_before_it_is_parsed(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: Any) -> Any:
        raise AssertionError("a batch refused for its price was parsed")

    monkeypatch.setattr(geo_state, "parse_batch", never)
    caller = {INTERNAL_SUBJECT_HEADER: "acct-priced-first", INTERNAL_TIER_HEADER: "demo"}
    lines = 1 + 5000 // int(BATCH_LINE_UNITS)  # demo: at most 5000 units a request
    dear = await client.post("/v1/geocoder/batch", data=("address\n" + "Tal 4\n" * lines).encode(),
                             headers={**LEGACY, **CSV, **caller})  # fmt: skip
    assert dear.status == 413 and f"{lines} geocoder lines" in str(await dear.json())


async def test_a_batch_is_charged_the_work_it_took(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paid ahead by its lines, settled to its lookups' CPU: lines from the cache given back,
    lines dearer than their price (3 000 names found nowhere: ~20 ms each) charged in full, and
    no more looked up than one request of the tier may cost."""
    caller = {INTERNAL_SUBJECT_HEADER: "acct-settled", INTERNAL_TIER_HEADER: "demo"}
    text = "address\nLindwurmstraße 3 München\nLindwurmstraße 3 München\nSendlinger Straße 9 München\n"
    first = await client.post("/v1/geocoder/batch", data=text.encode(), headers={**LEGACY, **CSV, **caller})
    again = await client.post("/v1/geocoder/batch", data=text.encode(), headers={**LEGACY, **CSV, **caller})
    assert first.status == again.status == 200
    assert again.headers["RateLimit-Cost"] == "1"  # every line from the cache: its overhead only
    provider = client.app[STATE_KEY].registry.providers["osm"]
    answer_many = provider.answer_many

    async def dear(queries: Any) -> Any:
        answers, _ = await answer_many(queries)
        return answers, 6.0 * len(queries)  # 6 CPU-s a line: 12 000 units, past the demo burst

    monkeypatch.setattr(provider, "answer_many", dear)
    lines = "".join(f"Tal {n} München\n" for n in range(101, 101 + BATCH_CHUNK + 8))
    costly = await client.post("/v1/geocoder/batch", data=f"address\n{lines}".encode(), headers={**LEGACY, **CSV, **caller})
    assert costly.status == 200 and int(costly.headers["RateLimit-Cost"]) >= 6 * 1000 * BATCH_CHUNK  # priced 40 lines ahead
    assert costly.headers["RateLimit-Cost-Remaining"] == "0"  # in debt: the next request waits
    # a chunk's lookups took more than the demo tier's 5000 units a request: the lines after it are not looked up
    entries = (await costly.json())["results"]
    assert [e["error"]["code"] for e in entries if "error" in e] == ["GEOCODER_ERROR_BATCH_WORK_SPENT"] * 8
    refused = await client.post("/v1/geocoder/batch", data=text.encode(), headers={**LEGACY, **CSV, **caller})
    assert refused.status == 429


async def test_a_paid_job_s_batch_is_settled_from_what_it_paid(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job paid at submission (its replay marked `paid:<units>`) is settled like a batch: dear
    lines charged past what it paid, into debt (the replay is never refused)."""
    provider = client.app[STATE_KEY].registry.providers["osm"]
    answer_many = provider.answer_many

    async def dear(queries: Any) -> Any:
        answers, _ = await answer_many(queries)
        return answers, 6.0 * len(queries)

    monkeypatch.setattr(provider, "answer_many", dear)
    replay = {INTERNAL_SUBJECT_HEADER: "acct-paid-job", INTERNAL_TIER_HEADER: "demo", INTERNAL_JOB_HEADER: "paid:16"}
    response = await client.post("/v1/geocoder/batch", data="address\nTal 61 München\nTal 63 München\n".encode(),
                                 headers={**LEGACY, **CSV, **replay})  # fmt: skip
    assert response.status == 200 and int(response.headers["RateLimit-Cost"]) >= 12_000
    assert response.headers["RateLimit-Cost-Remaining"] == "0"


async def test_lines_alike_are_looked_up_once(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Address lists repeat addresses: each distinct question is asked of the index once, and
    every line still gets its own entry (its line number and id)."""
    asked = count_lookups(client, monkeypatch)
    text = "id,address\na,Tal 7 München\nb,Tal 7 München\nc,Tal 9 München\nd,Tal 7 München\n"
    body = await post(client, text, CSV, "?country=DEU&limit=2")  # a query no other test asks: not cached
    assert sorted(text for chunk in asked for text in chunk) == ["Tal 7 München", "Tal 9 München"]
    entries = body["results"]
    assert [(e["line"], e["id"]) for e in entries] == [(2, "a"), (3, "b"), (4, "c"), (5, "d")]
    assert entries[0]["results"] == entries[1]["results"] == entries[3]["results"] != entries[2]["results"]


def count_lookups(client: Client, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts of each call for many lookups the batch makes of the index (a list per call)."""
    provider = client.app[STATE_KEY].registry.providers["osm"]
    calls: list[list[str]] = []
    answer_many = provider.answer_many

    async def counted(queries: Any) -> Any:
        calls.append([getattr(query, "text", "reverse") for query in queries])
        return await answer_many(queries)

    monkeypatch.setattr(provider, "answer_many", counted)
    return calls


async def test_lines_are_asked_in_chunks_and_cached_lines_not_at_all(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup per thread hop doubled a batch's time: the lines not in the cache go to the index
    BATCH_CHUNK at a time, and a line answered before (in any batch, or singly) comes from the cache."""
    calls = count_lookups(client, monkeypatch)
    lines = [f"Tal {number} München" for number in range(1, BATCH_CHUNK + 11)]
    first = await post(client, "address\n" + "\n".join(lines) + "\n", CSV, "?limit=4")
    assert sorted(len(call) for call in calls) == [10, BATCH_CHUNK]
    calls.clear()
    single = await (await client.get("/v1/geocoder?address=Marienplatz%208&limit=4", headers=LEGACY)).json()
    again = await post(client, "address\n" + "\n".join([*lines, "Marienplatz 8"]) + "\n", CSV, "?limit=4")
    assert calls == []  # every line was answered before
    assert again["results"][:-1] == first["results"] and again["results"][-1]["results"] == single["results"]


async def test_without_an_index_a_batch_is_503_and_without_the_cache_it_is_answered(
    aiohttp_client: ClientFactory, tmp_path: Path, munich_dir: Path
) -> None:
    """A geocoder that cannot answer fails the batch whole (the client retries it); a cache
    Redis that is down only costs the cache (make_config's Redis is unreachable)."""
    empty = await aiohttp_client(create_app(make_config(tmp_path, reload_check_seconds=0)))
    response = await empty.post("/v1/geocoder/batch", data=b"address\nTal 4\n", headers={**PROBLEM, **CSV})
    assert response.status == 503
    assert (await response.json(content_type=None))["type"] == "/problems/geocoder/dataset-not-ready"
    no_cache = await aiohttp_client(create_app(make_config(munich_dir)))
    body = await post(no_cache, "address\nTal 4 München\nMarienplatz 8 München\n", CSV)
    assert [e["results"][0]["address"]["houseNumber"] for e in body["results"]] == ["4", "8"]
