"""Scheduled delivery: a scheduled task naming a connection gets its result posted there.

``delivery_enqueue`` runs where the run settles (any process) and only writes an outbox row;
the channels worker, which holds the platform connections, sends pending rows
(``deliver_pending``) and marks them sent or failed.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from django.db import IntegrityError
from django.utils import timezone

from apps.channels.models import ChannelDelivery
from apps.runs.lifecycle import RunStatus
from apps.runs.selectors import run_outcome

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
POLL_SECONDS = 2.0


def delivery_enqueue(*, run_id: str, connection_id: int, task_id: str = "", title: str = "") -> None:
    try:
        ChannelDelivery.objects.get_or_create(run_id=run_id, defaults={"connection_id": connection_id, "task_id": task_id or "",
                                                                       "title": title[:200]})
    except IntegrityError:  # the connection was deleted meanwhile: nothing to post to
        logger.info("Run %s: delivery target %s is gone", run_id, connection_id)


def _pending(providers: list[str]) -> list[dict]:
    rows = (ChannelDelivery.objects.select_related("connection")
            .filter(status=ChannelDelivery.Status.PENDING, connection__provider__in=providers).order_by("created_at")[:20])
    return [{"id": d.pk, "run_id": d.run_id, "title": d.title, "provider": d.connection.provider,
             "external_id": d.connection.external_id, "workspace": d.connection.workspace,
             "revoked": d.connection.revoked_at is not None, "attempts": d.attempts} for d in rows]


def _message(run_id: str, title: str) -> str:
    from apps.channels.turns import final_answer
    title = title or "Scheduled task"
    run = run_outcome(run_id=run_id)
    if run["status"] != RunStatus.SUCCESS:
        return f"⏰ {title}: the run ended {run['status']}" + (f": {run['error']}" if run["error"] else ".")
    return f"⏰ {title}\n\n{final_answer(run_id) or '(no answer)'}"


def _mark(pk: int, *, status: str, error: str = "", attempt: bool = True) -> None:
    from django.db.models import F

    values = {"status": status, "error": error[:2000]}
    if attempt:
        values["attempts"] = F("attempts") + 1
    if status == ChannelDelivery.Status.SENT:
        values["sent_at"] = timezone.now()
    ChannelDelivery.objects.filter(pk=pk).update(**values)


async def deliver_pending(adapters) -> int:
    """Send what is waiting for the running adapters; the number sent."""
    from apps.channels.turns import _presented, split_text

    sent = 0
    for row in await database_sync_to_async(_pending)(list(adapters)):
        if row["revoked"]:
            await database_sync_to_async(_mark)(row["id"], status=ChannelDelivery.Status.FAILED, error="the connection was revoked",
                                                attempt=False)
            continue
        adapter = adapters[row["provider"]]
        try:
            chat = await adapter.direct_chat(row["external_id"], row["workspace"])
            text = await database_sync_to_async(_message)(row["run_id"], row["title"])
            for chunk in split_text(text, adapter.capabilities.max_text):
                await adapter.send_text(chat, chunk)
            if adapter.capabilities.files_out:
                for name, data, content_type in await database_sync_to_async(_presented)(row["run_id"]):
                    await adapter.send_file(chat, name, data, content_type=content_type)
        except Exception as exc:  # a platform outage: retried on the next ticks, then given up
            failed = row["attempts"] + 1 >= MAX_ATTEMPTS
            logger.warning("Delivery of run %s to %s failed (%s)%s", row["run_id"], row["provider"], exc, "; giving up" if failed else "")
            await database_sync_to_async(_mark)(row["id"], status=ChannelDelivery.Status.FAILED if failed else ChannelDelivery.Status.PENDING,
                                                error=f"{type(exc).__name__}: {exc}")
            continue
        await database_sync_to_async(_mark)(row["id"], status=ChannelDelivery.Status.SENT)
        sent += 1
    return sent


async def deliver_forever(adapters, stop: asyncio.Event | None = None) -> None:
    while stop is None or not stop.is_set():
        try:
            await deliver_pending(adapters)
        except Exception:
            logger.exception("Scheduled deliveries: a pass failed")
        await asyncio.sleep(POLL_SECONDS)
