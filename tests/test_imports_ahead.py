"""The session's imports started ahead (tests/imports_ahead.py): a fixture gets what ran in the
background process, or runs its import itself when none was started for it."""

from __future__ import annotations

import os

import pytest

from tests.imports_ahead import ImportsAhead


def fail_like_an_import(message: str) -> None:
    raise RuntimeError(message)


def test_a_started_import_runs_in_the_background_and_its_result_is_taken_once() -> None:
    ahead = ImportsAhead()
    try:
        ahead.start("pid", os.getpid)
        assert ahead.keys == ["pid"]
        assert ahead.result("pid", lambda: -1) not in (os.getpid(), -1)  # another process's
        assert ahead.result("pid", os.getpid) == os.getpid()  # taken: the next asks run here
    finally:
        ahead.close()


def test_an_import_not_started_runs_here_and_a_failed_one_fails_its_fixture() -> None:
    ahead = ImportsAhead()
    try:
        assert ahead.result("never started", lambda: "here") == "here"
        ahead.start("broken", fail_like_an_import, "osrm extract failed")
        with pytest.raises(RuntimeError, match="osrm extract failed"):
            ahead.result("broken", lambda: "here")
    finally:
        ahead.close()
