"""A URLconf with views that block until the test lets them go (test_asgi_handler)."""

import asyncio
import threading

from django.http import HttpResponse, StreamingHttpResponse
from django.urls import path

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


urlpatterns = [path("slow/", slow), path("fast/", fast), path("stream/", held_stream)]
