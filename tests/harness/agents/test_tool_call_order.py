"""Tool calls of one model message that touch the thread's files behave as if run in order.

Issue 41 item 7: a reply that calls ``write_file`` and then ``present_files`` on the same path
(real models batch calls like this) used to fail: LangGraph runs the calls of one message
concurrently, so ``present_files`` could look before the write landed and report that the file
does not exist. These tests run the real lead agent with the scripted model against the
thread's real sandbox directory, in both the sync (threads) and async (tasks) execution paths.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import tool
from langgraph.types import Command, interrupt

from harness.governance.stores import MemoryApprovalStore, set_approval_store
from harness.testing import call, tool_reply
from harness.tools.builtins import get_builtin_tools
from harness.tools.file_access import READ, WRITE, declare_thread_files
from harness.tools.sandbox_tools import get_sandbox_tools

from .conftest import AgentHarness, app_config

OUT = "/mnt/user-data/outputs/report.md"


def file_tools():
    return [*get_sandbox_tools(), *get_builtin_tools(include_clarification=True, include_view_image=False)]


def run(h: AgentHarness, mode: str, text: str = "write and show the report", **extra):
    graph_input = {"messages": [{"role": "user", "content": text}]}
    if mode == "sync":
        return h.graph.invoke(graph_input, h.config(**extra))
    return asyncio.run(h.graph.ainvoke(graph_input, h.config(**extra)))


def tool_messages(result, name=None):
    return [m for m in result["messages"] if m.type == "tool" and (name is None or m.name == name)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_write_then_present_in_one_message_presents_the_file(mode):
    script = [
        tool_reply(call("write_file", description="write", path=OUT, content="# Report\n"),
                   call("present_files", filepaths=[OUT])),
        "Here is your report.",
    ]
    h = AgentHarness(script, tools=file_tools())
    result = run(h, mode)
    (written,) = tool_messages(result, "write_file")
    (presented,) = tool_messages(result, "present_files")
    assert written.status != "error", written.content
    assert presented.status != "error", presented.content
    assert presented.content == f"Presented to the user: {OUT}"
    assert h.state()["artifacts"] == [OUT]
    assert (h.outputs / "report.md").read_text() == "# Report\n"


# -- the race made deterministic: the write waits until the present call has started ------

WAIT = 10.0  # bounded waits: a broken test fails with a message instead of hanging
ORDER_LOGGER = "harness.agents.middlewares.tool_call_order"


class _StartedWhenWaiting(logging.Handler):
    """Sets ``event`` when the order gate logs that the call ``name`` waits: it has started."""

    def __init__(self, event: threading.Event, call_id: str) -> None:
        super().__init__(logging.DEBUG)
        self.event, self.call_id = event, call_id

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "deerflow_tool_call_id", None) == self.call_id:
            self.event.set()


class SlowWrite(AgentMiddleware):
    """Holds ``write_file`` until the ``present_files`` call has started.

    Without ordering nothing holds the present call: it runs to its end and then releases
    the write, so it has looked while the write was held and found nothing. With ordering it
    starts but waits for the write, which the gate logs, and that releases the write.
    """

    def __init__(self) -> None:
        super().__init__()
        self.present_started = threading.Event()
        self.write_saw_present_start: bool | None = None

    def wrap_tool_call(self, request, handler):
        if request.tool_call["name"] == "write_file":
            self.write_saw_present_start = self.present_started.wait(WAIT)
        result = handler(request)
        if request.tool_call["name"] == "present_files":
            self.present_started.set()
        return result

    async def awrap_tool_call(self, request, handler):
        if request.tool_call["name"] == "write_file":
            self.write_saw_present_start = await asyncio.to_thread(self.present_started.wait, WAIT)
        result = await handler(request)
        if request.tool_call["name"] == "present_files":
            self.present_started.set()
        return result


@pytest.fixture
def order_log():
    """Installs a handler on the gate's logger at DEBUG; yields a function that adds one."""
    log = logging.getLogger(ORDER_LOGGER)
    level, handlers = log.level, []
    log.setLevel(logging.DEBUG)

    def add(handler: logging.Handler) -> None:
        handlers.append(handler)
        log.addHandler(handler)

    yield add
    for handler in handlers:
        log.removeHandler(handler)
    log.setLevel(level)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_slow_write_still_lands_before_the_present_call_after_it(mode, order_log):
    present = call("present_files", filepaths=[OUT])
    script = [tool_reply(call("write_file", description="write", path=OUT, content="slow\n"), present), "Done."]
    probe = SlowWrite()
    order_log(_StartedWhenWaiting(probe.present_started, present.call_id()))
    h = AgentHarness(script, tools=file_tools(), extra_middlewares=[probe])
    result = run(h, mode)
    assert probe.write_saw_present_start, "the present call never started while the write was held"
    (presented,) = tool_messages(result, "present_files")
    assert presented.status != "error", presented.content
    assert h.state()["artifacts"] == [OUT]
    assert (h.outputs / "report.md").read_text() == "slow\n"


