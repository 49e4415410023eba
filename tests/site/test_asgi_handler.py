"""The ASGI handler Daphne serves: Django's request cycle entered once, still whole.

``SyncChainASGIHandler`` runs the middleware chain as sync code in one hop; these tests go
through the real ASGI interface and check that everything the chain does for users still
happens: token auth, CSRF, security headers, JSON errors and streamed bodies.
"""

import contextlib

import httpx
import pytest
from asgiref.sync import async_to_sync

from apps.accounts.services import token_create
from deerflow_site.server.handlers import SyncChainASGIHandler, starts_a_run
from tests.support.waiting import HANG_SECONDS, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _application():
    # Imported here: importing the ASGI module runs startup recovery, which needs the database.
    from deerflow_site.asgi import application

    return application


def _request(method: str, path: str, **kwargs) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_application()), base_url="http://testserver") as client:
            return await client.request(method, path, **kwargs)

    return async_to_sync(go)()


def test_daphne_serves_the_sync_chain_handler():
    # Behind the request guard (deerflow_site/server/body_limits.py).
    assert isinstance(_application().application_mapping["http"].app, SyncChainASGIHandler)


def test_bearer_request_passes_the_middleware_chain(user):
    token = token_create(owner=user, name="script", scopes=["threads:read"]).token
    response = _request("GET", "/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_bad_token_is_a_json_401():
    response = _request("GET", "/api/me", headers={"Authorization": "Bearer dfp_" + "x" * 43})
    assert response.status_code == 401
    assert "detail" in response.json()


def test_session_post_without_csrf_is_refused(user):
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_application()), base_url="http://testserver") as client:
            login = await client.get("/accounts/login/")
            assert login.status_code == 200
            # A cookie but no CSRF token: the sign-in is refused before it is tried.
            client.cookies.set("sessionid", "not-a-session")
            return await client.post("/accounts/login/", data={"login": "alice", "password": "pw-alice-123"})

    response = async_to_sync(go)()
    assert response.status_code == 403


def test_unknown_route_is_a_404_page():
    assert _request("GET", "/no/such/page").status_code == 404


def _requests_seen(method: str, path: str, count: int, *, concurrent: bool, **kwargs) -> list[tuple]:
    """(thread, database connection) each request's sync code ran on, read after its view.
    The objects themselves, not ids: a dead thread's ident and a closed connection's id can
    come back."""
    import threading

    from django.core.signals import request_finished
    from django.db import connection

    seen = []

    def record(**_):
        seen.append((threading.current_thread(), connection.connection))

    async def go() -> list[httpx.Response]:
        import asyncio

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_application()), base_url="http://testserver") as client:
            if concurrent:
                return list(await asyncio.gather(*(client.request(method, path, **kwargs) for _ in range(count))))
            return [await client.request(method, path, **kwargs) for _ in range(count)]

    request_finished.connect(record)
    try:
        responses = async_to_sync(go)()
    finally:
        request_finished.disconnect(record)
    assert [r.status_code for r in responses] == [200] * count
    return seen


def test_requests_reuse_a_thread_and_its_database_connection(user):
    # A fresh thread per request would open a new database connection per request.
    token = token_create(owner=user, name="script", scopes=["threads:read"]).token
    seen = _requests_seen("GET", "/api/me", 4, concurrent=False, headers={"Authorization": f"Bearer {token}"})
    assert len(seen) == 4 and all(thread is seen[0][0] and conn is seen[0][1] for thread, conn in seen)


def test_concurrent_requests_each_get_a_thread(user):
    """One request's sync code never waits behind another's: each borrows its own thread."""
    import threading

    from django.core.signals import request_started

    token = token_create(owner=user, name="script", scopes=["threads:read"]).token
    arrived = threading.Barrier(3, timeout=10)

    def wait_for_the_others(**_):
        arrived.wait()  # three requests meet here only if they run on three threads at once

    request_started.connect(wait_for_the_others)
    try:
        seen = _requests_seen("GET", "/api/me", 3, concurrent=True, headers={"Authorization": f"Bearer {token}"})
    finally:
        request_started.disconnect(wait_for_the_others)
    assert len({id(thread) for thread, _ in seen}) == 3


def _scope(path: str, method: str = "GET") -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": [(b"host", b"testserver")],
            "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}


