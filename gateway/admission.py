"""Who may pass the gateway, decided before any service is asked: the one Authorization header,
the token's signature (a key rotated since is looked up), its revocation, and the rate limit of
the account or, without a token, of the client's address; and whose refusals are paced.

Not to be confused with `common.admission`, the work budgets that the services charge and the
gateway checks before reading a large body (`gateway.proxy`)."""

from __future__ import annotations

from aiohttp import web

from common.errors import MalformedRequest, TooManyRequests, Unauthorized
from gateway.routes import PublicRoute
from gateway.state import GatewayState
from gateway.tokens import Identity, UnknownKey, bearer_token


def authorization(request: web.Request) -> str | None:
    """The one Authorization header: two are refused, not resolved (which one a proxy or a
    service would read is anyone's guess)."""
    values = request.headers.getall("Authorization", [])
    if len(values) > 1:
        raise MalformedRequest(f"send one Authorization header, not {len(values)}", parameter="Authorization")
    return values[0] if values else None


async def authenticate(state: GatewayState, request: web.Request) -> Identity:
    token = bearer_token(authorization(request))
    try:
        identity = state.verifier.verify(token)
    except UnknownKey as exc:
        # Perhaps a freshly rotated key: look it up (rate-limited), then decide.
        await state.jwks.refresh_for_unknown(str(exc))
        try:
            identity = state.verifier.verify(token)
        except UnknownKey:
            raise Unauthorized("the token was signed by an unknown key") from exc
    if await state.revocations.is_revoked(identity):
        raise Unauthorized("the token has been revoked")
    return identity


async def apply_rate_limit(
    state: GatewayState, request: web.Request, route: PublicRoute, identity: Identity | None
) -> dict[str, str]:
    # Behind the Ingress the client is the one its X-Forwarded-For names (TRUSTED_PROXIES); the
    # services get it too (gateway.proxy), e.g. for the auth service's fair hashing turns.
    address = state.proxies.client_address(request.remote, request.headers.getall("X-Forwarded-For", []))
    request["client_address"] = address
    if identity is not None:
        decision = await state.rate_limiter.check(f"sub:{identity.subject}", identity.tier)
        state.usage.count(identity.subject, rate_limited=decision is not None and not decision.allowed)
    else:
        # Unauthenticated endpoints (login) are limited per client address against guessing.
        decision = await state.rate_limiter.check(f"ip:{address}", "anonymous")
    if decision is not None and decision.allowed and identity is not None and route.checks_password:
        # A password checked behind a token: limited like the logins too, per account.
        decision = await state.rate_limiter.check(f"password:{identity.subject}", "anonymous") or decision
    if decision is None:
        return {}
    if not decision.allowed:
        raise TooManyRequests(decision.refusal(), headers=decision.headers())
    return decision.headers()


def refused_client(state: GatewayState, request: web.Request) -> str:
    """Whose refusals are paced (gateway.pacing): the account the request named, else its address."""
    account = request.get("account")
    if account is not None:
        return f"sub:{account}"
    address = request.get("client_address")
    if address is None:
        address = state.proxies.client_address(request.remote, request.headers.getall("X-Forwarded-For", []))
    return f"ip:{address}"
