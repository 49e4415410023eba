"""``GET /api/threads/{id}/export``: a chat as Markdown or JSON, what the chat shows in its order
(questions with their attached files listed, answers with their model, tool calls and their
results cut short), replaced answers left out; another user's thread is a 404, a bad format 422."""

import json

import pytest

from harness.testing.script import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread
from tests.apps.threads.conftest import read_body
from tests.apps.threads.test_thread_actions import ask

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_markdown_and_json_hold_the_conversation_in_order(user_client, scripted_agent):
    scripted_agent(tool_reply(call("ls", path="/mnt/user-data/workspace")), "The workspace is empty.", "Rye goes well with soup.")
    tid = new_thread(user_client)
    ask(user_client, tid, "What is in the workspace?")
    ask(user_client, tid, "What goes with rye?")

    md = user_client.get(f"/api/threads/{tid}/export?as=markdown")
    assert md.status_code == 200 and md["Content-Type"].startswith("text/markdown")
    assert md["Content-Disposition"].startswith("attachment; filename=") and md["Content-Disposition"].endswith('.md"')
    text = md.content.decode()
    order = ["What is in the workspace?", "Tool call `ls`", "Result of `ls`", "The workspace is empty.", "What goes with rye?", "Rye goes well with soup."]
    positions = [text.index(piece) for piece in order]
    assert positions == sorted(positions), text
    assert "## You ·" in text and "## DeerFlow" in text

    data = json.loads(user_client.get(f"/api/threads/{tid}/export?as=json").content)
    assert data["thread_id"] == tid
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert data["messages"][1]["tool_calls"] == [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]
    assert all(m["created_at"] for m in data["messages"])


def test_a_regenerated_answer_is_exported_once_and_bad_requests_are_named(user_client, scripted_agent, other_user):
    from rest_framework.test import APIClient

    scripted_agent("First answer.", "Better answer.")
    tid = new_thread(user_client)
    ask(user_client, tid, "Tell me something")
    regen = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert regen.status_code == 201
    read_body(user_client.get(f"/api/threads/{tid}/runs/{regen.json()['run_id']}/join"))  # the join streams until the run ends
    text = user_client.get(f"/api/threads/{tid}/export").content.decode()  # markdown by default
    assert "Better answer." in text and "First answer." not in text

    bad = user_client.get(f"/api/threads/{tid}/export?as=pdf")
    assert bad.status_code == 422 and "as:" in bad.json()["detail"]
    stranger = APIClient()
    stranger.force_authenticate(other_user)
    assert stranger.get(f"/api/threads/{tid}/export").status_code == 404
