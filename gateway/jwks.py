"""Keeps the verifier's keys in step with the auth service's JWKS.

Fetched at start, refreshed periodically, and at once (at most every few seconds) when a
token names a key id we do not know, which is how a key rotation reaches the gateway.
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import orjson

from gateway.tokens import TokenVerifier

log = logging.getLogger("gateway.jwks")


class JwksRefresher:
    def __init__(
        self, url: str, verifier: TokenVerifier, session: aiohttp.ClientSession, *, refresh_seconds: float
    ) -> None:
        self.url = url
        self.verifier = verifier
        self.session = session
        self.refresh_seconds = refresh_seconds
        self.loaded_at = 0.0
        self._last_attempt = 0.0
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def loaded(self) -> bool:
        return self.loaded_at > 0

    async def refresh(self, *, min_interval: float = 0.0) -> bool:
        async with self._lock:
            if time.monotonic() - self._last_attempt < min_interval:
                return False
            self._last_attempt = time.monotonic()
            if not self.url:
                return False
            try:
                async with self.session.get(self.url, timeout=aiohttp.ClientTimeout(total=3)) as resp:
                    resp.raise_for_status()
                    jwks = orjson.loads(await resp.read())
            except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
                log.warning("cannot fetch JWKS from %s: %s", self.url, exc)
                return False
            self.verifier.load_jwks(jwks)
            self.loaded_at = time.monotonic()
            log.info("loaded %d signing keys", len(self.verifier.key_ids))
            return True

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
