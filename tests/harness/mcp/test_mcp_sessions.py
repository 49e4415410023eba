"""stdio servers' stderr in their errors, and per-thread sessions (``session_scope: thread``)
for servers that keep state, against real FastMCP servers that count and crash."""

import asyncio
import os
import time
from pathlib import Path

from harness.config import thread_user_data_dir
from harness.mcp import close_thread_sessions, get_mcp_tools, mcp_status
from tests.harness.mcp.conftest import app, stdio_server
from tests.harness.mcp.test_mcp_tools import run_agent
from harness.testing import call, tool_reply


def status_of(name):
    return next(s for s in mcp_status() if s["name"] == name)


async def tools_of(**servers):
    return {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}


async def count(tools, user, thread):
    text = await tools["count"].ainvoke({}, config={"configurable": {"user_id": user, "thread_id": thread}})
    fields = dict(part.split("=", 1) for part in text.split())
    return int(fields["count"]), int(fields["pid"]), fields["cwd"], fields["tmp"]


async def until(predicate, what, deadline=60.0):
    # Waits for something that happens in the background (an idle close); the deadline only
    # turns a hang into a failure.
    end = time.monotonic() + deadline
    while not predicate():
        assert time.monotonic() < end, f"gave up waiting: {what}"
        await asyncio.sleep(0.05)


def cwd_of(pid: int) -> Path:
    return Path(os.readlink(f"/proc/{pid}/cwd"))


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return True


async def test_a_server_that_exits_at_start_shows_its_stderr(ext):
    ext.write({"broken": stdio_server("crash"), "calc": stdio_server()})
    await asyncio.to_thread(get_mcp_tools, app_config=app())
    error = status_of("broken")["last_error"]
    assert status_of("broken")["status"] == "error"
    assert "boom: this server cannot start" in error
    assert status_of("calc")["status"] == "ready" and status_of("calc")["last_error"] is None


async def test_only_the_end_of_a_long_stderr_is_kept(ext):
    ext.write({"noisy": stdio_server("noisy-crash")})
    await asyncio.to_thread(get_mcp_tools, app_config=app())
    error = status_of("noisy")["last_error"]
    assert error.endswith("last words: the config file is missing")
    assert "noise line 2999" in error and "noise line 0\n" not in error
    assert len(error) < 2600


async def test_a_server_that_dies_mid_call_reports_its_last_words_and_comes_back(ext):
    ext.write({"st": stdio_server("stateful")})
    tools = await tools_of()
    assert (await count(tools, "u1", "t1"))[0] == 1
    said = await tools["die"].ainvoke({"last_words": "the disk is on fire"})
    assert "the disk is on fire" in said and "Connection closed" in said
    assert status_of("st")["status"] == "error" and "the disk is on fire" in status_of("st")["last_error"]
    # the next call (through the agent too) reconnects: a fresh process
    results, _ = await run_agent([tool_reply(call("count")), "done"], app())
    assert results[0].content.startswith("count=1 ")


async def test_each_thread_and_user_gets_its_own_process_in_its_workspace(ext):
    ext.write({"st": stdio_server("stateful", session_scope="thread")})
    tools = await tools_of()
    assert status_of("st")["session_scope"] == "thread" and status_of("st")["thread_sessions"] == 0

    n1, pid_a, cwd, tmp = await count(tools, "u1", "thread-a")
    n2, pid_a2, _, _ = await count(tools, "u1", "thread-a")
    assert (n1, n2) == (1, 2) and pid_a == pid_a2  # state kept within the thread
    # the model sees the thread's paths as the sandbox names them; the process runs in them
    assert (cwd, tmp) == ("/mnt/user-data/workspace", "/mnt/user-data/workspace/.mcp/tmp")
    assert cwd_of(pid_a) == (thread_user_data_dir("u1", "thread-a") / "workspace").resolve()

    nb, pid_b, _, _ = await count(tools, "u1", "thread-b")
    nu, pid_u, _, _ = await count(tools, "u2", "thread-a")  # same thread id, another user
    assert nb == nu == 1 and len({pid_a, pid_b, pid_u}) == 3
    assert cwd_of(pid_b) == (thread_user_data_dir("u1", "thread-b") / "workspace").resolve()
    assert cwd_of(pid_u) == (thread_user_data_dir("u2", "thread-a") / "workspace").resolve()
    assert status_of("st")["thread_sessions"] == 3

    # deleting thread-a closes its sessions (both users'); thread-b keeps its state
    closed = await asyncio.wrap_future(close_thread_sessions("thread-a"))
    assert closed == 2 and status_of("st")["thread_sessions"] == 1
    await until(lambda: gone(pid_a) and gone(pid_u), "thread-a's processes to exit")
    assert (await count(tools, "u1", "thread-b"))[0] == 2
    again, pid_again, _, _ = await count(tools, "u1", "thread-a")
    assert again == 1 and pid_again != pid_a


async def test_an_idle_thread_session_is_closed_and_restarts_empty(ext):
    ext.write({"st": stdio_server("stateful", session_scope="thread", session_idle_timeout=0.5)})
    tools = await tools_of()
    first, pid, _, _ = await count(tools, "u1", "idle-thread")
    assert first == 1
    await until(lambda: status_of("st")["thread_sessions"] == 0, "the idle session to close")
    await until(lambda: gone(pid), "the idle process to exit")
    again, pid2, _, _ = await count(tools, "u1", "idle-thread")
    assert again == 1 and pid2 != pid


async def test_a_thread_session_that_dies_mid_call_reports_stderr_and_the_next_call_starts_fresh(ext):
    ext.write({"st": stdio_server("stateful", session_scope="thread")})
    results, _ = await run_agent([tool_reply(call("count")), tool_reply(call("die", last_words="out of coffee")),
                                  tool_reply(call("count")), "done"], app())
    assert results[0].content.startswith("count=1 ")
    assert "out of coffee" in results[1].content and "Connection closed" in results[1].content
    assert results[2].content.startswith("count=1 ")  # a new process for the thread
    assert status_of("st")["status"] == "ready"  # one thread's crash is not the server's


def test_without_thread_sessions_closing_a_thread_starts_nothing():
    from harness.mcp import reset_mcp

    reset_mcp()
    assert close_thread_sessions("any-thread") is None
