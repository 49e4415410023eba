"""context.secrets reach the sandbox as environment variables and are stored nowhere."""

import json
from pathlib import Path

import pytest
from django.conf import settings

from apps.runs.models import Run, RunEvent
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import body_of, new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

SECRET = "s3cr3t-value-4242"


def test_secrets_are_injected_masked_and_never_stored(user_client, scripted_agent, settings, recwarn):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    scripted_agent(tool_reply(call("bash", description="check the token", command="echo token=$API_TOKEN; echo ${#API_TOKEN}")), "done")
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {
        "input": {"messages": [{"role": "user", "content": "use the token"}]},
        "context": {"secrets": {"API_TOKEN": SECRET}, "thinking_enabled": False},
    }, format="json")
    values = json.loads(body_of(response))
    tool_output = next(m["content"] for m in values["messages"] if m["type"] == "tool")
    assert str(len(SECRET)) in tool_output  # the command really had the variable
    assert SECRET not in tool_output  # and the model never sees its value

    run = Run.objects.get(thread_id=tid)
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
