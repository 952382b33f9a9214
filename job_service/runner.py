"""Runs queued jobs, at most `concurrency` at once in this process.

A claimed job runs under a lease in Redis, renewed by a heartbeat every third of its length.
A job that is cancelled (or whose lease another process found expired) is abandoned at the
next heartbeat: its call is dropped and nothing of it is stored. The reaper, at start and
then every lease-third, queues again the jobs whose process died (`JobStore.reap`), so none
is lost silently: it runs again, or fails with the reason once it was started
`max_attempts` times."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass

from common.errors import ApiError, InternalError, JobResultTooLarge, JobStoreFull
from common.logging import request_id_var
from job_service.jobs import MIB, Limits, over_quota
from job_service.model import Account, Outcome
from job_service.replay import Replayer, error_fields
from job_service.store import JobStore, OverQuota

log = logging.getLogger("job_service.runner")


@dataclass(frozen=True)
class RunnerSettings:
    concurrency: int = 2
    lease_seconds: float = 15.0
    max_attempts: int = 3
    poll_seconds: float = 0.25
    # The largest result kept (JOB_MAX_RESULT_MB, uncompressed); larger fails the job. 0: no cap.
    max_result_bytes: int = 0
    # The tiers' quotas of the store (jobs.Limits), which a result must fit in too.
    limits: Limits | None = None


class Runner:
    def __init__(self, store: JobStore, replayer: Replayer, settings: RunnerSettings) -> None:
        self.store = store
        self.replayer = replayer
        self.settings = settings
        # One per process: a lease names the process holding it.
        self.worker = uuid.uuid4().hex
        self.running: dict[str, asyncio.Task[None]] = {}
        self.wake = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []

    @property
    def beat_seconds(self) -> float:
        return self.settings.lease_seconds / 3

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loops = [loop.create_task(self._claim_loop()), loop.create_task(self._reap_loop())]

    async def stop(self) -> None:
        """Stops claiming, drops the running calls and hands their jobs back to the queue, so
        another process (or this one, restarted) runs them at once; a job this process could
        not hand back waits for its lease to run out."""
        running = list(self.running)
        tasks = [*self._loops, *self.running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for job_id in running:
            with contextlib.suppress(ApiError):
                await self.store.release(job_id, self.worker)

    async def _claim_loop(self) -> None:
        while True:
            if len(self.running) < self.settings.concurrency and await self._claimed_one():
                continue
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.settings.poll_seconds)

    async def _claimed_one(self) -> bool:
        try:
            job_id = await self.store.claim(self.worker, self.settings.lease_seconds)
        except ApiError:  # Redis is down: the next turn tries again
            return False
        except Exception:  # never end the loop: no job would run in this process again
            log.exception("claiming a job failed")
            return False
        if job_id is None:
            return False
        task = asyncio.get_running_loop().create_task(self.execute(job_id))
        self.running[job_id] = task
        task.add_done_callback(lambda _: self._done(job_id))
        return True

    def _done(self, job_id: str) -> None:
        self.running.pop(job_id, None)
        self.wake.set()  # a slot is free

    async def _reap_loop(self) -> None:
        while True:
            try:
                moved = await self.store.reap(self.settings.max_attempts)
            except ApiError:  # Redis is down: the next turn tries again
                moved = []
            except Exception:  # never end the loop: interrupted jobs would wait forever
                log.exception("re-queueing interrupted jobs failed")
                moved = []
            if moved:
                log.warning("jobs whose process stopped while running them: %s", ", ".join(moved))
                self.wake.set()
            await asyncio.sleep(self.beat_seconds)

    async def execute(self, job_id: str) -> None:
        token = request_id_var.set(f"job-{job_id}")
        try:
            stored = await self.store.request(job_id)
            if stored is None:  # cancelled between the claim and now
                return
            call = asyncio.get_running_loop().create_task(self.replayer.run(*stored))
            try:
                held = await self._hold_lease(job_id, call)
            finally:
                call.cancel()  # when this task is cancelled (a stop), its call goes with it
            if held:
                await self._record(job_id, self.kept(outcome_of(call)), stored[0])
        except ApiError as exc:  # Redis went away: the lease runs out and the job runs again
            log.warning("job %s left to be run again: %s", job_id, exc)
        finally:
            request_id_var.reset(token)

    async def _hold_lease(self, job_id: str, call: asyncio.Task[Outcome]) -> bool:
        """Renews the lease until the call ends (True), or drops the call when the job is no
        longer this process's (False)."""
        while True:
            done, _ = await asyncio.wait({call}, timeout=self.beat_seconds)
            if done:
                return True
            if await self.store.heartbeat(job_id, self.worker, self.settings.lease_seconds) is False:
                log.info("job %s cancelled or taken over: its call is dropped", job_id)
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await call
                return False

    def kept(self, outcome: Outcome) -> Outcome:
        """The outcome, or the error of a result larger than a job may keep."""
        most = self.settings.max_result_bytes
        if outcome.result is None or not most or len(outcome.result) <= most:
            return outcome
        too_large = JobResultTooLarge(
            f"the operation answered {len(outcome.result)} bytes, but a job keeps at most {most // MIB} MiB of "
            "result: split the request (fewer lines or stops) and submit the parts as separate jobs"
        )
        return Outcome(error=error_fields(too_large))

    async def _record(self, job_id: str, outcome: Outcome, account: Account) -> None:
        limits = self.settings.limits
        quota, tier = limits.quota_bytes(account.tier) if limits is not None else (0, account.tier)
        status = "succeeded" if outcome.result is not None else "failed"
        try:
            stored = await self.store.finish(job_id, self.worker, outcome, quota)
        except OverQuota as exc:
            refused: ApiError = over_quota(tier, quota, exc.used, exc.needed, "the job's result")
            stored, status = await self.store.finish(job_id, self.worker, Outcome(error=error_fields(refused))), "failed"
        except JobStoreFull as exc:  # the result would not fit the store's share of the state Redis
            stored, status = await self.store.finish(job_id, self.worker, Outcome(error=error_fields(exc))), "failed"
        except ApiError:
            if outcome.result is None:
                raise
            # Redis refused the result (at its memory cap): the job fails with that reason.
            refused = JobStoreFull(
                f"the result ({len(outcome.result)} bytes) could not be stored, the job store is full"
            )
            stored, status = await self.store.finish(job_id, self.worker, Outcome(error=error_fields(refused))), "failed"
        log.info("job %s %s", job_id, status if stored else "finished after it was cancelled: not kept")


def outcome_of(call: asyncio.Task[Outcome]) -> Outcome:
    """The call's outcome; a fault of ours fails the job (logged), rather than leaving it to be
    re-run into the same fault until its attempts are used up."""
    try:
        return call.result()
    except Exception:
        log.exception("a job's call failed unexpectedly")
        return Outcome(error=error_fields(InternalError("the job failed unexpectedly")))
