"""The spec's example answers, made by the platform itself on the default map.

`python -m gateway.spec_examples --base-url URL --token TOKEN` sends every operation's example
request of `openapi.yaml` (its example parameters and body) to a running platform (`make up`),
shortens each answer (long lists and geometries cut to a few items, so they stay readable and
still match their schemas) and writes them to `openapi-examples.json`, keyed by
`METHOD /path`. `gateway.docs` puts them into the spec as the 200 answers' examples, so the
answers shown in /docs are real ones for the requests shown beside them. Run it again after a
change of an answer's shape; tests/gateway/test_spec_examples.py checks them against the schemas.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import yaml

from gateway.docs import EXAMPLES_PATH, SPEC_PATH

# Operations whose answer needs no example here: the tokens, the account console's operations
# (they would change accounts, and their answers are not map data) and the jobs (their ids and
# times are new each run), whose examples are written by hand in openapi.yaml.
SKIPPED = {"POST /v1/authenticate", "POST /v1/authenticate/apikey"}
SKIPPED_PREFIXES = ("/v1/account", "/v1/admin/", "/v1/jobs")
# Optional parameters left out of the example request: `distance` is isochrone's alternative to
# `time` (both at once is 400), `async` would answer a job, not the example answer; the rest are
# exercised by their own examples in the docs.
LEFT_OUT = {"distance", "avoid", "focus", "Content-Disposition", "startTime", "async"}
LIST_ITEMS = 3
GEOMETRY_POSITIONS = 4
SCALARS = 6


def shorten(value: Any, key: str = "") -> Any:
    """Lists cut to a few items (GeoJSON positions keep their first and last ones)."""
    if isinstance(value, dict):
        return {k: shorten(v, k) for k, v in value.items()}
    if isinstance(value, list):
        if key == "coordinates":
            return shorten_positions(value)
        if all(not isinstance(item, dict | list) for item in value) and len(value) <= SCALARS:
            return value  # bounds, annotations, a matrix row
        return [shorten(item) for item in value[:LIST_ITEMS]]
    return value


def shorten_positions(value: list[Any]) -> list[Any]:
    if value and isinstance(value[0], float | int):  # one position
        return value
    if value and isinstance(value[0], list) and value[0] and isinstance(value[0][0], float | int):
        if len(value) <= GEOMETRY_POSITIONS:
            return value
        return [*value[: GEOMETRY_POSITIONS - 1], value[-1]]  # a ring stays closed
    return [shorten_positions(part) for part in value[:LIST_ITEMS]]


def example_request(
    spec: dict[str, Any], path: str, method: str, op: dict[str, Any]
) -> tuple[str, bytes | None, dict[str, str]]:
    query, headers = {}, {}
    for item in op.get("parameters", []):
        param = spec["components"]["parameters"][item["$ref"].rsplit("/", 1)[1]] if "$ref" in item else item
        value = param.get("example", param.get("schema", {}).get("example"))
        if value is None or param["name"] in LEFT_OUT:
            continue
        if param["in"] == "query":
            query[param["name"]] = str(value)
    body = None
    content = op.get("requestBody", {}).get("content", {})
    if content:
        media_type, media = next(iter(content.items()))
        example = media["example"] if "example" in media else next(iter(media["examples"].values()))["value"]
        body = example.encode() if isinstance(example, str) else json.dumps(example).encode()
        headers["Content-Type"] = media_type
        if path == "/v1/detour/file":
            query["filename"] = "trips.csv"
    url = path + ("?" + urllib.parse.urlencode(query) if query else "")
    return url, body, headers


def fetch(base_url: str, token: str, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Any:
    request = urllib.request.Request(  # noqa: S310 - the operator's --base-url
        base_url + url,
        data=body,
        method=method.upper(),
        headers={**headers, "Authorization": f"Bearer {token}", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"{method.upper()} {url}: {exc.code} {exc.read()[:500]!r}") from exc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", required=True, help="a token of the running platform (make up prints one)")
    parser.add_argument("--only", action="append", default=[], metavar="'METHOD /path'",
                        help="refresh only this operation's example, keeping the others (repeatable)")  # fmt: skip
    args = parser.parse_args()
    spec = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    examples = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8")) if args.only else {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            name = f"{method.upper()} {path}"
            if (
                (args.only and name not in args.only)
                or name in SKIPPED
                or path.startswith(SKIPPED_PREFIXES)
                or "application/json" not in op["responses"].get("200", {}).get("content", {})
            ):
                continue
            url, body, headers = example_request(spec, path, method, op)
            examples[name] = shorten(fetch(args.base_url, args.token, method, url, body, headers))
            print(f"{name}: {url}", file=sys.stderr)
    EXAMPLES_PATH.write_text(json.dumps(examples, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
