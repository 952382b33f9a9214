"""Under CI=true a skipped test fails, unless the data lacks its case (tests/ci_skips.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.config import REPO_ROOT

SAMPLE = '''
import pytest
from tests.ci_skips import skip_for_data

@pytest.fixture
def browser():
    pytest.skip("headless Chromium is not installed")

def test_needs_a_browser(browser):
    pass

@pytest.mark.skipif(True, reason="PostgreSQL cannot be started")
def test_needs_postgres():
    pass

def test_needs_kubectl():
    pytest.skip("kubectl is missing")

def test_on_a_map_without_the_case():
    skip_for_data("no cut-off road on this map")

def test_that_runs():
    pass
'''


def outcomes(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(REPO_ROOT)
    command = [sys.executable, "-m", "pytest", "-p", "tests.ci_skips", "-p", "no:cacheprovider", "-rA", "-q",
               str(tmp_path / "test_sample.py")]  # fmt: skip
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_part_fails_and_a_data_skip_stays_a_skip(tmp_path: Path, ci: str) -> None:
    run = outcomes(tmp_path, ci)
    # a skip while setting up (a fixture, a skipif marker) reports as an error, in the test as a failure
    assert run.returncode == 1 and "1 failed, 1 passed, 1 skipped, 2 errors" in run.stdout, run.stdout
    assert "skipped under CI=true" in run.stdout and "headless Chromium is not installed" in run.stdout
    assert "ERROR test_sample.py::test_needs_postgres" in run.stdout


def test_elsewhere_every_skip_is_a_skip(tmp_path: Path) -> None:
    run = outcomes(tmp_path, None)
    assert run.returncode == 0 and "1 passed, 4 skipped" in run.stdout, run.stdout


@pytest.mark.parametrize(("ci", "code"), [("true", 1), (None, 0)])
def test_the_browser_install_fails_loudly_under_ci(tmp_path: Path, ci: str | None, code: int) -> None:
    """Neither Chromium nor apt-get on PATH: under CI the make target fails, elsewhere it says why."""
    env = {"PATH": str(tmp_path), **({"CI": ci} if ci else {})}
    script = REPO_ROOT / "scripts" / "install-chromium.sh"
    run = subprocess.run(["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == code, run.stderr
    assert "browser tests cannot run: chromium and chromedriver are missing" in run.stderr
