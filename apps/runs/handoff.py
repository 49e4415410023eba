"""Runs admitted where nobody can watch them are executed by a server instead.

On the embedded stack (in-process runs, no Redis) a run's live stream exists only in the
memory of the process executing it. Beat's firings are dispatched inside the Celery worker,
which serves no HTTP or websocket, so a scheduled run executed there could only be seen after
it ended. Such a process offers the run to the servers instead: it marks the pending row as
theirs (``lease_owner = OFFERED``); each server polls for offered rows and takes one with an
update that only one process can win, then executes it on its runs loop, where the thread's
page follows it like any other run. When no server takes the offer within ``TAKE_BACK_AFTER``
(none is running), the offering process takes the run back and executes it itself.

The row keeps the pending lease it was admitted with, so an offer nobody takes (every process
stopped) is settled by orphan recovery like any lost pending run.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import DatabaseSyncToAsync
from django.conf import settings
from django.db import connections, router

from apps.runs.models import Run
from apps.runs.runtime import process_id, get_runtime
from deerflow_site.db.prepared_sql import PerConnection, convert_row, row_converters

logger = logging.getLogger(__name__)

OFFERED = "offered-to-servers"
POLL_SECONDS = 0.5
TAKE_BACK_AFTER = 3.0


def handoff_possible() -> bool:
    """Whether streams are process-local here (the embedded executor on the memory bridge)."""
    return settings.RUN_EXECUTOR == "embedded" and settings.RUN_STREAM_BRIDGE == "memory"


def _take(run_id: str) -> bool:
    return bool(Run.objects.filter(pk=run_id, status=Run.Status.PENDING, lease_owner=OFFERED).update(lease_owner=process_id()))


def run_offer(run_id: str) -> None:
    """From a process that serves no streams: let a server execute the run (see above)."""
    Run.objects.filter(pk=run_id, status=Run.Status.PENDING, lease_owner=process_id()).update(lease_owner=OFFERED)
    get_runtime().submit_coro(_take_back_later(run_id))


async def _take_back_later(run_id: str) -> None:
    from apps.runs.worker import execute_run

    runtime = get_runtime()
    await asyncio.sleep(TAKE_BACK_AFTER)
    if await DatabaseSyncToAsync(_take, thread_sensitive=False)(run_id):
        logger.info("No server took run %s: executing it here, without a live stream", run_id)
        runtime.start(run_id, execute_run)
        return
    # A server executes it. The stream admission opened here has no one to serve: end it so
    # the bridge lets it go with the other finished streams.
    try:
        runtime.bridge.end(run_id)
    except RuntimeError:
        pass


def _offered_sql(connection) -> str:
    meta, quote = Run._meta, connection.ops.quote_name

    def column(name: str) -> str:
        return quote(meta.get_field(name).column)

    return (f"SELECT {column('id')}, {column('thread')} FROM {quote(meta.db_table)} "
            f"WHERE {column('kind')} = %s AND {column('status')} = %s AND {column('lease_owner')} = %s "
            f"ORDER BY {column('created_at')} DESC LIMIT 20")


_OFFERED_SQL = PerConnection(_offered_sql)


def _offered_runs() -> list[tuple[str, str]]:
    """``Run.objects.filter(status=PENDING, lease_owner=OFFERED).values_list("pk", "thread_id")[:20]``
    as SQL built once per connection. Every server asks twice a second, run or no run: the
    ORM's building of it was about half of what an idle `make run` spent (benchmarks/HISTORY.md)."""
    connection = connections[router.db_for_read(Run)]
    with connection.cursor() as cursor:
        cursor.execute(_OFFERED_SQL(connection), [Run.Kind.RUN.value, Run.Status.PENDING.value, OFFERED])
        rows = cursor.fetchall()
    if not rows:  # nearly every tick
        return []
    converters = row_converters(connection, [Run._meta.get_field("id"), Run._meta.get_field("thread")])
    return [(str(pk), thread_id) for pk, thread_id in (convert_row(connection, row, converters) for row in rows)]


async def take_offered_runs_forever() -> None:
    """A server's side, on its runs loop: take offered runs and execute them here."""
    from apps.runs.worker import execute_run

    runtime = get_runtime()
    offered = DatabaseSyncToAsync(_offered_runs, thread_sensitive=False)
    take = DatabaseSyncToAsync(_take, thread_sensitive=False)
    failing = False
    while True:
        await asyncio.sleep(POLL_SECONDS)
        try:
            for run_id, thread_id in await offered():
                if await take(run_id):
                    runtime.bridge.publish(run_id, "metadata", {"run_id": run_id, "thread_id": thread_id})
                    runtime.start(run_id, execute_run)
            if failing:
                logger.info("Taking offered runs again")
                failing = False
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database went away for a moment: the next tick retries
            # Said once per outage, not twice a second.
            (logger.debug if failing else logger.warning)("Could not take offered runs (retrying every %.1f s): %s", POLL_SECONDS, exc)
            failing = True


def serve_offered_runs() -> None:
    """At a server's startup: take the runs that stream-less processes offer."""
    if handoff_possible():
        get_runtime().keep_running(take_offered_runs_forever, "run-offers")