def _client():
    """(receive, send, body) of an ASGI client that sends an empty request, then nothing."""
    import asyncio

    requested = []

    async def receive():
        if requested:
            await asyncio.Event().wait()  # the client sends nothing more
        requested.append(1)
        return {"type": "http.request", "body": b"", "more_body": False}

    body = []

    async def send(message):
        if message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    return receive, send, body


def test_a_request_cancelled_mid_view_does_not_hold_up_the_next_one(settings):
    """Daphne cancels a request's application task when its client left and the request does
    not finish in time; the view runs on in its thread, which must not be lent to the next
    request."""
    import asyncio

    from tests.site import slow_urls

    settings.ROOT_URLCONF = "tests.site.slow_urls"
    slow_urls.entered.clear()
    slow_urls.release.clear()
    handler = SyncChainASGIHandler()

    async def go() -> bytes:
        receive, send, _ = _client()
        slow = asyncio.create_task(handler(_scope("/slow/"), receive, send))
        await asyncio.to_thread(slow_urls.entered.wait, 10)
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow
        receive, send, body = _client()
        try:
            await asyncio.wait_for(handler(_scope("/fast/"), receive, send), 3)
        finally:
            slow_urls.release.set()
        return b"".join(body)

    assert async_to_sync(go)() == b"fast"


def test_a_held_event_stream_gives_its_request_thread_back(settings):
    """Hundreds of run streams may stay open for minutes: they must not hold a thread each.
    While one is open, the next request reuses its thread."""
    import asyncio

    from tests.site import slow_urls

    settings.ROOT_URLCONF = "tests.site.slow_urls"
    handler = SyncChainASGIHandler()

    async def go():
        slow_urls.stream_release = asyncio.Event()
        receive, send, body = _client()
        stream = asyncio.create_task(handler(_scope("/stream/"), receive, send))
        while b"data: first\n\n" not in body:
            await asyncio.sleep(0.01)
        idle_while_streaming = len(handler._idle_threads)
        receive2, send2, body2 = _client()
        await asyncio.wait_for(handler(_scope("/fast/"), receive2, send2), 3)
        slow_urls.stream_release.set()
        await asyncio.wait_for(stream, 3)
        return idle_while_streaming, b"".join(body), b"".join(body2), len(handler._idle_threads)

    idle_while_streaming, streamed, fast, idle_after = async_to_sync(go)()
    assert idle_while_streaming == 1  # the stream's thread, back before the stream ended
    assert streamed == b"data: first\n\ndata: last\n\n" and fast == b"fast"
    assert idle_after == 1  # the fast request borrowed that same thread: none was made


def _hold_every_turn(handler: SyncChainASGIHandler) -> list:
    """Tasks of requests to views that keep their turn in the sync chain until
    ``slow_urls.let_one_go`` lets them answer; run on the loop, wait for ``_until_held``."""
    import asyncio

    tasks = []
    for i in range(handler.chain_turns):
        receive, send, _ = _client()
        tasks.append(asyncio.create_task(handler(_scope(f"/held/{i}/"), receive, send)))
    return tasks


async def _until(condition, what: str) -> None:
    """Waits off the loop, so the requests on it go on; a deque read while the loop changes it
    counts as not yet."""
    import asyncio

    await asyncio.to_thread(wait_until, condition, what, interval=0.01, ignore=(RuntimeError,))


@pytest.fixture
def gated(settings):
    """A handler on the URLconf of held views, and the views' records cleared; every held view
    is let go at the end."""
    import threading

    from tests.site import slow_urls

    settings.ROOT_URLCONF = "tests.site.slow_urls"
    slow_urls.held_paths.clear()
    slow_urls.served.clear()
    slow_urls.let_one_go = threading.Semaphore(0)  # no release left over from another test
    handler = SyncChainASGIHandler()
    yield handler, slow_urls
    slow_urls.let_one_go.release(handler.chain_turns)


