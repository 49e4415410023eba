"""Calls a run makes outside its graph are traced on their own, under their own names, in
the thread's session: a subagent (``subagent:<type>``, with the lead run's ids), follow-up
suggestions (``suggest_agent``), compaction (``context_compaction``), the memory updater
(``memory_agent``), the goal evaluator (``goal_evaluator``) and input polish (``input_polish``)."""

import os
from pathlib import Path

import pytest
import yaml

from apps.memory.learning import process_job

from apps.runs.models import Run
from harness.memory.updater import UpdateJob
from harness.observability import tracing
from harness.testing import tool_reply
from tests.apps.observability.conftest import OTLP_PATH
from tests.apps.observability.fake_backends import FakeBackend
from tests.apps.observability.test_trace_ids import _attr, _spans
from tests.apps.runs.test_runs_api import new_thread, stream
from tests.apps.threads.test_thread_actions import ask
from tests.support.subagents import Router, task_call

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def langfuse(traced_config):
    backend = FakeBackend()
    traced_config(backend.url, backend.url)
    yield backend
    tracing.shutdown()
    backend.close()


def _named(backend, name: str) -> list:
    """The spans of the traces named ``name`` (the trace name is on the root span)."""
    tracing.flush()
    backend.wait_for(lambda r: r.path == OTLP_PATH and name.encode() in r.body)
    spans = _spans([r for r in backend.received if r.path == OTLP_PATH])
    ids = {s.trace_id for s in spans if _attr(s, "langfuse.trace.name") == name}
    assert ids, f"no trace named {name}"
    return [s for s in spans if s.trace_id in ids]


def _attrs(spans, key: str) -> set:
    return {_attr(s, key) for s in spans} - {None, ""}


def test_a_subagent_has_a_trace_of_its_own_in_the_lead_runs_session(user, user_client, scripted_agent, settings, langfuse):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    scripted_agent(Router(lead=[tool_reply(task_call("Look around", "job A")), "Done."], subs={"job A": ["A: nothing there"]}), loop=True)
    tid = new_thread(user_client)
    response, _ = stream(user_client, f"/api/threads/{tid}/runs/stream", {
        "input": {"messages": [{"role": "user", "content": "delegate"}]}, "stream_mode": ["values"],
        "context": {"subagent_enabled": True}})
    run_id = response["Content-Location"].rsplit("/", 1)[1]
    sub = _named(langfuse, "subagent:general-purpose")
    assert _attrs(sub, "session.id") == {tid} and _attrs(sub, "user.id") == {str(user.pk)}
    assert run_id.encode() in b"".join(s.SerializeToString() for s in sub)  # carries the lead run's id
    lead_trace = Run.objects.get(pk=run_id).trace_id
    assert {s.trace_id.hex() for s in sub} != {lead_trace}  # a trace of its own, not tangled into the lead's
    assert lead_trace in {s.trace_id.hex() for s in _spans([r for r in langfuse.received if r.path == OTLP_PATH])}


def test_suggestions_and_compaction_are_traced_under_their_names(user, user_client, scripted_agent, script, model_server,
                                                                 langfuse, tmp_path, monkeypatch):
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url
    base["suggestions"] = {"enabled": True, "max_suggestions": 3}
    base["summarization"] = {"keep": {"type": "messages", "value": 1}}
    path = tmp_path / "config-named.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))

    scripted_agent("Llamas live in the Andes.", "They eat grass.")
    tid = new_thread(user_client)
    ask(user_client, tid, "Where do llamas live?")
    ask(user_client, tid, "What do they eat?")
    script('["How tall are llamas?"]', "The user asked about llamas.")
    assert user_client.post(f"/api/threads/{tid}/suggestions", {}, format="json").json()["suggestions"] == ["How tall are llamas?"]
    assert user_client.post(f"/api/threads/{tid}/compact", {}, format="json").status_code == 200

    for name in ("suggest_agent", "context_compaction"):
        spans = _named(langfuse, name)
        assert _attrs(spans, "session.id") == {tid} and _attrs(spans, "user.id") == {str(user.pk)}, name
        assert any(s.name != name for s in spans), f"{name}: the model call is inside its trace"


def test_the_memory_updater_is_traced_as_memory_agent(user, settings, langfuse, script, model_server, tmp_path, monkeypatch):
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url
    path = tmp_path / "config-memory.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    script('{"facts": []}')
    process_job(UpdateJob(owner=str(user.pk), agent="", thread_id="t-mem-1", run_id="r-mem-1",
                          messages=[{"role": "user", "content": "I like tea", "id": "m1"}]))
    spans = _named(langfuse, "memory_agent")
    assert _attrs(spans, "session.id") == {"t-mem-1"} and _attrs(spans, "user.id") == {str(user.pk)}


def test_the_goal_evaluator_is_traced_as_goal_evaluator(user, user_client, scripted_agent, settings, script, model_server, langfuse,
                                                       tmp_path, monkeypatch):
    import json

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"  # a state with the goal channel

    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url  # the evaluator's model; the lead is scripted
    path = tmp_path / "config-goal.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    scripted_agent("Done it.")
    script(json.dumps({"satisfied": True, "blocker": "none", "reason": "done"}))
    tid = new_thread(user_client)
    assert user_client.put(f"/api/threads/{tid}/goal", {"objective": "do it"}, format="json").status_code == 200
    run = ask(user_client, tid, "go")
    spans = _named(langfuse, "goal_evaluator")
    assert _attrs(spans, "session.id") == {tid} and _attrs(spans, "user.id") == {str(user.pk)}
    assert str(run.pk).encode() in b"".join(s.SerializeToString() for s in spans)  # with the run's id


def test_input_polish_is_traced_as_input_polish_in_the_threads_session(user, user_client, script, model_server, langfuse,
                                                                       tmp_path, monkeypatch):
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url
    path = tmp_path / "config-polish.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    tid = new_thread(user_client)
    script("Summarise the notes in three bullets.")
    response = user_client.post("/api/input-polish", {"text": "summarise notes", "thread_id": tid}, format="json")
    assert response.status_code == 200, response.content
    spans = _named(langfuse, "input_polish")
    assert _attrs(spans, "session.id") == {tid} and _attrs(spans, "user.id") == {str(user.pk)}
