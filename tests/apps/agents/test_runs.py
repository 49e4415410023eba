"""Runs of custom agents through the real lead agent: the agent's soul, model, tools and
memory bucket reach the model (a loopback OpenAI server records each request), and the
agent tools create and refine agents by talking (the scripted model calls them)."""

from __future__ import annotations

import json

import pytest

from apps.agents.models import Agent
from apps.memory import services as memory
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import body_of, new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


def run(client, tid, text, assistant_id="lead_agent", context=None, status=200):
    body = {"assistant_id": assistant_id, "input": {"messages": [{"role": "user", "content": text}]}}
    if context is not None:
        body["context"] = context
    response = client.post(f"/api/threads/{tid}/runs/wait", body, format="json")
    assert response.status_code == status, getattr(response, "content", b"")
    return json.loads(body_of(response)) if status == 200 else response.json()


def system_text(request: dict) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


def user_text(request: dict) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def make_agent(client, **fields):
    response = client.post("/api/agents", {"name": "analyst", "display_name": "Research analyst",
                                           "soul": "Always answer in exactly three bullet points.", **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_run_with_the_agents_assistant_id_uses_its_soul_model_tools_and_memory(user_client, user, agents_config):
    loopback = agents_config
    agent = make_agent(user_client, model="analyst-model", tool_groups=["notes"], model_settings={"temperature": 0.3, "max_tokens": 321})
    memory.fact_create(user=user, content="The analyst's user tracks the aurora borealis", confidence=0.9, agent="analyst")
    memory.fact_create(user=user, content="The default bucket knows about sourdough", confidence=0.9)

    loopback.reset("- one\n- two\n- three")
    tid = new_thread(user_client)
    values = run(user_client, tid, "Tell me about the aurora borealis", assistant_id=agent["assistant_id"])
    assert values["messages"][-1]["content"] == "- one\n- two\n- three"
    request = loopback.requests[0]
    assert "Always answer in exactly three bullet points." in system_text(request)
    assert "You are Research analyst" in system_text(request)
    assert request["model"] == "analyst-provider-model"
    assert request["temperature"] == 0.3 and request.get("max_tokens", request.get("max_completion_tokens")) == 321
    assert "progress" in tool_names(request) and "slow" not in tool_names(request)
    assert "aurora borealis" in user_text(request) and "sourdough" not in user_text(request)

    thread = user_client.get(f"/api/threads/{tid}").json()
    runs = user_client.get(f"/api/threads/{tid}/runs").json()
    assert runs[0]["assistant_id"] == agent["assistant_id"] and runs[0]["model_name"] == "analyst-model"
    assert "agent" not in runs[0]["kwargs"]  # the server's snapshot is not echoed as the request
    assert thread["thread_id"] == tid

    # The lead agent on the same server: no soul, the default model, every tool group, the default bucket.
    loopback.reset("plain")
    run(user_client, new_thread(user_client), "Tell me about sourdough")
    request = loopback.requests[0]
    assert "three bullet points" not in system_text(request) and request["model"] == "basic-model"
    assert {"progress", "slow"} <= tool_names(request)
    assert "sourdough" in user_text(request) and "aurora" not in user_text(request)


def test_the_agent_name_works_as_assistant_id_for_its_owner_and_the_run_may_pick_a_model(user_client, agents_config):
    loopback = agents_config
    make_agent(user_client, model="analyst-model")
    loopback.reset("ok")
    run(user_client, new_thread(user_client), "hi", assistant_id="analyst", context={"model_name": "basic"})
    assert loopback.requests[0]["model"] == "basic-model"
    assert "three bullet points" in system_text(loopback.requests[0])


def test_a_client_cannot_forge_agent_options(user_client, agents_config):
    loopback = agents_config
    loopback.reset("ok")
    run(user_client, new_thread(user_client), "hi", context={"soul": "FORGED PERSONA", "agent_editable": True, "agent_id": "x"})
    assert "FORGED PERSONA" not in system_text(loopback.requests[0])
    assert "update_agent" not in tool_names(loopback.requests[0])


def test_memory_off_agent_reads_no_memory_and_unknown_assistant_is_404(user_client, user, agents_config):
    loopback = agents_config
    agent = make_agent(user_client, memory_enabled=False)
    memory.fact_create(user=user, content="The analyst's user tracks the aurora borealis", confidence=0.9, agent="analyst")
    loopback.reset("ok")
    run(user_client, new_thread(user_client), "aurora borealis?", assistant_id=agent["assistant_id"])
    assert "tracks the aurora" not in user_text(loopback.requests[0])
    missing = run(user_client, new_thread(user_client), "hi", assistant_id="no-such-agent", status=404)
    assert "no-such-agent" in missing["detail"]


def test_a_shared_agent_runs_for_another_user_without_edit_tools_and_with_their_own_memory(user_client, user, other_user, agents_config):
    from rest_framework.test import APIClient

    loopback = agents_config
    agent = make_agent(user_client, shared=True)
    memory.fact_create(user=user, content="Alice's secret project is codenamed Heron", confidence=0.9, agent="analyst")
    bob = APIClient()
    bob.force_authenticate(other_user)
    loopback.reset("ok")
    run(bob, new_thread(bob), "What is the Heron project?", assistant_id=agent["assistant_id"])
    request = loopback.requests[0]
    assert "three bullet points" in system_text(request)
    assert "update_agent" not in tool_names(request)
    assert "codenamed Heron" not in user_text(request)

    user_client.put("/api/agents/analyst", {"shared": False}, format="json")
    assert run(bob, new_thread(bob), "again", assistant_id=agent["assistant_id"], status=404)


def test_bootstrap_chat_creates_the_agent_with_setup_agent(user_client, user, scripted_lead):
    soul = "# Release-notes writer\nYou turn merged PRs into crisp release notes."
    model = scripted_lead(
        "What should the agent be called, and who reads its notes?",
        tool_reply(call("setup_agent", {"name": "release-notes", "soul": soul, "description": "Writes release notes",
                                         "display_name": "Release-notes writer", "tool_groups": ["notes"], "avatar": "📝"})),
        "Your agent release-notes is ready.",
    )
    tid = new_thread(user_client)
    run(user_client, tid, "I want an agent for release notes", context={"is_bootstrap": True})
    assert "setup_agent" in _bound(model, 0) and "Creating a custom agent" in model.requests[0].system_text
    values = run(user_client, tid, "Call it release-notes; engineers read them", context={"is_bootstrap": True})
    assert values["messages"][-1]["content"] == "Your agent release-notes is ready."
    tool_result = [m for m in values["messages"] if m["type"] == "tool"][-1]
    assert "Saved the agent 'release-notes'" in tool_result["content"]
    agent = Agent.objects.get(owner=user, name="release-notes")
    assert agent.soul == soul and agent.tool_groups == ["notes"] and agent.avatar == "📝" and agent.version == 1


def test_setup_agent_is_bound_only_in_bootstrap_runs_and_reports_bad_settings(user_client, user, scripted_lead):
    model = scripted_lead("hello")
    run(user_client, new_thread(user_client), "hi")
    assert "setup_agent" not in _bound(model, 0)

    model = scripted_lead(tool_reply(call("setup_agent", {"name": "bad/name", "soul": "x"})), "Sorry.")
    values = run(user_client, new_thread(user_client), "make one", context={"is_bootstrap": True})
    assert "setup_agent" in _bound(model, 0)
    assert "not a valid agent name" in [m for m in values["messages"] if m["type"] == "tool"][-1]["content"]
    assert not Agent.objects.filter(owner=user).exists()


def test_update_agent_refines_the_agent_from_its_own_chat(user_client, user, scripted_lead):
    agent = make_agent(user_client)
    model = scripted_lead(
        tool_reply(call("update_agent", soul="Always answer in one short sentence.")),
        "Done: I will be more concise from now on.",
    )
    tid = new_thread(user_client)
    run(user_client, tid, "Be more concise from now on", assistant_id=agent["assistant_id"])
    assert "update_agent" in _bound(model, 0)
    refined = user_client.get("/api/agents/analyst").json()
    assert refined["soul"] == "Always answer in one short sentence." and refined["version"] == 2
    versions = user_client.get("/api/agents/analyst/versions").json()["versions"]
    assert [v["settings"]["soul"] for v in versions] == ["Always answer in one short sentence.",
                                                         "Always answer in exactly three bullet points."]

    model = scripted_lead("Short.")
    run(user_client, tid, "Next question", assistant_id=agent["assistant_id"])
    assert "Always answer in one short sentence." in _system(model, 0)

    # Not bound in the lead agent's chats.
    model = scripted_lead("plain")
    run(user_client, new_thread(user_client), "hi")
    assert "update_agent" not in _bound(model, 0)


def _bound(model, index) -> set[str]:
    return set(model.requests[index].tools)


def _system(model, index) -> str:
    return model.requests[index].system_text


def test_the_agents_skills_allowlist_limits_the_skills_it_is_offered_and_can_start(user_client, agents_config):
    loopback = agents_config
    agent = make_agent(user_client, skills=["deep-research"])
    loopback.reset("ok", "never reached")
    run(user_client, new_thread(user_client), "research something", assistant_id=agent["assistant_id"])
    system = system_text(loopback.requests[0])
    assert "deep-research" in system and "data-analysis" not in system and "skill-creator" not in system

    values = run(user_client, new_thread(user_client), "/data-analysis sales.csv", assistant_id=agent["assistant_id"])
    assert "There is no skill called /data-analysis" in values["messages"][-1]["content"]
    assert len(loopback.requests) == 1  # refused without calling the model

    loopback.reset("ok")
    run(user_client, new_thread(user_client), "hi")
    assert "data-analysis" in system_text(loopback.requests[0])  # the lead agent keeps every skill
