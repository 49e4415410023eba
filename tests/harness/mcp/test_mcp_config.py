"""extensions_config.json: DeerFlow's keys load, a missing $VAR stays with its server, and
an edit reaches another process without a restart."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.config import ConfigError
from harness.config.extensions import parse_extensions
from tests.harness.mcp.conftest import stdio_server

FIXTURE = Path(__file__).parents[2] / "fixtures" / "deerflow_extensions_config.json"


def test_a_deerflow_extensions_file_loads_unchanged():
    config = parse_extensions(FIXTURE.read_text())
    servers = config.mcp_servers
    assert set(servers) == {"files", "gh", "events", "tickets", "latex"}
    assert servers["events"].oauth.scope == "mcp.read mcp.write" and servers["events"].oauth.refresh_skew_seconds == 60
    assert servers["events"].tools.deny == ["delete_*"] and not servers["events"].tools.permits("delete_all")
    assert servers["events"].tools.tool_settings("search_events") == {"routing": {"keywords": ["events"]}}
    assert servers["tickets"].tool_call_timeout == 60
    assert servers["latex"].enabled is False
    # a missing variable is that server's problem, reported when it connects
    assert "DF_TEST_UNSET_GITHUB_TOKEN is not set" in servers["gh"].unresolved
    assert servers["files"].unresolved is None


def test_the_older_transport_key_is_read_as_type():
    config = parse_extensions(json.dumps({"mcpServers": {"gh": {"transport": "sse", "url": "https://a/sse"}}}))
    assert config.mcp_servers["gh"].type == "sse"


def test_a_bad_entry_names_the_server_and_field():
    with pytest.raises(ConfigError, match=r"mcpServers.x.oauth"):
        parse_extensions(json.dumps({"mcpServers": {"x": {"type": "http", "url": "https://a/mcp", "oauth": {"grant_type": "password"}}}}))
    with pytest.raises(ConfigError, match=r"mcpServers.y.tools.deny"):
        parse_extensions(json.dumps({"mcpServers": {"y": {"command": "x", "tools": {"deny": "all"}}}}))


def test_a_config_edit_is_picked_up_by_a_second_process_without_restart(tmp_path):
    path = tmp_path / "extensions_config.json"
    path.write_text(json.dumps({"mcpServers": {}}))
    script = textwrap.dedent("""
        import sys
        from harness.mcp import get_mcp_tools
        for line in sys.stdin:
            print(sorted(t.name for t in get_mcp_tools()), flush=True)
    """)
    env = {**__import__("os").environ, "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(path)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env, cwd=Path(__file__).parents[3])
    try:
        def ask() -> str:
            proc.stdin.write("\n")
            proc.stdin.flush()
            return proc.stdout.readline().strip()

        assert ask() == "[]"
        path.write_text(json.dumps({"mcpServers": {"calc": stdio_server(tools={"allow": ["add"]})}}))
        assert ask() == "['add']"
        path.write_text(json.dumps({"mcpServers": {"calc": stdio_server(tools={"allow": ["add", "where"]})}}))
        assert ask() == "['add', 'where']"
        path.write_text(json.dumps({"mcpServers": {"calc": stdio_server(enabled=False)}}))
        assert ask() == "[]"
    finally:
        proc.stdin.close()
        proc.wait(30)
