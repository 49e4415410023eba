"""deerflow_cli runs where no Django is set up: it never imports the server's code, and a
server session does not even load the agent framework (the embedded side loads it)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "rest_framework", "channels", "celery", "deerflow_site", "apps")


def test_the_console_imports_nothing_of_the_server():
    found = []
    for path in sorted((ROOT / "deerflow_cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}:{node.lineno} {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert found == []


def test_a_server_session_loads_no_agent_framework():
    code = ("import sys, deerflow_cli.__main__\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'harness', 'django', 'langchain', 'langgraph'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
