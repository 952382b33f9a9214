"""The session's imports started ahead (tests/imports_ahead.py): a fixture gets what ran in the
background process, or runs its import itself when none was started for it."""

from __future__ import annotations

import fcntl
import os
import pickle
from pathlib import Path

import pytest

from tests.imports_ahead import ImportsAhead


def fail_like_an_import(message: str) -> None:
    raise RuntimeError(message)


def test_a_started_import_runs_in_the_background_and_its_result_is_taken_once(tmp_path: Path) -> None:
    ahead = ImportsAhead(tmp_path)
    try:
        ahead.start("pid", os.getpid)
        assert ahead.keys == ["pid"]
        background = ahead.result("pid", lambda: -1)
        assert background not in (os.getpid(), -1)  # another process's
        assert ahead.result("pid", os.getpid) == background  # made once for the run
    finally:
        ahead.close()


def test_an_import_not_started_runs_here_and_a_failed_one_fails_its_fixture(tmp_path: Path) -> None:
    ahead = ImportsAhead(tmp_path)
    try:
        assert ahead.result("never started", lambda: "here") == "here"
        ahead.start("broken", fail_like_an_import, "osrm extract failed")
        with pytest.raises(RuntimeError, match="osrm extract failed"):
            ahead.result("broken", lambda: "here")
    finally:
        ahead.close()


def test_an_import_is_made_once_for_every_worker_of_the_run(tmp_path: Path) -> None:
    """Two workers of a pytest-xdist run (two ImportsAhead on one folder): the second takes the
    first's import, started ahead or not; a failed one is made again by the next to ask."""
    first, second = ImportsAhead(tmp_path), ImportsAhead(tmp_path)
    try:
        first.start("pid", os.getpid)
        made = first.result("pid", lambda: -1)
        assert second.result("pid", os.getpid) == made != os.getpid()
        with pytest.raises(RuntimeError, match="extract failed"):
            first.result("broken", lambda: fail_like_an_import("extract failed"))
        assert second.result("broken", lambda: "made again") == "made again"
    finally:
        first.close()
        second.close()


def test_an_import_started_ahead_while_another_worker_makes_it_is_taken_from_that_worker(tmp_path: Path) -> None:
    """The background process does not wait for an import another worker is making (it makes
    the next one meanwhile); the fixture then waits for that worker's and takes it."""
    ahead = ImportsAhead(tmp_path)
    try:
        with open(tmp_path / "pid.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker is making it
            ahead.start("pid", os.getpid)
            ahead.start("next", os.getpid)
            made_next = ahead.result("next", lambda: -1)
            assert made_next not in (os.getpid(), -1)  # made meanwhile, in the background
            (tmp_path / "pid.pickle").write_bytes(pickle.dumps("the other worker's"))
        assert ahead.result("pid", lambda: "made here") == "the other worker's"
    finally:
        ahead.close()
