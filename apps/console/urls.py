from django.urls import path

from apps.console import pages
from apps.console.views import landing

urlpatterns = [
    path("", landing, name="landing"),
    path("usage/", pages.usage_page, name="usage"),
    path("console/", pages.console_page, name="console"),
    path("console/runs/<uuid:run_id>/cancel", pages.console_cancel_run, name="console-cancel-run"),
]
