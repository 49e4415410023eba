"""The channels worker: which channels start, why the others stay off (logged and recorded),
and the admin views of what it records."""

from __future__ import annotations

import asyncio
import logging

import pytest
from channels.db import database_sync_to_async

from apps.channels.config import ChannelsSettings
from apps.channels.worker import ChannelsWorker, plan
from apps.channels.models import ChannelConnection, ChannelStatus
from tests.support.fake_telegram import FakeTelegram


def _settings(enabled=True, **providers) -> ChannelsSettings:
    return ChannelsSettings(enabled=enabled, queue_size=5, connect_code_ttl=600, public_url="", providers=providers)


def test_the_plan_names_why_each_channel_stays_off():
    assert plan(_settings(enabled=False, telegram={"enabled": True, "bot_token": "x"})).disabled["telegram"] == \
        "channels.enabled is false in config.yaml"
    assert plan(_settings()).disabled["telegram"] == "no channels.telegram section in config.yaml"
    assert plan(_settings(telegram={"bot_token": "x"})).disabled["telegram"] == "channels.telegram.enabled is not true"
    assert plan(_settings(telegram={"enabled": True})).disabled["telegram"] == "channels.telegram is missing bot_token"
    off = plan(_settings(telegram={"enabled": True, "unavailable_reason": "channels.telegram.bot_token: environment variable TG is not set"}))
    assert off.disabled["telegram"] == "channels.telegram: channels.telegram.bot_token: environment variable TG is not set"
    unknown = plan(_settings(myspace={"enabled": True})).disabled["myspace"]
    assert unknown.startswith("no adapter named 'myspace'; known: ") and "telegram" in unknown
    assert list(plan(_settings(telegram={"enabled": True, "bot_token": "x"})).adapters) == ["telegram"]


@pytest.mark.django_db(transaction=True)
async def test_the_worker_starts_telegram_records_its_status_and_stops(caplog):
    fake = await FakeTelegram().start()
    worker = ChannelsWorker(_settings(telegram=fake.settings, myspace={"enabled": True}))
    stop = asyncio.Event()
    try:
        with caplog.at_level(logging.INFO, logger="apps.channels"):
            task = asyncio.create_task(worker.run_forever(stop))
            await fake.wait_for(lambda: len(fake.get_updates_offsets) >= 1)
            status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
            assert status.state == "connected" and status.bot_name == "deerflow_bot"
            myspace = await database_sync_to_async(ChannelStatus.objects.get)(provider="myspace")
            assert myspace.state == "disabled" and myspace.detail.startswith("no adapter named 'myspace'")
            stop.set()
            await task
        assert "Channel myspace is off: no adapter named 'myspace'" in caplog.text
        status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
        assert status.state == "stopped"
    finally:
        await fake.stop()


@pytest.mark.django_db(transaction=True)
async def test_a_refused_token_keeps_the_channel_off_and_the_worker_up():
    fake = await FakeTelegram().start()
    worker = ChannelsWorker(_settings(telegram={**fake.settings, "bot_token": "1:WRONG"}))
    try:
        await worker.start()
        assert worker.started == []
        status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
        assert status.state == "disabled" and "start failed" in status.detail and status.last_error.startswith("could not start")
        await worker.stop()
    finally:
        await fake.stop()


@pytest.mark.django_db
def test_admins_revoke_connections_and_see_worker_status(admin_client, user):
    connection = ChannelConnection.objects.create(user=user, provider="telegram", external_id="501", display_name="Ann")
    ChannelStatus.objects.create(provider="telegram", state="connected", bot_name="deer_bot", last_error="getUpdates failed once")
    listing = admin_client.get("/admin/integrations/channelstatus/")
    assert listing.status_code == 200 and b"deer_bot" in listing.content and b"getUpdates failed once" in listing.content
    assert admin_client.get("/admin/integrations/channelconversation/").status_code == 200
    assert admin_client.get("/admin/integrations/channeldelivery/").status_code == 200
    response = admin_client.post("/admin/integrations/channelconnection/", {"action": "revoke", "_selected_action": [connection.pk]})
    assert response.status_code == 302
    connection.refresh_from_db()
    assert connection.revoked_at is not None
