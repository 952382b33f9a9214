"""Forwarding of a public request to the service that owns it."""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Mapping

import aiohttp
from aiohttp import web
from yarl import URL

from common.admission import Admission, Caller
from common.client import ServiceClient
from common.errors import (
    BadGateway,
    GatewayTimeout,
    InternalCredentialRequired,
    MalformedBody,
    PayloadTooLarge,
    ServiceUnavailable,
)
from common.internal_auth import (
    INTERNAL_API_KEY_HEADER,
    INTERNAL_EMAIL_HEADER,
    INTERNAL_ISSUED_AT_HEADER,
    INTERNAL_SUBJECT_HEADER,
    INTERNAL_TIER_HEADER,
    internal_headers,
)
from common.middleware import REQUEST_ID_HEADER
from common.streaming import stream
from common.waiting import unless_gone
from gateway.routes import PublicRoute
from gateway.services import label
from gateway.tokens import Identity

log = logging.getLogger("gateway.proxy")

# Only these client headers reach a service: anything else (Authorization, cookies, a
# forged X-Internal-*) is dropped here, so the internal identity headers are ours alone.
FORWARDED_REQUEST_HEADERS = ("Accept", "Accept-Language", "Content-Type", "Content-Disposition", "User-Agent")
FORWARDED_RESPONSE_HEADERS = (
    "Content-Type",
    "Content-Disposition",
    "Cache-Control",
    "Retry-After",
    "Allow",
    "Location",  # where a job answered 202 is followed (job_service)
    "WWW-Authenticate",
    "RateLimit-Cost",  # what a priced request cost its account (common.admission)
    "RateLimit-Cost-Limit",
    "RateLimit-Cost-Remaining",
)
# An answer declaring at most this many bytes is read whole (simpler, and as cheap); a larger one,
# or one without Content-Length (chunked: a job's result), goes through in chunks.
STREAM_ABOVE_BYTES = 256 << 10
STREAM_CHUNK_BYTES = 64 << 10
INTERNAL_SUBJECT = INTERNAL_SUBJECT_HEADER
INTERNAL_TIER = INTERNAL_TIER_HEADER
INTERNAL_EMAIL = INTERNAL_EMAIL_HEADER


class UpstreamOutages:
    """Logs a service becoming unreachable once, and its return once with how long it was away,
    instead of one line per failed request (~9 300 lines in 33 s were measured)."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}

    def failed(self, service: str, base_url: str, exc: BaseException) -> None:
        if service not in self.since:
            self.since[service] = time.monotonic()
            log.warning("%s unreachable at %s: %s (logged once until it answers again)", service, base_url, exc)

    def answered(self, service: str) -> None:
        began = self.since.pop(service, None)
        if began is not None:
            log.warning("%s reachable again after %.1f s", service, time.monotonic() - began)


OUTAGES = UpstreamOutages()


def upstream_headers(request: web.Request, identity: Identity | None, internal_token: str) -> dict[str, str]:
    headers = {name: request.headers[name] for name in FORWARDED_REQUEST_HEADERS if name in request.headers}
    headers[REQUEST_ID_HEADER] = request["request_id"]
    # The client as the gateway's TRUSTED_PROXIES tell it (gateway.admission.apply_rate_limit).
    headers["X-Forwarded-For"] = request.get("client_address") or request.remote or ""
    headers.update(internal_headers(internal_token))
    if identity is not None:
        headers[INTERNAL_SUBJECT] = identity.subject
        headers[INTERNAL_TIER] = identity.tier
        headers[INTERNAL_ISSUED_AT_HEADER] = str(identity.issued_at)
        if identity.email:
            headers[INTERNAL_EMAIL] = identity.email
        if identity.api_key_id:
            headers[INTERNAL_API_KEY_HEADER] = identity.api_key_id
    return headers


def refused_our_credential(status: int, headers: dict[str, str]) -> bool:
    """A service refusing the internal credential, told from a user's 401 by its own scheme."""
    return status == 401 and headers.get("WWW-Authenticate", "").startswith(InternalCredentialRequired.scheme)


