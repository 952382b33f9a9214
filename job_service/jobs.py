"""The jobs of an account: submit within the tier's limits (jobs at once, bytes kept) once its
owning service has priced and charged it, look at, cancel, list. A job of another account is answered exactly as one that does not exist (404),
so ids reveal nothing."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from common.errors import Conflict, JobQuotaExceeded, NotFound, TooManyJobs, TooManyResultReads
from common.tiers import TierLimits
from job_service.model import ACTIVE, SUCCEEDED, Account, Job, StoredRequest
from job_service.store import JobStore, OverQuota

MIB = 1 << 20
# A request's price at submission: (the units paid, 0 unpaid; the RateLimit-Cost headers); raises its refusal.
Pricer = Callable[[Account, StoredRequest], Awaitable[tuple[int, dict[str, str]]]]


async def unpriced(account: Account, request: StoredRequest) -> tuple[int, dict[str, str]]:
    """Without an owning service to ask: stored unpaid, charged into debt when it runs."""
    return 0, {}


@dataclass(frozen=True)
class Limits:
    per_tier: TierLimits
    # Retry-After of a 429: about when a job of the account may have finished.
    retry_after_seconds: int = 10
    # MiB of the store an account's jobs may hold (JOB_STORE_QUOTAS); None: no quota.
    store_mib: TierLimits | None = None
    # Results an account may read at once (JOB_RESULT_READS); None: no cap.
    reads: TierLimits | None = None

    def quota_bytes(self, tier: str) -> tuple[int, str]:
        """The tier's quota in bytes (0: none) and the tier it applies to."""
        if self.store_mib is None:
            return 0, tier
        mib, applies = self.store_mib.for_tier(tier)
        return mib * MIB, applies


def over_quota(tier: str, quota_bytes: int, used: int, needed: int, what: str) -> JobQuotaExceeded:
    return JobQuotaExceeded(
        f"{what} ({needed} bytes compressed) would take this account's jobs past the {tier} tier's "
        f"{quota_bytes // MIB} MiB of the job store ({used} bytes held by its other jobs): delete finished "
        "jobs (DELETE /v1/jobs/{id}) or wait until they expire"
    )


class Jobs:
    def __init__(
        self, store: JobStore, limits: Limits, on_submit: Callable[[], None] = lambda: None, price: Pricer = unpriced
    ) -> None:
        self.store = store
        self.limits = limits
        self.on_submit = on_submit  # wakes this process's runner at once
        self.price = price  # the owning service's price (job_service.replay.Replayer.price)

    async def submit_priced(self, account: Account, request: StoredRequest) -> tuple[Job, dict[str, str]]:
        """Refused at once while the store is full; then priced and charged by the owning
        service (its refusal raised: 413 over the tier's cap, 429 an empty budget), then stored.
        The job and what it cost (the RateLimit-Cost headers)."""
        await self.store.check_room()
        paid, headers = await self.price(account, request)
        return await self.submit(account, replace(request, paid=paid)), headers

    async def submit(self, account: Account, request: StoredRequest) -> Job:
        await self.store.check_room()
        limit, tier = self.limits.per_tier.for_tier(account.tier)
        quota, quota_tier = self.limits.quota_bytes(account.tier)
        job_id = uuid.uuid4().hex
        try:
            stored = await self.store.submit(job_id, account, request, limit, quota)
        except OverQuota as exc:
            raise over_quota(quota_tier, quota, exc.used, exc.needed, "the job's request") from exc
        if not stored:
            raise TooManyJobs(
                f"the {tier} tier may have {limit} jobs queued or running at once, and this account has {limit}. "
                "Wait for one to finish or cancel one (DELETE /v1/jobs/{id})",
                retry_after_s=self.limits.retry_after_seconds,
            )
        self.on_submit()
        return await self.get(account, job_id)

    async def get(self, account: Account, job_id: str) -> Job:
        job = await self.store.get(job_id)
        if job is None or job.owner != account.subject:
            raise NotFound(f"no job {job_id} (finished jobs are kept for a limited time)")
        return job

    @contextlib.asynccontextmanager
    async def reading(self, account: Account, job: Job) -> AsyncIterator[AsyncIterator[bytes]]:
        """The succeeded job's result, in chunks as it is read, while the account holds one of
        its tier's reads (429 when they are all taken)."""
        if job.status != SUCCEEDED:
            raise Conflict(f"job {job.id} has no result: it is {job.status}")
        limit, tier = self.limits.reads.for_tier(account.tier) if self.limits.reads else (0, account.tier)
        ticket = await self.store.start_read(account.subject, limit) if limit else ""
        if ticket is None:
            raise TooManyResultReads(
                f"the {tier} tier may read {limit} job results at once, and this account reads {limit} now: "
                "retry when one has ended"
            )
        try:
            yield self.store.result(job.id, account.subject, ticket)
        finally:
            if ticket:
                await self.store.end_read(account.subject, ticket)

    async def cancel(self, account: Account, job_id: str) -> Job | None:
        """A queued or running job is cancelled (and returned), a finished one deleted (None)."""
        job = await self.get(account, job_id)
        if job.status in ACTIVE:
            await self.store.cancel(job_id)  # or it ended meanwhile: it is then shown as it ended
            return await self.get(account, job_id)
        await self.store.delete(job_id, account.subject)
        return None

    async def list(self, account: Account) -> list[Job]:
        return await self.store.jobs_of(account.subject)
