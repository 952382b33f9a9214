"""A job's request sent to the service that owns the operation, on the same path, as the gateway
would have forwarded it (the caller's subject and tier with it): at submission for its price
only (`Replayer.price`, common.admission), then replayed to run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from common.admission import INTERNAL_JOB_HEADER, JOB_PAID, JOB_PRICE_ONLY
from common.client import Reply, ServiceClient
from common.errors import ApiError, GatewayTimeout
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from job_service.model import BY_NAME, Account, Outcome, StoredRequest

log = logging.getLogger("job_service.replay")

# Answers that say "not now" rather than "never": the call is made again after a pause (the
# service's Retry-After when it gives one), up to RETRIES times within the same attempt.
RETRYABLE_STATUSES = frozenset({502, 503, 504})
RETRIES = 5
MAX_PAUSE_SECONDS = 30.0
# A price-only call parses and prices, no more: a 16 MiB body's parse is seconds, not minutes.
PRICE_TIMEOUT_SECONDS = 60.0
# What a price's answer or refusal tells the client (common.admission).
PRICE_HEADERS = ("RateLimit-Cost", "RateLimit-Cost-Limit", "RateLimit-Cost-Remaining", "Retry-After")


def replay_headers(account: Account, request: StoredRequest, job: str = "") -> dict[str, str]:
    """As the gateway forwards the caller, and marked as a job's (common.admission): `job`
    JOB_PRICE_ONLY at submission (checked and charged, refusable, no work); a paid job's replay
    is not charged again, an unpaid one's is charged into debt; neither is ever refused, nor
    holds one of the account's heavy slots."""
    headers = {
        "Content-Type": request.content_type,
        INTERNAL_SUBJECT_HEADER: account.subject,
        INTERNAL_TIER_HEADER: account.tier,
        INTERNAL_JOB_HEADER: job or (f"{JOB_PAID}:{request.paid}" if request.paid else "1"),
    }
    if request.disposition:
        headers["Content-Disposition"] = request.disposition
    return headers


def replay_path(request: StoredRequest) -> str:
    path = BY_NAME[request.operation].path
    return f"{path}?{urlencode(request.query)}" if request.query else path


def error_fields(error: ApiError) -> dict[str, Any]:
    """A failed job's `error`: what the synchronous call's problem body would have said."""
    return {
        "status": error.status,
        "code": error.code,
        "type": error.violations[0].type if error.violations else error.type,
        "title": error.title,
        "detail": error.detail,
    }


def pause(attempt: int, retry_after: str | None) -> float:
    """Seconds before the next try: the service's Retry-After, else 1, 2, 4 … s."""
    try:
        seconds = float(retry_after) if retry_after else 2.0**attempt
    except ValueError:
        seconds = 2.0**attempt
    return min(MAX_PAUSE_SECONDS, max(0.5, seconds))


class Replayer:
    """One `ServiceClient` per owning service, with the jobs' long timeout."""

    def __init__(self, clients: Mapping[str, ServiceClient], timeout_seconds: float) -> None:
        self.clients = clients
        self.timeout_seconds = timeout_seconds

    async def run(self, account: Account, request: StoredRequest) -> Outcome:
        client = self.clients[BY_NAME[request.operation].service]
        for attempt in range(RETRIES + 1):
            try:
                reply = await self.call(client, account, request)
            except GatewayTimeout as exc:  # the long timeout passed: another try would too
                return Outcome(error=error_fields(exc))
            except ApiError as exc:  # unreachable or a broken answer: perhaps restarting
                if attempt == RETRIES:
                    return Outcome(error=error_fields(exc))
                await asyncio.sleep(pause(attempt, None))
                continue
            if reply.status not in RETRYABLE_STATUSES or attempt == RETRIES:
                return self.outcome(client, reply)
            await asyncio.sleep(pause(attempt, reply.headers.get("Retry-After")))
        raise AssertionError("unreachable: the last try returns")

    async def call(self, client: ServiceClient, account: Account, request: StoredRequest, job: str = "") -> Reply:
        return await client.call(
            "POST",
            replay_path(request),
            body=request.body,
            extra_headers=replay_headers(account, request, job),
            timeout_seconds=min(self.timeout_seconds, PRICE_TIMEOUT_SECONDS) if job else self.timeout_seconds,
        )

    async def price(self, account: Account, request: StoredRequest) -> tuple[int, dict[str, str]]:
        """At submission: the owning service prices the request and charges the account, or
        refuses it (its 4xx raised: over the tier's cap 413, an empty budget 429, a request it
        cannot read 400). (the units paid, the RateLimit-Cost headers). When the service cannot answer
        (5xx, unreachable), the job is stored unpaid, as before (fail open, like admission)."""
        client = self.clients[BY_NAME[request.operation].service]
        try:
            reply = await self.call(client, account, request, JOB_PRICE_ONLY)
        except ApiError as exc:
            log.warning("job not priced at submission, stored unpaid: %s", exc.detail)
            return 0, {}
        if reply.status >= 500:
            log.warning("job not priced at submission (%d), stored unpaid", reply.status)
            return 0, {}
        headers = {name: reply.headers[name] for name in PRICE_HEADERS if name in reply.headers}
        if reply.status >= 300:
            refused = client.upstream_error(reply.status, client.parsed(reply))
            refused.headers.update(headers)
            raise refused
        paid = headers.get("RateLimit-Cost", "1")
        return max(1, int(paid) if paid.isdigit() else 1), headers

    @staticmethod
    def outcome(client: ServiceClient, reply: Reply) -> Outcome:
        if reply.status < 300:
            return Outcome(result=reply.body, result_type=reply.headers.get("Content-Type", "application/json"))
        try:
            error = client.upstream_error(reply.status, client.parsed(reply))
        except ApiError as exc:  # not JSON: a broken answer
            error = exc
        log.info("job call answered %d: %s", reply.status, error.detail)
        return Outcome(error=error_fields(error))
