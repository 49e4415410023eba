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

The same hop also sends ``request_started`` and, for a response that is not streamed, closes
it (``request_finished``): Django sends each from the loop with a hop of its own, four hops
per request where one does. A streamed body is closed after its last chunk, as Django does.

The chain gives the thread's database connection back as soon as the view has answered.
Django would do it at ``request_finished``, which for a streamed body (an SSE run stream)
comes only when the stream ends: with pooled PostgreSQL connections every open stream would
hold one, and a few dozen long runs would drain the pool.
"""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import close_old_connections
from django.urls import set_script_prefix, set_urlconf
from django.utils.log import log_response

# Idle request threads kept for reuse; a burst beyond this gets threads that end with it.
IDLE_REQUEST_THREADS = 32


@dataclass
class _Borrowed:
    executor: ThreadPoolExecutor
    in_view: bool = False
    returned: bool = False


# The request's borrowed thread, seen from its sync code (asgiref copies the context there).
_borrowed: contextvars.ContextVar[_Borrowed | None] = contextvars.ContextVar("deerflow_request_thread", default=None)


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle_threads: list[ThreadPoolExecutor] = []

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        chain = self._middleware_chain
        handler_class = self.__class__

        def respond(request):
            """Django's sync request cycle, from ``request_started`` to the response."""
            signals.request_started.send(sender=handler_class, scope=request.scope)
            set_urlconf(settings.ROOT_URLCONF)
            borrowed = _borrowed.get()
            if borrowed is not None:
                borrowed.in_view = True
            try:
                response = chain(request)
            finally:
                close_old_connections()
                if borrowed is not None:
                    borrowed.in_view = False
            response._resource_closers.append(request.close)
            if response.status_code >= 400:
                log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
            if not response.streaming:
                response.close()
                response._closed_in_chain = True
            return response

        self._middleware_chain = sync_to_async(respond, thread_sensitive=True)

    async def get_response_async(self, request):
        return await self._middleware_chain(request)

    async def handle(self, scope, receive, send):
        """Django's ``ASGIHandler.handle`` without the hops ``respond`` makes unneeded."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await sync_to_async(error_response.close)()
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            if getattr(response, "needs_no_request_thread", False):
                # A run's event stream: its sync work is done, and hundreds of streams may be
                # held open for minutes. Its thread goes back to the idle ones now.
                borrowed = _borrowed.get()
                if borrowed is not None:
                    self._give_back(borrowed)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client went away while the response was sent
            return response

        # As Django does: a disconnect while the view runs cancels the request.
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), asyncio.create_task(process_request(request, send))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass  # the client disconnected: nothing to answer
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass  # the cancel just asked for
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            if getattr(response, "needs_no_request_thread", False):
                await sync_to_async(response.close, thread_sensitive=False)()  # its thread is another's now
            elif not getattr(response, "_closed_in_chain", False):
                await sync_to_async(response.close)()
        body_file.close()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._idle_threads.pop() if self._idle_threads else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        borrowed = _Borrowed(executor)
        token = _borrowed.set(borrowed)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            _borrowed.reset(token)
            self._give_back(borrowed)

    def _give_back(self, borrowed: _Borrowed) -> None:
        if borrowed.returned:
            return
        borrowed.returned = True
        # Cancelled mid-view: asgiref stops waiting, the thread is still the view's.
        if not borrowed.in_view and len(self._idle_threads) < IDLE_REQUEST_THREADS:
            self._idle_threads.append(borrowed.executor)
        else:
            borrowed.executor.shutdown(wait=False)


def get_asgi_application() -> SyncChainASGIHandler:
    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
