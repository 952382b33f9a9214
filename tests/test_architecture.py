"""docs/architecture.md's drawing of the route service stays true to the code's imports
(issue 31): every arrow it lists is an import, and no import among the modules it draws runs
against its arrows."""

from __future__ import annotations

import re

import networkx as nx

from common.config import REPO_ROOT
from tests.test_import_graph import import_graph

BLOCK = re.compile(r"<!-- arrows: (?P<name>[\w.]+) -->\s*```\n(?P<arrows>.*?)```\s*<!-- /arrows -->", re.S)


def drawn_arrows(text: str) -> list[tuple[str, str]]:
    arrows = []
    for block in BLOCK.finditer(text):
        for line in block.group("arrows").strip().splitlines():
            source, _, target = (part.strip() for part in line.partition("->"))
            arrows.append((source, target))
    return arrows


def test_every_arrow_of_the_drawing_is_an_import_and_none_runs_back() -> None:
    arrows = drawn_arrows((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
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
