"""Slack's Events API (``mode: events``): ``POST /api/channels/slack/events`` through Django's
client, signed as Slack signs (``v0=`` HMAC-SHA256 over ``v0:{timestamp}:{body}``); the web
process answers through its hosted manager, against a local Slack Web API."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from apps.runs.models import Run
from tests.support.fake_slack import BOT_TOKEN, BOT_USER, FakeSlack

URL = "/api/channels/slack/events"
SIGNING_SECRET = "slack-signing-secret-for-tests"
pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fake_slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def events_mode(platform_config, fake_slack, hosted_channels):
    platform_config(slack={"enabled": True, "mode": "events", "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET,
                           "api_base_url": fake_slack.api_url, "edit_interval": 0})
    return hosted_channels


def signed(body: bytes, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(timestamp or int(time.time()))
    signature = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ts, "HTTP_X_SLACK_SIGNATURE": signature}


def post(client, payload: dict, **headers):
    body = json.dumps(payload).encode()
    return client.post(URL, data=body, content_type="application/json", **(headers or signed(body)))


def dm_event(fake: FakeSlack, text: str, user: str = "U0ALICE") -> dict:
    return fake.event_payload({"type": "message", "channel_type": "im", "channel": f"D{user}", "user": user,
                               "text": text, "ts": fake.new_ts()})


def test_the_route_is_absent_in_socket_mode(client, platform_config, fake_slack):
    platform_config(slack={"enabled": True, "bot_token": BOT_TOKEN, "app_token": "xapp-1", "signing_secret": SIGNING_SECRET})
    assert post(client, {"type": "url_verification", "challenge": "c"}).status_code == 404


def test_url_verification_is_answered(client, events_mode):
    response = post(client, {"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
    assert response.status_code == 200
    assert json.loads(response.content) == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


def test_a_bad_signature_is_401_and_nothing_runs(client, events_mode, fake_slack, scripted_agent):
    scripted_agent("never used")
    payload = dm_event(fake_slack, "hello")
    body = json.dumps(payload).encode()
    forged = post(client, payload, **signed(body, secret="guessed"))
    stale = post(client, payload, **signed(body, timestamp=int(time.time()) - 3600))
    unsigned = client.post(URL, data=body, content_type="application/json")
    assert (forged.status_code, stale.status_code, unsigned.status_code) == (401, 401, 401)
    assert "X-Slack-Signature" in forged.json()["detail"]
    events_mode.call(events_mode.host_manager().idle, timeout=30)
    assert fake_slack.calls_to("chat.postMessage") == [] and Run.objects.count() == 0


def test_a_signed_event_from_a_stranger_gets_the_hint(client, events_mode, fake_slack, scripted_agent):
    scripted_agent("never used")
    response = post(client, dm_event(fake_slack, "hello", user="U0STRANGER"))
    assert response.status_code == 200
    [hint] = fake_slack.wait_for(lambda: fake_slack.calls_to("chat.postMessage"), what="the connect hint")
    assert hint.args["channel"] == "DU0STRANGER" and hint.args["text"].startswith("Connect your account first")
    assert Run.objects.count() == 0


def test_a_connected_user_is_answered_over_the_events_api(client, events_mode, fake_slack, scripted_agent, user):
    from apps.channels.connections import connect_code_issue

    scripted_agent("Answered over HTTP events.")
    issued = connect_code_issue(user=user, provider="slack", ttl_seconds=600)
    assert post(client, dm_event(fake_slack, f"<@{BOT_USER}> /connect {issued.code}")).status_code == 200
    fake_slack.wait_for(lambda: any(c.args["text"].startswith("Connected to DeerFlow as alice")
                                    for c in fake_slack.calls_to("chat.postMessage")), what="the connect reply")
    assert post(client, dm_event(fake_slack, "what now?")).status_code == 200
    fake_slack.wait_for(lambda: any(c.args["text"] == "Answered over HTTP events." for c in fake_slack.calls_to("chat.update")),
                        what="the streamed answer")
    events_mode.call(events_mode.host_manager().idle, timeout=60)
    [run] = Run.objects.all()
    assert run.owner_id == user.pk and run.status == "success"


def interaction(fake: FakeSlack, message: dict, value: str, *, user: str = "U0ALICE") -> dict:
    """A block_actions payload as Slack posts it to the Interactivity Request URL."""
    return {"type": "block_actions", "team": {"id": "T0TEAM", "domain": "test"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0TEAM"},
            "api_app_id": "A0APP", "token": "legacy", "trigger_id": f"trig-{fake.new_ts()}",
            "channel": {"id": message["channel"], "name": "directmessage"},
            "message": {"type": "message", "ts": message["ts"], "text": message["text"], "user": BOT_USER},
            "actions": [{"type": "button", "block_id": "dfq", "action_id": "dfq_0", "value": value,
                         "text": {"type": "plain_text", "text": "Approve once"}, "action_ts": fake.new_ts()}]}


def press(client, payload: dict, url: str = "/api/channels/slack/interactions"):
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(payload)}).encode()
    return client.post(url, data=body, content_type="application/x-www-form-urlencoded", **signed(body))


def test_an_approval_round_trip_from_slack_blocks(client, events_mode, fake_slack, scripted_lead, user, tmp_path, monkeypatch):
    import os
    from pathlib import Path

    import yaml

    from apps.channels.connections import connect_code_issue
    from apps.governance.models import ApprovalDecision
    from harness.testing import call, tool_reply

    config = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    config["approvals"] = {"rules": [{"name": "risky-shell", "tool": "bash", "match": "rm ", "action": "ask"}]}
    path = tmp_path / "config-approvals.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    scripted_lead(tool_reply(call("bash", command="rm -f /mnt/user-data/outputs/old.txt", description="tidy")), "Tidied up.")
    issued = connect_code_issue(user=user, provider="slack", ttl_seconds=600)
    assert post(client, dm_event(fake_slack, f"<@{BOT_USER}> /connect {issued.code}")).status_code == 200
    fake_slack.wait_for(lambda: any(c.args["text"].startswith("Connected") for c in fake_slack.calls_to("chat.postMessage")),
                        what="the connect reply")
    assert post(client, dm_event(fake_slack, "tidy my outputs")).status_code == 200
    [asked] = fake_slack.wait_for(lambda: [c for c in fake_slack.calls_to("chat.postMessage") if c.args.get("blocks")],
                                  what="the approval buttons")
    buttons = asked.args["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Approve once", "Approve always in this chat", "Deny"]
    assert "risky-shell" in asked.args["text"]
    events_mode.call(events_mode.host_manager().idle, timeout=60)
    assert Run.objects.get().status == "interrupted"

    message = {"channel": asked.args["channel"], "ts": "1700000999.000100", "text": asked.args["text"]}
    assert press(client, interaction(fake_slack, message, buttons[0]["value"])).status_code == 200
    fake_slack.wait_for(lambda: any(c.args.get("text") == "Tidied up." for c in fake_slack.calls_to("chat.update")),
                        what="the resumed run's answer")
    events_mode.call(events_mode.host_manager().idle, timeout=60)
    paused, resumed = Run.objects.order_by("created_at")
    assert resumed.status == "success" and resumed.owner_id == user.pk and resumed.thread_id == paused.thread_id
    assert list(ApprovalDecision.objects.values_list("decision", flat=True)) == ["approved"]

    unsigned = client.post("/api/channels/slack/interactions", data=b"payload=%7B%7D",
                           content_type="application/x-www-form-urlencoded")
    assert unsigned.status_code == 401  # a press is signed like an event: a forged one runs nothing
