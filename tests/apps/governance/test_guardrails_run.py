"""Guardrails through the API: a run of the real lead agent whose config names a provider
that denies one tool. The denied call is answered with the reason, the others run, the run
succeeds, and the provider saw the run's thread, run and user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread
from tests.apps.threads.conftest import read_body
from tests.support import guardrails as providers

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def guarded(tmp_path, monkeypatch, settings, scripted_agent):
    def configure(**guardrails):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base["guardrails"] = {"enabled": True, **guardrails}
        path = tmp_path / "config-guardrails.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent_with_tools"
        return scripted_agent

    providers.SEEN.clear()
    yield configure
    providers.SEEN.clear()


def run_and_state(client, tid):
    response = client.post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent",
                           "input": {"messages": [{"role": "user", "content": "go"}]}}, format="json")
    read_body(response)
    run = Run.objects.get(thread_id=tid)
    state = client.get(f"/api/threads/{tid}/state").json()
    tools = {m["name"]: m for m in state["values"]["messages"] if m["type"] == "tool"}
    return run, tools, state["values"]["messages"][-1]


def test_a_denied_tool_is_refused_with_the_reason_and_the_run_succeeds(user_client, user, guarded):
    script = guarded(provider={"use": "tests.support.guardrails:DenyToolProvider"})
    script(tool_reply(call("progress", note="half way"), call("slow", seconds=0)), "Finished without the note.")
    tid = new_thread(user_client)
    run, tools, last = run_and_state(user_client, tid)
    assert run.status == "success", run.error
    assert tools["progress"]["status"] == "error" and "progress reports are switched off here" in tools["progress"]["content"]
    assert tools["slow"]["content"] == "waited 0.0s"
    assert last["content"] == "Finished without the note."
    asked = {r.tool_name: r for r in providers.SEEN}
    assert set(asked) == {"progress", "slow"}
    assert (asked["progress"].thread_id, asked["progress"].run_id, asked["progress"].user_id) == (tid, str(run.pk), str(user.pk))


def test_allowed_tools_run_untouched(user_client, guarded):
    script = guarded(provider={"use": "tests.support.guardrails:DenyToolProvider", "config": {"tool": "web_fetch"}})
    script(tool_reply(call("progress", note="half way")), "Reported.")
    tid = new_thread(user_client)
    run, tools, last = run_and_state(user_client, tid)
    assert run.status == "success" and tools["progress"]["content"] == "reported" and last["content"] == "Reported."


@pytest.mark.parametrize("fail_closed, status", [(True, "error"), (False, "success")])
def test_a_failing_provider_follows_fail_closed(user_client, guarded, fail_closed, status):
    script = guarded(fail_closed=fail_closed, provider={"use": "tests.support.guardrails:RaisingProvider"})
    script(tool_reply(call("progress", note="half way")), "Over.")
    tid = new_thread(user_client)
    run, tools, last = run_and_state(user_client, tid)
    assert run.status == "success" and last["content"] == "Over."
    assert tools["progress"]["status"] == status
    assert ("guardrail provider failed" in tools["progress"]["content"]) is fail_closed
