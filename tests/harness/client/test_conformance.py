"""Every ``DeerFlowClient`` method answers what its HTTP route answers, for the same user,
thread and data.

One live server (Daphne, its own database and ``DEER_FLOW_HOME``, the loopback model). The
client runs where a user would run it against that server's data: in a process of the stack
set up as ``manage.py shell`` is, made by ``deerflow_site.embedded.server_client`` (the
server's checkpointer, data home and database stores). For each method the route and the
client are asked about the same data: reads must answer the same values, writes the same
fields of the same JSON types, and what one side wrote the other side reads.
"""

from __future__ import annotations

import base64
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.testing import loopback_config_text
from tests.support import skill_archives as sa
from tests.support.live import start_live_server

pytestmark = pytest.mark.slow

EXTRA_YAML = """\
sandbox:
  use: local
memory:
  enabled: true
  token_counting: char
suggestions:
  enabled: true
"""
EXTENSIONS = {"mcpServers": {"files": {"enabled": False, "type": "stdio", "command": "npx", "args": ["-y", "server-files"],
                                       "env": {"API_TOKEN": "secret-value", "ROOT": "/srv"}}}}
CSRF = "c" * 32
MARK = "@@client@@"


@dataclass
class Stack:
    live: Any
    http: httpx.Client
    thread_id: str
    model: Any
    made: dict = field(default_factory=dict)

    def client(self, *calls: str, setup: str = "") -> Any:
        """What each of ``calls`` (expressions on ``client``, evaluated in order) returns, run by
        the embedded client on this stack's data as user ana; one value for one call."""
        code = textwrap.dedent(f"""
            import base64, json
            from deerflow_site.embedded import server_client
            client = server_client(username="ana")
            {setup}
            results = []
            for call in {list(calls)!r}:
                result = eval(call)
                if isinstance(result, tuple):
                    result = [base64.b64encode(result[0]).decode(), result[1]]
                results.append(result)
            print({MARK!r} + json.dumps(results))
        """)
        results = json.loads(self.live.shell(code).rsplit(MARK, 1)[1])
        return results[0] if len(calls) == 1 else results

    def route(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code < 300, (path, response.status_code, response.text)
        return response.json() if response.content else None


@pytest.fixture(scope="module")
def stack(tmp_path_factory, model_server):
    home = tmp_path_factory.mktemp("client-conformance")
    (home / "extensions_config.json").write_text(json.dumps(EXTENSIONS))
    live = start_live_server(home, config_text=loopback_config_text(model_server.base_url, timeout=30, extra_yaml=EXTRA_YAML))
    try:
        session = live.shell(
            "from django.test import Client; from apps.accounts.models import User\n"
            "u, _ = User.objects.get_or_create(username='ana', defaults={'is_staff': True})\n"
            "c = Client(); c.force_login(u); print(c.cookies['sessionid'].value)").splitlines()[-1]
        http = httpx.Client(base_url=live.url, timeout=60, headers={"X-CSRFToken": CSRF},
                            cookies={"sessionid": session, "csrftoken": CSRF})
        thread_id = http.post("/api/threads", json={}).json()["thread_id"]
        outputs = home / "users" / live.shell("from apps.accounts.models import User; print(User.objects.get(username='ana').pk)").splitlines()[-1] \
            / "threads" / thread_id / "user-data" / "outputs"
        outputs.mkdir(parents=True)
        (outputs / "report.md").write_text("# Findings\n")
        yield Stack(live, http, thread_id, model_server)
    finally:
        live.stop()


def shape(value: Any) -> Any:
    """The JSON types of a value, keys included: what a client of either side relies on."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        shapes = []
        for item in value:
            if shape(item) not in shapes:
                shapes.append(shape(item))
        return shapes
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


# -- reads: the same values ------------------------------------------------------------------

READS = [
    ("list_models", "client.list_models()", "GET", "/api/models"),
    ("get_model", "client.get_model('loopback')", "GET", "/api/models/loopback"),
    ("get_mcp_config", "client.get_mcp_config()", "GET", "/api/mcp/config"),
    ("list_skills", "client.list_skills()", "GET", "/api/skills"),
    ("get_skill", "client.get_skill('deep-research')", "GET", "/api/skills/deep-research"),
    ("get_memory", "client.get_memory()", "GET", "/api/memory"),
    ("get_memory_status", "client.get_memory_status()", "GET", "/api/memory/status"),
    ("get_memory_config", "client.get_memory_config()", "GET", "/api/memory/config"),
    ("list_uploads", "client.list_uploads({tid!r})", "GET", "/api/threads/{tid}/uploads/list"),
    ("get_upload_limits", "client.get_upload_limits()", "GET", "/api/threads/{tid}/uploads/limits"),
    ("get_goal", "client.get_goal({tid!r})", "GET", "/api/threads/{tid}/goal"),
    ("list_agents", "client.list_agents()", "GET", "/api/agents"),
    ("get_suggestions_config", "client.get_suggestions_config()", "GET", "/api/suggestions/config"),
]


def without_now(method: str, answer: Any) -> Any:
    """A memory never written says it was updated now (DeerFlow's documents always carry a
    time); two reads a moment apart differ only there."""
    if method == "get_memory" and answer.get("revision") == 0:
        return {k: v for k, v in answer.items() if k != "lastUpdated"}
    if method == "get_memory_status":
        return {**answer, "data": without_now("get_memory", answer["data"])}
    return answer


@pytest.fixture(scope="module")
def client_reads(stack):
    """Every read by the client, in one process (before any test writes)."""
    tid = stack.thread_id
    return dict(zip([r[0] for r in READS], stack.client(*[r[1].format(tid=tid) for r in READS])))


@pytest.mark.parametrize(("method", "call", "verb", "path"), READS, ids=[r[0] for r in READS])
def test_reads_answer_what_the_route_answers(stack, client_reads, method, call, verb, path):
    expected = stack.route(verb, path.format(tid=stack.thread_id))
    assert without_now(method, client_reads[method]) == without_now(method, expected)
    if method == "get_mcp_config":  # and a secret stays masked on both
        assert expected["mcp_servers"]["files"]["env"]["API_TOKEN"] != "secret-value"
    if method == "get_memory_config":  # every memory key, the new knobs included
        assert {"token_counting", "retrieval_adapter", "tool_mode", "staleness_review_enabled", "paused"} <= set(expected)
        assert expected["token_counting"] == "char"


def test_get_artifact_gives_the_bytes_and_type_the_route_serves(stack):
    tid = stack.thread_id
    response = stack.http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/report.md")
    data, mime = stack.client(f"client.get_artifact({tid!r}, '/mnt/user-data/outputs/report.md')")
    assert base64.b64decode(data) == response.content == b"# Findings\n"
    assert response.headers["content-type"].split(";")[0] == mime == "text/markdown"


# -- writes: the same fields and types, and each side reads what the other wrote -------------


def test_uploads_written_by_either_side_list_and_delete_alike(stack, tmp_path):
    tid = stack.thread_id
    local = tmp_path / "notes.txt"
    local.write_text("from the client")
    by_client = stack.client(f"client.upload_files({tid!r}, [{str(local)!r}])")
    by_route = stack.route("POST", f"/api/threads/{tid}/uploads", files={"files": ("other.txt", b"from the route")})
    assert shape(by_client) == shape(by_route)
    listed = stack.route("GET", f"/api/threads/{tid}/uploads/list")
    assert {f["filename"] for f in listed["files"]} == {"notes.txt", "other.txt"}
    assert stack.client(f"client.list_uploads({tid!r})") == listed
    assert stack.client(f"client.delete_upload({tid!r}, 'other.txt')") == {"success": True, "message": "Deleted other.txt"}
    assert stack.route("DELETE", f"/api/threads/{tid}/uploads/notes.txt") == {"success": True, "message": "Deleted notes.txt"}


def test_goals_set_by_either_side_read_alike(stack):
    tid = stack.thread_id
    by_route = stack.route("PUT", f"/api/threads/{tid}/goal", json={"objective": "Ship the report", "max_continuations": 3})
    by_client = stack.client(f"client.set_goal({tid!r}, 'Ship the client report', max_continuations=2)")
    assert shape(by_client) == shape(by_route)
    assert stack.route("GET", f"/api/threads/{tid}/goal")["goal"]["objective"] == "Ship the client report"
    assert stack.client(f"client.clear_goal({tid!r})") == {"thread_id": tid, "goal": None}
    assert stack.route("GET", f"/api/threads/{tid}/goal") == {"thread_id": tid, "goal": None}


def test_memory_written_by_either_side_reads_alike(stack):
    by_route = stack.route("POST", "/api/memory/facts", json={"content": "Prefers tables", "category": "preference"})
    by_client = stack.client("client.create_memory_fact('Works in UTC', category='context', confidence=0.9)")
    assert shape(by_client) == shape(by_route)
    assert stack.route("GET", "/api/memory") == stack.client("client.get_memory()")
    assert {f["content"] for f in stack.route("GET", "/api/memory")["facts"]} == {"Prefers tables", "Works in UTC"}
    paused = stack.client("client.set_memory_paused(True)")
    assert paused == stack.route("GET", "/api/memory/config") and paused["paused"] is True
    assert stack.route("PATCH", "/api/memory/config", json={"paused": False}) == stack.client("client.get_memory_config()")


def test_skill_choices_and_installs_by_either_side_read_alike(stack, tmp_path):
    archive = tmp_path / "mine.skill"
    archive.write_bytes(sa.good("mine"))
    by_client, installed = stack.client("client.update_skill('deep-research', enabled=False)",
                                        f"client.install_skill({str(archive)!r})")
    assert by_client["enabled"] is False and installed["skill_name"] == "mine"
    assert stack.route("PUT", "/api/skills/deep-research", json={"enabled": False}) == by_client
    uploaded = stack.route("POST", "/api/skills/install", files={"file": ("theirs.skill", sa.good("theirs"))})
    assert shape(installed) == shape(uploaded)
    assert stack.route("PUT", "/api/skills/deep-research", json={"enabled": True})["enabled"] is True
    listed = stack.route("GET", "/api/skills")
    assert {"mine", "theirs"} <= {s["name"] for s in listed["skills"]}
    assert stack.client("client.list_skills()") == listed


def test_mcp_settings_written_by_the_client_read_alike(stack):
    current = stack.route("GET", "/api/mcp/config")["mcp_servers"]
    changed = {**current, "files": {**current["files"], "args": ["-y", "server-files", "/data"]}}
    by_client = stack.client(f"client.update_mcp_config({changed!r})")
    assert by_client == stack.route("GET", "/api/mcp/config") == {"mcp_servers": changed}
    # the masked secret sent back kept its stored value
    stored = json.loads(Path(stack.live.env["DEER_FLOW_EXTENSIONS_CONFIG_PATH"]).read_text())
    assert stored["mcpServers"]["files"]["env"]["API_TOKEN"] == "secret-value"
    toggled = stack.route("PATCH", "/api/mcp/config", json={"server_name": "files", "enabled": False})
    assert toggled == stack.client("client.set_mcp_server_enabled('files', False)")


def test_custom_agents_made_by_either_side_read_alike(stack):
    by_route = stack.route("POST", "/api/agents", json={"name": "route-agent", "description": "Made over HTTP.", "soul": "Be brief."})
    by_client = stack.client("client.create_agent('client-agent', description='Made in-process.', soul='Be kind.')")
    assert shape(by_client) == shape(by_route)
    got, updated = stack.client("client.get_agent('route-agent')", "client.update_agent('client-agent', description='Changed in-process.')")
    assert got == stack.route("GET", "/api/agents/route-agent")
    assert updated == stack.route("GET", "/api/agents/client-agent") and updated["description"] == "Changed in-process."
    listed = stack.route("GET", "/api/agents")
    assert stack.client("client.list_agents()", "client.delete_agent('client-agent')")[0] == listed
    assert [a["name"] for a in stack.route("GET", "/api/agents")["agents"]] == ["route-agent"]


def test_suggestions_answer_alike(stack):
    tid = stack.thread_id
    messages = [{"role": "user", "content": "Compare two databases"}, {"role": "assistant", "content": "PostgreSQL or SQLite."}]
    stack.model.reset('["Which is faster?", "Which is simpler?"]', '["Which is faster?", "Which is simpler?"]')
    by_route = stack.route("POST", f"/api/threads/{tid}/suggestions", json={"messages": messages, "n": 2})
    by_client = stack.client(f"client.get_suggestions({tid!r}, messages={messages!r}, n=2)")
    assert by_client == by_route == {"suggestions": ["Which is faster?", "Which is simpler?"], "enabled": True}


def test_a_run_on_the_server_is_the_clients_thread_state(stack):
    """The server's checkpointer, shared: a turn the server ran is in the client's state."""
    stack.model.reset("Hello from the server run.")
    tid = stack.route("POST", "/api/threads", json={})["thread_id"]
    stack.route("POST", f"/api/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent",
                                                                "input": {"messages": [{"role": "user", "content": "hi"}]}})
    texts, threads = stack.client(f"[message_text(m) for m in client.get_state({tid!r})['messages']]", "client.list_threads()",
                                  setup="from harness.agents.markers import message_text")
    assert texts[-1] == "Hello from the server run."
    assert threads["thread_list"][0]["thread_id"] == tid
