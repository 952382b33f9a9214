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

Each client address (as the gateway names it from TRUSTED_PROXIES) has a failure count too,
with more free failures (`address_free_failures`, default 10: several people behind one office
address mistype): an attacker trying ever new e-mails from few addresses paid a password hash
(~0.12 CPU-s) per guess and, at 4.5 guesses a second from each of three addresses, doubled
another account's login time (issue 29's campaign, bench/isolation.py). Past its free failures
an address waits the same back-off before its next check; a success does not clear it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from redis.asyncio import Redis

from common.redis import ResilientRedis

# KEYS: the throttled subjects' hashes {failures, next} (the account, and the client address when
# known); ARGV: each key's free failures, then the max back-off (ms) and the window (ms). Redis'
# clock, so replicas agree. An attempt is refused while any subject waits; an allowed attempt past
# a subject's free failures books its back-off at once, so concurrent attempts cannot slip through.
_ATTEMPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
local wait = 0
local booked = {}
for i = 1, n do
  local state = redis.call('HMGET', KEYS[i], 'failures', 'next')
  local over = tonumber(state[1] or '0') - tonumber(ARGV[i])
  if over >= 0 then
    local next_at = tonumber(state[2] or '0')
    if now < next_at then wait = math.max(wait, next_at - now) else booked[#booked + 1] = {KEYS[i], over} end
  end
end
if wait > 0 then return {0, wait} end
for _, b in ipairs(booked) do
  redis.call('HSET', b[1], 'next', now + math.floor(math.min(1000 * 2 ^ math.min(b[2], 30), tonumber(ARGV[n + 1]))))
  redis.call('PEXPIRE', b[1], ARGV[n + 2])
end
return {1, 0}
"""

_FAILURE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
for i = 1, n do
  local over = redis.call('HINCRBY', KEYS[i], 'failures', 1) - tonumber(ARGV[i])
  if over >= 0 then
    redis.call('HSET', KEYS[i], 'next', now + math.floor(math.min(1000 * 2 ^ math.min(over, 30), tonumber(ARGV[n + 1]))))
  end
  redis.call('PEXPIRE', KEYS[i], ARGV[n + 2])
end
return 1
"""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_seconds: int = 0


def account_key(email: str) -> str:
    # Hashed: the state Redis needs no list of the e-mail addresses people tried.
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return f"loginfail:{digest}"


def address_key(address: str) -> str:
    return f"loginfail:from:{hashlib.sha256(address.encode()).hexdigest()[:32]}"


class LoginThrottle:
    def __init__(
        self,
        redis: ResilientRedis,
        *,
        free_failures: int,
        max_backoff_seconds: int,
        window_seconds: int,
        address_free_failures: int = 0,
    ) -> None:
        self.redis = redis
        self.free_failures = free_failures
        self.address_free_failures = address_free_failures  # 0: addresses are not throttled
        self.max_backoff_seconds = max_backoff_seconds
        self.window_seconds = window_seconds
        self._attempt = redis.client.register_script(_ATTEMPT)
        self._failure = redis.client.register_script(_FAILURE)

    def _keys_and_args(self, email: str, address: str) -> tuple[list[str], list[int]]:
        keys, free = [account_key(email)], [self.free_failures]
        if address and self.address_free_failures:
            keys.append(address_key(address))
            free.append(self.address_free_failures)
        return keys, [*free, self.max_backoff_seconds * 1000, self.window_seconds * 1000]

    async def attempt(self, email: str, address: str = "") -> Verdict:
        """May a password be checked for this account, from this client address, now? Allowed
        when Redis is down."""
        keys, args = self._keys_and_args(email, address)

        async def run(_: Redis) -> list[int]:
            return list(await self._attempt(keys=keys, args=args))

        result = await self.redis.call(run, [1, 0])
        allowed, wait_ms = (int(x) for x in result)
        return Verdict(bool(allowed), 0 if allowed else max(1, math.ceil(wait_ms / 1000)))

    async def failed(self, email: str, address: str = "") -> None:
        keys, args = self._keys_and_args(email, address)

        async def run(_: Redis) -> int:
            return int(await self._failure(keys=keys, args=args))

        await self.redis.call(run, 0)

    async def succeeded(self, email: str) -> None:
        """Clears the account's count; the address's stays (an attacker's own account would
        otherwise wipe it between guesses)."""

        async def run(client: Redis) -> int:
            return int(await client.delete(account_key(email)))

        await self.redis.call(run, 0)
