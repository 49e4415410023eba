"""SandboxAudit in the real lead agent around a scripted model, with the real sandbox tools:
shell and file calls leave one record each (who, where, digest, preview, paths, outcome);
other tools and an uninstalled trail leave none."""

from __future__ import annotations

import hashlib

import pytest
from langchain_core.tools import tool

from harness.config import parse_config
from harness.sandbox.audit import MemoryAuditStore, NullAuditStore, get_audit_store, set_audit_store
from harness.testing import call, tool_reply
from harness.tools.file_access import WRITE, declare_thread_files
from harness.tools.registry import get_available_tools
from tests.harness.agents.conftest import BASE_CONFIG, AgentHarness

CONFIG = BASE_CONFIG + "sandbox:\n  use: local\n"


@pytest.fixture
def trail():
    before = get_audit_store()  # under pytest-django the ORM store is installed; put it back
    store = MemoryAuditStore()
    set_audit_store(store)
    yield store
    set_audit_store(before)


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return "found"


@tool
def archive(path: str) -> str:
    """Archive a file (the disk is full)."""
    raise OSError("no space left on device")


declare_thread_files(archive, WRITE)


def harness(script):
    app = parse_config(CONFIG)
    tools = [*get_available_tools(config=app, include_view_image=False, non_interactive=True), lookup, archive]
    return AgentHarness(script, tools=tools, app=app)


SCRIPT = [
    tool_reply(call("write_file", description="note", path="/mnt/user-data/workspace/a.txt", content="secret body")),
    tool_reply(call("bash", description="list", command="ls /mnt/user-data/workspace && echo done")),
    tool_reply(call("read_file", description="read", path="/mnt/user-data/workspace/missing.txt")),
    tool_reply(call("lookup", term="deer")),
    tool_reply(call("archive", path="/mnt/user-data/workspace/a.txt")),
    "All done.",
]


async def test_each_shell_and_file_call_is_recorded_once(trail):
    h = harness(SCRIPT)
    config = h.config()
    result = await h.graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    assert result["messages"][-1].content == "All done."
    assert [r.tool for r in trail.records] == ["write_file", "bash", "read_file", "archive"]  # not lookup
    write, bash, read, failed = trail.records
    command = "ls /mnt/user-data/workspace && echo done"
    assert bash.digest == hashlib.sha256(command.encode()).hexdigest() and bash.preview == command
    assert bash.access == "write" and bash.outcome == "success" and bash.paths == ["/mnt/user-data/workspace"]
    assert write.paths == ["/mnt/user-data/workspace/a.txt"] and "secret body" not in write.preview
    assert read.access == "read" and read.paths == ["/mnt/user-data/workspace/missing.txt"]
    assert failed.outcome == "error" and failed.paths == ["/mnt/user-data/workspace/a.txt"]  # it raised
    for r in trail.records:
        assert (r.thread_id, r.run_id, r.user_id) == (h.thread_id, config["configurable"]["run_id"], "tester")
        assert r.tool_call_id


def test_sync_runs_are_recorded_too(trail):
    h = harness([tool_reply(call("bash", description="x", command="echo hi")), "ok"])
    h.graph.invoke({"messages": [{"role": "user", "content": "go"}]}, h.config())
    assert [(r.tool, r.preview, r.outcome) for r in trail.records] == [("bash", "echo hi", "success")]


async def test_a_long_command_keeps_a_bounded_preview(trail):
    command = "echo " + "x" * 5000
    h = harness([tool_reply(call("bash", description="x", command=command)), "ok"])
    await h.send("go")
    (record,) = trail.records
    assert len(record.preview) == 200 and record.digest == hashlib.sha256(command.encode()).hexdigest()


async def test_without_an_installed_trail_nothing_is_recorded(trail):
    set_audit_store(NullAuditStore())  # the embedded client's default
    h = harness([tool_reply(call("bash", description="x", command="echo hi")), "ok"])
    result = await h.send("go")
    assert result["messages"][-1].content == "ok" and trail.records == []


async def test_a_subagents_shell_calls_are_recorded_too(trail):
    from tests.support.subagents import Router, task_call

    router = Router(lead=[tool_reply(task_call("List", "job A")), "The helper listed it."],
                    subs={"job A": [tool_reply(call("bash", description="x", command="echo from-helper")), "listed"]})
    app = parse_config(CONFIG + "subagents:\n  enabled: true\n")
    tools = get_available_tools(config=app, include_view_image=False, non_interactive=True)
    h = AgentHarness([router] * 6, tools=tools, app=app, configurable={"subagent_enabled": True})
    config = h.config()
    result = await h.graph.ainvoke({"messages": [{"role": "user", "content": "delegate"}]}, config)
    assert result["messages"][-1].content == "The helper listed it."
    assert [(r.tool, r.preview, r.run_id) for r in trail.records] == [("bash", "echo from-helper", config["configurable"]["run_id"])]
