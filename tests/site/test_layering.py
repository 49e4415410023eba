"""The house rules of DESIGN.md §3, checked on the real import graph (grimp, the graph library
import-linter is built on; it counts imports inside functions too, so a circle cannot hide
behind one).

- Floors: an app imports its own floor's apps or lower floors, never a higher one, directly
  or through a chain. 1: accounts, threads; 2: the run engine; 3: the features.
- No import circle of more than two modules anywhere in apps/ and deerflow_site/, and no
  circle between apps.
- Only app X imports ``apps.X.models``; the others call its services and selectors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOORS = {"accounts": 1, "threads": 1, "runs": 2}  # every other app is a feature: floor 3


def build_graph() -> grimp.ImportGraph:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph("apps", "deerflow_site", cache_dir=None)


def app_names() -> list[str]:
    return sorted(p.name for p in (ROOT / "apps").iterdir() if (p / "apps.py").exists())


def _app(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "apps" and len(parts) > 1 and parts[1] in set(app_names()) else None


def floor_breaks(graph: grimp.ImportGraph) -> dict[tuple[str, str], list[str]]:
    """{(importer app, imported app): example import lines} for each import of a higher floor."""
    found: dict[tuple[str, str], list[str]] = {}
    for importer in sorted(graph.modules):
        a = _app(importer)
        if a is None:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            b = _app(imported)
            if b is not None and b != a and FLOORS.get(b, 3) > FLOORS.get(a, 3):
                found.setdefault((a, b), []).append(f"{importer} -> {imported}")
    return found


def model_imports(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            parts = imported.split(".")
            if parts[0] == "apps" and len(parts) >= 3 and parts[2] == "models" and not importer.startswith(f"apps.{parts[1]}."):
                found.add((importer, ".".join(parts[:3])))
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def module_circles(graph: grimp.ImportGraph, *, longer_than: int = 2) -> list[list[str]]:
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    return [c for c in circles(edges) if len(c) > longer_than]


def app_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    edges: dict[str, set[str]] = {}
    for importer in graph.modules:
        a = _app(importer)
        for imported in graph.find_modules_directly_imported_by(importer):
            b = _app(imported)
            if a and b and a != b:
                edges.setdefault(a, set()).add(b)
    return circles(edges)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return build_graph()


def test_every_app_is_on_a_floor_and_imports_no_higher_floor(graph):
    assert {"accounts", "threads", "runs"} <= set(app_names())
    breaks = floor_breaks(graph)
    assert not breaks, "an app imports a higher floor (DESIGN.md §3):\n" + "\n".join(
        f"{a} -> {b}: {', '.join(lines[:3])}" for (a, b), lines in sorted(breaks.items()))


def test_no_import_circle_of_more_than_two_modules(graph):
    found = module_circles(graph)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_circle_between_apps(graph):
    found = app_circles(graph)
    assert not found, "apps that import each other:\n" + "\n".join(", ".join(c) for c in found)


def test_only_an_app_imports_its_models(graph):
    found = sorted(model_imports(graph))
    assert not found, "import another app's models; call its services or selectors instead:\n" + "\n".join(
        f"{importer} imports {imported}" for importer, imported in found)


def test_the_checks_catch_a_violation():
    graph = build_graph()
    # The engine reaching up into a feature, a three-module circle, another app's models.
    graph.add_import(importer="apps.runs.worker", imported="apps.memory.hooks")
    graph.add_import(importer="apps.runs.lifecycle", imported="apps.runs.worker")
    graph.add_import(importer="apps.runs.settle", imported="apps.runs.services")
    graph.add_import(importer="apps.skills.services", imported="apps.agents.models")
    assert ("runs", "memory") in floor_breaks(graph)
    assert any({"apps.runs.worker", "apps.runs.lifecycle"} <= set(c) for c in module_circles(graph))
    assert any({"runs", "memory"} <= set(c) for c in app_circles(graph))
    assert ("apps.skills.services", "apps.agents.models") in model_imports(graph)


def test_domain_errors_know_nothing_of_http(graph):
    # Services raise apps.errors (defined in harness.errors, which the embedded client raises
    # too); only the API's handler turns them into statuses.
    imported = graph.find_modules_directly_imported_by("apps.errors")
    assert imported <= {"harness", "harness.errors"}, f"apps/errors.py imports {sorted(imported)}"
    assert "from harness.errors import" in (ROOT / "apps" / "errors.py").read_text()
    assert [line for line in (ROOT / "harness" / "errors.py").read_text().splitlines()
            if line.startswith(("import ", "from "))] == ["from __future__ import annotations"]
    for source in ((ROOT / "apps" / "errors.py").read_text(), (ROOT / "harness" / "errors.py").read_text()):
        assert "status_code" not in source and "rest_framework" not in source and "django" not in source
