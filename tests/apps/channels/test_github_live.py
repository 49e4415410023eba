"""GitHub deliveries over real HTTP to a live Daphne server (its own process, its own runs
loop), answered by the real ChatOpenAI path against the loopback model, the answer posted to a
local GitHub REST API: the whole middleware chain as GitHub meets it."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from harness.testing import loopback_config_text
from tests.support.fake_github import API_TOKEN, BOT_LOGIN, SECRET, FakeGitHubAPI, issue_comment, sign
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def github_api():
    api = FakeGitHubAPI().start()
    yield api
    api.stop()


@pytest.fixture(scope="module")
def github_live(tmp_path_factory, model_server, github_api):
    extra = ("web:\n  allowed_private_networks: ['127.0.0.0/8']\n"
             "channels:\n  enabled: true\n  github:\n    enabled: true\n"
             f"    mention_login: {BOT_LOGIN}\n    api_token: {API_TOKEN}\n    api_base_url: {github_api.url}\n")
    server = start_live_server(tmp_path_factory.mktemp("github-live"), config_text=loopback_config_text(model_server.base_url, extra_yaml=extra),
                               extra_env={"GITHUB_WEBHOOK_SECRET": SECRET, "DEERFLOW_MAX_ANONYMOUS_BODY": "1048576"})
    yield server
    server.stop()


def deliver(live, payload: dict, *, secret: str = SECRET, event: str = "issue_comment") -> tuple[int, dict]:
    body = json.dumps(payload).encode()
    request = urllib.request.Request(f"{live.url}/api/channels/github/webhook", data=body, method="POST", headers={
        "Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": f"live-{time.monotonic_ns()}",
        "X-Hub-Signature-256": sign(secret, body), "User-Agent": "GitHub-Hookshot/live"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def wait_for(predicate, what: str):
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_connected_commenter_is_answered_on_the_issue(github_live, github_api, script):
    script("Live answer from the agent.")
    code = github_live.shell(
        "from apps.accounts.models import User; from apps.channels.connections import connect_code_issue\n"
        "u, _ = User.objects.get_or_create(username='gh-live')\n"
        "print(connect_code_issue(user=u, provider='github', ttl_seconds=600).code)")
    assert deliver(github_live, issue_comment(f"@{BOT_LOGIN} /connect {code}", login="livecat", uid=4242))[0] == 202
    wait_for(lambda: any(c["body"].startswith("Connected to DeerFlow as gh-live") for c in github_api.comments), "the connect reply")

    # A long issue description: over the default 64 KiB anonymous limit, inside the raised one.
    payload = issue_comment(f"@{BOT_LOGIN} what does the log say?", login="livecat", uid=4242, number=31)
    payload["issue"]["body"] = "log line\n" * 9000
    status, answer = deliver(github_live, payload)
    assert (status, answer["handled"]) == (202, True)
    wait_for(lambda: any(c["body"] == "Live answer from the agent." for c in github_api.comments), "the posted answer")
    assert [c for c in github_api.comments if c["body"] == "Live answer from the agent."][0]["number"] == 31
    owner = github_live.shell("from apps.runs.models import Run; r = Run.objects.get(); print(r.owner.username, r.status)")
    assert owner == "gh-live success"


def test_a_forged_delivery_is_refused(github_live, github_api):
    before = len(github_api.comments)
    count_runs = "from apps.runs.models import Run; print(Run.objects.count())"
    runs = github_live.shell(count_runs)
    status, body = deliver(github_live, issue_comment(f"@{BOT_LOGIN} run something", login="livecat", uid=4242), secret="forged")
    assert status == 401 and "X-Hub-Signature-256" in body["detail"]
    assert github_live.shell(count_runs) == runs
    assert len(github_api.comments) == before