# -- independent calls stay parallel ------------------------------------------------------


def rendezvous_tool(name: str, access: str | None = None, arrived: dict | None = None):
    """A tool whose two calls (of it, or of two tools sharing ``arrived``) each announce
    themselves and wait for the other: run one after the other, the first waits in vain
    (bounded) and says so."""
    arrived = arrived if arrived is not None else {"a": threading.Event(), "b": threading.Event()}

    @tool(name)
    def meet(me: str, other: str) -> str:
        """Meet the other call."""
        arrived[me].set()
        if arrived[other].wait(WAIT):
            return f"{me} met {other}"
        return f"{me} waited {WAIT:g}s and {other} never started: the calls were serialized"

    return declare_thread_files(meet, access) if access else meet


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("access", [None, READ], ids=["no-files", "two-reads"])
def test_calls_that_do_not_conflict_still_overlap(mode, access):
    meet = rendezvous_tool("meet", access)
    script = [tool_reply(call("meet", me="a", other="b"), call("meet", me="b", other="a")), "Both met."]
    h = AgentHarness(script, tools=[meet])
    result = run(h, mode)
    assert sorted(m.content for m in tool_messages(result, "meet")) == ["a met b", "b met a"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_web_style_call_overlaps_with_file_calls_of_the_same_message(mode):
    """An independent call between two ordered ones is not held back by either of them."""
    arrived = {"a": threading.Event(), "b": threading.Event()}
    meet = rendezvous_tool("meet", arrived=arrived)
    blocking_write = rendezvous_tool("blocking_write", WRITE, arrived=arrived)
    script = [tool_reply(call("blocking_write", me="a", other="b"), call("meet", me="b", other="a"),
                         call("present_files", filepaths=[OUT])), "ok"]
    h = AgentHarness(script, tools=[meet, blocking_write, *file_tools()])
    result = run(h, mode)
    assert tool_messages(result, "blocking_write")[0].content == "a met b"
    assert tool_messages(result, "meet")[0].content == "b met a"


# -- nothing hangs: failures, interrupts, approvals ---------------------------------------

HANG = 30.0


def run_bounded(h: AgentHarness, mode: str, graph_input, config):
    """Runs the graph, failing clearly (instead of hanging the suite) if it does not end."""
    if mode == "async":
        async def go():
            return await asyncio.wait_for(h.graph.ainvoke(graph_input, config), HANG)

        try:
            return asyncio.run(go())
        except TimeoutError:
            pytest.fail(f"the run did not end within {HANG:g}s: tool calls deadlocked")
    box: dict = {}

    def go_sync():
        try:
            box["result"] = h.graph.invoke(graph_input, config)
        except BaseException as exc:  # re-raised below, in the test's thread
            box["error"] = exc

    worker = threading.Thread(target=go_sync, daemon=True)
    worker.start()
    worker.join(HANG)
    if worker.is_alive():
        pytest.fail(f"the run did not end within {HANG:g}s: tool calls deadlocked")
    if "error" in box:
        raise box["error"]
    return box["result"]


def user(text):
    return {"messages": [{"role": "user", "content": text}]}


def write(content="# Report\n"):
    return call("write_file", description="write", path=OUT, content=content)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_earlier_call_that_fails_releases_the_calls_after_it(mode):
    @tool("explode")
    def explode() -> str:
        """Fails."""
        raise RuntimeError("boom")

    declare_thread_files(explode, WRITE)
    script = [tool_reply(write(), call("explode"), call("present_files", filepaths=[OUT])), "ok"]
    h = AgentHarness(script, tools=[explode, *file_tools()])
    result = run_bounded(h, mode, user("go"), h.config())
    assert tool_messages(result, "explode")[0].status == "error"
    assert tool_messages(result, "present_files")[0].status != "error"
    assert h.state()["artifacts"] == [OUT]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_clarification_in_the_same_message_pauses_without_holding_the_files(mode):
    script = [tool_reply(write(), call("ask_clarification", question="PDF too?"), call("present_files", filepaths=[OUT])),
              "Noted."]
    h = AgentHarness(script, tools=file_tools())
    config = h.config()
    paused = run_bounded(h, mode, user("go"), config)
    assert paused["__interrupt__"][0].value["type"] == "clarification"
    done = run_bounded(h, mode, Command(resume="no"), config)
    assert tool_messages(done, "present_files")[0].status != "error"
    assert tool_messages(done, "ask_clarification")[0].content
    assert h.state()["artifacts"] == [OUT]


def confirming_tool():
    """A file-writing tool that asks the person first (a human-in-the-loop inside the call)."""

    @tool("confirm_write")
    def confirm_write() -> str:
        """Writes after a yes."""
        return f"confirmed: {interrupt({'type': 'confirm'})}"

    return declare_thread_files(confirm_write, WRITE)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_earlier_call_interrupted_inside_the_tool_releases_the_later_calls_and_resumes(mode):
    script = [tool_reply(write(), call("confirm_write"), call("present_files", filepaths=[OUT])), "Written and shown."]
    h = AgentHarness(script, tools=[confirming_tool(), *file_tools()])
    config = h.config()
    paused = run_bounded(h, mode, user("go"), config)
    assert paused["__interrupt__"][0].value == {"type": "confirm"}
    # the resumed step runs only the interrupted call: it must not wait for calls that are done
    done = run_bounded(h, mode, Command(resume="yes"), config)
    assert tool_messages(done, "confirm_write")[0].content == "confirmed: yes"
    assert tool_messages(done, "present_files")[0].status != "error"
    assert done["messages"][-1].content == "Written and shown."


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_input_while_paused_reruns_the_interrupted_call_alone_without_hanging(mode):
    """LangGraph takes any input at a paused step as a resume of its unfinished call; the
    finished calls' results are not in the state it reads, so that call must not wait."""
    script = [tool_reply(write(), call("confirm_write"), call("present_files", filepaths=[OUT])), "Moving on."]
    h = AgentHarness(script, tools=[confirming_tool(), *file_tools()])
    config = h.config()
    assert run_bounded(h, mode, user("go"), config)["__interrupt__"]
    run_bounded(h, mode, user("never mind"), config)
    done = run_bounded(h, mode, Command(resume="ok"), config)
    assert done["messages"][-1].content == "Moving on."


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_calls_approved_after_an_approval_pause_run_in_order(mode):
    store = MemoryApprovalStore()
    set_approval_store(store)
    try:
        rules = "approvals:\n  rules:\n    - {name: writes, tool: write_file, action: ask}\n"
        script = [tool_reply(write(), call("present_files", filepaths=[OUT])), "Shown."]
        h = AgentHarness(script, tools=file_tools(), app=app_config(rules))
        config = h.config()
        paused = run_bounded(h, mode, user("go"), config)
        assert paused["__interrupt__"][0].value["type"] == "approval"
        done = run_bounded(h, mode, Command(resume="approve"), config)
    finally:
        set_approval_store(MemoryApprovalStore())
    assert tool_messages(done, "write_file")[0].status != "error"
    assert tool_messages(done, "present_files")[0].status != "error", tool_messages(done, "present_files")[0].content
    assert h.state()["artifacts"] == [OUT]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("max_concurrency", [None, 2])
def test_many_appends_land_in_message_order_even_with_fewer_workers_than_calls(mode, max_concurrency):
    """More file calls than threads (or a ``max_concurrency`` cap): earlier calls start first,
    so a waiting call never holds the worker an earlier one needs."""
    # bash, not write_file(append=True): appending to an existing file needs a read first
    appends = [call("bash", description="append", command=f"echo 'line {i}' >> {OUT}") for i in range(10)]
    script = [tool_reply(*appends, call("present_files", filepaths=[OUT])), "ok"]
    h = AgentHarness(script, tools=file_tools())
    config = h.config()
    if max_concurrency:
        config["max_concurrency"] = max_concurrency
    result = run_bounded(h, mode, user("append"), config)
    assert (h.outputs / "report.md").read_text() == "".join(f"line {i}\n" for i in range(10))
    assert tool_messages(result, "present_files")[0].status != "error"
