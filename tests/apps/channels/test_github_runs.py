"""GitHub deliveries that start runs: the connect flow by comment, runs as the connected user
with the repository context, one thread per (repository, number), the busy buffer, and the
answer posted through a local GitHub REST API (or only logged without a token)."""

from __future__ import annotations

import json
import time

import pytest

from apps.channels.models import ChannelConnection
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.support.fake_github import API_TOKEN, BOT_LOGIN, SECRET, FakeGitHubAPI, delivery_headers, issue_comment

URL = "/api/channels/github/webhook"
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def github_api():
    api = FakeGitHubAPI().start()
    yield api
    api.stop()


@pytest.fixture
def github(platform_config, monkeypatch, github_api, hosted_channels):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)

    def configure(**extra):
        platform_config(github={"enabled": True, "mention_login": BOT_LOGIN, "api_token": API_TOKEN,
                                "api_base_url": github_api.url, **extra})

    configure()
    return configure


def post(client, payload, *, event="issue_comment", delivery=None):
    body = json.dumps(payload).encode()
    response = client.post(URL, data=body, content_type="application/json", **delivery_headers(event, body, delivery=delivery))
    assert response.status_code == 202, response.content
    return response.json()


def settle(hosting):
    hosting.call(hosting.host_manager().idle, timeout=120)


def wait_until(predicate, what):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def connect(client, hosting, user, *, login="octocat", uid=583231):
    from apps.channels.connections import connect_code_issue

    issued = connect_code_issue(user=user, provider="github", ttl_seconds=600)
    assert post(client, issue_comment(f"@{BOT_LOGIN} /connect {issued.code}", login=login, uid=uid))["handled"]
    settle(hosting)


def test_a_stranger_gets_the_connect_hint_and_nothing_runs(client, github, github_api, hosted_channels, scripted_agent):
    scripted_agent("never used")
    post(client, issue_comment(f"@{BOT_LOGIN} please fix this", login="mallory", uid=666))
    settle(hosted_channels)
    [comment] = github_api.comments
    assert comment["repo"] == "octo/hello" and comment["number"] == 7
    assert comment["body"].startswith("Connect your account first")
    assert Run.objects.count() == 0


def test_connect_by_comment_then_a_mention_runs_as_that_user_with_the_repository_context(
        client, github, github_api, hosted_channels, scripted_agent, user):
    scripted_agent("Root cause: the parser skips empty lines.")
    connect(client, hosted_channels, user)
    assert github_api.comments[-1]["body"].startswith("Connected to DeerFlow as alice")
    connection = ChannelConnection.objects.get(provider="github")
    assert (connection.user_id, connection.external_id, connection.display_name) == (user.pk, "583231", "octocat")

    payload = issue_comment(f"@{BOT_LOGIN} please find the root cause", number=7, title="Crash on empty input")
    post(client, payload)
    settle(hosted_channels)
    [run] = Run.objects.select_related("thread")
    assert run.owner_id == user.pk and run.status == "success" and run.thread.owner_id == user.pk
    asked = run.kwargs["input"]["messages"][0]["content"]
    for part in ("please find the root cause", "Repository: octo/hello", "Issue #7: Crash on empty input",
                 "Comment by @octocat", payload["comment"]["html_url"]):
        assert part in asked
    assert github_api.comments[-1] == {"repo": "octo/hello", "number": 7, "body": "Root cause: the parser skips empty lines."}


def test_one_thread_per_repository_and_number(client, github, hosted_channels, scripted_agent, user):
    scripted_agent("ok", loop=True)
    connect(client, hosted_channels, user)
    post(client, issue_comment(f"@{BOT_LOGIN} first", number=7))
    settle(hosted_channels)
    post(client, issue_comment(f"@{BOT_LOGIN} again", number=7))
    settle(hosted_channels)
    post(client, issue_comment(f"@{BOT_LOGIN} other issue", number=8))
    settle(hosted_channels)
    post(client, issue_comment(f"@{BOT_LOGIN} other repo", number=7, repo="octo/world"))
    settle(hosted_channels)
    threads = list(Run.objects.order_by("created_at").values_list("thread_id", flat=True))
    assert len(threads) == 4
    assert threads[0] == threads[1] and len({threads[1], threads[2], threads[3]}) == 3


