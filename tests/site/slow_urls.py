"""A URLconf with a view that blocks until the test lets it go (test_asgi_handler)."""

import threading

from django.http import HttpResponse
from django.urls import path

entered = threading.Event()
release = threading.Event()


def slow(request):
    entered.set()
    release.wait(10)
    return HttpResponse("slow")


def fast(request):
    return HttpResponse("fast")


urlpatterns = [path("slow/", slow), path("fast/", fast)]
