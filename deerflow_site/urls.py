"""Top-level URLs: admin, the API under /api/, the UI pages."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    # Scheduled tasks were under the runs app in admin; old bookmarks and links still land.
    re_path(r"^admin/runs/(?P<model>scheduledtask(?:run)?)/(?P<rest>.*)$",
            RedirectView.as_view(url="/admin/schedules/%(model)s/%(rest)s", permanent=True, query_string=True)),
    path("admin/", admin.site.urls),
    # Pages without our <link rel="icon"> (the admin, raw API responses) still get one.
    path("favicon.ico", RedirectView.as_view(url=static("site/favicon.ico"), permanent=True)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Threads and runs first: every run makes two requests there, and Django tries the
    # patterns in order (about 45 per request when these came fourth and fifth). Chat's thread
    # routes come before the runs app's: its ``runs/regenerate`` would otherwise be taken for a
    # run id. The apps behind have no pattern starting with threads/ or runs (schedules' one
    # under threads/ matches no earlier pattern), so every path still reaches its own view
    # (tests/site/test_urls.py checks each route).
    path("api/", include("apps.chat.api_urls")),
    path("api/", include("apps.threads.api_urls")),
    path("api/", include("apps.runs.api_urls")),
    path("api/", include("apps.schedules.api_urls")),
    path("api/", include("apps.console.api_urls")),
    path("api/", include("apps.accounts.api_urls")),
    # DeerFlow's frontend signs in here, as with its own gateway.
    path("api/v1/auth/", include("apps.accounts.deerflow_urls")),
    path("api/", include("apps.agents.api_urls")),
    path("api/", include("apps.mcp.api_urls")),
    path("api/", include("apps.channels.api_urls")),
    path("api/", include("apps.skills.api_urls")),
    path("api/", include("apps.memory.api_urls")),
    path("api/", include("apps.governance.api_urls")),
    path("schedules/", include("apps.schedules.page_urls")),
    path("settings/", include("apps.accounts.settings_urls")),
    path("settings/", include("apps.mcp.page_urls")),
    path("settings/", include("apps.channels.page_urls")),
    path("skills/", include("apps.skills.page_urls")),
    path("agents/", include("apps.agents.page_urls")),
    path("memory/", include("apps.memory.page_urls")),
    path("approvals/", include("apps.governance.page_urls")),
    path("observability/", include("apps.observability.page_urls")),
    path("accounts/", include("apps.accounts.urls")),
    path("", include("apps.chat.page_urls")),
    path("", include("apps.console.urls")),
]

# Our own pages for errors (JSON under /api/): Django's debug pages are for developers only
# (DEERFLOW_DEBUG_PAGES), never for the product's users.
handler404 = "deerflow_site.error_pages.not_found"
handler500 = "deerflow_site.error_pages.server_error"
