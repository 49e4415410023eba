"""GitHub agents that react to events: signed deliveries through Django's client fan out to
the custom agents whose ``github:`` block binds the repository and the event; each starts a
run as the agent's owner, with the server's token as GH_TOKEN in its sandbox commands only.
A delivery that cannot be handed to a run is a 503, and its redelivery starts it once."""

from __future__ import annotations

import json
import uuid

import pytest

from apps.agents.services import agent_create
from apps.channels.github_agents import thread_id_for
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.channels.test_github_runs import wait_until
from tests.support.fake_github import API_TOKEN, BOT_LOGIN, SECRET, delivery_headers, user as gh_user

URL = "/api/channels/github/webhook"
pytestmark = [pytest.mark.django_db(transaction=True)]
REPO = "octo/hello"


@pytest.fixture
def github(platform_config, monkeypatch, hosted_channels):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    platform_config(github={"enabled": True, "mention_login": BOT_LOGIN, "api_token": API_TOKEN})


def reviewer(owner, **triggers):
    return agent_create(owner=owner, data={"name": "reviewer", "soul": "You review pull requests.", "github": {
        "bot_login": "reviewer-bot", "bindings": [{"repo": REPO, "triggers": triggers or {"pull_request": {"actions": ["opened", "synchronize"]}}}]}})


def pull_request(action: str = "opened", *, number: int = 12, sender: str = "octocat") -> dict:
    pr = {"number": number, "title": "Parser rewrite", "body": "Rewrites the parser.", "state": "open",
          "html_url": f"https://github.com/{REPO}/pull/{number}", "user": gh_user("octocat", 583231),
          "head": {"sha": "a" * 40, "ref": "rewrite"}, "base": {"ref": "main"}}
    return {"action": action, "number": number, "pull_request": pr, "repository": {"full_name": REPO},
            "sender": gh_user(sender, 583231)}


def post(client, event: str, payload: dict, delivery: str | None = None):
    body = json.dumps(payload).encode()
    return client.post(URL, data=body, content_type="application/json", **delivery_headers(event, body, delivery=delivery))


def settled(count: int):
    wait_until(lambda: Run.objects.count() == count and not Run.objects.filter(status__in=["pending", "running"]).exists(),
               f"{count} settled run(s)")


def test_a_pull_request_starts_the_bound_agents_run_as_its_owner_with_gh_token(client, github, scripted_lead, user, caplog):
    agent = reviewer(user)
    scripted_lead(tool_reply(call("bash", command="printenv GH_TOKEN > /mnt/user-data/workspace/seen.txt; echo token=$GH_TOKEN",
                                  description="check the token")), "Reviewed.")
    response = post(client, "pull_request", pull_request("opened"))
    assert response.status_code == 202, response.content
    assert response.json()["agents"]["started"] == ["reviewer"] and response.json()["handled"] is True
    settled(1)
    run = Run.objects.select_related("thread").get()
    assert run.status == "success", run.error
    assert run.owner_id == user.pk and run.assistant_id == str(agent.pk)
    assert run.thread_id == thread_id_for(REPO, 12, str(agent.pk)) and run.thread.owner_id == user.pk
    asked = run.kwargs["input"]["messages"][0]["content"]
    assert "pull request #12 in octo/hello" in asked and "Parser rewrite" in asked and "Rewrites the parser." in asked
    # The token reached the command, and nowhere else: not the stored request, not the output, not the log.
    from apps.threads.uploads import uploads_dir

    workspace = uploads_dir(run.thread).parent / "workspace"
    assert (workspace / "seen.txt").read_text().strip() == API_TOKEN
    assert API_TOKEN not in json.dumps(run.kwargs)
    from apps.runs.state import thread_state_get

    tool_output = [m for m in thread_state_get(thread=run.thread)["values"]["messages"] if m.get("type") == "tool"][0]["content"]
    assert "token=" in tool_output and API_TOKEN not in tool_output
    assert API_TOKEN not in caplog.text


def test_events_a_binding_does_not_list_or_its_own_activity_start_nothing(client, github, scripted_lead, user):
    reviewer(user, pull_request={"actions": ["opened"]})
    scripted_lead("never used", loop=True)
    closed = post(client, "pull_request", pull_request("closed"))
    assert closed.status_code == 202 and closed.json()["handled"] is False
    assert "not one of ['opened']" in closed.json()["agents"]["skipped"][0]["reason"]
    own = post(client, "pull_request", pull_request("opened", sender="reviewer-bot[bot]"))
    assert own.json()["agents"]["skipped"] == [{"agent": "reviewer", "reason": "its own activity"}]
    unknown = post(client, "workflow_run", {"action": "completed", "repository": {"full_name": REPO}})
    assert unknown.status_code == 200 and unknown.json()["handled"] is False
    assert Run.objects.count() == 0


def test_a_busy_agent_thread_is_a_503_and_the_redelivery_starts_it_once(client, github, gated_agent, user):
    set_script, gate = gated_agent
    set_script(tool_reply(call("wait_for_gate")), "first review done", "second review done")
    reviewer(user)
    assert post(client, "pull_request", pull_request("opened")).status_code == 202
    wait_until(lambda: Run.objects.filter(status="running").exists(), "the first run to be running")

    sync = pull_request("synchronize")
    delivery = str(uuid.uuid4())
    refused = post(client, "pull_request", sync, delivery=delivery)
    assert refused.status_code == 503, refused.content
    assert refused.json()["agents"]["failed"][0]["agent"] == "reviewer" and "already has an active run" in refused.json()["detail"]
    assert Run.objects.count() == 1

    gate.set()
    settled(1)
    again = post(client, "pull_request", sync, delivery=delivery)  # GitHub's redelivery: same id
    assert again.status_code == 202 and again.json()["agents"]["started"] == ["reviewer"]
    settled(2)
    once_more = post(client, "pull_request", sync, delivery=delivery)
    assert once_more.status_code == 202 and once_more.json()["agents"]["already_started"] == ["reviewer"]
    assert Run.objects.count() == 2
    first, second = Run.objects.order_by("created_at")
    assert second.thread_id == first.thread_id and "synchronize" in second.kwargs["input"]["messages"][0]["content"]


def test_the_github_block_is_validated_and_versioned(client, user):
    client.force_login(user)
    bad = client.post("/api/agents", data={"name": "x", "github": {"bindings": [{"repo": "not a repo"}]}}, content_type="application/json")
    assert bad.status_code == 422 and bad.json()["detail"].startswith("github.bindings.0.repo")
    unknown_event = client.post("/api/agents", data={"name": "x", "github": {"bindings": [{"repo": REPO, "triggers": {"push": {}}}]}},
                                content_type="application/json")
    assert unknown_event.status_code == 422 and "github.bindings.0.triggers.push" in unknown_event.json()["detail"]
    made = client.post("/api/agents", data={"name": "x", "github": {"bindings": [{"repo": "Octo/Hello", "triggers": {
        "issues": {"actions": ["labeled"], "labels": ["triage"]}}}]}}, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["github"] == {"bindings": [{"repo": REPO, "triggers": {"issues": {"actions": ["labeled"], "labels": ["triage"]}}}]}
    cleared = client.patch("/api/agents/x", data={"github": None}, content_type="application/json")
    assert cleared.status_code == 200 and cleared.json()["github"] is None and cleared.json()["version"] == 2
