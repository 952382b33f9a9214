"""The public routing table: which service owns which /v1 path, and its limits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class PublicRoute:
    path: str
    methods: tuple[str, ...]
    service: str
    requires_token: bool = True
    max_body_bytes: int = 64 * KIB
    timeout_seconds: float = 30.0
    # Checks a password: also limited like the logins (the anonymous tier's rate, per account),
    # so a stolen token cannot guess the password at the account's own rate.
    checks_password: bool = False
    # Light and short: forwarded through the service client's arrival queue, a few at a time in
    # arrival order (GATEWAY_QUEUED_CONCURRENCY; common.client.ArrivalQueue says why).
    queued: bool = False


PUBLIC_ROUTES: tuple[PublicRoute, ...] = (
    PublicRoute("/v1/authenticate", ("POST",), "auth_service", requires_token=False, timeout_seconds=10),
    PublicRoute("/v1/authenticate/apikey", ("POST",), "auth_service", requires_token=False, timeout_seconds=10),
    PublicRoute("/v1/geocoder", ("GET",), "geo_service", timeout_seconds=10),
    PublicRoute("/v1/geocoder/reverse", ("GET",), "geo_service", timeout_seconds=10),
    PublicRoute("/v1/geocoder/autocomplete", ("GET",), "geo_service", timeout_seconds=10),
    # 10 000 lines at once (100 000 as a job, ~80 bytes each); the geocoder's own limit is 16 MiB.
    PublicRoute("/v1/geocoder/batch", ("POST",), "geo_service", max_body_bytes=16 * MIB, timeout_seconds=120),
    PublicRoute("/v1/route", ("GET",), "route_service", queued=True),
    # 1000 x 1000 points as JSON (~90 KB) for the unlimited tier; cells are limited per tier.
    PublicRoute("/v1/matrix", ("POST",), "route_service", max_body_bytes=256 * KIB),
    # 10 000 points of JSON or GPX (~120 bytes a GPX point with its time)
    PublicRoute("/v1/match", ("POST",), "route_service", max_body_bytes=2 * MIB, timeout_seconds=60),
    PublicRoute("/v1/isochrone", ("GET",), "route_service"),
    PublicRoute("/v1/providers", ("GET",), "gateway", timeout_seconds=10),
    PublicRoute("/v1/optimize/stops", ("POST",), "optimize_service", max_body_bytes=2 * MIB, timeout_seconds=60),
    # 500 stops and 50 vehicles with windows, skills and breaks: well under 1 MiB of JSON.
    PublicRoute("/v1/optimize/routes", ("POST",), "optimize_service", max_body_bytes=2 * MIB, timeout_seconds=60),
    PublicRoute("/v1/detour/file", ("POST",), "route_service", max_body_bytes=16 * MIB, timeout_seconds=120),
    # The account console (/console): the caller's account, and users for administrators.
    PublicRoute("/v1/account", ("GET",), "auth_service", timeout_seconds=10),
    PublicRoute("/v1/account/usage", ("GET",), "gateway", timeout_seconds=10),  # answered by the gateway
    PublicRoute("/v1/account/apikeys", ("GET", "POST"), "auth_service", timeout_seconds=10),
    PublicRoute("/v1/account/apikeys/{keyId}", ("DELETE",), "auth_service", timeout_seconds=10),
    PublicRoute("/v1/account/password", ("POST",), "auth_service", timeout_seconds=10, checks_password=True),
    PublicRoute("/v1/admin/users", ("GET", "POST"), "auth_service", timeout_seconds=10),
    PublicRoute("/v1/admin/users/{userId}", ("PATCH",), "auth_service", timeout_seconds=10),
    # Asynchronous jobs (job_service): the account's jobs, one job, its result (a few MB at most).
    PublicRoute("/v1/jobs", ("GET",), "job_service", timeout_seconds=10),
    PublicRoute("/v1/jobs/{jobId}", ("GET", "DELETE"), "job_service"),
    PublicRoute("/v1/jobs/{jobId}/result", ("GET",), "job_service"),
)

# Operations that run as a job with `?async=true` (any value but false: the job service
# refuses what is not true): the same path, body and limits, answered by the job service, which
# only stores the request, so in seconds.
ASYNC_PARAMETER = "async"
ASYNC_PATHS = frozenset({"/v1/optimize/routes", "/v1/optimize/stops", "/v1/detour/file", "/v1/geocoder/batch"})
JOB_SERVICE = "job_service"
JOB_SUBMIT_TIMEOUT_SECONDS = 30.0


def wants_job(route: PublicRoute, query: Mapping[str, str]) -> bool:
    return route.path in ASYNC_PATHS and ASYNC_PARAMETER in query and query[ASYNC_PARAMETER].lower() != "false"


def as_job(route: PublicRoute) -> PublicRoute:
    """The operation's route to the job service."""
    return replace(route, service=JOB_SERVICE, timeout_seconds=JOB_SUBMIT_TIMEOUT_SECONDS)


# Routes the gateway answers itself (after authentication and rate limiting).
LOCAL_SERVICE = "gateway"
USAGE_PATH = "/v1/account/usage"

_BY_PATH = {route.path: route for route in PUBLIC_ROUTES if "{" not in route.path}


def _pattern(path: str) -> re.Pattern[str]:
    """A path with `{name}` segments as a pattern: one segment of anything but a slash there."""
    return re.compile("/".join("[^/]+" if part.startswith("{") else re.escape(part) for part in path.split("/")))


_TEMPLATES = tuple((_pattern(route.path), route) for route in PUBLIC_ROUTES if "{" in route.path)

# Paths under /v1 that are documentation, not operations: served without a token.
OPEN_PATHS = frozenset({"/v1/openapi.json"})


def match_route(path: str) -> PublicRoute | None:
    # A trailing slash names the same operation; clients add it often enough.
    found = _BY_PATH.get(path) or _BY_PATH.get(path.rstrip("/"))
    if found is None and "/" in path.rstrip("/"):
        found = next((route for pattern, route in _TEMPLATES if pattern.fullmatch(path.rstrip("/"))), None)
    return found


def needs_token(path: str) -> bool:
    """Every /v1 path needs a token except the authentication endpoints and the spec.

    Unknown /v1 paths need one too, so the answer does not reveal which paths exist."""
    if not path.startswith("/v1") or path in OPEN_PATHS:
        return False
    route = match_route(path)
    return route is None or route.requires_token
