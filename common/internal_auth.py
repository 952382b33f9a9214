"""Internal calls are authenticated: a service's own port answers only callers that hold the
platform's shared secret, `INTERNAL_TOKEN`, sent as `X-Internal-Token`.

The gateway's public port checks users' tokens; behind it, a service's port serves only the
gateway and the other services, and network isolation alone used to protect it. Only
`/health` stays open: the launcher's, compose's and Kubernetes' probes hold no secret and read
only its status code; what it shows beyond the status (dataset hashes, key ids, worker counts)
needs the credential (`shows_internals`). `/metrics` is not open, on a service's port nor on
the gateway's public one: nothing of ours scrapes it, and a scraper can send the header like
any internal caller.

An app built with an empty token (in-process, by tests) does not check. A process never runs
so by accident: `require_internal_token` stops it at start unless `INTERNAL_AUTH=off` says
this is development.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from common.config import BaseConfig
from common.errors import InternalCredentialRequired

INTERNAL_TOKEN_HEADER = "X-Internal-Token"  # noqa: S105 - a header name, not a secret
# The caller's account tier, set by the gateway on forwarded requests (trusted only behind the
# internal credential): services with per-tier limits read it.
INTERNAL_TIER_HEADER = "X-Internal-Tier"
# The rest of the caller's identity, set by the gateway the same way: the token's subject,
# e-mail, issue time (unix seconds) and, for a token issued for an API key, that key's id.
INTERNAL_SUBJECT_HEADER = "X-Internal-Subject"
INTERNAL_EMAIL_HEADER = "X-Internal-Email"
INTERNAL_ISSUED_AT_HEADER = "X-Internal-Issued-At"
INTERNAL_API_KEY_HEADER = "X-Internal-Api-Key"
OPEN_PATHS = frozenset({"/health"})
# What the gateway's public port answers only to a holder of the credential.
PUBLIC_PORT_INTERNAL_PATHS = frozenset({"/metrics"})
TOKEN_FILE = "internal-token"  # noqa: S105 - a file name under DATA_DIR, not a secret

log = logging.getLogger("common.internal_auth")


def internal_headers(token: str) -> dict[str, str]:
    """What an internal call adds to its headers; nothing when no token is configured."""
    return {INTERNAL_TOKEN_HEADER: token} if token else {}


def holds_credential(presented: str | None, token: str) -> bool:
    """Compared in constant time, so answer times tell an attacker nothing about a guess. As
    bytes: compare_digest refuses a str with non-ASCII characters, which a client may send."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"), token.encode())


def check_credential(presented: str | None, token: str) -> None:
    if presented is None:
        raise InternalCredentialRequired(f"send the platform's internal credential in {INTERNAL_TOKEN_HEADER}")
    if not holds_credential(presented, token):
        raise InternalCredentialRequired(f"the internal credential in {INTERNAL_TOKEN_HEADER} is wrong")


def shows_internals(request: web.Request, token: str) -> bool:
    """Whether an answer may show internals to this caller: it holds the credential, or the app
    was built without one (in-process, tests), where nothing is checked."""
    return not token or holds_credential(request.headers.get(INTERNAL_TOKEN_HEADER), token)


def credential_middleware(token: str, *, internal: bool = True) -> Middleware:
    """`internal`: every path but OPEN_PATHS needs the credential; else (the gateway's public
    port) only PUBLIC_PORT_INTERNAL_PATHS do."""

    def guarded(path: str) -> bool:
        return path not in OPEN_PATHS if internal else path in PUBLIC_PORT_INTERNAL_PATHS

    @web.middleware
    async def internal_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if guarded(request.path):
            check_credential(request.headers.get(INTERNAL_TOKEN_HEADER), token)
        return await handler(request)

    return internal_auth


def internal_auth_middlewares(config: BaseConfig, *, internal: bool) -> list[Middleware]:
    """The check for a service's own port, and for the internal paths of a public port (the
    gateway's); none without a token. Installed inside the error middleware, so a refusal is a
    401 in our formats and is not logged as an error."""
    if not config.internal_token:
        return []
    return [credential_middleware(config.internal_token, internal=internal)]


def require_internal_token(config: BaseConfig) -> None:
    """At a process's start: without a token its port would be open (and the gateway's calls
    would be refused elsewhere), which only the explicit development flag allows."""
    if config.internal_token:
        return
    if config.internal_auth_off:
        log.warning("INTERNAL_TOKEN is not set and INTERNAL_AUTH=off: internal calls are not authenticated")
        return
    raise SystemExit(
        "configuration error: INTERNAL_TOKEN is not set (the secret every internal call carries; `make up` "
        "generates it, docker compose reads it from .env); INTERNAL_AUTH=off runs without it, for development only"
    )


def stored_internal_token(directory: Path) -> str:
    """The stack's secret under its data directory: made at the first start, read after."""
    path = directory / TOKEN_FILE
    token = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    if not token:
        token = secrets.token_urlsafe(32)
        write_private(path, token)
    return token


def write_private(path: Path, text: str) -> None:
    """Readable and writable by the owner only (0600), whatever the umask or an older file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text + "\n")
