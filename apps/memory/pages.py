"""The Memory page: a server-rendered shell; static/memory/memory.js talks to ``/api/memory``."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def memory_page(request):
    return render(request, "memory/index.html")
