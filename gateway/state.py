"""What the gateway holds while it runs, built at startup from its configuration and closed at
cleanup; handlers reach it through the app, never the configuration itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from common.admission import Admission
from common.client import ServiceClient
from gateway.client_address import TrustedProxies
from gateway.jwks import JwksRefresher
from gateway.pacing import RefusalPacer
from gateway.ratelimit import RateLimiter
from gateway.revocation import RevocationChecker
from gateway.tokens import TokenVerifier
from gateway.usage import UsageCounter


@dataclass
class GatewayState:
    services: dict[str, ServiceClient]  # the deployed services by name; a missing one answers 503
    verifier: TokenVerifier
    jwks: JwksRefresher
    rate_limiter: RateLimiter
    revocations: RevocationChecker
    usage: UsageCounter  # each account's requests per hour (/v1/account/usage)
    # The services' work-unit budgets per tier (COST_BUDGETS): shown in /v1/account/usage, and
    # a spent budget refuses large bodies before they are read (proxy.forward).
    admission: Admission
    # Whose X-Forwarded-For names the client (TRUSTED_PROXIES); none by default.
    proxies: TrustedProxies = field(default_factory=TrustedProxies)
    # Holds the refusals of a client that keeps asking regardless (GATEWAY_REFUSAL_PACING).
    pacer: RefusalPacer = field(default_factory=RefusalPacer)


GATEWAY_KEY: web.AppKey[GatewayState] = web.AppKey("gateway", GatewayState)
