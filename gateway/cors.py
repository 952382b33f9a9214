"""CORS: which web pages elsewhere may call the API from a browser (`CORS_ALLOWED_ORIGINS`).

The token travels in the Authorization header, never in a cookie, so a browser sends it only
when the page's own script adds it: no answer allows credentials (cookies), and the default
`*` lets any page call the API with a token its user holds. A list of origins restricts
that; an empty value turns cross-origin calls off.

A preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) is answered before
authentication: browsers never send the Authorization header with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from common.errors import Forbidden
from common.internal_auth import PUBLIC_PORT_INTERNAL_PATHS

ALLOW_ANY = "*"
# What a page's script may send: the token, the body's type and name, the error format.
ALLOWED_REQUEST_HEADERS = "Authorization, Content-Type, Accept, Accept-Language, Content-Disposition, X-Request-ID"
# What it may read beyond the CORS-safelisted headers.
EXPOSED_HEADERS = (
    "X-Request-ID, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, "
    "WWW-Authenticate, Content-Disposition"
)
# Browsers cap it anyway (Chromium at 2 h); 10 min keeps a changed policy from lingering.
PREFLIGHT_MAX_AGE_SECONDS = 600


@dataclass(frozen=True)
class CorsPolicy:
    origins: frozenset[str]

    @classmethod
    def of(cls, origins: tuple[str, ...]) -> CorsPolicy:
        return cls(frozenset(origins))

    @property
    def any_origin(self) -> bool:
        return ALLOW_ANY in self.origins

    def allowed_origin(self, origin: str | None) -> str | None:
        """The Access-Control-Allow-Origin value for a request from `origin`; None: refused."""
        if not origin:
            return None
        if self.any_origin:
            return ALLOW_ANY
        return origin if origin in self.origins else None


CORS_KEY: web.AppKey[CorsPolicy] = web.AppKey("cors", CorsPolicy)


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` hook: answers and errors alike, except the internal paths (no
    page elsewhere has any business reading the metrics)."""
    if request.path in PUBLIC_PORT_INTERNAL_PATHS:
        return
    policy = request.app[CORS_KEY]
    if policy.origins and not policy.any_origin:
        response.headers.add("Vary", "Origin")  # the answer depends on it, so caches must too
    allowed = policy.allowed_origin(request.headers.get("Origin"))
    if allowed is not None:
        response.headers["Access-Control-Allow-Origin"] = allowed
        response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS


def is_preflight(request: web.Request) -> bool:
    return "Origin" in request.headers and "Access-Control-Request-Method" in request.headers


def options_response(request: web.Request, methods: tuple[str, ...]) -> web.Response:
    """OPTIONS on an operation: its methods, and for a preflight what a page may send."""
    allow = ", ".join((*methods, "OPTIONS"))
    if not is_preflight(request):
        return web.Response(status=204, headers={"Allow": allow})
    if request.app[CORS_KEY].allowed_origin(request.headers["Origin"]) is None:
        raise Forbidden("pages of this origin may not call the API from a browser (see CORS_ALLOWED_ORIGINS)")
    return web.Response(
        status=204,
        headers={
            "Allow": allow,
            "Access-Control-Allow-Methods": allow,
            "Access-Control-Allow-Headers": ALLOWED_REQUEST_HEADERS,
            "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE_SECONDS),
        },
    )