def test_two_users_on_one_issue_get_their_own_threads(client, github, hosted_channels, scripted_agent, user, other_user):
    scripted_agent("ok", loop=True)
    connect(client, hosted_channels, user, login="octocat", uid=1)
    connect(client, hosted_channels, other_user, login="hubot", uid=2)
    post(client, issue_comment(f"@{BOT_LOGIN} mine", login="octocat", uid=1))
    settle(hosted_channels)
    post(client, issue_comment(f"@{BOT_LOGIN} mine too", login="hubot", uid=2))
    settle(hosted_channels)
    first, second = Run.objects.select_related("thread").order_by("created_at")
    assert (first.owner_id, second.owner_id) == (user.pk, other_user.pk)
    assert first.thread_id != second.thread_id and first.thread.owner_id == user.pk and second.thread.owner_id == other_user.pk


def test_comments_while_busy_are_buffered_deduplicated_bounded_and_run_after(
        client, github, github_api, hosted_channels, gated_agent, user, caplog):
    set_script, gate = gated_agent
    github(max_buffered=1)
    set_script(tool_reply(call("wait_for_gate")), "first answer", "answer to the last comment")
    connect(client, hosted_channels, user)
    post(client, issue_comment(f"@{BOT_LOGIN} long job"))
    wait_until(lambda: Run.objects.filter(status="running").exists(), "the first run to be running")

    post(client, issue_comment(f"@{BOT_LOGIN} dropped: the oldest in a full buffer"), delivery="d-old")
    newest = issue_comment(f"@{BOT_LOGIN} the last comment")
    post(client, newest, delivery="d-new")
    post(client, newest, delivery="d-new")  # GitHub redelivers: once is enough
    wait_until(lambda: "dropped delivery d-old" in caplog.text, "the buffer to drop the oldest")
    assert Run.objects.count() == 1
    gate.set()
    settle(hosted_channels)

    first, second = Run.objects.order_by("created_at")
    assert Run.objects.count() == 2 and second.thread_id == first.thread_id
    assert "the last comment" in second.kwargs["input"]["messages"][0]["content"]
    bodies = [c["body"] for c in github_api.comments]
    assert bodies[-2:] == ["first answer", "answer to the last comment"]
    assert not any("Queued" in b for b in bodies)  # buffering is silent on GitHub


def test_a_redelivery_to_another_web_server_or_after_a_restart_runs_nothing(client, github, hosted_channels, scripted_agent, user):
    # make run has two web servers, each with its own manager: a fresh manager stands for the other one
    scripted_agent("answered once", loop=True)
    connect(client, hosted_channels, user)
    comment = issue_comment(f"@{BOT_LOGIN} run this once")
    post(client, comment, delivery="d-once")
    settle(hosted_channels)
    hosted_channels.call(hosted_channels.close_all, timeout=60)  # the next delivery finds a new manager
    post(client, comment, delivery="d-once")
    settle(hosted_channels)
    assert Run.objects.count() == 1
    post(client, issue_comment(f"@{BOT_LOGIN} a new comment"))  # and new deliveries still run
    settle(hosted_channels)
    assert Run.objects.count() == 2


def test_without_a_token_the_answer_is_only_logged(client, github, github_api, hosted_channels, scripted_agent, user, caplog):
    scripted_agent("A logged answer.")
    github(api_token="")
    connect(client, hosted_channels, user)
    post(client, issue_comment(f"@{BOT_LOGIN} hi"))
    settle(hosted_channels)
    assert github_api.comments == []
    assert "A logged answer." in caplog.text and Run.objects.get().status == "success"


def test_repositories_outside_allowed_chats_are_ignored(client, github, hosted_channels, scripted_agent, user):
    scripted_agent("ok", loop=True)
    github(allowed_chats=["octo/hello"])
    connect(client, hosted_channels, user)
    post(client, issue_comment(f"@{BOT_LOGIN} here", repo="octo/elsewhere"))
    settle(hosted_channels)
    assert Run.objects.count() == 0
    post(client, issue_comment(f"@{BOT_LOGIN} here", repo="octo/hello"))
    settle(hosted_channels)
    assert Run.objects.count() == 1
