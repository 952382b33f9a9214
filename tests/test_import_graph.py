"""No import cycles in the platform's code (issue 31), counting the imports inside functions
too: a lazy import hides a cycle from Python, not from the reader."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from common.config import REPO_ROOT

PACKAGES = ("common", "gateway", "auth_service", "geo_service", "route_service", "optimize_service",
            "job_service", "launcher")  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The platform's modules a file imports anywhere in it (`from a import b` names a.b when
    that is a module, else a)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
    return found & modules


def import_graph() -> nx.DiGraph:
    files = {module_name(p): p for package in PACKAGES for p in (REPO_ROOT / package).rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for target in imported(ast.parse(path.read_text(encoding="utf-8")), set(files)):
            # a package's own __init__ importing its modules is how packages are made
            if target != name and not target.startswith(name + "."):
                graph.add_edge(name, target)
    return graph


def test_no_module_imports_itself_back_through_others() -> None:
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert cycles == [], [" -> ".join([*c, c[0]]) for c in cycles[:5]]


def test_the_graph_sees_lazy_imports() -> None:
    tree = ast.parse("def f():\n    from auth_service.postgres import PostgresDatabase\n")
    assert imported(tree, {"auth_service.postgres", "auth_service"}) == {"auth_service.postgres"}


def test_nothing_that_serves_imports_an_importer() -> None:
    """Importers live in `<service>.importing`, apart from serving code (issue 31): a service
    process never loads osmium, OSRM's tools or the index writer because of an import."""
    graph = import_graph()
    importing = {name for name in graph if ".importing" in name}
    assert {"route_service.importing.importer", "geo_service.importing.importer"} <= importing
    serving = [name for name in graph if name not in importing and not name.startswith(("launcher", "bench"))]
    leaks = sorted((source, target) for source in serving for target in graph.successors(source) if target in importing)
    assert leaks == [], leaks


def test_the_optimize_services_shared_modules_stand_below_both_products() -> None:
    """optimize_service's shared modules (costs, routing, scheduler, ...) import neither product,
    `stops` or `fleet`, and neither product imports the other (issue 57): only the service's top
    joins them."""
    top = {f"optimize_service.{name}" for name in ("__main__", "app", "handlers", "optimizer", "state")}

    def product(name: str) -> str | None:
        return next((p for p in ("optimize_service.stops", "optimize_service.fleet") if name.startswith(p)), None)

    graph = import_graph()
    upward = sorted((source, target) for source, target in graph.edges
                    if source.startswith("optimize_service") and source not in top
                    and product(target) not in (None, product(source)))  # fmt: skip
    assert upward == [], upward


def test_every_importer_is_built_on_the_template() -> None:
    from common.importing import Importer
    from geo_service.importing.importer import IndexImporter
    from route_service.importing.importer import MapImporter

    assert issubclass(MapImporter, Importer) and issubclass(IndexImporter, Importer)
    importers = [path.parent.parent.name for path in REPO_ROOT.glob("*/importing/__main__.py")]
    assert sorted(importers) == ["geo_service", "route_service"]
