"""The channels API (API_CONTRACT §4): providers, connect codes, connections, revoke."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.channels.connections import connect_code_consume
from apps.channels.models import ChannelConnection, ChannelStatus

pytestmark = [pytest.mark.django_db]

TELEGRAM = {"enabled": True, "telegram": {"enabled": True, "bot_token": "123:abc"}}


# DeerFlow's frontend reads credential fields as objects (its ChannelCredentialField).
BOT_TOKEN_FIELD = {"name": "bot_token", "label": "Bot token", "type": "password", "required": True}


def test_providers_say_what_is_usable_and_why_not(user_client, channels_config, monkeypatch):
    monkeypatch.delenv("DF_NO_SUCH_TOKEN", raising=False)
    channels_config({"enabled": True, "telegram": {"enabled": True, "bot_token": "$DF_NO_SUCH_TOKEN"}})
    body = user_client.get("/api/channels/providers").json()
    assert body["enabled"] is True
    telegram = next(p for p in body["providers"] if p["provider"] == "telegram")
    assert telegram["enabled"] is True and telegram["configured"] is False and telegram["connectable"] is False
    assert "DF_NO_SUCH_TOKEN" in telegram["detail"] and telegram["credential_fields"] == [BOT_TOKEN_FIELD]
    assert "last_error" not in telegram

    channels_config(TELEGRAM)
    ChannelStatus.objects.create(provider="telegram", state="connected", bot_name="deer_bot", last_error="poll failed once")
    telegram = next(p for p in user_client.get("/api/channels/providers").json()["providers"] if p["provider"] == "telegram")
    assert telegram | {"last_event_at": None} == {
        "provider": "telegram", "display_name": "Telegram", "enabled": True, "configured": True, "connectable": True,
        "auth_mode": "code", "connection_status": "connected", "credential_fields": [BOT_TOKEN_FIELD], "detail": "",
        "bot_name": "deer_bot", "last_event_at": None}


def test_admins_also_see_the_last_error(user, channels_config):
    channels_config(TELEGRAM)
    user.is_staff = True
    user.save()
    ChannelStatus.objects.create(provider="telegram", state="retrying", last_error="getUpdates failed")
    client = APIClient()
    client.force_authenticate(user)
    telegram = next(p for p in client.get("/api/channels/providers").json()["providers"] if p["provider"] == "telegram")
    assert telegram["last_error"] == "getUpdates failed"


def test_connect_issues_a_code_with_a_deep_link_and_the_code_binds_once(user_client, user, channels_config):
    channels_config(TELEGRAM)
    ChannelStatus.objects.create(provider="telegram", state="connected", bot_name="deer_bot")
    response = user_client.post("/api/channels/telegram/connect")
    assert response.status_code == 200
    body = response.json()
    assert body["provider"] == "telegram" and body["mode"] == "code" and body["expires_in"] == 600
    assert body["url"] == f"https://t.me/deer_bot?start={body['code']}" and f"/connect {body['code']}" in body["instruction"]
    assert connect_code_consume(provider="telegram", code_text=body["code"], external_id="42", display_name="Ann") is not None
    assert connect_code_consume(provider="telegram", code_text=body["code"], external_id="43") is None
    connections = user_client.get("/api/channels/connections").json()["connections"]
    assert [(c["provider"], c["external_id"], c["display_name"]) for c in connections] == [("telegram", "42", "Ann")]


@pytest.mark.parametrize(("channels", "provider", "status", "detail"), [
    ({"enabled": False, "telegram": {"enabled": True, "bot_token": "x"}}, "telegram", 409, "IM channels are off"),
    ({"enabled": True, "telegram": {"enabled": False, "bot_token": "x"}}, "telegram", 409, "channels.telegram.enabled"),
    ({"enabled": True, "telegram": {"enabled": True}}, "telegram", 409, "missing bot_token"),
    (TELEGRAM, "myspace", 404, "no channel named 'myspace'"),
])
def test_connect_refuses_what_cannot_be_connected(user_client, channels_config, channels, provider, status, detail):
    channels_config(channels)
    response = user_client.post(f"/api/channels/{provider}/connect")
    assert response.status_code == status and detail in response.json()["detail"]


def test_revoke_is_the_owners_only(user_client, user, other_user, channels_config):
    channels_config(TELEGRAM)
    mine = ChannelConnection.objects.create(user=user, provider="telegram", external_id="1")
    theirs = ChannelConnection.objects.create(user=other_user, provider="telegram", external_id="2")
    assert user_client.delete(f"/api/channels/connections/{theirs.pk}").status_code == 404
    assert user_client.delete("/api/channels/connections/not-a-number").status_code == 404
    assert user_client.delete(f"/api/channels/connections/{mine.pk}").status_code == 204
    assert user_client.delete(f"/api/channels/connections/{mine.pk}").status_code == 404
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_at is not None and theirs.revoked_at is None
    assert user_client.get("/api/channels/connections").json() == {"connections": []}


def test_the_channels_api_needs_a_signed_in_user(api_client):
    assert api_client.get("/api/channels/providers").status_code in (401, 403)
    assert api_client.post("/api/channels/telegram/connect").status_code in (401, 403)
