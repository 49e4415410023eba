"""The tools as the agent calls them: through a LangGraph ToolNode with a run context."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from harness.config import thread_user_data_dir
from harness.sandbox import reset_sandbox_provider, set_sandbox_provider
from harness.tools.builtins import get_builtin_tools
from harness.tools.sandbox_tools import get_sandbox_tools
from tests.harness.sandbox.conftest import make_provider
from tests.support.waiting import wait_until

# LangGraph serialises the tool runtime with a schema that types ``context`` as None.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _union(current: list | None, update: list | None) -> list:
    out = list(current or [])
    out += [x for x in update or [] if x not in out]
    return out


def _merge(current: dict | None, update: dict | None) -> dict:
    return {**(current or {}), **(update or {})}


class State(MessagesState):
    sandbox: dict
    artifacts: Annotated[list, _union]
    viewed_images: Annotated[dict, _merge]


@dataclass
class Ctx:
    user_id: str
    thread_id: str


def _graph():
    builder = StateGraph(State, context_schema=dict)
    builder.add_node("tools", ToolNode(get_sandbox_tools() + get_builtin_tools(), handle_tool_errors=False))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


GRAPH = _graph()


def call(name: str, args: dict[str, Any], *, context: Any = None, state: dict | None = None, thread: str = "t-tools",
         configurable: dict | None = None) -> tuple[str, dict]:
    if context is None:
        context = {"user_id": "alice", "thread_id": thread}
    if "description" not in args and name not in ("present_files", "view_image", "ask_clarification", "review_skill_package"):
        args = {"description": "test", **args}
    message = AIMessage("", tool_calls=[{"name": name, "args": args, "id": "call-1"}])
    out = GRAPH.invoke({"messages": [message], **(state or {})}, config={"configurable": configurable or {}}, context=context)
    result = out["messages"][-1]
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call-1"
    return result.content, out


@pytest.fixture
def ws(provider):
    return thread_user_data_dir("alice", "t-tools")


def test_tool_sets_and_names():
    assert [t.name for t in get_sandbox_tools()] == ["bash", "ls", "glob", "grep", "read_file", "write_file", "str_replace"]
    assert [t.name for t in get_builtin_tools()] == ["present_files", "view_image", "ask_clarification", "review_skill_package"]
    assert [t.name for t in get_builtin_tools(include_clarification=False, include_view_image=False)] == ["present_files", "review_skill_package"]
    for tool in get_sandbox_tools() + get_builtin_tools():
        schema = tool.tool_call_schema.model_json_schema()
        assert "runtime" not in schema["properties"]
        assert tool.description and all(p.get("description") for p in schema["properties"].values())


def test_bash_reports_output_and_exit_code(provider, ws):
    text, _ = call("bash", {"command": "echo hello > /mnt/user-data/outputs/h.txt; cat /mnt/user-data/outputs/h.txt; pwd"})
    assert text == "hello\n/mnt/user-data/workspace\n[exit code: 0]"
    assert (ws / "outputs" / "h.txt").read_text() == "hello\n"
    text, _ = call("bash", {"command": "nosuchcommand-xyz"})
    assert "not found" in text and text.endswith("[exit code: 127]")
    text, _ = call("bash", {"command": "true"})
    assert text == "(no output)\n[exit code: 0]"


def test_bash_timeout_is_a_result_with_advice(provider_kind, home, skills_dir):
    provider = make_provider(provider_kind, skills_dir, bash_command_timeout=1)
    set_sandbox_provider(provider)
    try:
        text, _ = call("bash", {"command": "echo partial; sleep 30"})
    finally:
        reset_sandbox_provider()
    assert text.startswith("Error: the command did not finish within 1 seconds")
    assert "partial" in text
    assert ("background" in text.lower()) and ("timeout 120" in text if provider_kind == "bwrap" else "nohup" in text)


def test_request_secrets_reach_bash_only_through_an_active_skill(provider, ws):
    # No skill declaring ERP_TOKEN is active here, so the command never sees it
    # (tests/harness/skills/test_agent_skills.py covers the active case).
    context = {"user_id": "alice", "thread_id": "t-tools", "run_id": "r1", "secrets": {"ERP_TOKEN": "erp-9f8e7d6c5b"}}
    text, _ = call("bash", {"command": "echo token=${ERP_TOKEN:-none}"}, context=context)
    assert "token=none" in text
    # The value is still masked wherever it turns up in what the model reads.
    (ws / "workspace" / "leak.txt").write_text("erp-9f8e7d6c5b\n")
    text, _ = call("read_file", {"path": "leak.txt"}, context=context)
    assert "erp-9f8e7d6c5b" not in text
    text, _ = call("bash", {"command": "cat leak.txt"}, context=context)
    assert "erp-9f8e7d6c5b" not in text and "********" in text


def test_ls_glob_grep(provider, ws):
    for rel, body in {"src/app.py": "import os\n", "src/pkg/mod.py": "x = 1\n", "src/pkg/deep/z.py": "", "notes.md": "# Notes\nimport this\n"}.items():
        call("write_file", {"path": f"/mnt/user-data/workspace/{rel}", "content": body})
    text, _ = call("ls", {"path": "/mnt/user-data/workspace"})
    lines = text.splitlines()
    assert lines[0] == "/mnt/user-data/workspace/"
    assert "  src/" in lines and "    pkg/" in lines and "  notes.md (20 B)" in lines
    assert not any("deep" in line for line in lines)  # two levels only
    text, _ = call("glob", {"pattern": "**/*.py"})
    assert text.splitlines() == [
        "/mnt/user-data/workspace/src/app.py",
        "/mnt/user-data/workspace/src/pkg/mod.py",
        "/mnt/user-data/workspace/src/pkg/deep/z.py",
    ]
    text, _ = call("grep", {"pattern": "^import", "glob": "*.py"})
    assert text == "/mnt/user-data/workspace/src/app.py:1: import os"
    text, _ = call("grep", {"pattern": "nothing-matches-this"})
    assert text.startswith("No matches")
    text, _ = call("grep", {"pattern": "(unclosed"})
    assert text.startswith("Error: invalid regular expression")


def test_read_file_ranges_and_bounds(provider_kind, home, skills_dir):
    provider = make_provider(provider_kind, skills_dir, read_file_max_chars=100)
    set_sandbox_provider(provider)
    try:
        body = "".join(f"line {i}\n" for i in range(1, 51))
        call("write_file", {"path": "big.txt", "content": body})
        text, _ = call("read_file", {"path": "big.txt", "start_line": 3, "end_line": 4})
        assert text == "line 3\nline 4\n"
        text, _ = call("read_file", {"path": "big.txt"})
        assert text.startswith("line 1\n") and "call read_file with start_line=" in text
        next_start = int(text.rsplit("start_line=", 1)[1].split()[0])
        assert f"line {next_start - 1}\n" in text and f"line {next_start}\n" not in text
        text, _ = call("read_file", {"path": "big.txt", "start_line": 99})
        assert text == "Error: start_line 99 is past the end of /mnt/user-data/workspace/big.txt, which has 50 lines."
        call("write_file", {"path": "empty.txt", "content": ""})
        assert call("read_file", {"path": "empty.txt"})[0] == "(empty file)"
        text, _ = call("read_file", {"path": "missing.txt"})
        assert text.startswith("Error: /mnt/user-data/workspace/missing.txt does not exist")
    finally:
        reset_sandbox_provider()


def test_read_binary_file_is_a_clear_message(provider, ws):
    (ws / "workspace").mkdir(parents=True, exist_ok=True)
    (ws / "workspace" / "pic.png").write_bytes(PNG_1PX)
    text, _ = call("read_file", {"path": "/mnt/user-data/workspace/pic.png"})
    assert text.startswith("Error:") and "binary file" in text and "view_image" in text


def test_write_append_and_str_replace(provider, ws):
    text, _ = call("write_file", {"path": "/mnt/user-data/workspace/a/b/c.txt", "content": "alpha\n"})
    assert text == "Wrote 6 bytes to /mnt/user-data/workspace/a/b/c.txt."
    call("write_file", {"path": "a/b/c.txt", "content": "beta\nbeta\n", "append": True})
    assert (ws / "workspace" / "a" / "b" / "c.txt").read_text() == "alpha\nbeta\nbeta\n"
    text, _ = call("str_replace", {"path": "a/b/c.txt", "old_str": "beta", "new_str": "gamma"})
    assert text.startswith("Error: old_str appears 2 times")
    text, _ = call("str_replace", {"path": "a/b/c.txt", "old_str": "beta", "new_str": "gamma", "replace_all": True})
    assert text == "Replaced 2 occurrences in /mnt/user-data/workspace/a/b/c.txt."
    text, _ = call("str_replace", {"path": "a/b/c.txt", "old_str": "delta", "new_str": "x"})
    assert text.startswith("Error: old_str was not found")
    assert (ws / "workspace" / "a" / "b" / "c.txt").read_text() == "alpha\ngamma\ngamma\n"


ESCAPE = "/mnt/user-data/workspace/../../../../../etc/passwd"


@pytest.mark.parametrize("name, args", [
    ("ls", {"path": ESCAPE}),
    ("glob", {"pattern": "*", "path": "/etc"}),
    ("glob", {"pattern": "/etc/*"}),
    ("grep", {"pattern": "root", "path": ESCAPE}),
    ("read_file", {"path": ESCAPE}),
    ("read_file", {"path": "/etc/passwd"}),
    ("write_file", {"path": "/tmp/pwned.txt", "content": "x"}),
    ("write_file", {"path": "/mnt/user-data/workspace/a\x00b", "content": "x"}),
    ("str_replace", {"path": ESCAPE, "old_str": "root", "new_str": "toor"}),
    ("view_image", {"image_path": ESCAPE}),
    ("present_files", {"filepaths": [ESCAPE]}),
])
def test_escape_attempts_come_back_as_errors(provider, name, args, tmp_path):
    text, out = call(name, args)
    assert text.startswith("Error:"), text
    assert "root:" not in text
    assert not out.get("artifacts") and not out.get("viewed_images")


def test_state_sandbox_id_is_used_only_for_its_own_thread(provider):
    bob_id = provider.acquire("bob", "t-bob")
    # alice's run with bob's sandbox id planted in state still writes to alice's thread.
    call("write_file", {"path": "planted.txt", "content": "alice"}, state={"sandbox": {"sandbox_id": bob_id}})
    assert (thread_user_data_dir("alice", "t-tools") / "workspace" / "planted.txt").read_text() == "alice"
    assert not (thread_user_data_dir("bob", "t-bob") / "workspace" / "planted.txt").exists()
    own_id = provider.acquire("alice", "t-tools")
    provider.release(own_id)
    text, _ = call("read_file", {"path": "planted.txt"}, state={"sandbox": {"sandbox_id": own_id}})
    assert text == "alice"


def test_ids_from_context_object_or_configurable(provider):
    call("write_file", {"path": "o.txt", "content": "obj"}, context=Ctx("carol", "t-obj"))
    assert (thread_user_data_dir("carol", "t-obj") / "workspace" / "o.txt").read_text() == "obj"
    call("write_file", {"path": "c.txt", "content": "cfg"}, context={}, configurable={"user_id": "dave", "thread_id": "t-cfg"})
    assert (thread_user_data_dir("dave", "t-cfg") / "workspace" / "c.txt").read_text() == "cfg"
    text, _ = call("write_file", {"path": "x.txt", "content": "x"}, context={"user_id": "eve", "thread_id": "../etc"})
    assert text.startswith("Error:")


def test_present_files(provider, ws):
    call("write_file", {"path": "/mnt/user-data/outputs/report.md", "content": "# Report"})
    call("write_file", {"path": "/mnt/user-data/workspace/draft.md", "content": "draft"})
    text, out = call("present_files", {"filepaths": ["/mnt/user-data/outputs/report.md", "/mnt/user-data/outputs/./report.md"]})
    assert out["artifacts"] == ["/mnt/user-data/outputs/report.md"]
    assert "report.md" in text
    text, out = call("present_files", {"filepaths": ["/mnt/user-data/workspace/draft.md"]})
    assert text.startswith("Error: nothing was presented") and "only files under /mnt/user-data/outputs" in text
    assert not out.get("artifacts")
    text, out = call("present_files", {"filepaths": ["/mnt/user-data/outputs/report.md", "/mnt/user-data/outputs/missing.pdf"]})
    assert "missing.pdf: does not exist" in text and not out.get("artifacts")


def test_view_image(provider, ws):
    (ws / "uploads").mkdir(parents=True, exist_ok=True)
    (ws / "uploads" / "dot.png").write_bytes(PNG_1PX)
    (ws / "uploads" / "fake.png").write_text("not an image")
    text, out = call("view_image", {"image_path": "/mnt/user-data/uploads/dot.png"})
    image = out["viewed_images"]["/mnt/user-data/uploads/dot.png"]
    assert image["mime_type"] == "image/png"
    assert base64.b64decode(image["base64"]) == PNG_1PX
    text, out = call("view_image", {"image_path": "/mnt/user-data/uploads/fake.png"})
    assert text.startswith("Error:") and "not a PNG" in text and not out.get("viewed_images")


def test_ask_clarification_body():
    tool = next(t for t in get_builtin_tools() if t.name == "ask_clarification")
    assert set(tool.tool_call_schema.model_json_schema()["properties"]) == {"question", "options", "fields", "context"}
    text, _ = call("ask_clarification", {"question": "Which year?", "options": ["2024", "2025"]})
    assert "Which year?" in text


def test_missing_thread_id_is_a_result_not_a_crash(provider):
    text, _ = call("bash", {"command": "echo hi"}, context={"user_id": "alice"})
    assert text.startswith("Error:") and "thread" in text


async def test_cancelling_the_run_stops_a_running_command(provider):
    import asyncio
    import uuid

    from tests.harness.sandbox.test_execute import _processes_with, _wait_gone

    marker = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**5}"
    message = AIMessage("", tool_calls=[{"name": "bash", "args": {"description": "wait", "command": f"sleep {marker}"}, "id": "c"}])
    task = asyncio.create_task(GRAPH.ainvoke({"messages": [message]}, context={"user_id": "alice", "thread_id": "t-cancel"}))
    await asyncio.to_thread(wait_until, lambda: _processes_with(f"sleep {marker}"), "the command to start", interval=0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(_wait_gone, marker) == []
