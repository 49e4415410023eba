"""MCP tools against real FastMCP servers over stdio and streamable HTTP."""

import asyncio
import sys
import os
import uuid

from langchain_core.messages import ToolMessage

from harness.config import get_extensions_config, thread_user_data_dir
from harness.mcp import get_mcp_tools, mcp_status
from harness.testing import call, tool_reply
from tests.harness.mcp.conftest import app, stdio_server
from tests.harness.mcp.servers import serve_http
from tests.support.lead_agent import AgentHarness
from tests.support.waiting import wait_until


async def run_agent(script, app_config, user_id="tester"):
    # Built on a worker thread: loading the MCP tools blocks.
    agent = await asyncio.to_thread(AgentHarness, script, app=app_config, tools=None)
    agent.user_id = user_id
    state = await agent.send("go")
    return [m for m in state["messages"] if isinstance(m, ToolMessage)], agent.graph


def status_of(name):
    return next(s for s in mcp_status() if s["name"] == name)


async def test_stdio_tools_load_and_run_through_the_agent(ext):
    ext.write({"calc": stdio_server()})
    results, graph = await run_agent([tool_reply(call("add", a=2, b=3)), "done"], app())
    assert [m.content for m in results] == ["sum=5"]
    assert status_of("calc")["status"] == "ready"
    assert {"add", "hang"} <= {t["name"] for t in status_of("calc")["tools"]}


async def test_streamable_http_tools_load_and_run_through_the_agent(ext):
    url, stop = serve_http()
    try:
        ext.write({"remote": {"type": "http", "url": url, "tool_call_timeout": 30}})
        results, _ = await run_agent([tool_reply(call("add", a=40, b=2)), "done"], app())
        assert [m.content for m in results] == ["sum=42"]
    finally:
        stop()


async def test_sse_tools_load_and_run(ext):
    url, stop = serve_http(transport="sse")
    try:
        ext.write({"events": {"type": "sse", "url": url}})
        tools = {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}
        assert await tools["add"].ainvoke({"a": 5, "b": 6}) == "sum=11"
    finally:
        stop()


async def test_an_http_server_on_a_private_address_is_refused_without_the_allow_list(ext):
    url, stop = serve_http()
    try:
        ext.write({"remote": {"type": "http", "url": url}, "calc": stdio_server()})
        tools = await asyncio.to_thread(get_mcp_tools, app_config=app(allow_loopback=False))
        remote = status_of("remote")
        assert remote["status"] == "error"
        assert "loopback address" in remote["last_error"] and "refused" in remote["last_error"]
        assert "add" in [t.name for t in tools]  # the stdio server still loaded
    finally:
        stop()


async def test_a_crashing_server_does_not_block_a_healthy_one(ext):
    ext.write({"broken": stdio_server("crash"), "calc": stdio_server(), "nowhere": {"type": "stdio", "command": "/nonexistent/mcp"}})
    tools = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert "add" in [t.name for t in tools]
    for name in ("broken", "nowhere"):
        state = status_of(name)
        assert state["status"] == "error" and state["last_error"] and state["error_at"]
    assert status_of("calc")["status"] == "ready"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_a_hung_tool_call_times_out_and_kills_the_servers_process_group(ext, tmp_path):
    pid_file = tmp_path / "pids"
    ext.write({"calc": stdio_server(tool_call_timeout=2)})
    results, _ = await run_agent([tool_reply(call("hang", pid_file=str(pid_file))), tool_reply(call("add", a=1, b=1)), "done"], app())
    assert "did not answer within 2 seconds" in results[0].content
    assert results[1].content == "sum=2"  # the next call reconnected
    server_pid, child_pid = map(int, pid_file.read_text().split())
    await asyncio.to_thread(wait_until, lambda: not (_alive(server_pid) or _alive(child_pid)), "the server and its child to die")


