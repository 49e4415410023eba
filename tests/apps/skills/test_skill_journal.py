"""Through the API, the real lead agent and the scripted model: a skill's activation and its
missing secrets become ``middleware:*`` rows of the run's journal (names, never values), a
client streaming ``custom`` sees them live, and ``review_skill_package`` answers in a run."""

from __future__ import annotations

import pytest

from apps.runs.models import RunEvent
from harness.skills import loader
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, stream

pytestmark = [pytest.mark.django_db(transaction=True)]
SECRET = "erp-value-5f0c2d9e"


@pytest.fixture
def lead(scripted_agent, settings, public_skills):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    erp = public_skills / "public" / "erp"
    erp.mkdir(parents=True)
    (erp / "SKILL.md").write_text("---\nname: erp\ndescription: ERP reports.\nrequired-secrets: [ERP_TOKEN, ERP_USER]\n---\nSteps.\n")
    loader.clear_cache()
    return scripted_agent


def run(client, text, *, secrets=None, modes=("values",)):
    tid = new_thread(client)
    body = {"input": {"messages": [{"role": "user", "content": text}]}, "stream_mode": list(modes)}
    if secrets:
        body["context"] = {"secrets": secrets}
    response, events = stream(client, f"/api/threads/{tid}/runs/stream", body)
    return response["Content-Location"].rsplit("/", 1)[1], events


def test_slash_activation_and_missing_secrets_are_journaled_by_name(user_client, lead):
    lead(tool_reply(call("bash", description="x", command="echo ok")), "done", loop=True)
    run_id, events = run(user_client, "/erp monthly report", secrets={"ERP_TOKEN": SECRET}, modes=("values", "custom"))
    rows = list(RunEvent.objects.filter(run_id=run_id, category="middleware").order_by("seq"))
    assert [r.event_type for r in rows] == ["middleware:skill_activation", "middleware:skill_secrets"]
    assert rows[0].content["changes"] == {"skill_name": "erp", "category": "public", "path": "/mnt/skills/public/erp/SKILL.md",
                                          "source": "slash"}
    changes = rows[1].content["changes"]
    assert changes["secrets"] == ["ERP_TOKEN"] and changes["missing"] == {"erp": ["ERP_USER"]}
    assert "ERP_USER" in changes["message"]
    assert not RunEvent.objects.filter(run_id=run_id, content__icontains=SECRET).exists()
    live = [e["data"]["tag"] for e in events if e["event"] == "custom"]
    assert live == ["skill_activation", "skill_secrets"]


def test_a_run_without_skills_journals_no_middleware_event_and_reviews_a_skill(user_client, lead):
    lead(tool_reply(call("review_skill_package", target="skill://erp")), "reviewed", loop=True)
    run_id, events = run(user_client, "is the erp skill safe?")
    assert not RunEvent.objects.filter(run_id=run_id, category="middleware").exists()  # reviewing is not activating
    tool = RunEvent.objects.get(run_id=run_id, event_type="llm.tool.result")
    assert tool.content["name"] == "review_skill_package"
    assert "Skill package review: skill://public/erp" in tool.content["content"]
    assert "required-secrets: ERP_TOKEN, ERP_USER; secrets-autonomous: true" in tool.content["content"]
