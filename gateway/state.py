"""What the gateway holds while it runs, built at startup and closed at cleanup."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from aiohttp import web

from gateway.config import GatewayConfig
from gateway.jwks import JwksRefresher
from gateway.ratelimit import RateLimiter
from gateway.revocation import RevocationChecker
from gateway.tokens import TokenVerifier


@dataclass
class GatewayState:
    config: GatewayConfig
    session: aiohttp.ClientSession
    verifier: TokenVerifier
    jwks: JwksRefresher
    rate_limiter: RateLimiter
    revocations: RevocationChecker


GATEWAY_KEY: web.AppKey[GatewayState] = web.AppKey("gateway", GatewayState)
