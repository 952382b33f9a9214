"""Process pools that start over (common.pools): a killed pool process fails only the calls it
had, with a typed 503; the next calls get a new pool; pool processes end with their service."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor

import pytest

from common.config import REPO_ROOT
from common.errors import ServiceUnavailable
from common.pools import POOL_RESTARTS, RestartingPool, SharedThreads
from common.processes import start_pool_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")


def new_pool(processes: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=processes, mp_context=multiprocessing.get_context("spawn"), initializer=start_pool_process
    )


@pytest.fixture
async def pool() -> AsyncIterator[RestartingPool]:
    restarting = RestartingPool("test", lambda: new_pool(1))
    try:
        yield restarting
    finally:
        restarting.shutdown(wait=False)


def wait_broken(pool: RestartingPool) -> None:
    """Until the executor has noticed that its process died (its own thread does, not the loop)."""
    deadline = time.monotonic() + 10
    while not getattr(pool.executor, "_broken", False):
        assert time.monotonic() < deadline, "the pool did not notice its dead process"
        time.sleep(0.02)


async def test_the_call_in_a_killed_process_fails_with_503_and_the_next_one_succeeds(pool: RestartingPool) -> None:
    before = POOL_RESTARTS.labels("test")._value.get()
    child = await pool.run(os.getpid)
    in_flight = asyncio.ensure_future(pool.run(time.sleep, 30))
    await asyncio.sleep(0.3)  # handed to the child
    os.kill(child, signal.SIGKILL)
    with pytest.raises(ServiceUnavailable) as failed:
        await asyncio.wait_for(in_flight, timeout=10)
    assert failed.value.status == 503 and failed.value.code == "ERROR_SERVICE_UNAVAILABLE"
    assert failed.value.headers == {"Retry-After": "1"} and "test process ended" in failed.value.detail
    assert pool.restarts == 1 and POOL_RESTARTS.labels("test")._value.get() == before + 1
    replacement = await asyncio.wait_for(pool.run(os.getpid), timeout=30)
    assert replacement != child and pool.restarts == 1


async def test_calls_that_saw_the_same_death_replace_the_pool_once() -> None:
    pool = RestartingPool("test", lambda: new_pool(2))
    try:
        await asyncio.gather(pool.run(time.sleep, 0.2), pool.run(time.sleep, 0.2))  # both processes started
        children = list(pool.executor._processes)  # type: ignore[attr-defined]
        calls = [asyncio.ensure_future(pool.run(time.sleep, 30)) for _ in range(2)]
        await asyncio.sleep(0.3)
        os.kill(children[0], signal.SIGKILL)
        results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), timeout=10)
        assert all(isinstance(result, ServiceUnavailable) for result in results)
        assert pool.restarts == 1
        assert await asyncio.wait_for(pool.run(pow, 2, 10), timeout=30) == 1024
    finally:
        pool.shutdown(wait=False)


async def test_a_process_that_died_while_idle_costs_no_call(pool: RestartingPool) -> None:
    child = await pool.run(os.getpid)
    os.kill(child, signal.SIGKILL)
    wait_broken(pool)
    assert await asyncio.wait_for(pool.run(os.getpid), timeout=30) != child
    assert pool.restarts == 1


def test_pool_processes_end_with_the_process_that_started_them() -> None:
    # A service killed by SIGKILL cannot stop its pool: the pool processes must go by themselves.
    script = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from common.processes import start_pool_process
if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=start_pool_process)
    print(pool.submit(os.getpid).result(), flush=True)
    time.sleep(60)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    service = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE)
    try:
        assert service.stdout is not None
        child = int(service.stdout.readline())
        service.kill()
        service.wait(timeout=10)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{child}"), "the pool process outlived its service"
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()


# ---------------------------------------------------------------- threads shared between accounts (issue 55)


async def test_an_account_s_calls_take_turns_so_another_account_finds_a_thread() -> None:
    threads = SharedThreads("test-shared", threads=2, share=1)
    release, two_started = threading.Event(), threading.Event()
    started: list[str] = []

    def work(name: str) -> Callable[[threading.Event], str]:
        def run(_: threading.Event) -> str:
            started.append(name)
            if len(started) == 2:
                two_started.set()
            release.wait(10)
            return name

        return run

    try:
        first = asyncio.ensure_future(threads.run("a", work("a1")))
        second = asyncio.ensure_future(threads.run("a", work("a2")))
        other = asyncio.ensure_future(threads.run("b", work("b1")))
        await asyncio.to_thread(two_started.wait, 10)
        assert sorted(started) == ["a1", "b1"]  # a's second call waits for its first, not b's
        release.set()
        assert await asyncio.gather(first, second, other) == ["a1", "a2", "b1"]
    finally:
        release.set()
        threads.shutdown()


async def test_a_call_whose_client_went_is_told_to_stop() -> None:
    threads = SharedThreads("test-shared", threads=1)
    running, stopped = threading.Event(), threading.Event()

    def work(stop: threading.Event) -> None:
        running.set()
        if stop.wait(10):
            stopped.set()

    try:
        call = asyncio.ensure_future(threads.run("a", work))
        await asyncio.to_thread(running.wait, 10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert stopped.is_set()  # the work saw its stop event before the call ended
        assert await threads.run("a", lambda _: "next") == "next"  # the thread and the account's turn are free
    finally:
        threads.shutdown()
