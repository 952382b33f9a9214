"""docs/architecture.md stays true: every repository file it names exists."""

from __future__ import annotations

import re

from common.config import REPO_ROOT

DOC = REPO_ROOT / "docs" / "architecture.md"
# `name.py`, `dir/name.py` or `dir/` in backticks or in the drawings: a path in the repository.
PATH = re.compile(r"\b((?:[a-z_]+/)*[a-z_]+(?:\.py|\.md|/))")
ROOTS = ("common", "gateway", "auth_service", "geo_service", "route_service", "optimize_service", "job_service", "launcher", "tests", "docs")


def named_paths(text: str) -> set[str]:
    return {match for match in PATH.findall(text) if match.split("/")[0] in ROOTS}


def test_every_path_in_the_architecture_doc_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    paths = named_paths(text)
    assert len(paths) > 30  # the doc names its modules by path
    missing = sorted(path for path in paths if not (REPO_ROOT / path).exists())
    assert missing == []


def test_route_service_modules_in_the_drawing_exist() -> None:
    # Inside the route service's drawing, modules are named relative to route_service/.
    drawing = DOC.read_text(encoding="utf-8").split("## Inside the route service")[1].split("## The path")[0]
    names = set(re.findall(r"\b((?:providers/|detour/)?[a-z_]+\.py)\b", drawing))
    missing = sorted(
        name for name in names
        if not (REPO_ROOT / "route_service" / name).exists() and not (REPO_ROOT / name).exists()
        and not (REPO_ROOT / "geo_service" / name).exists() and not (REPO_ROOT / "common" / name).exists()
    )  # fmt: skip
    assert missing == []
