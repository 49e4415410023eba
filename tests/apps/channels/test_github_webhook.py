"""``POST /api/channels/github/webhook``: real HMAC-signed deliveries through Django's client."""

from __future__ import annotations

import json

import pytest

from apps.runs.models import Run
from tests.support.fake_github import BOT_LOGIN, SECRET, delivery_headers, issue_comment, sign

URL = "/api/channels/github/webhook"
pytestmark = pytest.mark.django_db


@pytest.fixture
def github_on(platform_config, monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    platform_config(github={"enabled": True, "mention_login": BOT_LOGIN})


def post(client, event: str, payload, *, secret: str = SECRET, **extra):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return client.post(URL, data=body, content_type="application/json", **{**delivery_headers(event, body, secret=secret), **extra})


def test_no_route_without_the_secret(client, platform_config, monkeypatch):
    monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
    response = post(client, "issue_comment", issue_comment(f"@{BOT_LOGIN} hi"))
    assert response.status_code == 404
    assert response.json() == client.post("/api/channels/no-such-route").json()  # as if it did not exist


def test_bad_signature_is_401_and_runs_nothing(client, github_on):
    response = post(client, "issue_comment", issue_comment(f"@{BOT_LOGIN} hi"), secret="not the secret")
    assert response.status_code == 401
    assert "X-Hub-Signature-256" in response.json()["detail"]
    body = json.dumps(issue_comment(f"@{BOT_LOGIN} hi")).encode()
    unsigned = client.post(URL, data=body, content_type="application/json", HTTP_X_GITHUB_EVENT="issue_comment",
                           HTTP_X_GITHUB_DELIVERY="d-unsigned")
    assert unsigned.status_code == 401
    assert Run.objects.count() == 0


def test_ping_is_answered(client, github_on):
    response = post(client, "ping", {"zen": "Design for failure.", "hook_id": 1})
    assert response.status_code == 200 and response.json() == {"handled": True, "event": "ping"}


@pytest.mark.parametrize("body, detail", [
    (b"{not json", "the payload is not JSON"),
    (json.dumps({"action": "created", "comment": {"body": f"@{BOT_LOGIN} x"}}).encode(), "payload.comment.user is missing"),
])
def test_malformed_payload_is_acknowledged_and_runs_nothing(client, github_on, body, detail, caplog):
    response = post(client, "issue_comment", body)
    assert response.status_code == 202
    assert response.json()["handled"] is False and detail in response.json()["detail"]
    assert "malformed" in caplog.text
    assert Run.objects.count() == 0


def test_form_encoded_delivery_is_read_too(client, github_on):
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(issue_comment("nothing for the bot"))}).encode()
    response = client.post(URL, data=body, content_type="application/x-www-form-urlencoded",
                           HTTP_X_GITHUB_EVENT="issue_comment", HTTP_X_GITHUB_DELIVERY="d-form",
                           HTTP_X_HUB_SIGNATURE_256=sign(SECRET, body))
    assert response.status_code == 202 and "does not address the bot" in response.json()["detail"]


def test_comment_without_a_mention_runs_nothing(client, github_on):
    response = post(client, "issue_comment", issue_comment("just chatting"))
    assert response.status_code == 202 and response.json()["handled"] is False
    assert Run.objects.count() == 0


def test_channels_off_acknowledges_and_says_why(client, github_on, platform_config):
    platform_config(enabled=False, github={"enabled": True, "mention_login": BOT_LOGIN})
    response = post(client, "issue_comment", issue_comment(f"@{BOT_LOGIN} hi"))
    assert response.status_code == 202
    assert response.json()["detail"] == "channels.enabled is false in config.yaml"
    assert Run.objects.count() == 0
