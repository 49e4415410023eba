"""context.secrets reach the sandbox as environment variables only while a skill declaring
them is active, and are stored nowhere."""

import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from apps.runs.models import Run, RunEvent
from harness.skills import loader
from harness.skills.loader import custom_root
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import body_of, new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

SECRET = "s3cr3t-value-4242"


@pytest.fixture
def token_skill(user):
    folder = custom_root(str(user.pk)) / "token-skill"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text("---\nname: token-skill\ndescription: Uses the API token.\nrequired-secrets: [API_TOKEN]\n---\nUse it.\n")
    loader.clear_cache()
    yield folder
    shutil.rmtree(custom_root(str(user.pk)), ignore_errors=True)
    loader.clear_cache()


def test_secrets_are_injected_masked_and_never_stored(user_client, scripted_agent, settings, recwarn, token_skill):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    scripted_agent(tool_reply(call("bash", description="check the token", command="echo token=$API_TOKEN; echo ${#API_TOKEN}")), "done",
                   tool_reply(call("bash", description="again", command="echo token=${API_TOKEN:-none}")), "done again")
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {
        "input": {"messages": [{"role": "user", "content": "/token-skill use the token"}]},
        "context": {"secrets": {"API_TOKEN": SECRET}, "thinking_enabled": False},
    }, format="json")
    values = json.loads(body_of(response))
    tool_output = next(m["content"] for m in values["messages"] if m["type"] == "tool")
    assert str(len(SECRET)) in tool_output  # the command really had the variable
    assert SECRET not in tool_output  # and the model never sees its value

    # the next run starts no skill: the secret is sent, but no command gets it
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {
        "input": {"messages": [{"role": "user", "content": "use it again"}]},
        "context": {"secrets": {"API_TOKEN": SECRET}, "thinking_enabled": False},
    }, format="json")
    values = json.loads(body_of(response))
    assert [m["content"] for m in values["messages"] if m["type"] == "tool"][-1].startswith("token=none")

    run = Run.objects.filter(thread_id=tid).order_by("created_at").first()
    assert run.status == "success"
    assert run.kwargs["context"] == {"thinking_enabled": False}
    assert SECRET not in json.dumps(list(RunEvent.objects.values_list("content", "metadata")))
    assert not [w for w in recwarn if SECRET in str(w.message)]  # nor in warnings/logs
    checkpoints = Path(settings.CHECKPOINTER_URL.removeprefix("sqlite:///"))
    if checkpoints.exists():
        for path in checkpoints.parent.glob(checkpoints.name + "*"):
            assert SECRET.encode() not in path.read_bytes(), path


def test_malformed_secrets_are_refused(user_client, scripted_agent):
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs", {"context": {"secrets": {"A": 1}}}, format="json")
    assert response.status_code == 422 and "context.secrets" in response.json()["detail"]
    assert not Run.objects.exists()