class BodyDecoder:
    """A body's Content-Encoding undone as it is read, never further than asked. The public port
    leaves bodies as sent (`common.http_server`: aiohttp would inflate each arriving chunk before
    any handler ran, 0.5 ms of the gateway's CPU per refused 4 MiB gzip bomb, 60 % of its work
    under the campaign's bomb loop, py-spy 2026-11-26); the encoding was checked by the
    middleware (gzip, deflate or none)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding.strip().lower()
        self._inflate: zlib._Decompress | None = None

    def decode(self, chunk: bytes, at_most: int) -> bytes:
        """Up to `at_most` bytes of what `chunk` (and input held back before) decodes to."""
        if self.encoding in ("", "identity"):
            return chunk
        if self._inflate is None:
            # gzip; deflate as the RFC says (zlib) or as some clients send it (raw, no header).
            raw_deflate = self.encoding == "deflate" and bool(chunk) and chunk[0] & 0xF != 8
            self._inflate = zlib.decompressobj(-15 if raw_deflate else (31 if "gzip" in self.encoding else 15))
        try:
            return self._inflate.decompress(self._inflate.unconsumed_tail + chunk, at_most)
        except zlib.error as exc:
            raise MalformedBody(
                f"the body is not valid {self.encoding} data, as its Content-Encoding header says"
            ) from exc

    def complete(self) -> bool:
        return self._inflate is None or self._inflate.eof


async def read_limited_body(request: web.Request, limit: int) -> bytes:
    """At most `limit` bytes, as sent and as decoded (`Content-Encoding`): decoded here, only as
    far as it is read, so a gzip bomb stops at the limit, and the server closes the connection
    rather than read the rest (common.http_server)."""
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLarge(f"the body has {request.content_length} bytes; at most {limit} are accepted here")
    # A server that decodes as it receives (aiohttp's default, e.g. a test server) marks its
    # stream so; the gateway's own leaves it as sent.
    decoded_already = request.content.total_compressed_bytes is not None
    decoder = BodyDecoder("" if decoded_already else request.headers.get("Content-Encoding", ""))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(1 << 16):
        sent = request.content.total_raw_bytes
        decoded = decoder.decode(chunk, limit + 1 - size)
        size += len(decoded)
        # The bytes as sent count too: compressed data may decompress to (almost) nothing.
        if size > limit or sent > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes, the limit here")
        chunks.append(decoded)
    if request.content.total_raw_bytes > limit:  # decoded as received, to (almost) nothing
        raise PayloadTooLarge(f"the body is larger than {limit} bytes, the limit here")
    if not decoder.complete():
        raise MalformedBody(f"the body's {decoder.encoding} data ends before its end")
    return b"".join(chunks)


async def call_upstream(
    request: web.Request,
    route: PublicRoute,
    service: ServiceClient,
    identity: Identity | None,
    body: bytes | None,
    extra_headers: Mapping[str, str],
) -> web.StreamResponse:
    """The service's answer: read whole when it says it is small, else streamed through as it
    comes (issue 55: eight parallel reads of a 44 MB job result took the gateway from 126 to
    439 MB), with the forwarded headers and `extra_headers` (sent before the first byte)."""
    url = URL(service.base_url + request.raw_path, encoded=True)
    try:
        # A queued (light) route waits its turn first: common.client.ArrivalQueue.
        async with (
            service.queued(route.queued, route.timeout_seconds),
            service.session.request(
                request.method,
                url,
                data=body,
                headers=upstream_headers(request, identity, service.internal_token),
                timeout=aiohttp.ClientTimeout(total=route.timeout_seconds),
                allow_redirects=False,
            ) as upstream,
        ):
            OUTAGES.answered(route.service)
            headers = {name: upstream.headers[name] for name in FORWARDED_RESPONSE_HEADERS if name in upstream.headers}
            check_answer(service, upstream.status, headers)
            headers.update(extra_headers)
            if upstream.content_length is not None and upstream.content_length <= STREAM_ABOVE_BYTES:
                return web.Response(status=upstream.status, body=await upstream.read(), headers=headers)
            answer = web.StreamResponse(status=upstream.status, headers=headers)
            return await stream(request, answer, upstream.content.iter_chunked(STREAM_CHUNK_BYTES))
    except TimeoutError as exc:
        raise GatewayTimeout(f"the {service.name} did not answer within {route.timeout_seconds:g} s") from exc
    except aiohttp.ClientConnectionError as exc:
        OUTAGES.failed(route.service, service.base_url, exc)
        raise ServiceUnavailable(f"the {service.name} is unavailable; try again shortly") from exc


def check_answer(service: ServiceClient, status: int, headers: dict[str, str]) -> None:
    """A service's crash (a 5xx not in our format) or its refusal of our credential is a 502,
    never passed on."""
    if status >= 500 and "json" not in headers.get("Content-Type", ""):
        raise BadGateway(f"the {service.name} failed")
    if refused_our_credential(status, headers):
        # Our configuration is wrong (the secrets differ): a 502 for the client, never a 401.
        log.error(
            "the %s refused the gateway's internal credential: is INTERNAL_TOKEN the same everywhere?", service.name
        )
        raise BadGateway(f"the {service.name} refused the call")


async def forward(
    request: web.Request,
    route: PublicRoute,
    service: ServiceClient | None,
    identity: Identity | None,
    admission: Admission,
    extra_headers: Mapping[str, str],
) -> web.StreamResponse:
    """The request's bytes to the service and its answer's back, untouched: no JSON is parsed
    here (the service's connection pool, base URL and credential are its `ServiceClient`'s)."""
    if service is None:
        raise ServiceUnavailable(f"the {label(route.service)} is not deployed")
    if request.can_read_body and identity is not None:
        # Large bodies of an account whose budget is spent or whose heavy slots are all taken are
        # refused unread, the connection then closed (common.http_server): a Redis call each,
        # not a read and a parse in the service.
        await admission.refuse_large_body_early(Caller(identity.subject, identity.tier), request.content_length)
    body = await read_limited_body(request, route.max_body_bytes) if request.can_read_body else None
    # The client gone, the upstream call is dropped: its closed connection tells the service to
    # stop the work in turn (common.waiting), instead of running on until our timeout.
    return await unless_gone(request, call_upstream(request, route, service, identity, body, extra_headers))