def test_a_run_start_gets_the_next_turn_before_requests_queued_earlier(gated):
    """A burst (500 new threads, then each its run) fills the sync chain's turns: a run start
    that arrives then is let in before the plain requests already waiting, so the user whose
    run it is does not wait for the whole burst."""
    import asyncio

    handler, slow_urls = gated
    handler.lend_after_seconds = HANG_SECONDS  # the held views keep their turns: only the order is tested

    async def go():
        gate = handler.gate()
        held = _hold_every_turn(handler)
        await _until(lambda: len(slow_urls.held_paths) == handler.chain_turns, "every turn held")
        receive, send, _ = _client()
        plain = asyncio.create_task(handler(_scope("/plain/"), receive, send))
        await _until(lambda: gate.waiting == 1, "the plain request waiting")
        receive, send, body = _client()
        run_start = asyncio.create_task(handler(_scope("/threads/t1/runs/stream", "POST"), receive, send))
        await _until(lambda: gate.waiting == 2, "the run start waiting")
        # One turn comes free. The plain request can have one only when the run start leaves
        # its turn (the other views keep theirs until the run start has answered).
        slow_urls.let_one_go.release()
        await asyncio.wait_for(run_start, HANG_SECONDS)
        slow_urls.let_one_go.release(handler.chain_turns)
        await asyncio.wait_for(asyncio.gather(plain, *held), HANG_SECONDS)
        return b"".join(body), list(slow_urls.served)

    body, served = async_to_sync(go)()
    assert body == b"run start"
    assert served == ["run start", "plain"]  # the plain request, there first, waited


def test_slow_views_holding_every_turn_do_not_keep_other_requests_out(gated):
    """Views that take long (a cancel waiting for its run, an upload) lend their turn to the
    next request; they still answer when done."""
    import asyncio

    handler, slow_urls = gated

    async def go():
        held = _hold_every_turn(handler)
        await _until(lambda: len(slow_urls.held_paths) == handler.chain_turns, "every turn held")
        receive, send, body = _client()
        await asyncio.wait_for(handler(_scope("/plain/"), receive, send), HANG_SECONDS)
        still_held = [not task.done() for task in held]
        slow_urls.let_one_go.release(handler.chain_turns)
        await asyncio.wait_for(asyncio.gather(*held), HANG_SECONDS)
        return b"".join(body), still_held

    body, still_held = async_to_sync(go)()
    assert body == b"plain"
    assert still_held == [True] * handler.chain_turns  # served while every slow view still ran


@pytest.mark.parametrize(("method", "path", "run_start"), [
    ("POST", "/api/threads/t1/runs", True),
    ("POST", "/api/threads/t1/runs/stream", True),
    ("POST", "/api/langgraph/threads/t1/runs/wait", True),
    ("POST", "/api/runs/stream", True),
    ("POST", "/api/threads/t1/runs/regenerate", True),
    ("GET", "/api/threads/t1/runs", False),
    ("POST", "/api/threads", False),
    ("POST", "/api/threads/t1/runs/r1/cancel", False),
    ("GET", "/api/threads/t1/runs/r1/stream", False),
])
def test_run_starts_are_told_from_other_requests_by_method_and_path(method, path, run_start):
    assert starts_a_run(method, path) is run_start


def test_a_query_string_that_is_not_utf8_is_422(user):
    token = token_create(owner=user, name="script", scopes=["threads:read"]).token
    response = _request("GET", "/api/threads/t1/runs?status=%ED%A0%80", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 422
    assert "UTF-8" in response.json()["detail"]


def test_the_guard_refuses_oversize_bodies_under_any_server(user, settings):
    """Without our Daphne request class (another ASGI server, this in-process transport), the
    guard in front of Django still answers 413 by Content-Length and by counting chunks."""
    settings.DEERFLOW_MAX_JSON_BODY = 1000
    token = token_create(owner=user, name="script", scopes=["threads:write"]).token
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    declared = _request("POST", "/api/threads", content=b"{" + b" " * 2000 + b"}", headers=auth)
    assert declared.status_code == 413 and "1000 bytes" in declared.json()["detail"]

    async def chunks():
        for _ in range(10):
            yield b" " * 500

    counted = _request("POST", "/api/threads", content=chunks(), headers=auth)
    assert counted.status_code == 413 and "1000 bytes" in counted.json()["detail"]
    anonymous = _request("POST", "/accounts/login/", content=b"x" * (settings.DEERFLOW_MAX_ANONYMOUS_BODY + 1))
    assert anonymous.status_code == 413 and "without credentials" in anonymous.json()["detail"]
