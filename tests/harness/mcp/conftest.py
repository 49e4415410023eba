"""MCP test helpers: an extensions file of our own, real servers, a clean runtime per test."""

import json
import sys
from pathlib import Path

import pytest

from harness.config import parse_config
from tests.support.lead_agent import MODEL_YAML
from tests.support.waiting import HANG_SECONDS

SERVERS = str(Path(__file__).with_name("servers.py"))
BASE = MODEL_YAML


def stdio_server(kind: str = "calc", **extra) -> dict:
    # The product's 30 s to start is too short for a Python server importing FastMCP on a busy
    # machine; here it only guards against a hang (a test of the timeout sets its own).
    return {"type": "stdio", "command": sys.executable, "args": [SERVERS, "stdio", kind], "connect_timeout": HANG_SECONDS, **extra}


def app(allow_loopback: bool = True):
    return parse_config(BASE + ("web:\n  allowed_private_networks: ['127.0.0.0/8']\n" if allow_loopback else ""))


class ExtFile:
    def __init__(self, path: Path):
        self.path = path

    def write(self, servers: dict, **rest) -> None:
        self.path.write_text(json.dumps({"mcpServers": servers, **rest}))


@pytest.fixture
def ext(tmp_path, monkeypatch):
    from harness.mcp import reset_mcp

    path = tmp_path / "extensions_config.json"
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(path))
    reset_mcp()
    yield ExtFile(path)
    reset_mcp()
