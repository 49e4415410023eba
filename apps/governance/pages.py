"""The Approvals page: a server-rendered shell; static/governance/approvals.js talks to the API."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def approvals_page(request):
    return render(request, "governance/approvals.html")
