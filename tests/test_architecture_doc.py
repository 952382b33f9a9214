"""docs/architecture.md stays true: every repository file it names exists, and the route
service drawing's arrows are the code's imports, none running back (issue 31)."""

from __future__ import annotations

import re

import networkx as nx

from common.config import REPO_ROOT
from tests.test_import_graph import import_graph

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
    names = set(re.findall(r"\b((?:providers/|detour/|importing/)?[a-z_]+\.py)\b", drawing))
    missing = sorted(
        name for name in names
        if not (REPO_ROOT / "route_service" / name).exists() and not (REPO_ROOT / name).exists()
        and not (REPO_ROOT / "geo_service" / name).exists() and not (REPO_ROOT / "common" / name).exists()
    )  # fmt: skip
    assert missing == []


BLOCK = re.compile(r"<!-- arrows: (?P<name>[\w.]+) -->\s*```\n(?P<arrows>.*?)```\s*<!-- /arrows -->", re.S)


def drawn_arrows(text: str) -> list[tuple[str, str]]:
    arrows = []
    for block in BLOCK.finditer(text):
        for line in block.group("arrows").strip().splitlines():
            source, _, target = (part.strip() for part in line.partition("->"))
            arrows.append((source, target))
    return arrows


def test_every_arrow_of_the_drawing_is_an_import_and_none_runs_back() -> None:
    arrows = drawn_arrows(DOC.read_text(encoding="utf-8"))
    assert len(arrows) >= 20, "the drawing's arrows are missing from docs/architecture.md"
    code = import_graph()
    missing = [f"{a} -> {b}" for a, b in arrows if not code.has_edge(a, b)]
    assert missing == [], f"drawn but not imported: {missing}"
    drawn = nx.DiGraph(arrows)
    # the drawing's order: a module may import what stands below it, never what stands above
    below = {node: nx.descendants(drawn, node) for node in drawn}
    back = [f"{a} -> {b}" for a, b in code.subgraph(drawn.nodes).edges() if a in below.get(b, set())]
    assert back == [], f"imports against the drawing: {back}"


def test_an_arrow_that_is_no_import_is_found() -> None:
    text = "<!-- arrows: x -->\n```\nroute_service.model -> route_service.handlers\n```\n<!-- /arrows -->"
    assert drawn_arrows(text) == [("route_service.model", "route_service.handlers")]
    assert not import_graph().has_edge("route_service.model", "route_service.handlers")
