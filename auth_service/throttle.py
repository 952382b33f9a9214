"""Failed logins throttled per account, in the state Redis so every replica agrees.

The gateway limits logins per client address; an attacker with many addresses could still
guess one account's password at their sum. So each account (the e-mail as typed, whether or
not it exists: the answer must not tell) has a failure count: the first `free_failures` cost
nothing, then every attempt waits a back-off after the previous one, 1 s doubling with each
further failure up to `max_backoff_seconds`. An attempt in the back-off is refused with 429
before any password is checked (it costs no hash and is not counted as a failure, so the
attacker cannot lengthen the wait); a success clears the count; `window_seconds` without a
failure forget it.

Why not a lock-out: an attacker who knows the e-mail address could keep a real user out for
as long as a lock lasts. Here the wait never exceeds `max_backoff_seconds` after the last
failure, and while an attack goes on it paces the guesses at one per back-off (~1 440 a day
at 60 s) instead of stopping the user for hours; API keys and issued tokens are unaffected.
When Redis is unreachable the check is skipped (fail open), like the gateway's rate limits.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from redis.asyncio import Redis

from common.redis import ResilientRedis

# KEYS[1]: the account's hash {failures, next}; ARGV: free failures, max back-off (ms), window (ms).
# Redis' clock, so replicas agree. An allowed attempt past the free failures books the back-off
# at once, so concurrent attempts cannot slip through together.
_ATTEMPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'failures', 'next')
local failures = tonumber(state[1] or '0')
local free = tonumber(ARGV[1])
if failures < free then return {1, 0} end
local next_at = tonumber(state[2] or '0')
if now < next_at then return {0, next_at - now} end
local backoff = math.floor(math.min(1000 * 2 ^ math.min(failures - free, 30), tonumber(ARGV[2])))
redis.call('HSET', KEYS[1], 'next', now + backoff)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, 0}
"""

_FAILURE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local free = tonumber(ARGV[1])
if failures >= free then
  local backoff = math.floor(math.min(1000 * 2 ^ math.min(failures - free, 30), tonumber(ARGV[2])))
  redis.call('HSET', KEYS[1], 'next', now + backoff)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return failures
"""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_seconds: int = 0


def account_key(email: str) -> str:
    # Hashed: the state Redis needs no list of the e-mail addresses people tried.
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return f"loginfail:{digest}"


class LoginThrottle:
    def __init__(
        self, redis: ResilientRedis, *, free_failures: int, max_backoff_seconds: int, window_seconds: int
    ) -> None:
        self.redis = redis
        self.free_failures = free_failures
        self.max_backoff_seconds = max_backoff_seconds
        self.window_seconds = window_seconds
        self._attempt = redis.client.register_script(_ATTEMPT)
        self._failure = redis.client.register_script(_FAILURE)

    @property
    def _args(self) -> list[int]:
        return [self.free_failures, self.max_backoff_seconds * 1000, self.window_seconds * 1000]

    async def attempt(self, email: str) -> Verdict:
        """May a password be checked for this account now? Allowed when Redis is down."""

        async def run(_: Redis) -> list[int]:
            return list(await self._attempt(keys=[account_key(email)], args=self._args))

        result = await self.redis.call(run, [1, 0])
        allowed, wait_ms = (int(x) for x in result)
        return Verdict(bool(allowed), 0 if allowed else max(1, math.ceil(wait_ms / 1000)))

    async def failed(self, email: str) -> None:
        async def run(_: Redis) -> int:
            return int(await self._failure(keys=[account_key(email)], args=self._args))

        await self.redis.call(run, 0)

    async def succeeded(self, email: str) -> None:
        async def run(client: Redis) -> int:
            return int(await client.delete(account_key(email)))

        await self.redis.call(run, 0)
