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

At most ``CHAIN_TURNS`` requests of a process are in the sync chain at once; the others wait
on the loop for a turn, run starts (``POST …/runs``, ``…/runs/stream``, ``…/runs/wait``, a
regenerate) ahead of the rest. Without the gate a burst (500 runs sent at once) put every
request's thread into the chain together: hundreds of threads took turns at the GIL (one
switch every 5 ms), each request took about as long as the whole burst, and the runs already
admitted, executing on the runs loop's one thread, got one turn in hundreds: their model calls
went out up to 20 s late. With a few at a time, requests finish in the order they are let in, the
runs loop keeps its share of the GIL, and a run start waits only for the turns and the run
starts before it. The price is paid by plain requests in a burst (a new thread's ``POST``
waits behind the run starts), not by the runs. A request that holds its turn for
``LEND_AFTER_SECONDS`` (a slow view: a cancel that waits for its run, a large upload) lends it
to the next request and runs on, so slow views cannot close the gate; the turn is not taken
back. Figures: benchmarks/HISTORY.md, Round 14.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import re
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

# Requests in the sync chain at once, per process: enough to overlap a request's database
# waits with another's Python, few enough that the GIL is not shared out among hundreds.
CHAIN_TURNS = 4
# A request in the chain this long lends its turn to the next one (see the module docstring).
LEND_AFTER_SECONDS = 1.0
# The requests that start a run: a user waits on each, so they are let in first.
_RUN_START_PATH = re.compile(r"/runs(?:/stream|/wait|/regenerate|/edit-regenerate)?/?$")


def starts_a_run(method: str, path: str) -> bool:
    return method == "POST" and _RUN_START_PATH.search(path) is not None


class _Turn:
    __slots__ = ("gate", "held", "timer")

    def __init__(self, gate: ChainGate) -> None:
        self.gate = gate
        self.held = True
        self.timer = gate.loop.call_later(gate.lend_after, self.lend)

    def lend(self) -> None:
        if self.held:
            self.held = False
            self.gate._pass_on()

    def leave(self) -> None:
        self.timer.cancel()
        if self.held:
            self.held = False
            self.gate._pass_on()


class ChainGate:
    """Turns in the sync chain for one event loop: ``turns`` at a time, run starts first, each
    queue first come first served. Loop-side only: no lock, no thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, turns: int = CHAIN_TURNS, lend_after: float = LEND_AFTER_SECONDS) -> None:
        self.loop = loop
        self.free = turns
        self.lend_after = lend_after
        self._run_starts: collections.deque[asyncio.Future] = collections.deque()
        self._others: collections.deque[asyncio.Future] = collections.deque()

    @property
    def waiting(self) -> int:
        """Requests waiting for a turn."""
        return sum(not f.done() for f in self._run_starts) + sum(not f.done() for f in self._others)

    async def enter(self, *, run_start: bool) -> _Turn:
        if self.free:  # a free turn means nobody is waiting: _pass_on hands turns to waiters first
            self.free -= 1
            return _Turn(self)
        waiter = self.loop.create_future()
        (self._run_starts if run_start else self._others).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._pass_on()  # given a turn as it was cancelled: the next one takes it
            raise
        return _Turn(self)

    def _pass_on(self) -> None:
        for queue in (self._run_starts, self._others):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():  # a cancelled waiter left its place empty
                    waiter.set_result(None)
                    return
        self.free += 1


@dataclass
class _Borrowed:
    executor: ThreadPoolExecutor
    in_view: bool = False
    returned: bool = False


# The request's borrowed thread, seen from its sync code (asgiref copies the context there).
_borrowed: contextvars.ContextVar[_Borrowed | None] = contextvars.ContextVar("deerflow_request_thread", default=None)


class SyncChainASGIHandler(ASGIHandler):
    chain_turns = CHAIN_TURNS
    lend_after_seconds = LEND_AFTER_SECONDS

    def __init__(self) -> None:
        super().__init__()
        self._idle_threads: list[ThreadPoolExecutor] = []
        self._gate: ChainGate | None = None

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

    def gate(self) -> ChainGate:
        """This process's gate (one per event loop: tests run the handler on several loops)."""
        loop = asyncio.get_running_loop()
        if self._gate is None or self._gate.loop is not loop:
            self._gate = ChainGate(loop, self.chain_turns, self.lend_after_seconds)
        return self._gate

    async def get_response_async(self, request):
        turn = await self.gate().enter(run_start=starts_a_run(request.method, request.path))
        try:
            return await self._middleware_chain(request)
        finally:
            turn.leave()

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
