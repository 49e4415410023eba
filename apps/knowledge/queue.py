"""Ingestion off the request path, by the same switch as runs: with ``RUN_EXECUTOR=celery`` a
Celery task on the workers, otherwise one background thread of this process (documents are
converted one at a time, so a large upload never takes both cores from the chats).

Work is sent once the transaction that created the document commits, so the worker always
finds its row. A document a stopped process left queued or processing keeps that status until
its owner presses *Retry* (``document_retry``), which sends it again.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import connections, transaction

from apps.knowledge.ingestion import document_ingest
from apps.knowledge.tasks import ingest_document

logger = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_pending: set[Future] = set()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-ingest")
        return _executor


def _in_thread(document_id: str) -> None:
    try:
        document_ingest(document_id=document_id)
    except Exception:
        logger.exception("Knowledge ingestion of document %s failed", document_id)
    finally:
        connections.close_all()  # this thread's own: it may wait long for the next document


def _send(document_id: str) -> None:
    if settings.RUN_EXECUTOR == "celery":
        ingest_document.delay(document_id)
        return
    future = _pool().submit(_in_thread, document_id)
    with _lock:
        _pending.add(future)
    future.add_done_callback(lambda f: _pending.discard(f))


def ingest_later(document_id) -> None:
    document_id = str(document_id)
    transaction.on_commit(lambda: _send(document_id))


def drain(timeout: float = 60) -> bool:
    """Wait until what this process queued is done (tests, and a server that is stopping)."""
    with _lock:
        futures = set(_pending)
    _, not_done = wait(futures, timeout=timeout)
    return not not_done
