"""Every service has the same skeleton (issue 31): knowing one service means knowing all."""

from __future__ import annotations

import ast

import pytest

from common.config import REPO_ROOT

SERVICES = ("auth_service", "geo_service", "route_service", "optimize_service", "job_service")
EVERY_PROCESS = (*SERVICES, "gateway")
SKELETON = ("__main__.py", "config.py", "app.py", "handlers.py", "state.py")
# The gateway forwards bytes: its route table (gateway/routes.py) is its parsing, and its two
# local answers are built in its handlers. The optimize service's products have their own.
ANSWERING = {
    "auth_service": [""], "geo_service": [""], "route_service": [""], "job_service": [""],
    "optimize_service": ["stops/", "fleet/"],
}  # fmt: skip


@pytest.mark.parametrize("service", EVERY_PROCESS)
def test_every_process_has_the_skeleton(service: str) -> None:
    missing = [name for name in SKELETON if not (REPO_ROOT / service / name).is_file()]
    assert missing == []


@pytest.mark.parametrize("service", SERVICES)
def test_every_service_parses_and_formats_in_their_own_modules(service: str) -> None:
    missing = [
        f"{place}{name}"
        for place in ANSWERING[service]
        for name in ("parsing.py", "formatter.py")
        if not (REPO_ROOT / service / place / name).is_file()
    ]
    assert missing == []


@pytest.mark.parametrize("service", EVERY_PROCESS)
def test_handlers_hold_no_state(service: str) -> None:
    """No app key, module-level mutable or class in a handlers module: what a service holds is
    its state.py's."""
    for path in (REPO_ROOT / service).glob("*handlers.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        holders = [
            ast.unparse(node)[:60]
            for node in tree.body
            if isinstance(node, ast.ClassDef) or (isinstance(node, ast.AnnAssign | ast.Assign) and "AppKey" in ast.unparse(node))
        ]
        assert holders == [], path.name