async def test_stdio_servers_get_a_scrubbed_environment_and_a_private_temp_dir(ext, monkeypatch):
    monkeypatch.setenv("SERVICE_API_KEY", "sk-leak")
    monkeypatch.setenv("DEERFLOW_PLAIN_SETTING", "harmless")
    monkeypatch.setenv("DF_MCP_TOKEN", "tok-given")
    ext.write({"calc": stdio_server(env={"GIVEN_TOKEN": "$DF_MCP_TOKEN"})})
    tools = {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}
    assert await tools["env_report"].ainvoke({"name": "SERVICE_API_KEY"}) == "<unset>"
    assert await tools["env_report"].ainvoke({"name": "DEERFLOW_PLAIN_SETTING"}) == "<unset>"
    assert await tools["env_report"].ainvoke({"name": "GIVEN_TOKEN"}) == "tok-given"  # the operator's own env
    where = await tools["where"].ainvoke({})
    home = os.environ["DEER_FLOW_HOME"]
    assert f"cwd={os.path.realpath(home)}/mcp/calc" in where.replace(home, os.path.realpath(home))
    assert f"tmp={home}/mcp/calc/tmp" in where
    assert oct(os.stat(f"{home}/mcp/calc/tmp").st_mode & 0o777) == "0o700"


async def test_local_paths_in_results_are_translated_for_the_thread(ext):
    ext.write({"calc": stdio_server()})
    user, thread = "tester", f"t-{uuid.uuid4().hex[:8]}"
    outputs = thread_user_data_dir(user, thread) / "outputs"
    outputs.mkdir(parents=True)
    tools = {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    got = await tools["echo_path"].ainvoke({"path": str(outputs / "r.txt")}, config)
    assert got == "wrote /mnt/user-data/outputs/r.txt"
    # outside the thread's tree: left alone
    other = thread_user_data_dir(user, "t-other") / "outputs"
    other.mkdir(parents=True)
    got = await tools["echo_path"].ainvoke({"path": str(other / "r.txt")}, config)
    assert got == f"wrote {other / 'r.txt'}"


async def test_tool_allow_and_deny_lists(ext):
    ext.write({"calc": stdio_server(tools={"allow": ["add", "env_*", "where"], "deny": ["env_report"], "where": {"enabled": False}})})
    tools = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert sorted(t.name for t in tools) == ["add"]


async def test_no_server_costs_nothing_and_an_unchanged_file_returns_the_same_tools(ext):
    ext.write({})
    assert await asyncio.to_thread(get_mcp_tools, app_config=app()) == ()
    from harness import mcp

    assert mcp._runtime is None  # nothing started
    ext.write({"calc": stdio_server()})
    first = await asyncio.to_thread(get_mcp_tools, app_config=app())
    again = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert first is again and get_extensions_config().mcp_servers["calc"].enabled


async def test_a_server_that_never_answers_times_out_is_killed_and_does_not_hold_up_the_others(ext, tmp_path):
    pid_file = tmp_path / "mute.pid"
    # A shell that reads the handshake and never answers: it is up at once, where a Python
    # server importing FastMCP on a busy machine had not yet written its pid at the timeout.
    mute = {"type": "stdio", "command": "/bin/sh", "args": ["-c", 'echo $$ > "$0"; while read -r line; do :; done', str(pid_file)],
            "connect_timeout": 2}
    ext.write({"mute": mute, "calc": stdio_server()})
    tools = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert "add" in [t.name for t in tools]
    state = status_of("mute")
    assert state["status"] == "error" and state["last_error"] == "no answer within 2 seconds"
    pid = int(pid_file.read_text())
    await asyncio.to_thread(wait_until, lambda: not _alive(pid), "the mute server to die")


async def test_a_failed_server_is_retried_in_the_background_and_its_tools_join_later(ext, tmp_path, monkeypatch):
    import shutil

    from harness.mcp import runtime as mcp_runtime
    from tests.harness.mcp.conftest import SERVERS

    monkeypatch.setattr(mcp_runtime, "RETRY_AFTER_SECONDS", 0)
    late = tmp_path / "late_server.py"
    ext.write({"late": {"type": "stdio", "command": sys.executable, "args": [str(late), "stdio"]}, "calc": stdio_server()})
    first = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert status_of("late")["status"] == "error" and not [t for t in first if t.metadata["mcp_server"] == "late"]
    shutil.copy(SERVERS, late)
    # this build starts the retry and does not wait for it
    during = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert not [t for t in during if t.metadata["mcp_server"] == "late"]
    await asyncio.to_thread(wait_until, lambda: status_of("late")["status"] == "ready", "the late server to be ready")
    after = await asyncio.to_thread(get_mcp_tools, app_config=app())
    assert "add" in [t.name for t in after if t.metadata["mcp_server"] == "late"]
    assert after is not first
