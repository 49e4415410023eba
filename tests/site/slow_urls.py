"""A URLconf with views that block until the test lets them go (test_asgi_handler)."""

import asyncio
import threading

from django.http import HttpResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.support.waiting import HANG_SECONDS

entered = threading.Event()
release = threading.Event()


def slow(request):
    entered.set()
    release.wait(10)
    return HttpResponse("slow")


def fast(request):
    return HttpResponse("fast")


stream_release: asyncio.Event | None = None


def held_stream(request):
    """An event stream like a run's: an async body held open until the test ends it."""

    async def body():
        yield b"data: first\n\n"
        await stream_release.wait()
        yield b"data: last\n\n"

    response = StreamingHttpResponse(body(), content_type="text/event-stream")
    response.needs_no_request_thread = True
    return response


held_paths: list[str] = []  # each held view's path, as it starts
let_one_go = threading.Semaphore(0)  # release() lets one held view answer; a test's own, fresh
served: list[str] = []  # the other views below, in the order they ran


def held(request, name):
    held_paths.append(request.path)
    let_one_go.acquire(timeout=HANG_SECONDS)
    return HttpResponse("held")


def plain(request):
    served.append("plain")
    return HttpResponse("plain")


@csrf_exempt  # the API's views authenticate by token, without CSRF
def run_start(request, thread_id):
    """Answers on a run start's path (the handler lets these in first)."""
    served.append("run start")
    return HttpResponse("run start")


urlpatterns = [path("slow/", slow), path("fast/", fast), path("stream/", held_stream), path("held/<str:name>/", held),
               path("plain/", plain), path("threads/<str:thread_id>/runs/stream", run_start)]
