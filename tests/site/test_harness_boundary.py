"""The harness never imports the server side (DESIGN.md §3)."""

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
FORBIDDEN = ("django", "rest_framework", "channels", "celery", "apps", "deerflow_site")


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def find_violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for lineno, module in _imports(tree):
            if module.split(".")[0] in FORBIDDEN:
                found.append(f"{path.relative_to(root.parent)}:{lineno} imports {module}")
    return found


def test_harness_imports_nothing_from_the_server():
    violations = find_violations(HARNESS)
    assert not violations, "harness/ must not import the server side:\n" + "\n".join(violations)


def test_the_check_catches_a_violation(tmp_path):
    pkg = tmp_path / "harness"
    pkg.mkdir()
    (pkg / "ok.py").write_text("import json\nfrom langgraph.graph import StateGraph\n")
    (pkg / "bad.py").write_text("import os\n\ndef f():\n    from django.conf import settings\n")
    (pkg / "worse.py").write_text("import apps.threads.models\n")
    assert find_violations(pkg) == ["harness/bad.py:4 imports django.conf", "harness/worse.py:1 imports apps.threads.models"]
