"""Route service settings from the environment."""

from __future__ import annotations

import pytest

from route_service import config as route_config
from route_service.config import RouteConfig


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 2), (8, 2), (None, 1)])
def test_two_workers_where_there_are_two_cores(monkeypatch: pytest.MonkeyPatch, cores: int | None, expected: int) -> None:
    monkeypatch.delenv("ROUTE_SERVICE_WORKERS", raising=False)
    monkeypatch.setattr(route_config.os, "cpu_count", lambda: cores)
    assert RouteConfig.from_env().workers == expected


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3), ("0", 1), ("-4", 1)])
def test_workers_setting_wins(monkeypatch: pytest.MonkeyPatch, value: str, expected: int) -> None:
    monkeypatch.setenv("ROUTE_SERVICE_WORKERS", value)
    assert RouteConfig.from_env().workers == expected
