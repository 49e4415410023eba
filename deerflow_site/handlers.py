"""The ASGI handler: Django's, with the request/response cycle run as plain sync code.

Django's ASGI handler builds an async middleware chain. Every ``MiddlewareMixin``
hook, ``process_view`` and sync view then hops to a worker thread separately: some thirty
loop/thread round trips, about 8 ms per request here. Our middlewares and DRF views are
sync, so this handler builds the sync chain (as under WSGI) and enters it with one
``sync_to_async``. Async views still work: Django's sync path runs them on the server's
event loop, and async streaming bodies are still streamed by the ASGI handler.

Django also gives every request a fresh thread for its thread-sensitive work. A fresh
thread has no database connection, so each request opened one (for SQLite: the file, its
PRAGMAs and thirty-odd SQL functions). Here a request borrows an idle one-thread executor
instead; its sync work still all runs on one thread, and the thread keeps its connection.
A request cancelled while its view still runs (Daphne cancels an application that outlives
its client by ``application_close_timeout``) gives its thread up: the view runs on there,
and the next request must not queue behind it.

The chain gives the thread's database connection back as soon as the view has answered.
Django would do it at ``request_finished``, which for a streamed body (an SSE run stream)
comes only when the stream ends: with pooled PostgreSQL connections every open stream would
hold one, and a few dozen long runs would drain the pool.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections

# Idle request threads kept for reuse; a burst beyond this gets threads that end with it.
IDLE_REQUEST_THREADS = 32


@dataclass
class _Borrowed:
    in_view: bool = False


# The request's borrowed thread, seen from its sync code (asgiref copies the context there).
_borrowed: contextvars.ContextVar[_Borrowed | None] = contextvars.ContextVar("deerflow_request_thread", default=None)


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle_threads: list[ThreadPoolExecutor] = []

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        chain = self._middleware_chain

        def chain_then_release(request):
            borrowed = _borrowed.get()
            if borrowed is not None:
                borrowed.in_view = True
            try:
                return chain(request)
            finally:
                close_old_connections()
                if borrowed is not None:
                    borrowed.in_view = False

        self._middleware_chain = sync_to_async(chain_then_release, thread_sensitive=True)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._idle_threads.pop() if self._idle_threads else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        borrowed = _Borrowed()
        token = _borrowed.set(borrowed)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            _borrowed.reset(token)
            # Cancelled mid-view: asgiref stops waiting, the thread is still the view's.
            if not borrowed.in_view and len(self._idle_threads) < IDLE_REQUEST_THREADS:
                self._idle_threads.append(executor)
            else:
                executor.shutdown(wait=False)


def get_asgi_application() -> SyncChainASGIHandler:
    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
