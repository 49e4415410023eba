"""The order gate on its own: who waits for whom, and that nothing is left waiting when a
call is cancelled, never starts, or runs in a resumed step. The lead agent's behaviour end
to end is in tests/harness/agents/test_tool_call_order.py."""

from __future__ import annotations

import asyncio
import logging
import threading
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from harness.agents.middlewares.tool_call_order import ToolCallOrderMiddleware
from harness.tools.file_access import READ, WRITE, declare_thread_files, thread_file_access

WAIT = 10.0


def make_tool(name, access):
    @tool(name)
    def t() -> str:
        """A test tool."""
        return name

    return declare_thread_files(t, access) if access else t


TOOLS = {"w": make_tool("w", WRITE), "r": make_tool("r", READ), "web": make_tool("web", None)}


def requests(*names, answered=(), configurable=None):
    """One request per call of a message calling ``names`` in order."""
    calls = [{"id": f"c{i}", "name": n, "args": {}} for i, n in enumerate(names)]
    messages = [AIMessage(content="", tool_calls=calls, id="ai-1")]
    messages += [ToolMessage(content="done", tool_call_id=f"c{i}") for i in answered]
    runtime = SimpleNamespace(config={"configurable": {"thread_id": "t1", **(configurable or {})}},
                              tools=list(TOOLS.values()), execution_info=None)
    return [SimpleNamespace(tool=TOOLS[c["name"]], tool_call=c, state={"messages": messages}, runtime=runtime) for c in calls]


def plan_of(mw, request):
    plan = mw._plan(request)
    return None if plan is None else plan.before


def test_who_waits_for_whom():
    mw = ToolCallOrderMiddleware()
    w0, web1, r2, r3, w4 = requests("w", "web", "r", "r", "w")
    assert plan_of(mw, w0) == ()
    assert plan_of(mw, web1) is None  # declares nothing: never waits, never waited for
    assert plan_of(mw, r2) == ("c0",) and plan_of(mw, r3) == ("c0",)  # reads wait for writes, not for reads
    assert plan_of(mw, w4) == ("c0", "c2", "c3")
    # only reads, or a single file call: nothing to order, no bookkeeping at all
    assert all(plan_of(mw, r) is None for r in requests("r", "r", "web"))
    assert all(plan_of(mw, r) is None for r in requests("w", "web"))
    # calls already answered (an approval denial, a repaired call) are not run: nobody waits for them
    assert plan_of(mw, requests("w", "w", answered=[0])[1]) is None
    # the first step of a resumed run runs only the calls that did not finish: no ordering
    assert plan_of(mw, requests("w", "w", configurable={"__pregel_resuming": True})[1]) is None


def test_the_sandbox_and_builtin_tools_declare_their_access():
    from harness.tools.builtins import get_builtin_tools
    from harness.tools.sandbox_tools import get_sandbox_tools

    access = {t.name: thread_file_access(t) for t in [*get_sandbox_tools(), *get_builtin_tools()]}
    assert access == {"bash": WRITE, "ls": READ, "glob": READ, "grep": READ, "read_file": READ, "write_file": WRITE,
                      "str_replace": WRITE, "present_files": READ, "view_image": READ, "ask_clarification": None,
                      "review_skill_package": READ}
    with pytest.raises(ValueError):
        declare_thread_files(make_tool("x", None), "append")


def test_sync_calls_run_in_message_order_and_the_table_empties():
    mw = ToolCallOrderMiddleware()
    w0, w1, w2 = requests("w", "w", "w")
    order, release = [], threading.Event()

    def handler_for(name, block=False):
        def handler(_request):
            if block:
                assert release.wait(WAIT)
            order.append(name)
            return name
        return handler

    threads = [threading.Thread(target=mw.wrap_tool_call, args=(r, handler_for(n, block=(n == "c0"))))
               for r, n in ((w2, "c2"), (w1, "c1"), (w0, "c0"))]  # started last-first
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads)
    assert order == ["c0", "c1", "c2"]
    assert mw._steps == {}


def test_a_failing_call_releases_the_ones_after_it():
    mw = ToolCallOrderMiddleware()
    w0, w1 = requests("w", "w")

    def boom(_request):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        mw.wrap_tool_call(w0, boom)
    assert mw.wrap_tool_call(w1, lambda r: "ran") == "ran"
    assert mw._steps == {}


async def test_cancelling_a_waiting_call_or_the_one_it_waits_for_leaves_nothing_waiting():
    mw = ToolCallOrderMiddleware()
    w0, w1, w2 = requests("w", "w", "w")
    hold = asyncio.Event()

    async def held(_request):
        await hold.wait()
        return "held"

    async def quick(request):
        return request.tool_call["id"]

    first = asyncio.create_task(mw.awrap_tool_call(w0, held))
    second = asyncio.create_task(mw.awrap_tool_call(w1, quick))
    third = asyncio.create_task(mw.awrap_tool_call(w2, quick))
    await asyncio.sleep(0)  # one turn of the loop: each task runs to its first await, in the gate
    assert next(iter(mw._steps.values())).arrived == {"c0", "c1", "c2"}
    second.cancel()  # a waiting call goes away
    with pytest.raises(asyncio.CancelledError):
        await second
    assert not third.done()  # still behind the first
    first.cancel()  # the call everyone waits for goes away
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(third, WAIT) == "c2"
    assert mw._steps == {}


async def test_an_earlier_call_that_never_starts_is_given_up_on_after_the_arrival_timeout(caplog):
    mw = ToolCallOrderMiddleware(arrival_timeout=0.05)
    _, w1 = requests("w", "w")

    async def quick(_request):
        return "ran"

    with caplog.at_level(logging.WARNING, logger="harness.agents.middlewares.tool_call_order"):
        assert await asyncio.wait_for(mw.awrap_tool_call(w1, quick), WAIT) == "ran"
    assert "stopped waiting for c0, which did not start" in caplog.text


def test_a_started_earlier_call_is_waited_for_past_the_arrival_timeout():
    mw = ToolCallOrderMiddleware(arrival_timeout=0.01)
    w0, w1 = requests("w", "w")
    order, release, started = [], threading.Event(), threading.Event()

    def slow(_request):
        started.set()
        assert release.wait(WAIT)
        order.append("c0")

    first = threading.Thread(target=mw.wrap_tool_call, args=(w0, slow))
    first.start()
    assert started.wait(WAIT)
    second = threading.Thread(target=mw.wrap_tool_call, args=(w1, lambda r: order.append("c1")))
    second.start()
    second.join(0.2)  # well past the arrival timeout: still waiting, since c0 is running
    assert second.is_alive() and order == []
    release.set()
    first.join(WAIT)
    second.join(WAIT)
    assert order == ["c0", "c1"]
