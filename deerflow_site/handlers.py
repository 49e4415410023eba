"""The ASGI handler: Django's, with the request/response cycle run as plain sync code.

Django's ASGI handler builds an async middleware chain. Every ``MiddlewareMixin``
hook, ``process_view`` and sync view then hops to a worker thread separately: some thirty
loop/thread round trips, about 8 ms per request here. Our middlewares and DRF views are
sync, so this handler builds the sync chain (as under WSGI) and enters it with one
``sync_to_async``. Async views still work: Django's sync path runs them on the server's
event loop, and async streaming bodies are still streamed by the ASGI handler.

The chain gives the thread's database connection back as soon as the view has answered.
Django would do it at ``request_finished``, which for a streamed body (an SSE run stream)
comes only when the stream ends: with pooled PostgreSQL connections every open stream would
hold one, and a few dozen long runs would drain the pool.
"""

from __future__ import annotations

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections


class SyncChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        chain = self._middleware_chain

        def chain_then_release(request):
            try:
                return chain(request)
            finally:
                close_old_connections()

        self._middleware_chain = sync_to_async(chain_then_release, thread_sensitive=True)


def get_asgi_application() -> SyncChainASGIHandler:
    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
