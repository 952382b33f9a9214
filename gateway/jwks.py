"""Keeps the verifier's keys in step with the auth service's JWKS.

Fetched at start, refreshed periodically, and at once (at most every few seconds) when a
token names a key id we do not know, which is how a key rotation reaches the gateway.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict

from common.client import ServiceClient
from common.errors import ApiError
from gateway.config import GatewayConfig
from gateway.tokens import TokenVerifier

log = logging.getLogger("gateway.jwks")

UNKNOWN_KEY_MIN_GAP_SECONDS = 0.5
UNKNOWN_KEY_RETRY_SECONDS = 5.0
UNKNOWN_KEY_MEMORY = 1024
UNKNOWN_KEY_MAX_WAITING = 8
JWKS_TIMEOUT_SECONDS = 3.0


def jwks_credential(config: GatewayConfig) -> str:
    """The internal credential goes to our own auth service only, never to another issuer's JWKS_URL."""
    auth_url = config.upstreams.get("auth_service", "")
    on_our_auth_service = bool(auth_url) and config.jwks_url.startswith(auth_url + "/")
    return config.internal_token if on_our_auth_service else ""


class JwksRefresher:
    def __init__(self, client: ServiceClient, verifier: TokenVerifier, *, refresh_seconds: float) -> None:
        """`client`: the JWKS endpoint (JWKS_URL), whole, as its base URL."""
        self.client = client
        self.verifier = verifier
        self.refresh_seconds = refresh_seconds
        self.loaded_at = 0.0
        self._last_attempt = 0.0
        self._lock = asyncio.Lock()
        # Key ids asked for and not found, by when: each is looked up again at most every
        # UNKNOWN_KEY_RETRY_SECONDS (bounded, oldest dropped first).
        self._unknown: OrderedDict[str, float] = OrderedDict()
        self._unknown_lock = asyncio.Lock()
        self._waiting = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def loaded(self) -> bool:
        return self.loaded_at > 0

    async def refresh(self, *, min_interval: float = 0.0) -> bool:
        async with self._lock:
            if time.monotonic() - self._last_attempt < min_interval:
                return False
            self._last_attempt = time.monotonic()
            if not self.client.base_url:
                return False
            try:
                jwks = await self.client.get_json("")
            except ApiError as exc:
                log.warning("cannot fetch JWKS from %s: %s", self.client.base_url, exc)
                return False
            self.verifier.load_jwks(jwks)
            self.loaded_at = time.monotonic()
            log.info("loaded %d signing keys", len(self.verifier.key_ids))
            return True

    async def refresh_for_unknown(self, kid: str) -> bool:
        """A token names a key id we have not loaded: a key rotated since our last fetch, or a
        forged id. Whether the id is known afterwards.

        A new id is fetched at once, at most UNKNOWN_KEY_MIN_GAP_SECONDS after the previous
        fetch (a fixed 5 s gap after any fetch refused fresh tokens for up to 5 s after a
        rotation); the same id again only after UNKNOWN_KEY_RETRY_SECONDS. Lookups take turns,
        so requests carrying the same new id wait for the one fetch; beyond
        UNKNOWN_KEY_MAX_WAITING waiting lookups (a flood of forged ids) a request is refused at
        once, so forged ids cost the auth service at most two fetches a second."""
        if self._waiting >= UNKNOWN_KEY_MAX_WAITING:
            return False
        self._waiting += 1
        try:
            async with self._unknown_lock:
                return await self._look_up(kid)
        finally:
            self._waiting -= 1

    async def _look_up(self, kid: str) -> bool:
        if kid in self.verifier.key_ids:
            return True  # fetched while this request waited its turn
        now = time.monotonic()
        asked = self._unknown.get(kid)
        if asked is not None and now - asked < UNKNOWN_KEY_RETRY_SECONDS:
            return False
        self._unknown[kid] = now
        self._unknown.move_to_end(kid)
        while len(self._unknown) > UNKNOWN_KEY_MEMORY:
            self._unknown.popitem(last=False)
        wait = UNKNOWN_KEY_MIN_GAP_SECONDS - (now - self._last_attempt)
        if wait > 0:
            await asyncio.sleep(wait)
        await self.refresh()
        return kid in self.verifier.key_ids

    async def run_forever(self) -> None:
        while True:
            # Retry quickly until the first load succeeds (the auth service may start later).
            await asyncio.sleep(self.refresh_seconds if self.loaded else 1.0)
            await self.refresh()

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.create_task(self.run_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
