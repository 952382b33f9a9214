"""Under CI=true a skipped test is a failed one (issue 31: CI runs everything or fails).

Every test that needs a real part — a browser, PostgreSQL, Redis, kubectl, a vendored library —
either runs or says why it cannot; on a developer's machine that is a skip, under CI a failure,
decided here and nowhere else, whichever way the skip was raised (`pytest.skip` in a test or a
fixture, a `skipif` marker). The one exception is a skip for the data: a map on which the
situation a test needs does not occur (`skip_for_data`), which no installation can change.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import NoReturn

import pytest

DATA_SKIP = "not in this map's data: "


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_for_data(reason: str) -> NoReturn:
    """Skip because the data lacks the case, never because a part is missing."""
    pytest.skip(DATA_SKIP + reason)


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if not (report.skipped and running_in_ci()) or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    if reason.startswith(DATA_SKIP):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, where every part must be installed and run: {reason}"
