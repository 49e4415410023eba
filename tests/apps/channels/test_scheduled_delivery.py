"""Scheduled delivery: a task naming a connection gets its result posted there by the
channels worker (Telegram through the fake Bot API server)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels.db import database_sync_to_async

from apps.channels.adapters.telegram import TelegramAdapter
from apps.channels.models import ChannelConnection, ChannelDelivery
from apps.channels.outbox import deliver_pending
from apps.schedules.models import ScheduledTaskRun
from tests.support.channels import make_manager
from tests.support.fake_telegram import FakeTelegram

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_deliver_to_must_be_one_of_the_users_live_connections(user_client, user, other_user):
    mine = ChannelConnection.objects.create(user=user, provider="telegram", external_id="501")
    theirs = ChannelConnection.objects.create(user=other_user, provider="telegram", external_id="502")
    base = {"title": "Daily", "prompt": "news", "cron": "0 8 * * *"}
    for bad in (theirs.pk, "abc", True, 99999):
        response = user_client.post("/api/scheduled-tasks", {**base, "deliver_to": bad}, format="json")
        assert response.status_code == 422 and response.json()["detail"].startswith("deliver_to:"), bad
    created = user_client.post("/api/scheduled-tasks", {**base, "deliver_to": mine.pk}, format="json")
    assert created.status_code == 201 and created.json()["deliver_to"] == mine.pk
    cleared = user_client.patch(f"/api/scheduled-tasks/{created.json()['id']}", {"deliver_to": None}, format="json")
    assert cleared.status_code == 200 and cleared.json()["deliver_to"] is None


async def _settled(task_run_id) -> ScheduledTaskRun:
    while True:
        row = await database_sync_to_async(ScheduledTaskRun.objects.get)(pk=task_run_id)
        if row.status not in ScheduledTaskRun.ACTIVE_STATUSES:
            return row
        await asyncio.sleep(0.05)


async def test_a_scheduled_result_is_posted_to_the_named_connection(user, scripted_agent):
    from apps.schedules.dispatch import dispatch
    from apps.schedules.services import scheduled_task_create

    fake = await FakeTelegram().start()
    manager, adapter = make_manager(TelegramAdapter, adapter_settings=fake.settings)
    try:
        await adapter.start()
        connection = await database_sync_to_async(ChannelConnection.objects.create)(user=user, provider="telegram", external_id="501")
        task = await database_sync_to_async(scheduled_task_create)(
            user=user, data={"title": "Morning brief", "prompt": "brief me", "cron": "0 8 * * *", "deliver_to": connection.pk})
        scripted_agent("Three things happened today.")
        row = await database_sync_to_async(dispatch)(task.pk, trigger=ScheduledTaskRun.Trigger.MANUAL)
        row = await _settled(row.pk)
        assert row.status == "success"
        delivery = await database_sync_to_async(ChannelDelivery.objects.get)(run_id=str(row.run_id))
        assert delivery.status == "pending"
        assert await deliver_pending(manager.adapters) == 1
        assert fake.texts(501) == ["⏰ Morning brief\n\nThree things happened today."]
        assert await deliver_pending(manager.adapters) == 0  # posted once
        delivery = await database_sync_to_async(ChannelDelivery.objects.get)(pk=delivery.pk)
        assert delivery.status == "sent" and delivery.sent_at is not None
    finally:
        await adapter.stop()
        await fake.stop()


async def test_a_revoked_target_gets_nothing_and_an_outage_is_retried(user, scripted_agent):
    from apps.channels.connections import connection_revoke

    fake = await FakeTelegram().start()
    manager, adapter = make_manager(TelegramAdapter, adapter_settings=fake.settings)
    try:
        await adapter.start()
        live = await database_sync_to_async(ChannelConnection.objects.create)(user=user, provider="telegram", external_id="501")
        gone = await database_sync_to_async(ChannelConnection.objects.create)(user=user, provider="telegram", external_id="777")
        await database_sync_to_async(connection_revoke)(connection=gone)
        run_a, run_b = str(uuid.uuid4()), str(uuid.uuid4())  # runs that are gone: reported as such
        await database_sync_to_async(ChannelDelivery.objects.create)(connection=gone, run_id=run_a)
        await database_sync_to_async(ChannelDelivery.objects.create)(connection=live, run_id=run_b)
        fake.fail_method["sendMessage"] = 3  # the adapter retries twice, then this pass gives up for now
        assert await deliver_pending(manager.adapters) == 0
        rows = {d.run_id: d for d in await database_sync_to_async(lambda: list(ChannelDelivery.objects.all()))()}
        assert rows[run_a].status == "failed" and rows[run_a].error == "the connection was revoked"
        assert rows[run_b].status == "pending" and rows[run_b].attempts == 1
        assert await deliver_pending(manager.adapters) == 1
        assert fake.texts(777) == [] and fake.texts(501)[0].startswith("⏰ Scheduled task: the run ended error")
    finally:
        await adapter.stop()
        await fake.stop()
